/* SPDX-License-Identifier: MIT */
/*
 * test_sim_h100.c — the simulator reproduces what a real H100 measured
 * (issue #19 §4).
 *
 * docs/gpu-h100.md holds the figures of examples/mlp_gpu on an H100 SXM5
 * on PCIe Gen5, run with the runtime as it was then: managed memory
 * allocated per tensor per step, and swap-outs in uvm mode by prefetch to
 * the host.  The profile h100-sxm5-pcie5-80g carries that machine's
 * measured path costs (sim_profile.c); here the zoo's copies of the two
 * MLP shapes run on it, and each cell's ratio to its own unconstrained
 * run must land within 25% of the GPU's.
 *
 * The cells held are the ones the model reproduces today; the others,
 * and why, are listed in docs/gpu-h100.md ("The simulator against the
 * GPU").  Capuchin's mlp_compute cells (148.8 ms swap, 819 ms uvm) are
 * not held: the GPU ran the plan of before issue #22, whose
 * recomputations swapped their sources back in; today's plan does not
 * (2.20x -> 1.68x of the unconstrained step on the sim, swap) and has
 * not been measured on the GPU.  A cell that drifts out of the band fails here, so a change to
 * the model that loses the GPU's shape is seen at once.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "drive.h"
#include "tensormm.h"
#include "zoo.h"

#define SIM "backend=sim,sim_memory=phantom,sim_profile=h100-sxm5-pcie5-80g"
#define ITERATIONS 6 /* as in the GPU runs: the last step is measured */
#define TOLERANCE 0.25
/* The runtime as the GPU ran it: dead tensors copied out as any other
 * (liveness=keep, the default then), and in mode=uvm evictions by
 * prefetch to the host and fresh pages made by the kernels' faults. */
#define PRE_CHANGE ",liveness=keep"
#define PRE_CHANGE_UVM PRE_CHANGE ",uvm_swap_path=prefetch,uvm_fresh=fault"

/* A measured cell: the last step's time over the unconstrained run's
 * (docs/gpu-h100.md). */
struct cell {
	const char *model;
	unsigned batch;
	double fraction; /* budget, of the unconstrained peak */
	const char *mode, *policy;
	double gpu_ratio;
};

static const struct cell cells[] = {
	/* compute-bound: --width 4096 --layers 12 --batch 2048, 40% */
	{ "mlp_compute", 2048, 0.4, "swap", "none", 128.0 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "swap", "passive", 177.5 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "swap", "vdnn-all", 133.4 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "swap", "checkpoint", 163.1 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "swap", "superneurons", 133.5 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "uvm", "none", 627.0 / 55.0 },
	{ "mlp_compute", 2048, 0.4, "uvm", "superneurons", 702.0 / 55.0 },
	/* tsplit (swap 143.3 / 55.0, uvm 839.0 / 55.0) is not held: the
	 * GPU ran the tsplit planner of then, whose plan this one no
	 * longer makes; the swap cell stayed in the band by chance until
	 * tsplit's prefetches stopped firing inside the op that needs
	 * their tensor (tmm_last_in_trigger), since when it runs 1.83x
	 * (docs/gpu-h100.md). */
	/* transfer-bound: --width 1024 --layers 24 --batch 8192, 30% */
	{ "mlp_transfer", 8192, 0.3, "swap", "none", 103.5 / 55.0 },
	/* swap auto (113.1 / 55.0) is not held: the GPU ran the auto of
	 * then; auto now picks stream's plan there (1.51x on the sim),
	 * which no GPU has run. */
	{ "mlp_transfer", 8192, 0.3, "swap", "capuchin", 110.9 / 55.0 },
	{ "mlp_transfer", 8192, 0.3, "swap", "tensile", 119.4 / 55.0 },
	{ "mlp_transfer", 8192, 0.3, "uvm", "none", 901.0 / 55.0 },
};

/* Runs the model; returns the last step's simulated ns, and its peak. */
static uint64_t last_step(const char *model, unsigned batch,
			  const char *config, uint64_t *peak)
{
	const struct zoo_model *m = zoo_find(model);
	struct zoo_args a = { batch, 1 };
	struct drive_opts o = { .config = config, .iterations = ITERATIONS };
	static struct drive_result r;
	struct zgraph g;

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	zoo_drive(&g, &o, &r);
	zg_free(&g);
	ck_assert_msg(r.rc == 0 && r.done == ITERATIONS, "%s under %s: %s",
		      model, config, r.error);
	if (peak) {
		*peak = 0;
		for (unsigned i = 0; i < r.done; i++)
			if (r.it[i].peak > *peak)
				*peak = r.it[i].peak;
	}
	return r.it[ITERATIONS - 1].ns;
}

START_TEST(each_cell_lands_near_the_gpu)
{
	const struct cell *c = &cells[_i];
	char config[256];
	uint64_t peak, free_ns, ns;
	double ratio;

	snprintf(config, sizeof(config), "%s,mode=swap,policy=none", SIM);
	free_ns = last_step(c->model, c->batch, config, &peak);
	snprintf(config, sizeof(config), "%s,mode=%s,policy=%s,budget=%lluB%s",
		 SIM, c->mode, c->policy,
		 (unsigned long long)((double)peak * c->fraction),
		 strcmp(c->mode, "uvm") == 0 ? PRE_CHANGE_UVM : PRE_CHANGE);
	ns = last_step(c->model, c->batch, config, NULL);
	ratio = (double)ns / (double)free_ns;
	printf("%-12s %3.0f%% %-4s %-10s sim %6.2fx  gpu %6.2fx\n", c->model,
	       100 * c->fraction, c->mode, c->policy, ratio, c->gpu_ratio);
	ck_assert_msg(ratio > c->gpu_ratio * (1 - TOLERANCE) &&
			      ratio < c->gpu_ratio * (1 + TOLERANCE),
		      "%s at %.0f%%, mode=%s, policy=%s: %.2fx on the sim, "
		      "%.2fx on the H100 (docs/gpu-h100.md)",
		      c->model, 100 * c->fraction, c->mode, c->policy, ratio,
		      c->gpu_ratio);
}
END_TEST

/* The unconstrained step of the compute-bound shape: the roofline with
 * the profile's figures against the 54-56 ms measured; and the peaks of
 * both shapes, which the zoo's copies must reproduce to the MiB (3663
 * and 3360 MiB on the GPU), or a budget fraction means other bytes. */
START_TEST(the_compute_bound_step_takes_what_the_gpu_took)
{
	char config[128];
	double ms;

	uint64_t peak;

	snprintf(config, sizeof(config), "%s,mode=swap,policy=none", SIM);
	ms = (double)last_step("mlp_compute", 2048, config, &peak) / 1e6;
	ck_assert_uint_eq(peak >> 20, 3663);
	(void)last_step("mlp_transfer", 8192, config, &peak);
	ck_assert_uint_eq(peak >> 20, 3360);
	ck_assert_msg(ms > 55.0 * (1 - TOLERANCE) &&
			      ms < 55.0 * (1 + TOLERANCE),
		      "the unconstrained compute-bound step: %.1f ms on the "
		      "sim, 54-56 ms on the H100", ms);
}
END_TEST

/*
 * The runtime since (issue #19): on the measured H100 profile, mode=uvm
 * evicts by pinned copy and makes fresh outputs' pages by prefetch, and
 * the compute-bound shape at 40% under auto runs at least three times
 * faster than the runtime the GPU ran (docs/gpu-h100.md, "The runtime
 * since"), and within 2x of unconstrained.
 */
START_TEST(uvm_gains_from_copies_and_fresh_prefetches)
{
	char config[256];
	uint64_t peak, free_ns, before, now;

	snprintf(config, sizeof(config), "%s,mode=swap,policy=none", SIM);
	free_ns = last_step("mlp_compute", 2048, config, &peak);
	snprintf(config, sizeof(config),
		 "%s,mode=uvm,policy=auto,budget=%lluB" PRE_CHANGE_UVM, SIM,
		 (unsigned long long)(peak * 2 / 5));
	before = last_step("mlp_compute", 2048, config, NULL);
	snprintf(config, sizeof(config), "%s,mode=uvm,policy=auto,"
		 "budget=%lluB", SIM, (unsigned long long)(peak * 2 / 5));
	now = last_step("mlp_compute", 2048, config, NULL);
	printf("mlp_compute 40%% uvm auto: %.2fx before, %.2fx now\n",
	       (double)before / (double)free_ns, (double)now / (double)free_ns);
	ck_assert_uint_lt(3 * now, before);
	ck_assert_uint_lt(now, 2 * free_ns);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_h100");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, each_cell_lands_near_the_gpu, 0,
			    (int)(sizeof(cells) / sizeof(cells[0])));
	tcase_add_test(tc, the_compute_bound_step_takes_what_the_gpu_took);
	tcase_add_test(tc, uvm_gains_from_copies_and_fresh_prefetches);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
