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
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "handmade_plan.h"
#include "lib/mem/pool.h"
#include "lib/exec/recompute.h"
#include "toy_ops.h"
#include "lib/record/tracker.h"

#define CHAIN 24

static tmm_ctx *make_ctx(const char *config)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

static struct tmm_tensor_rec *rec(tmm_ctx *ctx, tmm_tensor t)
{
	struct tmm_tensor_rec *r = tmm_tensor_lookup(ctx, t, "test");

	ck_assert_ptr_nonnull(r);
	return r;
}

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
	uint64_t budget = reference_st.device_peak * 30 / 100;

	snprintf(config, sizeof(config), "backend=sim,mode=uvm,budget=%llu",
		 (unsigned long long)budget);
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
	uint64_t budget = reference_st.device_peak * 30 / 100;
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);

	ck_assert_ptr_nonnull(got);
	snprintf(config, sizeof(config), "backend=sim,mode=uvm,budget=%llu",
		 (unsigned long long)budget);
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

	snprintf(config, sizeof(config), "backend=sim,mode=swap,budget=%llu",
		 (unsigned long long)budget);
	check_plan_run(config, HANDMADE_MIXED, &st);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_gt(st.recomputations, 0);
	ck_assert_uint_gt(st.swap_out_count, st.passive_evictions);
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

/* ---- plans that must be refused -------------------------------------- */

/* One iteration: a = fill(w); b = mix(a, w); b += 1 in place; c by host. */
static void small_iteration(tmm_ctx *ctx, tmm_tensor w)
{
	tmm_tensor a, b, c, in[2];
	static uint32_t host[ELEMS];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "b",
					   &b), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "c",
					   &c), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, c, 0, host, BYTES), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &a, 1);
	in[0] = a;
	in[1] = c;
	toy_run(ctx, "mix", 0, toy_mix, in, 2, &b, 1);
	toy_run(ctx, "bump", TMM_OP_PURE, toy_bump, &b, 1, &b, 1);
	in[0] = a;
	in[1] = b;
	toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &c, 1);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, b), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, c), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/* accesses: 0 w, 1 a (fill) | 2 a, 3 c, 4 b (mix) | 5 b (bump) |
 * 6 a, 7 b, 8 c (mix) */
static void expect_rejected(tmm_ctx *ctx, enum tmm_action_type type,
			    uint32_t trigger, uint64_t key, uint32_t back,
			    const char *why)
{
	struct tmm_plan plan;

	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(ctx), "t"),
			 0);
	ck_assert_int_eq(tmm_plan_add(&plan, type, trigger, key, back, 0), 0);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), -EINVAL);
	ck_assert_msg(strstr(tmm_last_error(ctx), why),
		      "'%s' does not say '%s'", tmm_last_error(ctx), why);
	tmm_plan_free(&plan);
}

START_TEST(plans_that_cannot_hold_are_rejected)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 1);
	struct tmm_plan plan;
	uint64_t a = tmm_key_of_ordinal(0), b = tmm_key_of_ordinal(1);
	uint64_t c = tmm_key_of_ordinal(2);

	ck_assert_int_eq(tmm_plan_init(&plan, &(struct tmm_trace){ 0 }, "t"),
			 0);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), -EAGAIN);
	tmm_plan_free(&plan);
	small_iteration(ctx, w);
	ck_assert_uint_eq(tmm_tracker_first(ctx)->n_accesses, 9);

	/* b's last writer before access 5 is bump: in place. */
	expect_rejected(ctx, TMM_ACT_EVICT_DROP, 5, b, 7, "in place");
	/* after access 4, b comes from mix, which is not pure. */
	expect_rejected(ctx, TMM_ACT_EVICT_DROP, 4, b, 5, "TMM_OP_PURE");
	/* c was written by the host before it was read. */
	expect_rejected(ctx, TMM_ACT_EVICT_DROP, 3, c, 8, "not produced");
	/* w: written by the host before the iteration. */
	expect_rejected(ctx, TMM_ACT_EVICT_DROP, 0, w.id, 0, "back-access");
	/* The back-access must be an access of the same tensor. */
	expect_rejected(ctx, TMM_ACT_EVICT_SWAP, 2, a, 4, "another tensor");
	expect_rejected(ctx, TMM_ACT_EVICT_SWAP, 9, a, 10, "past");
	expect_rejected(ctx, TMM_ACT_PREFETCH, 2, 12345, 6, "no tensor");
	/* A drop that holds: a, made by the pure fill. */
	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(ctx), "t"),
			 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_DROP, 2, a, 6, 0),
			 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP, 1, a, 2, 0),
			 0);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "not sorted"));
	tmm_plan_sort(&plan);
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), 0);
	/* A plan for another iteration shape. */
	plan.access_keys[3] ^= 1;
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "another "
							  "iteration"));
	tmm_plan_free(&plan);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* ---- recomputation, driven directly ----------------------------------- */

static void read_all(tmm_ctx *ctx, tmm_tensor t, uint32_t *out)
{
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, out, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
}

static void expect_drop(tmm_ctx *ctx, tmm_tensor t)
{
	ck_assert_msg(tmm_recompute_drop(ctx, rec(ctx, t)) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_int_eq(rec(ctx, t)->state, TMM_TS_DROPPED);
}

/* a = fill(w); b = mix(a, w); c = mix(b, w); d = mix(c, w), inside an
 * iteration that the caller ends. */
static void make_chain(tmm_ctx *ctx, tmm_tensor w, tmm_tensor *t, int n)
{
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	for (int i = 1; i < n; i++) {
		tmm_tensor in[2] = { t[i - 1], w };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[i], 1);
	}
}

START_TEST(recursive_and_collective_recomputation)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 7), t[4];
	uint32_t want[4][ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	make_chain(ctx, w, t, 4);
	for (int i = 0; i < 4; i++)
		read_all(ctx, t[i], want[i]);
	for (int i = 1; i < 4; i++)
		expect_drop(ctx, t[i]);
	/* d needs c needs b: three ops re-run, in order. */
	read_all(ctx, t[3], got);
	ck_assert_mem_eq(got, want[3], BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 3);
	ck_assert_uint_eq(st.drops, 3);
	/* b and c were kept on the way (collective): no more re-runs. */
	ck_assert_int_eq(rec(ctx, t[1])->state, TMM_TS_RESIDENT);
	ck_assert(rec(ctx, t[1])->regenerated);
	read_all(ctx, t[1], got);
	ck_assert_mem_eq(got, want[1], BYTES);
	read_all(ctx, t[2], got);
	ck_assert_mem_eq(got, want[2], BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 3);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(collective_intermediates_go_first_when_memory_is_short)
{
	/* Room for 8 tensors: w, the chain of 6, one more. */
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap,budget=128KiB");
	tmm_tensor w = toy_weight(ctx, 3), t[6], ballast[4];
	uint32_t want[ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	void *p;

	make_chain(ctx, w, t, 6);
	read_all(ctx, t[5], want);
	for (int i = 0; i < 6; i++)
		expect_drop(ctx, t[i]);
	/* Take 4 of the 7 free slots, pinned: regenerating t[5] through
	 * t[0]..t[4] can then keep only 3 tensors on the device. */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_SCRATCH,
						   "ballast", &ballast[i]), 0);
		ck_assert_int_eq(tmm_acquire(ctx, ballast[i], TMM_WRITE, &p),
				 0);
	}
	read_all(ctx, t[5], got);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 6);
	/* Room was made by dropping regenerated intermediates again (the
	 * oldest first), never by swapping anything out. */
	ck_assert_uint_eq(st.swap_out_count, 0);
	ck_assert_uint_eq(st.drops, 6 + 3);
	ck_assert_int_eq(rec(ctx, t[0])->state, TMM_TS_DROPPED);
	ck_assert_int_eq(rec(ctx, t[4])->state, TMM_TS_RESIDENT);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tmm_release(ctx, ballast[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(overwriting_an_input_regenerates_its_readers_first)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 5), t[3];
	uint32_t want1[ELEMS], want2[ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	make_chain(ctx, w, t, 3);
	read_all(ctx, t[1], want1);
	read_all(ctx, t[2], want2);
	expect_drop(ctx, t[1]);
	ck_assert_uint_eq(rec(ctx, t[0])->dropped_dependents, 1);
	/* Update t[0] in place: t[1] must be recomputed from the old t[0]
	 * before that. */
	toy_run(ctx, "bump", 0, toy_bump, &t[0], 1, &t[0], 1);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 1);
	ck_assert_uint_eq(rec(ctx, t[0])->dropped_dependents, 0);
	read_all(ctx, t[1], got);
	ck_assert_mem_eq(got, want1, BYTES);
	/* The same before a host write of the weight that t[2] read. */
	expect_drop(ctx, t[2]);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, want1, BYTES), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 2);
	read_all(ctx, t[2], got);
	ck_assert_mem_eq(got, want2, BYTES);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Capuchin §4.4's T1 -> T2 -> T3 -> T4: the program destroys T3 and T2
 * after their last use while T4 is dropped.  Each can be recomputed, so
 * each becomes a ghost: its memory is freed at once, nothing is
 * recomputed, and the program can no longer reach it.  Reading T4 then
 * recomputes T2, T3 and T4, and the ghosts go.
 */
START_TEST(destroyed_sources_become_ghosts)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 9), t[4], x;
	uint32_t want[ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint64_t in_use;

	make_chain(ctx, w, t, 4);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "x",
					   &x), 0);
	read_all(ctx, t[3], want);
	expect_drop(ctx, t[3]);
	in_use = tmm_pool_in_use(ctx->pool);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[2]), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 0);
	ck_assert_uint_eq(tmm_pool_in_use(ctx->pool), in_use - 2 * BYTES);
	ck_assert(!tmm_list_empty(&ctx->ghosts));
	/* Gone, as far as the program can tell. */
	ck_assert_int_eq(tmm_tensor_read(ctx, t[2], 0, got, BYTES), -EBADF);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), -EBADF);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, t[2]), 0);

	read_all(ctx, t[3], got);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 3);
	/* t[3] is back.  After the next op the ghosts hold no memory
	 * again, and stay for the rest of the iteration, in case another
	 * drop needs them. */
	ck_assert_uint_eq(tmm_pool_in_use(ctx->pool), in_use + BYTES);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &x, 1);
	ck_assert_uint_eq(tmm_pool_in_use(ctx->pool), in_use);
	ck_assert(!tmm_list_empty(&ctx->ghosts));
	/* So t[3] can be dropped and recomputed again. */
	expect_drop(ctx, t[3]);
	read_all(ctx, t[3], got);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 6);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert(tmm_list_empty(&ctx->ghosts));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* One step of the order a program and a plan meet in training: a and b
 * are freed after their last use, and only later does the plan drop c,
 * which is recomputed through them. */
static void freed_then_dropped_step(tmm_ctx *ctx, tmm_tensor w,
				    uint32_t *got)
{
	tmm_tensor t[3], x, y;

	make_chain(ctx, w, t, 3);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "x",
					   &x), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "y",
					   &y), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[0]), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), 0);
	/* Accesses 8 and 9; the plan drops c after access 9. */
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &x, 1);
	{
		tmm_tensor in[2] = { t[2], w };

		/* Access 10, c's back-access. */
		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &y, 1);
	}
	read_all(ctx, y, got);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[2]), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, x), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, y), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

START_TEST(a_reader_is_dropped_after_its_source_is_freed)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 11);
	uint32_t want[ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct tmm_plan plan;

	freed_then_dropped_step(ctx, w, want);
	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(ctx), "test"),
			 0);
	ck_assert_uint_eq(plan.n_accesses, 13);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_DROP, 9,
				      tmm_key_of_ordinal(2), 10, 0), 0);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);

	freed_then_dropped_step(ctx, w, got);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.plan_actions, 1);
	ck_assert_uint_eq(st.drops, 1); /* ghosts are not the plan's drops */
	ck_assert_uint_eq(st.recomputations, 3);
	ck_assert_uint_eq(st.plan_divergences, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A ghost that nothing needs any more goes at the next iteration, and
 * one still needed when the context ends is freed with it. */
START_TEST(ghosts_go_when_no_longer_needed)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 4), t[3];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	make_chain(ctx, w, t, 3);
	expect_drop(ctx, t[2]);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), 0);
	ck_assert(!tmm_list_empty(&ctx->ghosts));
	/* The dependent itself is destroyed: the ghost serves nothing. */
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[2]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert(tmm_list_empty(&ctx->ghosts));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);

	/* Left as a ghost at teardown. */
	make_chain(ctx, w, t, 3);
	expect_drop(ctx, t[2]);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A source that could not be recomputed (the host wrote it) cannot be a
 * ghost: its readers are recomputed before it goes. */
START_TEST(destroying_an_unrecomputable_input_regenerates_its_readers)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 9), a, b;
	uint32_t want[ELEMS], got[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "b",
					   &b), 0);
	for (int i = 0; i < ELEMS; i++)
		want[i] = (uint32_t)i * 2654435761u;
	ck_assert_int_eq(tmm_tensor_write(ctx, a, 0, want, BYTES), 0);
	{
		tmm_tensor in[2] = { a, w };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &b, 1);
	}
	read_all(ctx, b, want);
	expect_drop(ctx, b);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert(tmm_list_empty(&ctx->ghosts));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.recomputations, 1);
	read_all(ctx, b, got);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(only_recomputable_tensors_are_dropped)
{
	tmm_ctx *ctx = make_ctx("backend=sim,mode=swap");
	tmm_tensor w = toy_weight(ctx, 2), t[2], x, y, in[1];
	uint32_t want_x[ELEMS], got[ELEMS], bumped_y[ELEMS];

	make_chain(ctx, w, t, 2);
	/* Written by the host. */
	ck_assert_int_eq(tmm_recompute_drop(ctx, rec(ctx, w)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "TMM_OP_PURE"));
	/* Updated in place. */
	toy_run(ctx, "bump", TMM_OP_PURE, toy_bump, &t[0], 1, &t[0], 1);
	ck_assert_int_eq(tmm_recompute_drop(ctx, rec(ctx, t[0])), -EINVAL);
	/* Its input changed since (t[0] was bumped). */
	ck_assert_int_eq(tmm_recompute_drop(ctx, rec(ctx, t[1])), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "changed"));
	/* Pinned. */
	{
		void *p;

		ck_assert_int_eq(tmm_acquire(ctx, t[1], TMM_READ, &p), 0);
		ck_assert_int_eq(tmm_recompute_drop(ctx, rec(ctx, t[1])),
				 -EINVAL);
		ck_assert_int_eq(tmm_release(ctx, t[1]), 0);
	}

	/* A pure op with two outputs: dropping one and re-running the op
	 * must not overwrite the other, which changed since. */
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "x",
					   &x), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "y",
					   &y), 0);
	in[0] = w;
	{
		tmm_tensor outs[2] = { x, y };

		toy_run(ctx, "split", TMM_OP_PURE, toy_split, in, 1, outs, 2);
	}
	read_all(ctx, x, want_x);
	expect_drop(ctx, x);
	toy_run(ctx, "bump", 0, toy_bump, &y, 1, &y, 1);
	read_all(ctx, y, bumped_y);
	read_all(ctx, x, got);
	ck_assert_mem_eq(got, want_x, BYTES);
	read_all(ctx, y, got);
	ck_assert_mem_eq(got, bumped_y, BYTES);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *guided = tcase_create("guided");
	TCase *rules = tcase_create("rules");
	SRunner *sr;
	int failed;

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
	tcase_add_test(rules, plans_that_cannot_hold_are_rejected);
	tcase_add_test(rules, recursive_and_collective_recomputation);
	tcase_add_test(rules, collective_intermediates_go_first_when_memory_is_short);
	tcase_add_test(rules, overwriting_an_input_regenerates_its_readers_first);
	tcase_add_test(rules, destroyed_sources_become_ghosts);
	tcase_add_test(rules, ghosts_go_when_no_longer_needed);
	tcase_add_test(rules, a_reader_is_dropped_after_its_source_is_freed);
	tcase_add_test(rules,
		       destroying_an_unrecomputable_input_regenerates_its_readers);
	tcase_add_test(rules, only_recomputable_tensors_are_dropped);
	suite_add_tcase(s, rules);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
