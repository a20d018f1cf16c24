/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_mix.c — which swaps go by migration beside mode=uvm's copy way
 * (hints/uvm_mix.c), on a hand-made trace with a known answer.
 *
 * Copies move 1 byte per ns with no latency (so a swap by copy holds the
 * host 2 ns a byte, out and back); the migrate engine moves 0.25 byte per
 * ns to the host and 0.5 back.  The iteration, one op per row (ns):
 *
 *   op0 [0, 1000)       reads X, writes A       accesses 0, 1
 *   op1 [1000, 11000)   reads X                 access 2
 *   op2 [11000, 13000)  reads X, writes B       accesses 3, 4
 *   op3 [13000, 14000)  reads A and W           accesses 5, 6
 *   op4 [14000, 15000)  reads B, writes W       accesses 7, 8
 *
 * X and W are persistent (1000 and 100 bytes), A and B made inside (1000
 * each).  The plan:
 *   A out after access 1, back after access 2 for access 5: out [1000,
 *     5000), back [11000, 13000), in time for op3 at 13000;
 *   B out and back after access 4 for access 7: out [13000, 17000), back
 *     [17000, 19000), 5000 ns late for op4 at 14000, more than the 2000 ns
 *     its copies would hold the host: it stays a copy;
 *   W out after its last access (8), with no back-access, and back after
 *     access 0 of the next iteration for its first access (6): out
 *     [15000, 15400), back in the next iteration at 16000 + what A's
 *     move out left queued, long before op3's 28000;
 *   X out after access 3 and back, wrapping around, after access 8 for
 *     access 0: never written, so its copy way's clean copy moves nothing
 *     and it is no candidate.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "hints/uvm_mix.h"
#include "lib/base/fault.h"
#include "lib/io/plan.h"
#include "tensormm.h"

#include "trace_builder.h"

struct fixture {
	struct builder b;
	uint32_t x, a, bt, w;
};

static void build(struct fixture *f)
{
	struct builder *b = &f->b;
	uint32_t two[2];
	char err[256];

	b_init(b);
	f->x = b_tensor(b, 1000, false);
	f->w = b_tensor(b, 100, false);
	f->a = b_tensor(b, 1000, true);
	f->bt = b_tensor(b, 1000, true);
	b_op(b, 0, 1000, &f->x, 1, &f->a, 1);
	b_op(b, 0, 10000, &f->x, 1, NULL, 0);
	b_op(b, 0, 2000, &f->x, 1, &f->bt, 1);
	two[0] = f->a;
	two[1] = f->w;
	b_op(b, 0, 1000, two, 2, NULL, 0);
	b_op(b, 0, 1000, &f->bt, 1, &f->w, 1);
	b_free_after_last_use(b);
	ck_assert_msg(tmm_trace_validate(&b->t, err, sizeof(err)) == 0, "%s",
		      err);
}

static uint64_t key(const struct fixture *f, uint32_t t)
{
	return f->b.tensors[t].key;
}

/* The hand plan above, sorted. */
static void hand_plan(const struct fixture *f, struct tmm_plan *p)
{
	ck_assert_int_eq(tmm_plan_init(p, &f->b.t, "hand"), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 1, key(f, f->a),
				      5, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 2, key(f, f->a), 5,
				      0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 4,
				      key(f, f->bt), 7, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 4, key(f, f->bt),
				      7, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 8, key(f, f->w),
				      TMM_PLAN_NONE, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 0, key(f, f->w), 6,
				      0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 3, key(f, f->x),
				      TMM_PLAN_NONE, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 8, key(f, f->x), 0,
				      0), 0);
	tmm_plan_sort(p);
}

/* The trace's input with the migrate engine's rates, GB/s. */
static struct tmm_planner_input mix_input(const struct fixture *f,
					  double out_gbps, double in_gbps)
{
	struct tmm_planner_input in = input(&f->b, 1u << 30, 1.0);

	in.migrate_d2h_gbps = out_gbps;
	in.migrate_h2d_gbps = in_gbps;
	return in;
}

/* Whether the EVICT_SWAP of trace tensor t is flagged to migrate. */
static bool migrates(const struct tmm_plan *p, const struct fixture *f,
		     uint32_t t)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == TMM_ACT_EVICT_SWAP &&
		    p->actions[i].key == key(f, t))
			return (p->actions[i].flags & TMM_ACT_MIGRATE) != 0;
	ck_abort_msg("no swap of tensor %u", t);
	return false;
}

START_TEST(test_swaps_that_fit_migrate)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	char err[256];

	build(&f);
	hand_plan(&f, &p);
	in = mix_input(&f, 0.25, 0.5);
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 2);
	ck_assert(migrates(&p, &f, f.a));
	ck_assert(migrates(&p, &f, f.w));
	ck_assert(!migrates(&p, &f, f.bt));
	ck_assert(!migrates(&p, &f, f.x));
	/* Nothing else is flagged, and the plan is one the runtime takes. */
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].type != TMM_ACT_EVICT_SWAP)
			ck_assert_uint_eq(p.actions[i].flags, 0);
	ck_assert_msg(tmm_plan_validate(&p, &f.b.t, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_plan_free(&p);
}
END_TEST

/* A fast engine takes every swap but the clean one. */
START_TEST(test_clean_swap_keeps_the_copy)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;

	build(&f);
	hand_plan(&f, &p);
	in = mix_input(&f, 1000.0, 1000.0);
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 3);
	ck_assert(migrates(&p, &f, f.a));
	ck_assert(migrates(&p, &f, f.bt));
	ck_assert(migrates(&p, &f, f.w));
	ck_assert(!migrates(&p, &f, f.x));
	tmm_plan_free(&p);
}
END_TEST

/*
 * B is worth a wait shorter than what its copies hold the host: at r
 * bytes/ns each way it is out and back from 13000 to 13000 + 2000 / r,
 * due at 14000, so 2000 / r - 1000 late, against 2000 held: it goes where
 * r > 2/3.  A latency L a move adds 2L to both.
 */
START_TEST(test_a_short_wait_beats_the_held_copies)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;

	build(&f);
	hand_plan(&f, &p);
	in = mix_input(&f, 0.7, 0.7); /* 1857 ns late */
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 3);
	ck_assert(migrates(&p, &f, f.bt));
	in = mix_input(&f, 0.6, 0.6); /* 2333 ns late */
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 2);
	ck_assert(!migrates(&p, &f, f.bt));
	in = mix_input(&f, 1.0, 1.0);
	in.device.copy_latency_ns = 800; /* 2600 late, 3600 held */
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 3);
	ck_assert(migrates(&p, &f, f.bt));
	tmm_plan_free(&p);
}
END_TEST

START_TEST(test_no_rates_no_change_and_again_the_same)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;

	build(&f);
	hand_plan(&f, &p);
	in = mix_input(&f, 0, 0.5);
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 0);
	for (uint32_t i = 0; i < p.n_actions; i++)
		ck_assert_uint_eq(p.actions[i].flags, 0);
	/* A flag a plan had is cleared where the mix does not take it, and
	 * the same plan passed again gets the same flags. */
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].type == TMM_ACT_EVICT_SWAP)
			p.actions[i].flags |= TMM_ACT_MIGRATE;
	in = mix_input(&f, 0.25, 0.5);
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 2);
	ck_assert(!migrates(&p, &f, f.bt));
	ck_assert(!migrates(&p, &f, f.x));
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 2);
	ck_assert(migrates(&p, &f, f.a));
	ck_assert(migrates(&p, &f, f.w));
	tmm_plan_free(&p);
}
END_TEST

/* A layer-synchronous swap is the policy's copy (vDNN): never flagged. */
START_TEST(test_sync_swap_stays)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;

	build(&f);
	hand_plan(&f, &p);
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].key == key(&f, f.a))
			p.actions[i].flags = TMM_ACT_SYNC;
	in = mix_input(&f, 1000.0, 1000.0);
	ck_assert_int_eq(tmm_uvm_mix(&in, &p), 2);
	ck_assert(!migrates(&p, &f, f.a));
	tmm_plan_free(&p);
}
END_TEST

/* Out of memory at each of its allocations in turn: -ENOMEM, the plan's
 * flags as they were, nothing leaked (valgrind, ASan's leak check); past
 * them, the answer of test_swaps_that_fit_migrate. */
START_TEST(out_of_memory_leaves_the_plan)
{
	struct fixture f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	char spec[32];
	uint32_t x_out = 0;
	unsigned k;
	int rc = -ENOMEM;

	build(&f);
	hand_plan(&f, &p);
	/* A flag from before on X's swap, which the mix would clear. */
	while (p.actions[x_out].type != TMM_ACT_EVICT_SWAP ||
	       p.actions[x_out].key != key(&f, f.x))
		x_out++;
	p.actions[x_out].flags = TMM_ACT_MIGRATE;
	in = mix_input(&f, 0.25, 0.5);
	for (k = 1; k <= 64 && rc == -ENOMEM; k++) {
		snprintf(spec, sizeof(spec), "host_alloc@%u", k);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = tmm_uvm_mix(&in, &p);
		ck_assert_int_eq(tmm_fault_set(""), 0);
		if (rc == -ENOMEM)
			for (uint32_t i = 0; i < p.n_actions; i++)
				ck_assert_uint_eq(p.actions[i].flags,
						  i == x_out ? TMM_ACT_MIGRATE
							     : 0u);
	}
	ck_assert_uint_gt(k, 2); /* it failed at least once */
	ck_assert_int_eq(rc, 2);
	ck_assert(!migrates(&p, &f, f.x));
	ck_assert(migrates(&p, &f, f.a));
	ck_assert(!migrates(&p, &f, f.bt));
	tmm_plan_free(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("uvm_mix");
	TCase *tc = tcase_create("mix");

	tcase_add_test(tc, test_swaps_that_fit_migrate);
	tcase_add_test(tc, test_clean_swap_keeps_the_copy);
	tcase_add_test(tc, test_a_short_wait_beats_the_held_copies);
	tcase_add_test(tc, test_no_rates_no_change_and_again_the_same);
	tcase_add_test(tc, test_sync_swap_stays);
	tcase_add_test(tc, out_of_memory_leaves_the_plan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
