/* SPDX-License-Identifier: MIT */
/*
 * test_link_share.c — a plan's copies keep off a link that a collective
 * holds (hints/link_share.c), on a hand-made trace with a known answer.
 *
 * The link moves 1 byte per ns with no latency, so a copy of a 1000-byte
 * tensor takes 1000 ns.  The iteration, one op per row (ns):
 *
 *   op0 [0, 1000)     reads X, writes A          accesses 0, 1
 *   op1 [1000, 2000)  reads X                    access 2
 *   op2 [2000, 3000)  reads X, writes B          accesses 3, 4
 *   op3 [3000, 6000)  all-reduce of G (net)      accesses 5, 6
 *   op4 [6000, 7000)  reads X                    access 7
 *   op5 [7000, 8000)  reads A and B              accesses 8, 9
 *
 * A plan swaps A out after access 1 (copy [1000, 2000): clear) and
 * prefetches it after access 4 (copy [3000, 4000): inside the
 * all-reduce), and swaps B out after access 4 (the same).  On a shared
 * link the prefetch moves to the nearest clear trigger that still lands
 * by op5: after access 5, the all-reduce's, copy [6000, 7000); the
 * nearest earlier one, access 3, is as near but later is preferred.  B's
 * swap-out can only go later: after access 5 too.  A's swap-out stays.
 * On NVLink (not shared) nothing moves.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

#include "check_main.h"
#include "hints/link_share.h"
#include "hints/planner.h"
#include "lib/io/plan.h"
#include "tensormm.h"

#include "trace_builder.h"

struct fixture {
	struct builder b;
	uint32_t x, a, bt, g;
};

/* Ops 0 to 3 above, up to the all-reduce. */
static void build_to_the_collective(struct fixture *f)
{
	struct builder *b = &f->b;

	b_init(b);
	f->x = b_tensor(b, 1000, false);
	f->g = b_tensor(b, 1000, false);
	f->a = b_tensor(b, 1000, true);
	f->bt = b_tensor(b, 1000, true);
	b_op(b, 0, 1000, &f->x, 1, &f->a, 1);
	b_op(b, 0, 1000, &f->x, 1, NULL, 0);
	b_op(b, 0, 1000, &f->x, 1, &f->bt, 1);
	b_op(b, 0, 3000, &f->g, 1, &f->g, 1);
	b->ops[3].kind = TMM_OP_COLLECTIVE;
	b->ops[3].net_bytes = 1e6;
}

static void build_done(struct fixture *f)
{
	char err[256];

	b_free_after_last_use(&f->b);
	ck_assert_msg(tmm_trace_validate(&f->b.t, err, sizeof(err)) == 0,
		      "%s", err);
}

static void build(struct fixture *f)
{
	uint32_t ab[2] = { 0, 0 };

	build_to_the_collective(f);
	ab[0] = f->a;
	ab[1] = f->bt;
	b_op(&f->b, 0, 1000, &f->x, 1, NULL, 0);
	b_op(&f->b, 0, 1000, ab, 2, NULL, 0);
	build_done(f);
}

/*
 * The iteration the planners are given: as above to the all-reduce, then
 *
 *   op4 [6000, 7000)  reads X, writes C          accesses 7, 8
 *   op5 [7000, 8000)  reads A                    access 9
 *   op6 [8000, 9000)  reads B                    access 10
 *
 * C (1000 bytes, dead after op4) makes op4 the peak: X, G, A, B and C.
 * A and B are then read by ops of their own, so that a prefetch of
 * either can land before the op that needs it (a prefetch fired inside
 * that op would come after it had run: tmm_last_in_trigger).
 */
static void build_for_planners(struct fixture *f)
{
	uint32_t c;

	build_to_the_collective(f);
	c = b_tensor(&f->b, 1000, true);
	b_op(&f->b, 0, 1000, &f->x, 1, &c, 1);
	b_op(&f->b, 0, 1000, &f->a, 1, NULL, 0);
	b_op(&f->b, 0, 1000, &f->bt, 1, NULL, 0);
	build_done(f);
}

/* The hand plan above. */
static void hand_plan(const struct fixture *f, struct tmm_plan *p)
{
	const struct tmm_trace_tensor *ts = f->b.tensors;

	ck_assert_int_eq(tmm_plan_init(p, &f->b.t, "hand"), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 1,
				      ts[f->a].key, 8, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 4, ts[f->a].key,
				      8, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 4,
				      ts[f->bt].key, 9, 0), 0);
}

START_TEST(copies_leave_a_shared_link_to_the_collective)
{
	struct fixture f;
	struct tmm_planner_input in;
	struct tmm_plan p;

	build(&f);
	hand_plan(&f, &p);
	in = input(&f.b, 1ull << 30, 1);
	in.device.net_shares_link = true;
	ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 2);
	ck_assert_uint_eq(p.actions[0].trigger, 1); /* clear: stays */
	ck_assert_uint_eq(p.actions[1].trigger, 5); /* after the all-reduce */
	ck_assert_uint_eq(p.actions[2].trigger, 5);
	/* Every copy now misses [3000, 6000) and the prefetch lands by
	 * op5's start. */
	for (uint32_t i = 0; i < p.n_actions; i++) {
		uint64_t from = f.b.accesses[p.actions[i].trigger].end_ns;

		ck_assert(from + 1000 <= 3000 || from >= 6000);
	}
	ck_assert_uint_le(f.b.accesses[p.actions[1].trigger].end_ns + 1000,
			  f.b.accesses[8].begin_ns);
	/* A second pass finds nothing left to move. */
	ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 0);
	tmm_plan_free(&p);
}
END_TEST

START_TEST(copies_stay_where_the_link_is_not_shared)
{
	struct fixture f;
	struct tmm_planner_input in;
	struct tmm_plan p;

	build(&f);
	hand_plan(&f, &p);
	in = input(&f.b, 1ull << 30, 1);
	in.device.net_shares_link = false;
	ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 0);
	ck_assert_uint_eq(p.actions[1].trigger, 4);
	ck_assert_uint_eq(p.actions[2].trigger, 4);
	tmm_plan_free(&p);
}
END_TEST

/*
 * No slot: C is written by op0 [0, 1000), an all-reduce holds the link
 * over [1000, 4000), op2 [4000, 5000) reads C.  C's swap-out after op0
 * and its prefetch fired at once both meet the all-reduce; the prefetch
 * would land late after it, and the swap-out may not pass its prefetch.
 * Both stay.
 */
START_TEST(copies_stay_without_another_slot)
{
	struct builder b;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t c, g;

	b_init(&b);
	g = b_tensor(&b, 1000, false);
	c = b_tensor(&b, 1000, true);
	b_op(&b, 0, 1000, NULL, 0, &c, 1);
	b_op(&b, 0, 3000, &g, 1, &g, 1);
	b.ops[1].kind = TMM_OP_COLLECTIVE;
	b.ops[1].net_bytes = 1e6;
	b_op(&b, 0, 1000, &c, 1, NULL, 0);
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "hand"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 0,
				      b.tensors[c].key, 3, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 0,
				      b.tensors[c].key, 3, 0), 0);
	in = input(&b, 1ull << 30, 1);
	in.device.net_shares_link = true;
	ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 0);
	ck_assert_uint_eq(p.actions[0].trigger, 0);
	ck_assert_uint_eq(p.actions[1].trigger, 0);
	tmm_plan_free(&p);
}
END_TEST

/* Memory: B's swap-out moved after the all-reduce would hold B over
 * accesses where the liveness curve (X, G, A and B: 4000 bytes) is over
 * a budget of 3000 bytes: it stays, though the prefetch still moves
 * (it returns A later, never sooner). */
START_TEST(copies_stay_where_memory_is_short)
{
	struct fixture f;
	struct tmm_planner_input in;
	struct tmm_plan p;

	build(&f);
	hand_plan(&f, &p);
	in = input(&f.b, 3000, 1);
	in.device.net_shares_link = true;
	ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 1);
	ck_assert_uint_eq(p.actions[1].trigger, 5);
	ck_assert_uint_eq(p.actions[2].trigger, 4);
	tmm_plan_free(&p);
}
END_TEST

/* Whether a plan has a copy (no SYNC) that meets the all-reduce. */
static bool copy_meets(const struct fixture *f, const struct tmm_plan *p)
{
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint64_t from = f->b.accesses[a->trigger].end_ns;

		if ((a->type == TMM_ACT_PREFETCH ||
		     a->type == TMM_ACT_EVICT_SWAP) &&
		    !(a->flags & TMM_ACT_SYNC) && from < 6000 &&
		    from + 1000 > 3000)
			return true;
	}
	return false;
}

/*
 * Every policy's plan goes through the pass.  On build_for_planners'
 * iteration at a budget of 4000 bytes (its 1000-byte tensors rounded up
 * to 1024; op4 holds 5120) capuchin, and auto with it, swap A out after
 * op0 and B after op2, inside the all-reduce, where the link is the
 * device's own; on a shared link B's swap-out leaves after the
 * all-reduce, which holds only X, G and B.  No policy's plan then has
 * anything left to move.
 */
START_TEST(every_policy_plans_around_the_collective)
{
	static const char *const names[] = { "capuchin", "superneurons",
					     "tensile", "tsplit", "vdnn-all",
					     "checkpoint", "auto" };
	struct fixture f;
	struct tmm_planner_input in;
	struct tmm_plan p;
	char err[256];

	build_for_planners(&f);
	in = input(&f.b, 4000, 1);
	for (int shared = 0; shared < 2; shared++) {
		in.device.net_shares_link = shared;
		ck_assert_int_eq(tmm_planner_make("capuchin", &in, &p, err,
						  sizeof(err)), 0);
		ck_assert_int_eq(copy_meets(&f, &p), !shared);
		tmm_plan_free(&p);
		ck_assert_int_eq(tmm_planner_make("auto", &in, &p, err,
						  sizeof(err)), 0);
		ck_assert_int_eq(copy_meets(&f, &p), !shared);
		tmm_plan_free(&p);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_msg(tmm_planner_make(names[i], &in, &p, err,
					       sizeof(err)) == 0,
			      "%s: %s", names[i], err);
		ck_assert_int_eq(tmm_link_share_avoid(&in, &p), 0);
		tmm_plan_free(&p);
	}
}
END_TEST

/*
 * A collective whose network part outlasts its arithmetic: op3 computes
 * for 100 ns, [3000, 3100), then its 2900 bytes cross the network at 1
 * byte per ns beside op4 [3100, 4100) and op5 [4100, 5100): the link is
 * held over [3100, 6000).  A's prefetch after op3 (copy [3100, 4100),
 * landing just by op5) meets that; told the network's rate, the pass
 * moves it to after op1 (copy [2000, 3000), clear and after A's
 * swap-out).  Without the rate, the traced [3000, 3100) is all the pass
 * sees, and nothing moves.
 */
START_TEST(copies_leave_the_network_part_of_a_collective)
{
	struct builder b;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t x, g, a, t, ab[2];
	char err[256];

	b_init(&b);
	x = b_tensor(&b, 1000, false);
	g = b_tensor(&b, 1000, false);
	a = b_tensor(&b, 1000, true);
	t = b_tensor(&b, 1000, true);
	b_op(&b, 0, 1000, &x, 1, &a, 1);
	b_op(&b, 0, 1000, &x, 1, NULL, 0);
	b_op(&b, 0, 1000, &x, 1, &t, 1);
	b_op(&b, 0, 100, &g, 1, &g, 1);
	b.ops[3].kind = TMM_OP_COLLECTIVE;
	b.ops[3].net_bytes = 2900;
	b_op(&b, 0, 1000, &x, 1, NULL, 0);
	ab[0] = a;
	ab[1] = t;
	b_op(&b, 0, 1000, ab, 2, NULL, 0);
	b_free_after_last_use(&b);
	ck_assert_msg(tmm_trace_validate(&b.t, err, sizeof(err)) == 0, "%s",
		      err);
	in = input(&b, 1ull << 30, 1);
	in.device.net_shares_link = true;
	for (int told = 0; told < 2; told++) {
		uint64_t from;

		ck_assert_int_eq(tmm_plan_init(&p, &b.t, "hand"), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 1,
					      b.tensors[a].key, 8, 0), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 5,
					      b.tensors[a].key, 8, 0), 0);
		in.device.net_gbps = told ? 1.0 : 0.0;
		in.device.net_latency_ns = 0;
		ck_assert_int_eq(tmm_link_share_avoid(&in, &p), told);
		from = b.accesses[p.actions[1].trigger].end_ns;
		if (told) {
			ck_assert(from + 1000 <= 3100 || from >= 6000);
			ck_assert_uint_le(from + 1000, b.accesses[8].begin_ns);
			ck_assert_uint_gt(p.actions[1].trigger,
					  p.actions[0].trigger);
		} else {
			ck_assert_uint_eq(p.actions[1].trigger, 5);
		}
		tmm_plan_free(&p);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("link_share");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, copies_leave_a_shared_link_to_the_collective);
	tcase_add_test(tc, copies_stay_where_the_link_is_not_shared);
	tcase_add_test(tc, copies_stay_without_another_slot);
	tcase_add_test(tc, copies_stay_where_memory_is_short);
	tcase_add_test(tc, every_policy_plans_around_the_collective);
	tcase_add_test(tc, copies_leave_the_network_part_of_a_collective);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
