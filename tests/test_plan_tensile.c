/* SPDX-License-Identifier: MIT */
/*
 * test_plan_tensile.c — TENSILE's planner on small hand-made traces with
 * known answers: its swaps on one-at-a-time copy engines, a swap the
 * engine has no time for (and has, where a dead tensor's eviction copies
 * nothing), the largest tensor at the peak first, and
 * swaps across iterations (optimizer state, a prefetch wrapped around
 * the iteration's end).  Moved out of test_planners.c, which holds the
 * other planners' cases.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "hints/analysis.h"
#include "hints/planner.h"
#include "hints/planners.h"
#include "tensormm.h"

#include "trace_builder.h"

/* The trigger of the action of type `type` on trace tensor t, or
 * TMM_PLAN_NONE. */
static uint32_t trigger_of(const struct tmm_plan *p, const struct builder *b,
			   enum tmm_action_type type, uint32_t t)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == type &&
		    p->actions[i].key == b->tensors[t].key)
			return p->actions[i].trigger;
	return TMM_PLAN_NONE;
}

/*
 * Two tensors, A (1 MiB + 64 KiB) and B (1 MiB), made one after the other
 * and read after a peak that needs both out (C, 2 MiB, with a 3.2 MiB
 * budget: its target, 2.8 MiB, holds A and B together but not either
 * with C).  On a 1 GB/s link a swap takes about a millisecond and the D2H
 * engine moves one tensor at a time: B's swap-out waits for A's.  With
 * `gap_ns` of compute before the peak, both copies fit in a row, or only
 * A's (the larger, tried first) does.
 */
static void two_swaps(struct builder *b, uint64_t gap_ns, bool b_inside,
		      uint32_t *a, uint32_t *bt)
{
	uint32_t w, c, s;

	b_init(b);
	w = b_tensor(b, 256, false);
	*a = b_tensor(b, (1 << 20) + (64 << 10), true);
	*bt = b_tensor(b, 1 << 20, b_inside);
	c = b_tensor(b, 2 << 20, true);
	b_op(b, 0, 1000, &w, 1, a, 1);		/* accesses 0, 1 */
	b_op(b, 0, 1000, &w, 1, bt, 1);		/* 2, 3 */
	b_op(b, 0, gap_ns, &w, 1, NULL, 0);	/* 4 */
	b_op(b, 0, 1000, &w, 1, &c, 1);		/* 5, 6: the peak */
	for (int i = 0; i < 6; i++) {
		s = b_tensor(b, 256, true);	/* 7 .. 12 */
		b_op(b, 0, 500000, NULL, 0, &s, 1);
	}
	b_op(b, 0, 1000, bt, 1, NULL, 0);	/* 13 */
	b_op(b, 0, 1000, a, 1, NULL, 0);	/* 14 */
	b_free_after_last_use(b);
}

/*
 * With 2.5 ms before the peak, both swap-outs fit one after the other.
 * The swap-ins are serialised on the H2D engine too: A, scheduled first,
 * takes the latest slot before its read (prefetch after access 9); B's
 * must end where A's begins, so its prefetch fires after access 7, where
 * on its own it would fire after 9.
 */
START_TEST(tensile_serialises_swaps_on_one_engine)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a, bt;
	char err[256];

	two_swaps(&b, 2500000, true, &a, &bt);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);
	in = input(&b, 3355443, 1); /* 3.2 MiB */
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 1);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_EVICT_SWAP, bt), 3);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_PREFETCH, a), 9);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_PREFETCH, bt), 7);
	ck_assert(p.fits);
	tmm_plan_sort(&p);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * With 1.5 ms before the peak, B's swap-out, queued behind A's, would end
 * after the peak: it is refused, and nothing else can make room.  (B is
 * made before the iteration here, so the last resort of a swap that
 * stalls does not apply to it.  Made inside, it is taken that way: the
 * peak's allocation waits for its swap-out, and its swap-in still fits
 * late on the H2D engine, after access 7.)
 */
START_TEST(tensile_refuses_a_swap_the_engine_cannot_fit)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a, bt;
	char err[256];

	two_swaps(&b, 1500000, true, &a, &bt);
	in = input(&b, 3355443, 1);
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 1);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_PREFETCH, bt), 7);
	tmm_plan_free(&p);

	two_swaps(&b, 1500000, false, &a, &bt);
	in = input(&b, 3355443, 1); /* 3.2 MiB */
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 0);
	ck_assert(!p.fits);
	tmm_plan_sort(&p);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * liveness=discard: D (1 MiB + 64 KiB), made in the iteration, read once
 * and held idle to the iteration's end, is evicted by liveness after its
 * read and leaves without a copy in the run (tmm_leaves_free), so it
 * takes no time of the D2H engine.  B (1 MiB, made before the iteration)
 * is written next and read after the peak (C, 2 MiB, with a 3.2 MiB
 * budget), 1.5 ms later: with keep, B's swap-out queues behind D's copy
 * and would end after the peak: refused, and the plan does not fit.
 * With discard the engine is free for B.
 */
START_TEST(tensile_books_no_copy_for_a_dead_tensor)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t w, d, bt, c, s;
	char err[256];

	b_init(&b);
	w = b_tensor(&b, 256, false);
	d = b_tensor(&b, (1 << 20) + (64 << 10), true);
	bt = b_tensor(&b, 1 << 20, false);
	c = b_tensor(&b, 2 << 20, true);
	b_op(&b, 0, 1000, &w, 1, &d, 1);	/* accesses 0, 1 */
	b_op(&b, 0, 1000, &d, 1, NULL, 0);	/* 2: D's last */
	b_op(&b, 0, 1000, &w, 1, &bt, 1);	/* 3, 4 */
	b_op(&b, 0, 1500000, &w, 1, NULL, 0);	/* 5 */
	b_op(&b, 0, 1000, &w, 1, &c, 1);	/* 6, 7: the peak */
	for (int i = 0; i < 6; i++) {
		s = b_tensor(&b, 256, true);	/* 8 .. 13 */
		b_op(&b, 0, 500000, NULL, 0, &s, 1);
	}
	b_op(&b, 0, 1000, &bt, 1, NULL, 0);	/* 14 */
	b_free_after_last_use(&b);
	b.tensors[d].free_ns = b.now; /* destroyed at the end */
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	in = input(&b, 3355443, 1); /* 3.2 MiB */
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, d), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 0);
	ck_assert(!p.fits);
	tmm_plan_free(&p);

	in.liveness_discard = true;
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, d), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 1);
	ck_assert(p.fits);
	tmm_plan_sort(&p);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * At the peak, L (1.5 MiB) and S (512 KiB) are both held and idle; S's
 * gap is the longer (Capuchin's free time would rank it first).  TENSILE
 * swaps the largest tensor that causes the peak: L, which is enough.
 */
START_TEST(tensile_swaps_the_largest_peak_tensor)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t w, l, s, c;

	b_init(&b);
	w = b_tensor(&b, 256, false);
	s = b_tensor(&b, 512 << 10, true);
	l = b_tensor(&b, 3 << 19, true);
	c = b_tensor(&b, 1 << 20, true);
	b_op(&b, 0, 1000, &w, 1, &s, 1);
	b_op(&b, 0, 1000, &w, 1, &l, 1);
	b_op(&b, 0, 1000000, &w, 1, NULL, 0);
	b_op(&b, 0, 1000, &w, 1, &c, 1);
	b_op(&b, 0, 1000000, &w, 1, NULL, 0);
	b_op(&b, 0, 1000, &l, 1, NULL, 0);
	b_op(&b, 0, 1000000, &w, 1, NULL, 0);
	b_op(&b, 0, 1000, &s, 1, NULL, 0);
	b_free_after_last_use(&b);
	/* Peak 3 MiB; the target (a fifth below 2.75 MiB, as the tensors
	 * are large) is 2.2 MiB: with L out it is 1.5 MiB, and 2 MiB once
	 * L's prefetch has fired. */
	in = input(&b, 11 << 18, 10);
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, l), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, s), 0);
	ck_assert(p.fits);
	tmm_plan_free(&p);
}
END_TEST

/*
 * Across iterations: optimizer state M (1 MiB, made before the iteration)
 * is touched only by the optimizer at the end.  The forward/backward
 * peak needs 1 MiB: M is swapped out after its update (access 8, for the
 * rest of this iteration and the start of the next) and prefetched for
 * its first access (7) after access 5, the last that ends a swap time
 * before it.  The curve counts M out from the start to the prefetch.
 */
START_TEST(tensile_swaps_optimizer_state_across_iterations)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	struct tmm_analysis an;
	uint64_t curve[MAX_A];
	uint32_t w, m, a1, a2, pair[2];
	char err[256];

	b_init(&b);
	w = b_tensor(&b, 256, false);
	m = b_tensor(&b, 1 << 20, false);
	a1 = b_tensor(&b, 1 << 20, true);
	a2 = b_tensor(&b, 1 << 20, true);
	b_op(&b, 0, 1000, &w, 1, &a1, 1);		/* 0, 1 */
	b_op(&b, 0, 1000, &a1, 1, &a2, 1);		/* 2, 3 */
	pair[0] = a1;
	pair[1] = a2;
	b_op(&b, TMM_OP_BACKWARD, 1000, pair, 2, NULL, 0); /* 4, 5 */
	b_op(&b, TMM_OP_BACKWARD, 1000000, &w, 1, NULL, 0); /* 6 */
	b_op(&b, TMM_OP_BACKWARD, 1000, &m, 1, &m, 1);	/* 7, 8 */
	b.ops[b.t.n_ops - 1].kind = TMM_OP_OPTIMIZER;
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	in = input(&b, 11 << 18, 10); /* target 2.2 MiB */
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, m), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, m), 1);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_EVICT_SWAP, m), 8);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_PREFETCH, m), 5);
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].key == b.tensors[m].key)
			ck_assert_uint_eq(p.actions[i].back_access,
					  p.actions[i].type == TMM_ACT_PREFETCH
						  ? 7 : TMM_PLAN_NONE);
	ck_assert(p.fits);
	tmm_plan_sort(&p); /* tmm_planner_make's part */
	ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_plan_free(&p);

	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	{
		struct tmm_eviction ev[2] = {
			{ .tensor = m, .evict = TMM_TRACE_NONE, .back = 7,
			  .in_trigger = 5 },
			{ .tensor = m, .evict = 8, .back = TMM_TRACE_NONE },
		};

		tmm_curve(&an, ev, 2, curve, NULL);
		/* op 0 holds a1 from its first access (the output is
		 * allocated before the op runs); M is out. */
		ck_assert_uint_eq(curve[0], 256 + (1 << 20));
		ck_assert_uint_eq(curve[3], 256 + (2 << 20));
		ck_assert_uint_eq(curve[5], 256 + (2 << 20));
		ck_assert_uint_eq(curve[6], 256 + (1 << 20));
		ck_assert_uint_eq(curve[7], 256 + (1 << 20));
	}
	tmm_analysis_free(&an);
}
END_TEST

/*
 * A wrap-around: M (1 MiB, made before the iteration) is read only by the
 * first op, so no trigger comes before its first access.  The peak (M, a
 * and c: 4 MiB over a 3.1 MiB target, while c lives) comes after it: M
 * is swapped out after access 0 and prefetched after access 6, the latest
 * that ends a swap time before the iteration's end, for access 0 of the
 * next.
 */
START_TEST(tensile_wraps_a_prefetch_around_the_iteration)
{
	struct builder b;
	struct tmm_plan p, bad;
	struct tmm_planner_input in;
	uint32_t m, a, c;
	char err[256];

	b_init(&b);
	m = b_tensor(&b, 1 << 20, false);
	a = b_tensor(&b, 1 << 20, true);
	c = b_tensor(&b, 2 << 20, true);
	b_op(&b, 0, 1000, &m, 1, &a, 1);	/* 0, 1 */
	b_op(&b, 0, 1000000, &a, 1, NULL, 0);	/* 2 */
	b_op(&b, 0, 1000, &a, 1, &c, 1);	/* 3, 4: the peak */
	b_op(&b, 0, 1000000, &c, 1, NULL, 0);	/* 5: c's last */
	b_op(&b, 0, 1000, &a, 1, NULL, 0);	/* 6 */
	b_op(&b, 0, 1000000, &a, 1, NULL, 0);	/* 7 */
	b_free_after_last_use(&b);
	in = input(&b, 31 << 17, 10); /* target 3.1 MiB */
	ck_assert_int_eq(tmm_plan_tensile(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, m), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, m), 1);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_EVICT_SWAP, m), 0);
	ck_assert_uint_eq(trigger_of(&p, &b, TMM_ACT_PREFETCH, m), 6);
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].key == b.tensors[m].key)
			ck_assert_uint_eq(p.actions[i].back_access,
					  p.actions[i].type == TMM_ACT_PREFETCH
						  ? 0 : TMM_PLAN_NONE);
	ck_assert(p.fits);
	ck_assert_uint_eq(p.predicted_peak, 3 << 20);
	tmm_plan_sort(&p);
	ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_plan_free(&p);

	/* A wrap-around must fire after the tensor's last access. */
	ck_assert_int_eq(tmm_plan_init(&bad, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&bad, TMM_ACT_PREFETCH, 4,
				      b.tensors[c].key, 4, 0), 0);
	ck_assert_int_eq(tmm_plan_validate(&bad, &b.t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "last access"));
	tmm_plan_free(&bad);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plan_tensile");
	TCase *tc = tcase_create("tensile");

	tcase_add_test(tc, tensile_serialises_swaps_on_one_engine);
	tcase_add_test(tc, tensile_refuses_a_swap_the_engine_cannot_fit);
	tcase_add_test(tc, tensile_books_no_copy_for_a_dead_tensor);
	tcase_add_test(tc, tensile_swaps_the_largest_peak_tensor);
	tcase_add_test(tc, tensile_swaps_optimizer_state_across_iterations);
	tcase_add_test(tc, tensile_wraps_a_prefetch_around_the_iteration);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
