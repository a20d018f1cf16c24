/* SPDX-License-Identifier: MIT */
/*
 * test_swap_bound.c — the fewest bytes any plan copies each way per step
 * (hints/swap_bound.c), on hand-made steps whose optimum is worked out
 * below, beside the simple count (kept bytes less the budget) that
 * bench_scaling's bound used before.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "check_main.h"
#include "hints/swap_bound.h"
#include "lib/io/trace.h"
#include "tensormm.h"

#include "trace_builder.h"

/*
 * Two weights of 100 bytes, a budget of 100: one of them at a time.
 *
 *   op0 reads W1     (forward)
 *   op1 reads W2
 *   op2 updates W2   (reads and writes it: backward and optimizer)
 *   op3 updates W1
 *
 * Step after step W1 W2 W2 W1 | W1 W2 W2 W1 ...: op1 needs W2 in W1's
 * place and op3 W1 back, so every plan loads 200 bytes a step, where the
 * simple count says 200 - 100.  Out: W1 leaves at op1 dirty from op3,
 * W2 at op3 dirty from op2, 200 bytes; the bound's two counts see one
 * of them each (100 x 7/8 over 8 steps, the first step's carry-in
 * lost), so the simple count, 100, is the figure: still valid, no
 * tighter.
 */
START_TEST(two_weights_take_turns)
{
	struct builder b;
	struct tmm_swap_bound sb;
	uint32_t w1, w2;

	b_init(&b);
	w1 = b_tensor(&b, 100, false);
	w2 = b_tensor(&b, 100, false);
	b_op(&b, 0, 10, &w1, 1, NULL, 0);
	b_op(&b, 0, 10, &w2, 1, NULL, 0);
	b_op(&b, 0, 10, &w2, 1, &w2, 1);
	b_op(&b, 0, 10, &w1, 1, &w1, 1);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 100, 8, &sb), 0);
	ck_assert_uint_eq(sb.kept, 200);
	ck_assert_double_eq_tol(sb.h2d_simple, 100, 1e-9);
	ck_assert_double_eq_tol(sb.h2d_bytes, 200, 1e-9);
	ck_assert_double_eq_tol(sb.d2h_simple, 100, 1e-9);
	ck_assert_double_eq_tol(sb.d2h_bytes, 100, 1e-9);
	/* With room for both, nothing moves. */
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 8, &sb), 0);
	ck_assert_double_eq(sb.h2d_bytes, 0);
	ck_assert_double_eq(sb.d2h_bytes, 0);
}
END_TEST

/*
 * One weight W of 100 bytes and two activations of 100, a budget of 200:
 *
 *   op0 reads W, writes A          room for W: 200 - 100
 *   op1 reads A, writes B          room for W: 200 - 200 = 0
 *   op2 reads B, updates W         W back
 *
 * The kept bytes fit the budget, so the simple count is 0 each way; but
 * W must leave for op1 and come back for op2: 100 bytes in a step.  And
 * out: W is dirty from op2 when op1 of the next step pushes it out, 100
 * a step; the count of last reads sees it from the second step on,
 * 100 x (passes - 1) / passes.  With A read through a cut in two
 * slices (TSPLIT), op1 needs 50 + 100 and W may keep 50 bytes.
 */
static void one_weight(struct builder *b, uint32_t slices)
{
	uint32_t w, a, bt, in[2];

	b_init(b);
	w = b_tensor(b, 100, false);
	a = b_tensor(b, 100, true);
	bt = b_tensor(b, 100, true);
	b_op(b, 0, 10, &w, 1, &a, 1);
	b_op(b, 0, 10, &a, 1, &bt, 1);
	b->accesses[b->t.n_accesses - 2].slices = slices;
	in[0] = bt;
	in[1] = w;
	b_op(b, 0, 10, in, 2, &w, 1);
	b_free_after_last_use(b);
}

START_TEST(activations_push_a_weight_out)
{
	struct builder b;
	struct tmm_swap_bound sb;

	one_weight(&b, 0);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 8, &sb), 0);
	ck_assert_uint_eq(sb.kept, 100);
	ck_assert_double_eq(sb.h2d_simple, 0);
	ck_assert_double_eq(sb.d2h_simple, 0);
	ck_assert_double_eq_tol(sb.h2d_bytes, 100, 1e-9);
	ck_assert_double_eq_tol(sb.d2h_bytes, 87.5, 1e-9);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 4, &sb), 0);
	ck_assert_double_eq_tol(sb.d2h_bytes, 75, 1e-9);
	/* One step alone sees no write before the read: no copy out. */
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 1, &sb), 0);
	ck_assert_double_eq(sb.d2h_bytes, 0);
	ck_assert_double_eq_tol(sb.h2d_bytes, 100, 1e-9);
}
END_TEST

START_TEST(a_cut_needs_one_slice)
{
	struct builder b;
	struct tmm_swap_bound sb;

	one_weight(&b, 2);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 8, &sb), 0);
	ck_assert_double_eq_tol(sb.h2d_bytes, 50, 1e-9);
}
END_TEST

/* A workspace (TMM_SCRATCH) takes no room: another algorithm may need
 * none.  With B a workspace, op1 leaves W its 100 bytes. */
START_TEST(a_workspace_takes_no_room)
{
	struct builder b;
	struct tmm_swap_bound sb;

	one_weight(&b, 0);
	b.tensors[2].kind = TMM_SCRATCH;
	ck_assert_int_eq(tmm_swap_bound(&b.t, 200, 8, &sb), 0);
	ck_assert_double_eq(sb.h2d_bytes, 0);
}
END_TEST

/*
 * In time, with a link of 1 byte per ns each way and ops of 10 ns: W's
 * 100 bytes take 100 ns to come back, and can only come back after op0
 * (op1 leaves no room), so the window op1-op2 lasts at least 100 ns and
 * the step at least op0's 10 more: 110 ns (the truth is 130: the load
 * cannot start before op1 ends).  The bytes per step alone say 100 ns,
 * the budget's simple count only the 30 ns of compute.
 */
START_TEST(windows_see_copies_that_cannot_hide)
{
	static const double fast[3] = { 5, 5, 5 };
	struct builder b;
	double ns;

	one_weight(&b, 0);
	ck_assert_int_eq(tmm_swap_bound_step(&b.t, NULL, 200, 1.0, 1.0, &ns), 0);
	ck_assert_double_eq_tol(ns, 110, 1e-9);
	/* With room for everything, the ops alone. */
	ck_assert_int_eq(tmm_swap_bound_step(&b.t, NULL, 300, 1.0, 1.0, &ns), 0);
	ck_assert_double_eq_tol(ns, 30, 1e-9);
	/* A link that is not counted moves nothing in time. */
	ck_assert_int_eq(tmm_swap_bound_step(&b.t, NULL, 200, 0, 0, &ns), 0);
	ck_assert_double_eq_tol(ns, 30, 1e-9);
	/* Ops that could take 5 ns each: 100 + 5. */
	ck_assert_int_eq(tmm_swap_bound_step(&b.t, fast, 200, 1.0, 1.0, &ns),
			 0);
	ck_assert_double_eq_tol(ns, 105, 1e-9);
	ck_assert_int_eq(tmm_swap_bound_step(NULL, NULL, 200, 1, 1, &ns),
			 -EINVAL);
}
END_TEST

/*
 * A kept tensor O that each step only writes (a buffer overwritten
 * whole), and a weight Y that it reads, 100 bytes each, a budget of
 * 100: O's old value is never wanted, so making room for it costs no
 * load and nothing goes out; Y comes back each step, 100 bytes.
 */
START_TEST(a_write_only_tensor_needs_no_load)
{
	struct builder b;
	struct tmm_swap_bound sb;
	uint32_t o, y;

	b_init(&b);
	o = b_tensor(&b, 100, false);
	y = b_tensor(&b, 100, false);
	b_op(&b, 0, 10, NULL, 0, &o, 1);
	b_op(&b, 0, 10, &y, 1, NULL, 0);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 100, 8, &sb), 0);
	ck_assert_double_eq(sb.h2d_simple, 0);
	ck_assert_double_eq_tol(sb.h2d_bytes, 100, 1e-9);
	ck_assert_double_eq(sb.d2h_bytes, 0);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
	struct builder b;
	struct tmm_swap_bound sb;

	b_init(&b);
	ck_assert_int_eq(tmm_swap_bound(NULL, 1, 1, &sb), -EINVAL);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 1, 1, NULL), -EINVAL);
	ck_assert_int_eq(tmm_swap_bound(&b.t, 1, 0, &sb), -EINVAL);
	/* An empty step moves nothing. */
	ck_assert_int_eq(tmm_swap_bound(&b.t, 1, 1, &sb), 0);
	ck_assert_double_eq(sb.h2d_bytes, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("swap_bound");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, two_weights_take_turns);
	tcase_add_test(tc, activations_push_a_weight_out);
	tcase_add_test(tc, a_cut_needs_one_slice);
	tcase_add_test(tc, a_workspace_takes_no_room);
	tcase_add_test(tc, windows_see_copies_that_cannot_hide);
	tcase_add_test(tc, a_write_only_tensor_needs_no_load);
	tcase_add_test(tc, bad_arguments_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
