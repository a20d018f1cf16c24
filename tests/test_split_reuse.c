/*
 * test_split_reuse.c — a split op's output reusing its input's rows
 * (TSPLIT Eq. 5, lib/split.c).
 *
 * A row-wise op runs whole in the first iteration, then split under a
 * plan that drops its input at it.  The pool's bytes in use are noted by
 * the op's own callbacks, so the test sees what the device holds while
 * the op runs: lower by the input less one output part when there is
 * room below the input, unchanged (and counted) when there is not, and
 * the bytes of every iteration are the unsplit one's.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensormm.h"
#include "context.h"
#include "guide.h"
#include "plan.h"
#include "pool.h"
#include "split_fixture.h"
#include "toy_ops.h"
#include "tracker.h"

/* The pool's bytes in use while the row op runs, at most. */
static tmm_ctx *peak_ctx;
static uint64_t peak_in_use;

static void note_in_use(void)
{
	uint64_t in_use = tmm_pool_in_use(peak_ctx->pool);

	if (in_use > peak_in_use)
		peak_in_use = in_use;
}

static int rows_noting_peak(void *const *in, void *const *out, void *user,
			    void *stream)
{
	note_in_use();
	return toy_rows(in, out, user, stream);
}

static int rows_slice_noting_peak(void *const *in, void *const *out,
				  size_t begin, size_t end, void *user,
				  void *stream)
{
	note_in_use();
	return toy_rows_slice(in, out, begin, end, user, stream);
}

/*
 * pad = fill(w); x = fill(w); y = rows(x); u = mix(y, x).  With
 * `room_below`, pad is gone before rows runs, so the pool has room just
 * below x (small blocks are carved from the bottom of a hole: x sits
 * right above pad); without, pad holds it.  Appends x, y, u.
 */
static void reuse_iteration(tmm_ctx *ctx, tmm_tensor w, bool room_below,
			    uint32_t *out)
{
	tmm_tensor pad, t[3];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "pad",
					   &pad), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "pad", TMM_OP_PURE, toy_fill, &w, 1, &pad, 1);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	if (room_below)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
	peak_in_use = 0;
	split_run_op(ctx, "rows", rows_noting_peak, rows_slice_noting_peak,
		     &t[0], 1, t[1], NULL);
	{
		tmm_tensor in[2] = { t[1], t[0] };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[2], 1);
	}
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0,
						 out + (size_t)i * ELEMS,
						 BYTES), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	}
	if (!room_below)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/* Splits rows into `parts` (none: 0) and drops x at it, back at mix. */
static void install_plan(tmm_ctx *ctx, uint32_t parts)
{
	const struct tmm_trace *t = tmm_tracker_first(ctx);
	uint32_t rows = split_access_of(t, "rows", 0);
	uint64_t x = split_key_at(t, rows);
	struct tmm_plan plan;

	ck_assert_int_eq(tmm_plan_init(&plan, t, "split-test"), 0);
	if (parts)
		ck_assert_int_eq(tmm_plan_add_split(&plan, rows, x, parts), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_DROP, rows, x,
				      split_access_of(t, "mix", 1), 0), 0);
	tmm_plan_sort(&plan);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
}

/*
 * Iteration 1 runs rows whole; the next ones split it into `parts` and
 * drop x at it.  Returns the peak in use during rows in the last
 * iteration, and in *whole_peak the first's; every iteration's bytes
 * must be the first's.
 */
static uint64_t reuse_run(uint32_t parts, bool room_below,
			  uint64_t *whole_peak, struct tmm_stats *st)
{
	enum { RUNS = 3 };
	static uint32_t got[RUNS][3 * ELEMS];
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor w = toy_weight(ctx, 9);

	peak_ctx = ctx;
	for (int it = 0; it < RUNS; it++) {
		reuse_iteration(ctx, w, room_below, got[it]);
		if (it == 0) {
			*whole_peak = peak_in_use;
			install_plan(ctx, parts);
		} else {
			ck_assert_msg(!memcmp(got[it], got[0], sizeof(got[0])),
				      "%u parts: iteration %d differs from "
				      "the unsplit one", parts, it + 1);
		}
	}
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_uint_eq(st->split_ops, parts ? RUNS - 1 : 0);
	ck_assert_uint_eq(st->drops, RUNS - 1);
	ck_assert_uint_eq(st->plan_actions_skipped, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return peak_in_use;
}

/*
 * The input gives back its rows as the micro-ops read them and the output
 * grows into them: while the op runs, the device holds the input and one
 * output part (the largest, when the parts do not divide the rows)
 * instead of both tensors whole.
 */
START_TEST(split_output_reuses_the_input_rows)
{
	uint32_t parts = split_part_counts[_i];
	uint64_t whole, split, largest_part;
	struct tmm_stats st;

	split = reuse_run(parts, true, &whole, &st);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	largest_part = (ROWS + parts - 1) / parts * (uint64_t)COLS * 4;
	ck_assert_uint_eq(whole - split, BYTES - largest_part);
}
END_TEST

/* No room below the input: the output is allocated whole, the bytes are
 * the same, and the fallback is counted. */
START_TEST(split_without_room_below_falls_back)
{
	uint64_t whole, split;
	struct tmm_stats st;

	split = reuse_run(4, false, &whole, &st);
	ck_assert_uint_eq(st.split_fallbacks, 2);
	ck_assert_uint_eq(split, whole);
}
END_TEST

/* A drop of a splittable op's input with no SPLIT is an ordinary drop
 * after the op: nothing placed, nothing saved, the same bytes. */
START_TEST(drop_without_split_is_whole)
{
	uint64_t whole, ran;
	struct tmm_stats st;

	ran = reuse_run(0, true, &whole, &st);
	ck_assert_uint_eq(st.micro_ops, 0);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(ran, whole);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("split_reuse");
	TCase *reuse = tcase_create("reuse");
	SRunner *sr;
	int failed;

	tcase_set_timeout(reuse, 120);
	tcase_add_loop_test(reuse, split_output_reuses_the_input_rows, 0,
			    SPLIT_PART_COUNTS);
	tcase_add_test(reuse, split_without_room_below_falls_back);
	tcase_add_test(reuse, drop_without_split_is_whole);
	suite_add_tcase(s, reuse);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
