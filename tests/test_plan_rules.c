/* SPDX-License-Identifier: MIT */
/*
 * test_plan_rules.c — the "rules" case of the plan suite (test_plan.c):
 * plans the guide must refuse, and recomputation driven directly.
 *
 * A plan that cannot hold — a drop of a tensor that is not recomputable
 * there, a back-access of another tensor or past the end, an unsorted
 * plan, a plan for another iteration — is refused with a message that
 * says why.  tmm_recompute_drop() is called by hand to check the lineage
 * rules: recursive regeneration, collective recomputation under a tight
 * budget, that nothing a dropped tensor needs is overwritten or destroyed
 * first (destroyed sources become ghosts), and that only recomputable
 * tensors are dropped.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/mem/pool.h"
#include "lib/exec/recompute.h"
#include "toy_ops.h"
#include "lib/record/tracker.h"
#include "test_plan.h"

static struct tmm_tensor_rec *rec(tmm_ctx *ctx, tmm_tensor t)
{
	struct tmm_tensor_rec *r = tmm_tensor_lookup(ctx, t, "test");

	ck_assert_ptr_nonnull(r);
	return r;
}

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
static void expect_flagged_rejected(tmm_ctx *ctx, enum tmm_action_type type,
				    uint32_t trigger, uint64_t key,
				    uint32_t back, uint32_t flags,
				    const char *why)
{
	struct tmm_plan plan;

	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(ctx), "t"),
			 0);
	ck_assert_int_eq(tmm_plan_add(&plan, type, trigger, key, back, 0), 0);
	plan.actions[0].flags = flags;
	ck_assert_int_eq(tmm_guide_install(ctx, &plan), -EINVAL);
	ck_assert_msg(strstr(tmm_last_error(ctx), why),
		      "'%s' does not say '%s'", tmm_last_error(ctx), why);
	tmm_plan_free(&plan);
}

static void expect_rejected(tmm_ctx *ctx, enum tmm_action_type type,
			    uint32_t trigger, uint64_t key, uint32_t back,
			    const char *why)
{
	expect_flagged_rejected(ctx, type, trigger, key, back, 0, why);
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
	/* Only a swap-out moves by migration, and not a layer-synchronous
	 * one: vDNN's transfer is a copy. */
	expect_flagged_rejected(ctx, TMM_ACT_PREFETCH, 2, a, 6,
				TMM_ACT_MIGRATE, "only a swap-out can move by "
				"migration");
	expect_flagged_rejected(ctx, TMM_ACT_EVICT_DROP, 2, a, 6,
				TMM_ACT_MIGRATE, "only a swap-out can move by "
				"migration");
	expect_flagged_rejected(ctx, TMM_ACT_EVICT_SWAP, 2, a, 6,
				TMM_ACT_MIGRATE | TMM_ACT_SYNC, "both layer-"
				"synchronous and moved by migration");
	expect_flagged_rejected(ctx, TMM_ACT_EVICT_SWAP, 2, a, 6, 8,
				"unknown flags 0x8");
	/* The same swap-out moved by migration alone holds, in swap mode
	 * too, where the flag changes nothing. */
	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(ctx), "t"),
			 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP, 2, a, 6, 0),
			 0);
	plan.actions[0].flags = TMM_ACT_MIGRATE;
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
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

void add_plan_rules_tests(Suite *s)
{
	TCase *rules = tcase_create("rules");

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
}
