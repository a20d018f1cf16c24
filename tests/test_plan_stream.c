/* SPDX-License-Identifier: MIT */
/*
 * test_plan_stream.c — `stream` (hints/plan_stream.c) on hand-made traces
 * whose weights outlive the step and do not fit: the fewest loads a plan
 * that repeats every step can make, and what it says when an op alone
 * does not fit.
 *
 * A plan repeats every step, so each tensor either stays on the device
 * the whole step (a slot all the time) or leaves and comes back (at least
 * one load a step).  And a prefetch fires after an op ends: one that is
 * to land before op j without making it wait starts after op j-2, so its
 * tensor takes its room during op j-1 too (ops here take 1 ms, a copy
 * 0.1 ms).  The answers below follow from these two facts.
 */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "hints/policies.h"
#include "tensormm.h"

#include "trace_builder.h"

#define MIB (1024ull * 1024)
#define OP_NS 1000000ull /* 1 ms an op: copies of 1 MiB at 10 GB/s hide */

/* A budget whose target (less the 12% margin of hints/analysis.c) holds
 * three of the 1 MiB weights and the small activations, not four. */
#define THREE_WEIGHTS (4 * MIB)

/* The plan's loads of the tensors t[0 .. n): its prefetches of them. */
static unsigned loads(const struct tmm_plan *p, const struct builder *b,
		      const uint32_t *t, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		k += count(p, b, TMM_ACT_PREFETCH, t[i]);
	return k;
}

/* Whether every prefetch of the plan lands before its back-access, on a
 * link of 10 GB/s (input()'s below): no op waits for a copy.  One that
 * wraps around lands in the next step. */
static bool in_time(const struct tmm_plan *p, const struct builder *b)
{
	uint64_t step = b->accesses[b->t.n_accesses - 1].end_ns;

	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint64_t bytes = 0, lands, due;

		if (a->type != TMM_ACT_PREFETCH)
			continue;
		for (uint32_t t = 0; t < b->t.n_tensors; t++)
			if (b->tensors[t].key == a->key)
				bytes = b->tensors[t].bytes;
		lands = b->accesses[a->trigger].end_ns + bytes / 10;
		due = b->accesses[a->back_access].begin_ns +
		      (a->back_access <= a->trigger ? step : 0);
		if (lands > due)
			return false;
	}
	return true;
}

/* Whether trace tensor t is ever moved by the plan. */
static bool moved(const struct tmm_plan *p, const struct builder *b,
		  uint32_t t)
{
	return count(p, b, TMM_ACT_EVICT_SWAP, t) ||
	       count(p, b, TMM_ACT_PREFETCH, t);
}

static void plan_stream(const struct builder *b, uint64_t budget,
			struct tmm_plan *p)
{
	struct tmm_planner_input in = input(b, budget, 10);
	char err[256];

	ck_assert_int_eq(tmm_trace_validate(&b->t, err, sizeof(err)), 0);
	ck_assert_int_eq(tmm_policy_make("stream", &in, p, err, sizeof(err)),
			 0);
	ck_assert_msg(tmm_plan_validate(p, &b->t, err, sizeof(err)) == 0,
		      "%s", err);
}

/*
 * Five weights read in turn every step (an inference loop), room for
 * three.  While op j runs, the weights that stay, op j's own (if it is
 * not one of them) and the one arriving for op j+1 (if not) are all on
 * the device: with two that stay, ops whose own and next weights both
 * travel would need four slots.  So at most one stays and the other four
 * travel: four loads a step where no op waits for a copy, and four can
 * be had.  (A plan that lets ops wait can do with three.)  Least-recently-used
 * eviction (passive mode) misses on every read of such a loop: five.
 */
START_TEST(a_loop_of_weights_loads_the_fewest)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t w[5], stay = 0;

	b_init(&b);
	for (int i = 0; i < 5; i++)
		w[i] = b_tensor(&b, MIB, false);
	for (int i = 0; i < 5; i++)
		b_op(&b, 0, OP_NS, &w[i], 1, NULL, 0);
	plan_stream(&b, THREE_WEIGHTS, &p);
	ck_assert(p.fits);
	ck_assert(in_time(&p, &b));
	ck_assert_uint_eq(loads(&p, &b, w, 5), 4);
	for (int i = 0; i < 5; i++)
		stay += !moved(&p, &b, w[i]);
	ck_assert_uint_eq(stay, 1);
	tmm_plan_free(&p);
}
END_TEST

/*
 * Four layers forward and back: W1 W2 W3 W4 W4 W3 W2 W1 over a step, with
 * small activations between, room for three weights.  At the first op
 * W1 is read and W2..W4 are all needed later in the step, so one of them
 * is away and loaded again; at the fourth, W4 is read and W1..W3 are all
 * needed later, so one of those is away and loaded again.  One tensor
 * cannot serve both: W2 or W3, away at both ops, is read between them and
 * must come twice.  So two loads of weights a step at least (where no
 * op waits); Belady's
 * rule makes two (W4 away at the step's start, W1 over the turn of the
 * pass), and the two in the middle never move.  (It also sends away the
 * first layer's 4 KiB input, whose next use is as far as W1's.)
 */
START_TEST(forward_and_backward_weights_load_twice_a_step)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t w[5], a[5];

	b_init(&b);
	for (int i = 1; i <= 4; i++)
		w[i] = b_tensor(&b, MIB, false);
	a[0] = b_tensor(&b, 4096, false);
	for (int i = 1; i <= 4; i++)
		a[i] = b_tensor(&b, 4096, true);
	for (int i = 1; i <= 4; i++) {
		uint32_t in[2] = { w[i], a[i - 1] };

		b_op(&b, TMM_OP_PURE, OP_NS, in, 2, &a[i], 1);
	}
	for (int i = 4; i >= 1; i--) {
		uint32_t in[3] = { w[i], a[i - 1], a[i] };

		b_op(&b, TMM_OP_BACKWARD, OP_NS, in, 3, NULL, 0);
	}
	b_free_after_last_use(&b);
	plan_stream(&b, THREE_WEIGHTS, &p);
	ck_assert(p.fits);
	ck_assert(in_time(&p, &b));
	ck_assert_uint_eq(loads(&p, &b, &w[1], 4), 2);
	ck_assert(!moved(&p, &b, w[2]));
	ck_assert(!moved(&p, &b, w[3]));
	tmm_plan_free(&p);
}
END_TEST

/* One op reads two weights that the budget cannot hold together: no
 * plan fits, and stream says so, its predicted peak at least the op's
 * own bytes (it cannot evict what the op reads). */
START_TEST(an_op_that_alone_does_not_fit_is_said_so)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t w[3];

	b_init(&b);
	for (int i = 0; i < 3; i++)
		w[i] = b_tensor(&b, 2 * MIB, false);
	b_op(&b, 0, OP_NS, w, 2, NULL, 0);
	b_op(&b, 0, OP_NS, &w[2], 1, NULL, 0);
	plan_stream(&b, 3 * MIB, &p);
	ck_assert(!p.fits);
	ck_assert_uint_ge(p.predicted_peak, 4 * MIB);
	tmm_plan_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plan_stream");
	TCase *tc = tcase_create("stream");

	tcase_add_test(tc, a_loop_of_weights_loads_the_fewest);
	tcase_add_test(tc, forward_and_backward_weights_load_twice_a_step);
	tcase_add_test(tc, an_op_that_alone_does_not_fit_is_said_so);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
