/* SPDX-License-Identifier: MIT */
/*
 * test_train_e2e.c — real training runs under memory pressure.
 *
 * The MLP and the GPT of examples/ train with the whole simulated device,
 * then with budgets of 100%, 50% and 30% of that run's peak, and with a
 * plan written by hand (tests/handmade_plan.c) that mixes swaps, prefetches
 * and drops-with-recomputation, installed after the first step.  The loss
 * of every step and the final weights must be bit-identical to the
 * unconstrained run, the device peak must stay within each budget, and
 * the statistics must show that swapping (and recomputing) really
 * happened.  The same runs in mode=uvm (managed memory, the simulated
 * driver evicting under the budget) must give the same bytes too.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "gpt_model.h"
#include "lib/base/fault.h"
#include "lib/exec/guide.h"
#include "handmade_plan.h"
#include "mlp_model.h"
#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/record/tracker.h"

#define STEPS 5

struct run {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	struct tmm_stats st;
};

/* after_step hook: installs a handmade plan after the first step. */
static int install_plan(tmm_ctx *ctx, unsigned step, void *arg)
{
	const enum handmade_style *style = arg;
	struct tmm_plan plan;
	int rc;

	if (step != 1)
		return 0;
	ck_assert_uint_gt(handmade_plan(tmm_tracker_first(ctx), *style, 4, 6,
					&plan),
			  10);
	rc = tmm_guide_install(ctx, &plan);
	ck_assert_msg(rc == 0, "%s", tmm_last_error(ctx));
	tmm_plan_free(&plan);
	return 0;
}

typedef void (*train_fn)(const char *config, const enum handmade_style *plan,
			 struct run *r);

static void finish(tmm_ctx *ctx, const char *config, int rc, struct run *r)
{
	ck_assert_msg(rc == 0, "training under '%s' failed: %s", config,
		      tmm_last_error(ctx));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static void train_mlp(const char *config, const enum handmade_style *plan,
		      struct run *r)
{
	struct mlp_config mc;
	tmm_ctx *ctx;

	mlp_config_default(&mc);
	mc.steps = STEPS;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	if (plan) {
		mc.after_step = install_plan;
		mc.after_step_arg = (void *)plan;
	}
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	finish(ctx, config,
	       mlp_train(ctx, &mc, r->losses, &r->weights, &r->len, NULL), r);
}

static void train_gpt(const char *config, const enum handmade_style *plan,
		      struct run *r)
{
	struct gpt_config gc;
	tmm_ctx *ctx;

	gpt_config_default(&gc);
	gc.steps = STEPS;
	gc.batch = 4;
	if (plan) {
		gc.after_step = install_plan;
		gc.after_step_arg = (void *)plan;
	}
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	finish(ctx, config,
	       gpt_train(ctx, &gc, r->losses, &r->weights, &r->len, NULL), r);
}

/* The unconstrained run of each model, made once. */
static struct run reference[2];
static const train_fn models[2] = { train_mlp, train_gpt };
static const char *const model_names[2] = { "mlp", "gpt" };

static const struct run *reference_of(int model)
{
	struct run *r = &reference[model];

	if (!r->weights) {
		models[model]("backend=sim,sim_memory=backed,mode=swap", NULL,
			      r);
		ck_assert_uint_eq(r->st.swap_out_count, 0);
		ck_assert_uint_eq(r->st.iterations, STEPS);
		/* Training makes progress: the loss goes down. */
		ck_assert_float_lt(r->losses[STEPS - 1], r->losses[0]);
	}
	return r;
}

/* Trains `model` in `mode` at `percent` of its unconstrained peak, with a
 * handmade plan when `plan` is not NULL, and checks the run against the
 * reference. */
static void check_run(int model, const char *mode, unsigned percent,
		      const enum handmade_style *plan, struct run *got)
{
	const struct run *ref = reference_of(model);
	uint64_t budget = ref->st.device_peak * percent / 100;
	char config[192];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=%lluB", mode,
		 (unsigned long long)budget);
	models[model](config, plan, got);
	ck_assert_uint_eq(got->len, ref->len);
	ck_assert_msg(memcmp(got->weights, ref->weights, ref->len) == 0,
		      "%s: weights differ at a %u%% budget%s",
		      model_names[model], percent, plan ? " with a plan" : "");
	ck_assert_msg(memcmp(got->losses, ref->losses, sizeof(ref->losses))
			      == 0,
		      "%s: losses differ at a %u%% budget%s",
		      model_names[model], percent, plan ? " with a plan" : "");
	ck_assert_uint_le(got->st.device_peak, budget);
	ck_assert_uint_eq(got->st.iterations, STEPS);
	free(got->weights);
}

static void check_fraction(int model, unsigned percent)
{
	struct run got = { 0 };

	check_run(model, "swap", percent, NULL, &got);
	if (percent < 100) {
		ck_assert_uint_gt(got.st.swap_out_count, 0);
		ck_assert_uint_gt(got.st.swap_in_count, 0);
	} else {
		ck_assert_uint_eq(got.st.swap_out_count, 0);
	}
	/* Policy none: the runs after the first follow an empty plan. */
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
	ck_assert_uint_eq(got.st.plan_divergences, 0);
}

static void check_plan(int model, unsigned percent)
{
	static const enum handmade_style mixed = HANDMADE_MIXED;
	struct run got = { 0 };

	check_run(model, "swap", percent, &mixed, &got);
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
	ck_assert_uint_eq(got.st.plan_divergences, 0);
	ck_assert_uint_gt(got.st.plan_actions, 0);
	ck_assert_uint_gt(got.st.drops, 0);
	ck_assert_uint_gt(got.st.recomputations, 0);
	ck_assert_uint_gt(got.st.swap_out_count, got.st.passive_evictions);
}

/*
 * Swap mode over mapped chunks (pool=chunks): the same bytes, and the
 * device memory mapped stays within the budget rounded up to a chunk
 * plus one (the cap), while the bytes in use stay within the budget.
 */
static void check_chunks_fraction(int model, unsigned percent)
{
	const uint64_t chunk = 2u << 20;
	uint64_t budget = reference_of(model)->st.device_peak * percent / 100;
	struct run got = { 0 };

	check_run(model, "swap,pool=chunks", percent, NULL, &got);
	ck_assert_uint_gt(got.st.swap_out_count, 0);
	ck_assert_uint_gt(got.st.device_mapped_peak, 0);
	ck_assert_uint_le(got.st.device_mapped_peak,
			  (budget + chunk - 1) / chunk * chunk + chunk);
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
}

/* mode=uvm with policy none and uvm_cap=driver: the driver faults and,
 * under 100%, evicts. */
static void check_uvm_fraction(int model, unsigned percent)
{
	struct run got = { 0 };

	check_run(model, "uvm,uvm_cap=driver", percent, NULL, &got);
	ck_assert_str_eq(got.st.mode, "uvm");
	ck_assert_uint_gt(got.st.uvm_faults, 0);
	ck_assert_uint_gt(got.st.uvm_fault_batches, 0);
	ck_assert_uint_gt(got.st.uvm_evictions, 0);
	ck_assert_uint_gt(got.st.uvm_eviction_bytes, 0);
	/* The runtime moves nothing itself in this mode: every swap-out is
	 * an action of the plan (policy none's liveness). */
	ck_assert_uint_le(got.st.swap_out_count, got.st.plan_actions);
	ck_assert_uint_eq(got.st.passive_evictions, 0);
	ck_assert_uint_gt(got.st.stall_ns, 0);
	/* The library counted the pages of its tensors on the device, and
	 * nothing once they were all destroyed. */
	ck_assert_uint_gt(got.st.uvm_held_peak, 0);
	ck_assert_uint_eq(got.st.uvm_held, 0);
}

/* mode=uvm following a plan, uvm_cap=driver: prefetches, discards and
 * recomputation, and the driver evicts the rest. */
static void check_uvm_plan(int model, unsigned percent)
{
	static const enum handmade_style mixed = HANDMADE_MIXED;
	struct run got = { 0 };

	check_run(model, "uvm,uvm_cap=driver", percent, &mixed, &got);
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
	ck_assert_uint_eq(got.st.plan_divergences, 0);
	ck_assert_uint_gt(got.st.drops, 0);
	ck_assert_uint_gt(got.st.recomputations, 0);
	ck_assert_uint_gt(got.st.uvm_discard_bytes, 0);
	ck_assert_uint_gt(got.st.uvm_prefetch_bytes, 0);
	ck_assert_uint_eq(got.st.passive_evictions, 0);
	/* Drops, prefetches and recomputations leave the count balanced. */
	ck_assert_uint_eq(got.st.uvm_held, 0);
}

/*
 * mode=uvm evicting by pinned copy (lib/move/uvm_path.c): out by a copy
 * and a discard, back by a prefetch of fresh pages and a copy.  The bytes
 * come back through a host buffer the driver never sees, so they are
 * checked as in every run above; the discards show the pages went.
 */
static struct run check_uvm_by_copy(int model, unsigned percent, bool plan,
				    const char *extra)
{
	static const enum handmade_style mixed = HANDMADE_MIXED;
	struct run got = { 0 };
	char mode[96];

	snprintf(mode, sizeof(mode), "uvm,uvm_cap=driver,uvm_swap_path=copy%s",
		 extra);
	check_run(model, mode, percent, plan ? &mixed : NULL, &got);
	ck_assert_str_eq(got.st.mode, "uvm");
	ck_assert_uint_gt(got.st.swap_out_count, 0);
	ck_assert_uint_gt(got.st.uvm_discard_bytes, 0);
	ck_assert_uint_eq(got.st.passive_evictions, 0);
	/* Policy none evicts only what the rest of the iteration no
	 * longer reads; a plan brings tensors back. */
	if (plan) {
		ck_assert_uint_gt(got.st.swap_in_count, 0);
		ck_assert_uint_eq(got.st.plan_divergences, 0);
	}
	/* Copies out and back leave the count balanced. */
	ck_assert_uint_eq(got.st.uvm_held, 0);
	return got;
}

/*
 * mode=uvm by copy with half the plan's swaps by migration (TMM_ACT_MIGRATE,
 * hints/uvm_mix.h), copies holding the host as CUDA's: both ways in one
 * run, and the bytes are the reference's.
 */
START_TEST(mlp_uvm_mix_with_a_plan)
{
	static const enum handmade_style migrate = HANDMADE_MIGRATE;
	struct run got = { 0 };

	check_run(0, "uvm,uvm_cap=driver,uvm_swap_path=copy,"
		  "sim_managed_copy=held", 50, &migrate, &got);
	ck_assert_uint_eq(got.st.plan_divergences, 0);
	ck_assert_uint_gt(got.st.swap_in_count, 0);
	/* By migration: to the host by prefetch; by copy: the pages
	 * discarded. */
	ck_assert_uint_gt(got.st.uvm_prefetch_out_bytes, 0);
	ck_assert_uint_lt(got.st.uvm_prefetch_out_bytes,
			  got.st.swap_out_bytes);
	/* All of those on the migrate stream, and back there. */
	ck_assert_uint_eq(got.st.uvm_migrate_out_bytes,
			  got.st.uvm_prefetch_out_bytes);
	ck_assert_uint_gt(got.st.uvm_migrate_in_bytes, 0);
	ck_assert_uint_le(got.st.uvm_migrate_in_bytes,
			  got.st.uvm_migrate_out_bytes);
	ck_assert_uint_gt(got.st.uvm_discard_bytes, 0);
	ck_assert_uint_eq(got.st.passive_evictions, 0);
	ck_assert_uint_eq(got.st.uvm_held, 0);
}
END_TEST

/* By the copy way with uvm_copier=kernel: the copies hold no host on the
 * simulator, and every byte of them is counted as the copy kernel's. */
START_TEST(mlp_uvm_by_the_copy_kernel)
{
	struct run got = { 0 };

	check_run(0, "uvm,uvm_cap=driver,uvm_swap_path=copy,"
		  "uvm_copier=kernel", 50, NULL, &got);
	ck_assert_uint_gt(got.st.swap_out_bytes, 0);
	ck_assert_uint_eq(got.st.uvm_prefetch_out_bytes, 0);
	/* Each swap out and each swap in is one copy of its bytes. */
	ck_assert_uint_eq(got.st.uvm_kernel_copy_bytes,
			  got.st.swap_out_bytes + got.st.swap_in_bytes);
}
END_TEST

START_TEST(mlp_at_100_percent) { check_fraction(0, 100); }
END_TEST
START_TEST(mlp_at_50_percent) { check_fraction(0, 50); }
END_TEST
START_TEST(mlp_at_30_percent) { check_fraction(0, 30); }
END_TEST
START_TEST(mlp_with_a_swap_and_recompute_plan) { check_plan(0, 50); }
END_TEST
START_TEST(gpt_at_100_percent) { check_fraction(1, 100); }
END_TEST
START_TEST(gpt_at_50_percent) { check_fraction(1, 50); }
END_TEST
START_TEST(gpt_at_30_percent) { check_fraction(1, 30); }
END_TEST
START_TEST(gpt_with_a_swap_and_recompute_plan) { check_plan(1, 50); }
END_TEST
START_TEST(gpt_with_a_plan_at_30_percent) { check_plan(1, 30); }
END_TEST
START_TEST(mlp_over_chunks_at_30_percent) { check_chunks_fraction(0, 30); }
END_TEST
START_TEST(gpt_over_chunks_at_30_percent) { check_chunks_fraction(1, 30); }
END_TEST
START_TEST(mlp_uvm_at_50_percent) { check_uvm_fraction(0, 50); }
END_TEST
START_TEST(mlp_uvm_at_30_percent) { check_uvm_fraction(0, 30); }
END_TEST
START_TEST(mlp_uvm_with_a_plan) { check_uvm_plan(0, 50); }
END_TEST
START_TEST(gpt_uvm_at_50_percent) { check_uvm_fraction(1, 50); }
END_TEST
START_TEST(gpt_uvm_at_30_percent) { check_uvm_fraction(1, 30); }
END_TEST
START_TEST(gpt_uvm_with_a_plan_at_30_percent) { check_uvm_plan(1, 30); }
END_TEST
/* check=on poisons every output an op does not declare it reads: the
 * examples' ops declare theirs, so the bytes stay the reference's. */
START_TEST(mlp_checked_at_30_percent)
{
	struct run got = { 0 };

	check_run(0, "swap,check=on", 30, NULL, &got);
}
END_TEST
START_TEST(gpt_checked_at_30_percent)
{
	struct run got = { 0 };

	check_run(1, "uvm,check=on", 30, NULL, &got);
}
END_TEST

/*
 * budget=30%peak: the first iteration measures the peak with the whole
 * device, and the budget drops to 30% of it for the others; the bytes
 * stay the reference's.  The same budget as check_run's 30%, found by
 * the library instead of a run of its own.
 */
static void check_peak_budget(int model, const char *mode)
{
	const struct run *ref = reference_of(model);
	struct run got = { 0 }, whole = { 0 };
	uint64_t peak = ref->st.device_peak;
	char config[160];

	/* In mode=uvm the peak is the managed pages' (each tensor in whole
	 * 64 KiB pages), larger than the bytes' for these small tensors:
	 * the library measures that one. */
	if (strncmp(mode, "uvm", 3) == 0) {
		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=backed,mode=%s,log=error",
			 mode);
		models[model](config, NULL, &whole);
		peak = whole.st.device_peak;
		free(whole.weights);
	}

	/* share=auto joins the segment of the simulated device: one of
	 * this process's own, so that other runs do not share it. */
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=30%%peak,"
		 "share=auto,device=%d,log=error", mode,
		 2 + (int)(getpid() % 60));
	models[model](config, NULL, &got);
	ck_assert_uint_eq(got.len, ref->len);
	ck_assert_msg(memcmp(got.weights, ref->weights, ref->len) == 0,
		      "%s, %s: weights differ at 30%%peak", model_names[model],
		      mode);
	ck_assert_msg(memcmp(got.losses, ref->losses, sizeof(ref->losses)) ==
			      0,
		      "%s, %s: losses differ at 30%%peak", model_names[model],
		      mode);
	ck_assert_uint_le(got.st.budget, peak * 30 / 100);
	ck_assert_uint_ge(got.st.budget, peak * 29 / 100);
	ck_assert_uint_gt(got.st.swap_out_count + got.st.uvm_evictions, 0);
	free(got.weights);
}

/* 1%peak is below what the MLP's largest op needs: the budget stops at
 * that op's need (with a warning) and the training still runs, to the
 * same bytes. */
START_TEST(a_peak_share_below_the_largest_op_stops_there)
{
	const struct run *ref = reference_of(0);
	struct run got = { 0 };

	models[0]("backend=sim,sim_memory=backed,mode=swap,budget=1%peak,"
		  "log=error", NULL, &got);
	ck_assert_uint_eq(got.len, ref->len);
	ck_assert(memcmp(got.weights, ref->weights, ref->len) == 0);
	ck_assert_uint_gt(got.st.budget, ref->st.device_peak / 100);
	ck_assert_uint_lt(got.st.budget, ref->st.device_peak);
	free(got.weights);
}
END_TEST

START_TEST(mlp_at_30_percent_of_its_peak) { check_peak_budget(0, "swap"); }
END_TEST
START_TEST(gpt_at_30_percent_of_its_peak) { check_peak_budget(1, "uvm"); }
END_TEST

START_TEST(mlp_uvm_by_copy_at_30_percent)
{
	/* The evicted bytes waited in pinned host buffers. */
	ck_assert_uint_gt(check_uvm_by_copy(0, 30, false, "").st.host_pinned,
			  0);
}
END_TEST
START_TEST(mlp_uvm_by_copy_with_a_plan) { check_uvm_by_copy(0, 50, true, ""); }
END_TEST
START_TEST(gpt_uvm_by_copy_with_a_plan_at_30_percent)
{
	check_uvm_by_copy(1, 30, true, "");
}
END_TEST

/* With no pinned memory to be had, evictions go by prefetch instead:
 * the same bytes, and nothing is refused. */
START_TEST(mlp_uvm_by_copy_without_pinned_memory)
{
	struct run got =
		check_uvm_by_copy(0, 30, true, ",fault=pinned_alloc@1+");

	ck_assert_uint_eq(got.st.host_pinned, 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

/*
 * A training that fails reports its failure: the examples' cleanup
 * destroys only the tensors they made, so tmm_last_error still names
 * what failed (issue #21's sweep saw "null tensor handle" instead), and
 * says what ran out of memory, not only that something did.  Each
 * of the first host allocations of a context fails in turn, which stops
 * the MLP while it makes its layers.
 */
START_TEST(a_failed_training_names_its_failure)
{
	struct mlp_config mc;
	char config[96];
	unsigned failed = 0;

	mlp_config_default(&mc);
	mc.steps = 1;
	mc.layers = 5;
	for (unsigned n = 1; n <= 60; n++) {
		uint8_t *w = NULL;
		size_t len;
		tmm_ctx *ctx;
		int rc;

		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=backed,fault=host_alloc@%u",
			 n);
		if (tmm_ctx_create(&ctx, config) < 0)
			continue;
		rc = mlp_train(ctx, &mc, NULL, &w, &len, NULL);
		if (rc < 0) {
			failed++;
			ck_assert_msg(tmm_last_error(ctx)[0], "@%u: no message",
				      n);
			ck_assert_msg(!strstr(tmm_last_error(ctx),
					      "null tensor handle"),
				      "@%u: %s", n, tmm_last_error(ctx));
			/* What ran out of memory, not just that it did. */
			ck_assert_msg(strcmp(tmm_last_error(ctx),
					     "out of memory") != 0,
				      "@%u: a bare \"out of memory\"", n);
		}
		free(w);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	ck_assert_uint_gt(failed, 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("train_e2e");
	TCase *mlp = tcase_create("mlp"), *gpt = tcase_create("gpt");
	SRunner *sr;
	int status;

	tcase_set_timeout(mlp, 300);
	tcase_set_timeout(gpt, 300);
	tcase_add_test(mlp, mlp_at_100_percent);
	tcase_add_test(mlp, mlp_at_50_percent);
	tcase_add_test(mlp, mlp_at_30_percent);
	tcase_add_test(mlp, mlp_with_a_swap_and_recompute_plan);
	tcase_add_test(mlp, mlp_over_chunks_at_30_percent);
	tcase_add_test(mlp, mlp_uvm_at_50_percent);
	tcase_add_test(mlp, mlp_uvm_at_30_percent);
	tcase_add_test(mlp, mlp_uvm_with_a_plan);
	tcase_add_test(mlp, mlp_uvm_by_copy_at_30_percent);
	tcase_add_test(mlp, mlp_checked_at_30_percent);
	tcase_add_test(mlp, mlp_at_30_percent_of_its_peak);
	tcase_add_test(mlp, a_peak_share_below_the_largest_op_stops_there);
	tcase_add_test(mlp, mlp_uvm_by_copy_with_a_plan);
	tcase_add_test(mlp, mlp_uvm_mix_with_a_plan);
	tcase_add_test(mlp, mlp_uvm_by_the_copy_kernel);
	tcase_add_test(mlp, mlp_uvm_by_copy_without_pinned_memory);
	tcase_add_test(mlp, a_failed_training_names_its_failure);
	tcase_add_test(gpt, gpt_at_100_percent);
	tcase_add_test(gpt, gpt_at_50_percent);
	tcase_add_test(gpt, gpt_at_30_percent);
	tcase_add_test(gpt, gpt_with_a_swap_and_recompute_plan);
	tcase_add_test(gpt, gpt_with_a_plan_at_30_percent);
	tcase_add_test(gpt, gpt_over_chunks_at_30_percent);
	tcase_add_test(gpt, gpt_uvm_at_50_percent);
	tcase_add_test(gpt, gpt_uvm_at_30_percent);
	tcase_add_test(gpt, gpt_uvm_with_a_plan_at_30_percent);
	tcase_add_test(gpt, gpt_uvm_by_copy_with_a_plan_at_30_percent);
	tcase_add_test(gpt, gpt_checked_at_30_percent);
	tcase_add_test(gpt, gpt_at_30_percent_of_its_peak);
	suite_add_tcase(s, mlp);
	suite_add_tcase(s, gpt);
	sr = srunner_create(s);
	/* In-process, so the reference runs are made once per model. */
	srunner_set_fork_status(sr, CK_NOFORK);
	status = check_run_all(sr);
	free(reference[0].weights);
	free(reference[1].weights);
	return status;
}
