/* SPDX-License-Identifier: MIT */
/*
 * test_sim_uvm_recompute.c — on the simulated H100, a recomputation in
 * mode=uvm makes its outputs' pages by a prefetch, not by its kernel's
 * faults (issue #19).  Simulated figures.
 *
 * A drop discards its tensor's pages where the driver is held to the
 * budget (the simulator's, or the library's with uvm_cap=library), and
 * the re-run writes them again.  The profile h100-sxm5-pcie5-80g charges
 * a page made by a kernel's fault at the first-touch rate measured on
 * that H100 (8.51 GB/s, uvm_first_touch_gbps, docs/gpu-h100.md) and a page
 * made by a prefetch at 90 GB/s (uvm_prefetch_fresh_gbps).  The zoo's
 * compute-bound MLP (mlp_compute, batch 2048) runs at 40% of its peak
 * with uvm_cap=library, under none (no recomputation) and checkpoint,
 * once with uvm_fresh=fault (fresh pages made by faults: what every
 * recomputation did before the fix) and once as by default:
 *
 *  - by default, checkpoint takes no more faults than none: nothing it
 *    recomputes faults (none takes no fault either at this cap);
 *  - by faults with uvm_keep=off, checkpoint takes at least one fault
 *    more than none for each page it recomputes; with uvm_keep=on (the
 *    default) fewer than that: its re-runs' outputs land on blocks that
 *    destroyed tensors left populated;
 *  - checkpoint's last step by default is shorter than by faults by at
 *    least half of what its recomputed bytes cost by faults.
 *
 * With the simulator's driver held to the budget (uvm_cap=driver, the
 * default), checkpoint's faults beyond none's are fewer than the pages it
 * recomputes.  With evictions by prefetch, a back-access (a
 * recomputation's input swapped out by the plan) takes no fault either.
 * And a recomputation's buffers leave no page on the device that the
 * library does not count (ResNet-50 under checkpoint).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "drive.h"
#include "tensormm.h"
#include "zoo.h"

#define SIM "backend=sim,sim_memory=phantom,sim_profile=h100-sxm5-pcie5-80g"
#define ITERATIONS 6
#define PAGE (64 << 10)		/* the model's big page */
#define FIRST_TOUCH_GBPS 8.51	/* the profile's uvm_first_touch_gbps */

static void run(const char *config, struct drive_result *r)
{
	const struct zoo_model *m = zoo_find("mlp_compute");
	struct zoo_args a = { 2048, 1 };
	struct drive_opts o = { .config = config, .iterations = ITERATIONS };
	struct zgraph g;

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	zoo_drive(&g, &o, r);
	zg_free(&g);
	ck_assert_msg(r->rc == 0 && r->done == ITERATIONS, "%s: %s", config,
		      r->error);
}

/* What one run leaves to compare. */
struct fig {
	uint64_t last_ns, faults, recomputed_bytes;
};

static struct fig policy_cap(const char *name, uint64_t budget,
			     const char *fresh, const char *cap,
			     const char *extra)
{
	static struct drive_result r;
	char config[320];
	struct fig f;

	snprintf(config, sizeof(config), "%s,mode=uvm,uvm_cap=%s,"
		 "policy=%s,budget=%lluB,uvm_fresh=%s,log=error%s", SIM, cap,
		 name, (unsigned long long)budget, fresh, extra);
	run(config, &r);
	f.last_ns = r.it[ITERATIONS - 1].ns;
	f.faults = r.st.uvm_faults;
	f.recomputed_bytes = r.st.recomputed_bytes;
	printf("%-10s uvm_cap=%-7s uvm_fresh=%-5s%s last step %7.1f ms, "
	       "%7llu faults, %6.0f MB recomputed (simulated, 6 steps)\n",
	       name, cap, fresh, extra, f.last_ns / 1e6,
	       (unsigned long long)f.faults, f.recomputed_bytes / 1e6);
	return f;
}

static struct fig policy(const char *name, uint64_t budget,
			 const char *fresh)
{
	return policy_cap(name, budget, fresh, "library", "");
}

/* The unconstrained peak of the compute-bound MLP. */
static uint64_t compute_peak(void)
{
	static struct drive_result r;
	char config[256];
	uint64_t peak = 0;

	snprintf(config, sizeof(config), "%s,mode=swap,policy=none", SIM);
	run(config, &r);
	for (unsigned i = 0; i < r.done; i++)
		if (r.it[i].peak > peak)
			peak = r.it[i].peak;
	return peak;
}

START_TEST(recomputed_pages_are_prefetched_not_faulted)
{
	uint64_t budget = compute_peak() * 2 / 5, pages;
	struct fig none_fault, ckpt_fault, none_auto, ckpt_auto;
	struct fig none_fault_off, ckpt_fault_off;
	double fault_ns;

	none_fault_off = policy_cap("none", budget, "fault", "library",
				    ",uvm_keep=off");
	ckpt_fault_off = policy_cap("checkpoint", budget, "fault", "library",
				    ",uvm_keep=off");
	none_fault = policy("none", budget, "fault");
	ckpt_fault = policy("checkpoint", budget, "fault");
	none_auto = policy("none", budget, "auto");
	ckpt_auto = policy("checkpoint", budget, "auto");

	ck_assert_uint_gt(ckpt_auto.recomputed_bytes, 0);
	ck_assert_uint_eq(ckpt_fault.recomputed_bytes,
			  ckpt_auto.recomputed_bytes);
	pages = ckpt_auto.recomputed_bytes / PAGE;
	ck_assert_msg(ckpt_auto.faults <= none_auto.faults,
		      "checkpoint takes %llu faults, none %llu: recomputed "
		      "pages are faulted in",
		      (unsigned long long)ckpt_auto.faults,
		      (unsigned long long)none_auto.faults);
	ck_assert_msg(ckpt_fault_off.faults >= none_fault_off.faults + pages,
		      "by faults, uvm_keep=off: checkpoint takes %llu faults, "
		      "none %llu, for %llu recomputed pages",
		      (unsigned long long)ckpt_fault_off.faults,
		      (unsigned long long)none_fault_off.faults,
		      (unsigned long long)pages);
	ck_assert_msg(ckpt_fault.faults < none_fault.faults + pages,
		      "by faults, uvm_keep=on: checkpoint takes %llu faults, "
		      "none %llu, for %llu recomputed pages: its outputs' "
		      "pages were made afresh",
		      (unsigned long long)ckpt_fault.faults,
		      (unsigned long long)none_fault.faults,
		      (unsigned long long)pages);
	/* The recomputed bytes of one step, made at the first-touch rate. */
	fault_ns = (double)ckpt_auto.recomputed_bytes / ITERATIONS /
		   FIRST_TOUCH_GBPS;
	ck_assert_msg((double)ckpt_auto.last_ns <
			      (double)ckpt_fault.last_ns - fault_ns / 2,
		      "checkpoint's step: %.1f ms by prefetch, %.1f ms by "
		      "faults, whose first touches cost %.1f ms",
		      ckpt_auto.last_ns / 1e6, ckpt_fault.last_ns / 1e6,
		      fault_ns / 1e6);
}
END_TEST

/*
 * The simulator's own driver, held to the budget (uvm_cap=driver): it
 * evicts, so none faults too, and the plans' evictions differ; but the
 * faults checkpoint takes beyond none's must be fewer than the pages it
 * recomputes (before the fix they were more: each recomputed page was
 * faulted in on top of the evictions' faults).
 */
START_TEST(driver_cap_recomputed_pages_take_no_fault)
{
	uint64_t budget = compute_peak() * 2 / 5, pages;
	struct fig none = policy_cap("none", budget, "auto", "driver", "");
	struct fig ckpt = policy_cap("checkpoint", budget, "auto", "driver",
				     "");

	ck_assert_uint_gt(ckpt.recomputed_bytes, 0);
	pages = ckpt.recomputed_bytes / PAGE;
	ck_assert_msg(ckpt.faults < none.faults + pages,
		      "checkpoint takes %llu faults, none %llu, for %llu "
		      "recomputed pages",
		      (unsigned long long)ckpt.faults,
		      (unsigned long long)none.faults,
		      (unsigned long long)pages);
}
END_TEST

/*
 * Evictions by prefetch to the host (uvm_swap_path=prefetch, the way
 * auto takes on a real GPU), with uvm_cap=library: a back-access that
 * finds a tensor there, a recomputation's input among them, brings it
 * back by a prefetch before the kernel, not by the kernel's faults, so
 * neither policy takes a fault (before: 116828 for none and 144998 for
 * checkpoint over 6 steps).
 */
START_TEST(prefetch_way_back_accesses_take_no_fault)
{
	uint64_t budget = compute_peak() * 2 / 5;
	const char *way = ",uvm_swap_path=prefetch";
	struct fig none = policy_cap("none", budget, "auto", "library", way);
	struct fig ckpt = policy_cap("checkpoint", budget, "auto", "library",
				     way);

	ck_assert_uint_gt(ckpt.recomputed_bytes, 0);
	ck_assert_uint_eq(none.faults, 0);
	ck_assert_uint_eq(ckpt.faults, 0);
}
END_TEST

/* After each step: every managed page on the simulated device is one the
 * library counts, held by a tensor or kept for the next. */
static int all_pages_counted(void *arg, tmm_ctx *ctx, unsigned n)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	unsigned *checked = arg;

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_msg(st.device_in_use <= st.uvm_held + st.uvm_kept,
		      "step %u: %llu bytes on the device, %llu held and %llu "
		      "kept", n, (unsigned long long)st.device_in_use,
		      (unsigned long long)st.uvm_held,
		      (unsigned long long)st.uvm_kept);
	(*checked)++;
	return 0;
}

/*
 * A recomputation's buffers leave their pages to the next tensor (kept)
 * or discard them: ResNet-50 under checkpoint, its driver held to about
 * 40% of the peak, ends every step with no page on the device that the
 * library does not count (before: 15-16 MiB more each step from the
 * second on, the buffers' pages, freed populated; the driver evicted
 * live pages for them).
 */
START_TEST(recomputation_buffers_leave_no_page_uncounted)
{
	const struct zoo_model *m = zoo_find("resnet50");
	struct zoo_args a = { 8, 1 };
	struct drive_opts o = { .config = SIM ",mode=uvm,policy=checkpoint,"
					  "budget=380MiB,log=error",
				.iterations = 4,
				.after_iteration = all_pages_counted };
	static struct drive_result r;
	unsigned checked = 0;
	struct zgraph g;

	o.after_arg = &checked;
	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	zoo_drive(&g, &o, &r);
	zg_free(&g);
	ck_assert_msg(r.rc == 0 && r.done == 4, "%s", r.error);
	ck_assert_uint_eq(checked, 4);
	ck_assert_uint_gt(r.st.recomputations, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_uvm_recompute");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, recomputed_pages_are_prefetched_not_faulted);
	tcase_add_test(tc, driver_cap_recomputed_pages_take_no_fault);
	tcase_add_test(tc, prefetch_way_back_accesses_take_no_fault);
	tcase_add_test(tc, recomputation_buffers_leave_no_page_uncounted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
