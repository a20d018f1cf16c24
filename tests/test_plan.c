/* SPDX-License-Identifier: MIT */
/*
 * test_plan.c — plans, guided execution, and recomputation.
 *
 * Plans are written by hand here (tests/handmade_plan.c, or action by
 * action), installed after the first iteration, and followed by the next
 * ones.  Every run's bytes are compared with a run that has room for
 * everything; the counters must show that the actions really happened.
 * Recomputation is also driven directly (tmm_recompute_drop) to check the
 * lineage rules: recursive regeneration, collective recomputation, and
 * that nothing a dropped tensor needs is overwritten or destroyed first.
 * Those, and the plans that must be refused, are in test_plan_rules.c.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/base/managed_page.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "handmade_plan.h"
#include "toy_ops.h"
#include "lib/record/tracker.h"
#include "test_plan.h"

#define CHAIN 24

/* ---- a training-like iteration --------------------------------------- */

/*
 * Forward: t[0] = fill(w), t[i] = mix(t[i-1], t[i/2]) (pure).  Backward,
 * from the last tensor down: t[i] = mix(t[i], t[CHAIN-1-i]) in place (not
 * recomputable), then w = mix(w, t[0]) in place (the "update").  Every
 * forward tensor has a long gap between its forward and backward use.
 * `skip` leaves out one forward op, for divergence.  The bytes of every
 * tensor and of w are appended to `out` (CHAIN + 1 blocks).
 */
static void chain_iteration(tmm_ctx *ctx, tmm_tensor w, uint32_t *out,
			    int skip)
{
	tmm_tensor t[CHAIN];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < CHAIN; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	for (int i = 1; i < CHAIN; i++) {
		tmm_tensor in[2] = { t[i - 1], t[i / 2] };

		if (i == skip)
			in[0] = in[1] = t[0];
		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[i], 1);
	}
	for (int i = CHAIN - 1; i >= 0; i--) {
		tmm_tensor in[2] = { t[i], t[CHAIN - 1 - i] };

		toy_run(ctx, "mix_back", 0, toy_mix, in, 2, &t[i], 1);
	}
	{
		tmm_tensor in[2] = { w, t[0] };

		toy_run(ctx, "update", TMM_OP_BACKWARD, toy_mix, in, 2, &w, 1);
	}
	for (int i = 0; i < CHAIN; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0,
						 out + (size_t)i * ELEMS,
						 BYTES), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	}
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0,
					 out + (size_t)CHAIN * ELEMS, BYTES),
			 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

#define RESULT_ELEMS ((size_t)(CHAIN + 1) * ELEMS)
#define ITERATIONS 4

/* When set, train() adds ADVISE actions to the handmade plan (read-mostly
 * and preferred device on each tensor made outside the iteration, at its
 * first access) and counts in advice_fired those carried out. */
static bool with_advice;
static unsigned advice_fired;

static void add_advice(const struct tmm_trace *t, struct tmm_plan *plan)
{
	static const enum tmm_plan_advice advice[] = {
		TMM_PLAN_ADVICE_READ_MOSTLY, TMM_PLAN_ADVICE_PREFER_DEVICE
	};

	for (uint32_t i = 0; i < t->n_tensors; i++) {
		uint32_t k = 0;

		if (t->tensors[i].flags & TMM_TT_MADE_INSIDE)
			continue;
		while (k < t->n_accesses && t->accesses[k].tensor != i)
			k++;
		if (k == t->n_accesses)
			continue;
		for (size_t a = 0; a < 2; a++)
			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_ADVISE, k,
						      t->tensors[i].key,
						      TMM_PLAN_NONE,
						      advice[a]), 0);
	}
	tmm_plan_sort(plan);
}

/* ADVISE actions of the plan followed, each carried out every time.
 * Read-mostly on a tensor the iteration writes (w, which the update
 * writes) is refused every time instead, and not counted. */
static unsigned advice_carried_out(tmm_ctx *ctx)
{
	const struct tmm_plan *plan = tmm_guide_plan(ctx);
	unsigned n = 0;

	ck_assert_ptr_nonnull(plan);
	for (uint32_t i = 0; i < plan->n_actions; i++) {
		const struct tmm_plan_action *a = &plan->actions[i];

		if (a->type != TMM_ACT_ADVISE)
			continue;
		if (a->advice == TMM_PLAN_ADVICE_READ_MOSTLY) {
			ck_assert_uint_gt(a->skipped, 0);
			continue;
		}
		ck_assert_uint_eq(a->skipped, 0);
		n++;
	}
	return n;
}

/* Runs ITERATIONS iterations; after the first, installs the handmade plan
 * of `style` when style >= 0.  Fills results and stats. */
static void train(const char *config, int style, uint32_t *results,
		  struct tmm_stats *st)
{
	tmm_ctx *ctx = make_ctx(config);
	tmm_tensor w = toy_weight(ctx, 1);

	for (int it = 0; it < ITERATIONS; it++) {
		chain_iteration(ctx, w, results + it * RESULT_ELEMS, -1);
		if (it == 0 && style >= 0) {
			struct tmm_plan plan;
			unsigned ev = handmade_plan(tmm_tracker_first(ctx),
						    (enum handmade_style)style,
						    4, 3, &plan);

			ck_assert_uint_gt(ev, CHAIN / 2);
			if (with_advice)
				add_advice(tmm_tracker_first(ctx), &plan);
			ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
				      tmm_last_error(ctx));
			tmm_plan_free(&plan);
		}
	}
	if (with_advice)
		advice_fired = advice_carried_out(ctx);
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static uint32_t *reference;
static struct tmm_stats reference_st;

static void make_reference(void)
{
	reference = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);
	ck_assert_ptr_nonnull(reference);
	train("backend=sim,mode=swap", -1, reference, &reference_st);
	ck_assert_uint_eq(reference_st.swap_out_count, 0);
	ck_assert_uint_eq(reference_st.drops, 0);
}

static void free_reference(void)
{
	free(reference);
	reference = NULL;
}

static void check_plan_run(const char *config, enum handmade_style style,
			   struct tmm_stats *st)
{
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);

	ck_assert_ptr_nonnull(got);
	train(config, (int)style, got, st);
	for (int it = 0; it < ITERATIONS; it++)
		ck_assert_msg(!memcmp(got + it * RESULT_ELEMS,
				      reference + it * RESULT_ELEMS,
				      sizeof(uint32_t) * RESULT_ELEMS),
			      "iteration %d differs from the reference", it + 1);
	free(got);
	ck_assert_uint_eq(st->guided_iterations, ITERATIONS - 1);
	ck_assert_uint_eq(st->plan_divergences, 0);
	ck_assert_uint_gt(st->plan_actions, 0);
}

START_TEST(swap_plan_keeps_bytes_and_evicts_ahead)
{
	struct tmm_stats st;

	check_plan_run("backend=sim,mode=swap", HANDMADE_SWAP, &st);
	/* Room for everything, yet the plan moved tensors out and back. */
	ck_assert_uint_gt(st.swap_out_count, 0);
	ck_assert_uint_gt(st.swap_in_count, 0);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_eq(st.drops, 0);
}
END_TEST

START_TEST(drop_plan_recomputes_the_same_bytes)
{
	struct tmm_stats st;

	check_plan_run("backend=sim,mode=swap", HANDMADE_DROP, &st);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_gt(st.recomputations, 0);
	ck_assert_uint_gt(st.recompute_ns, 0);
}
END_TEST

/* `percent` of the unconstrained peak in mode=uvm, where each 16 KiB
 * tensor takes a whole 64 KiB managed page (lib/base/managed_page.h). */
static uint64_t uvm_budget(unsigned percent)
{
	uint64_t pages = (reference_st.device_peak + BYTES - 1) / BYTES;

	return pages * TMM_MANAGED_PAGE * percent / 100;
}

/*
 * mode=uvm: the same plan becomes prefetches to the host and back,
 * discards with recomputation, and advice on the driver, all bit-identical
 * under a budget that oversubscribes the device; the runtime evicts
 * nothing by itself.
 */
START_TEST(uvm_plan_prefetches_advises_and_discards)
{
	struct tmm_stats st;
	char config[128];
	uint64_t budget = uvm_budget(30);

	snprintf(config, sizeof(config), "backend=sim,mode=uvm,uvm_cap=driver,"
		 "budget=%lluB", (unsigned long long)budget);
	with_advice = true;
	check_plan_run(config, HANDMADE_MIXED, &st);
	with_advice = false;
	ck_assert_str_eq(st.mode, "uvm");
	/* Preferred device on w, each iteration; read-mostly refused. */
	ck_assert_uint_eq(advice_fired, 1);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_gt(st.recomputations, 0);
	ck_assert_uint_gt(st.uvm_discard_bytes, 0);
	ck_assert_uint_gt(st.swap_out_count, 0); /* prefetches to host */
	ck_assert_uint_gt(st.prefetches, 0);
	ck_assert_uint_gt(st.uvm_prefetch_bytes, 0);
	ck_assert_uint_gt(st.uvm_faults, 0);
	ck_assert_uint_eq(st.passive_evictions, 0);
	/* Only the refused read-mostly advice, once per guided iteration. */
	ck_assert_uint_gt(st.guided_iterations, 0);
	ck_assert_uint_eq(st.plan_actions_skipped, st.guided_iterations);
	ck_assert_uint_le(st.device_peak, budget);
}
END_TEST

/* Without a plan, mode=uvm under the same budget leaves it all to the
 * driver: faults and evictions, the same bytes. */
START_TEST(uvm_without_a_plan_faults_and_evicts)
{
	struct tmm_stats st;
	char config[128];
	uint64_t budget = uvm_budget(30);
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);

	ck_assert_ptr_nonnull(got);
	snprintf(config, sizeof(config), "backend=sim,mode=uvm,uvm_cap=driver,"
		 "budget=%lluB", (unsigned long long)budget);
	train(config, -1, got, &st);
	ck_assert_mem_eq(got, reference,
			 sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);
	free(got);
	ck_assert_uint_gt(st.uvm_faults, 0);
	ck_assert_uint_ge(st.uvm_fault_batches, 1);
	ck_assert_uint_gt(st.uvm_evictions, 0);
	ck_assert_uint_gt(st.uvm_eviction_bytes, 0);
	/* Only liveness, policy none's plan, swaps anything out. */
	ck_assert_uint_le(st.swap_out_count, st.plan_actions);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_le(st.device_peak, budget);
}
END_TEST

START_TEST(mixed_plan_under_a_tight_budget)
{
	struct tmm_stats st;
	char config[128];
	uint64_t budget = reference_st.device_peak * 30 / 100;

	snprintf(config, sizeof(config), "backend=sim,mode=swap,budget=%lluB",
		 (unsigned long long)budget);
	check_plan_run(config, HANDMADE_MIXED, &st);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_gt(st.recomputations, 0);
	/* Evictions, copied or clean, beyond the passive ones: the plan's. */
	ck_assert_uint_gt(st.swap_out_count + st.clean_evictions,
			  st.passive_evictions);
	ck_assert_uint_le(st.device_peak, budget);
}
END_TEST

START_TEST(divergence_falls_back_to_passive_mode)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap,budget=160KiB");
	tmm_tensor w = toy_weight(ctx, 1), w_ref;
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS);
	uint32_t *want = malloc(sizeof(uint32_t) * RESULT_ELEMS);
	tmm_ctx *ref = make_ctx("backend=sim,mode=swap");
	struct tmm_plan plan;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint64_t actions;

	w_ref = toy_weight(ref, 1);
	chain_iteration(ctx, w, got, -1);
	chain_iteration(ref, w_ref, want, -1);
	handmade_plan(tmm_tracker_first(ctx), HANDMADE_MIXED, 4, 3, &plan);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), 0);
	tmm_plan_free(&plan);

	/* The second iteration leaves the plan at op 12. */
	chain_iteration(ctx, w, got, 12);
	chain_iteration(ref, w_ref, want, 12);
	ck_assert_mem_eq(got, want, sizeof(uint32_t) * RESULT_ELEMS);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.plan_divergences, 1);
	ck_assert_uint_eq(st.guided_iterations, 1);
	actions = st.plan_actions + st.plan_actions_skipped;

	/* The third follows it again. */
	chain_iteration(ctx, w, got, -1);
	chain_iteration(ref, w_ref, want, -1);
	ck_assert_mem_eq(got, want, sizeof(uint32_t) * RESULT_ELEMS);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.plan_divergences, 1);
	ck_assert_uint_eq(st.guided_iterations, 2);
	ck_assert_uint_gt(st.plan_actions + st.plan_actions_skipped,
			  2 * actions);
	free(got);
	free(want);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ref), 0);
}
END_TEST

/* A prefetch one access ahead is counted late, in either mode. */
static void check_late_prefetch(const char *config)
{
	tmm_ctx *ctx = make_ctx(config);
	tmm_tensor w = toy_weight(ctx, 1);
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS);
	const struct tmm_trace *t;
	const struct tmm_plan *installed;
	struct tmm_plan plan;
	uint32_t late = 0;

	chain_iteration(ctx, w, got, -1);
	t = tmm_tracker_first(ctx);
	/* Prefetch one access ahead: far too late to hide the copy. */
	handmade_plan(t, HANDMADE_SWAP, 4, 1, &plan);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), 0);
	tmm_plan_free(&plan);
	chain_iteration(ctx, w, got, -1);
	installed = tmm_guide_plan(ctx);
	for (uint32_t i = 0; i < installed->n_actions; i++)
		late += installed->actions[i].late;
	ck_assert_uint_gt(late, 0);
	free(got);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

START_TEST(late_prefetch_is_fed_back)
{
	check_late_prefetch("backend=sim,mode=swap");
}
END_TEST

/* mode=uvm: the prefetch to the device is in flight like a swap-in. */
START_TEST(late_prefetch_is_fed_back_in_uvm_mode)
{
	check_late_prefetch("backend=sim,mode=uvm");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *guided = tcase_create("guided");

	tcase_set_timeout(guided, 120);
	tcase_add_unchecked_fixture(guided, make_reference, free_reference);
	tcase_add_test(guided, swap_plan_keeps_bytes_and_evicts_ahead);
	tcase_add_test(guided, drop_plan_recomputes_the_same_bytes);
	tcase_add_test(guided, mixed_plan_under_a_tight_budget);
	tcase_add_test(guided, uvm_plan_prefetches_advises_and_discards);
	tcase_add_test(guided, uvm_without_a_plan_faults_and_evicts);
	tcase_add_test(guided, divergence_falls_back_to_passive_mode);
	tcase_add_test(guided, late_prefetch_is_fed_back);
	tcase_add_test(guided, late_prefetch_is_fed_back_in_uvm_mode);
	suite_add_tcase(s, guided);
	add_plan_rules_tests(s);
	return check_run_all(srunner_create(s));
}
