/* SPDX-License-Identifier: MIT */
/*
 * test_split_reuse.c — a split op's output reusing its input's rows
 * (TSPLIT Eq. 5, lib/exec/split.c).
 *
 * A row-wise op runs whole in the first iteration, then split under a
 * plan that drops its input at it, or swaps it out there.  The pool's
 * bytes in use are noted by the op's own callbacks, so the test sees what
 * the device holds while the op runs: lower by the input less one output
 * part when there is room below the input, unchanged (and counted) when
 * there is not, and the bytes of every iteration are the unsplit one's;
 * where the room below holds the lead of more parts than the plan's
 * only, the op runs as that many, unless the whole output has room.
 * A swapped input is on the host, whole and exact, once the op is over,
 * and each of its slices' copies was waited for when its rows were
 * needed.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend_sim.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "lib/mem/pool.h"
#include "lib/move/mover.h"
#include "lib/base/sim_profile.h"
#include "split_fixture.h"
#include "toy_ops.h"
#include "lib/record/tracker.h"

/* The pool's bytes in use while the row op runs, at most. */
static tmm_ctx *peak_ctx;
static uint64_t peak_in_use;

/* What the row op of the last iteration cost in waiting and in copies to
 * the host, and x's state and bytes right after it. */
static uint64_t rows_stall_ns, rows_copies_d2h;
static enum tmm_tstate x_after_rows;
static uint32_t x_read_after_rows[ELEMS];
static bool read_x_after_rows;

static void sim_counters(tmm_ctx *ctx, struct tmm_sim_counters *c)
{
	ck_assert_int_eq(tmm_sim_get_counters(&ctx->be, c), 0);
}

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

/* pad's bytes: as x's, unless a test makes the room below x smaller. */
static uint64_t pad_bytes = BYTES;

/* Nonzero: while rows runs split (once the plan is in), the limit leaves
 * only this much room above what the pool holds (a share's limit moving,
 * tmm_mover_set_limit). */
static uint64_t rows_room;
static bool plan_in;

/*
 * pad = fill(w); x = fill(w); y = rows(x); u = mix(y, x).  With
 * `room_below`, pad is gone before rows runs, so the pool has room just
 * below x (small blocks are carved from the bottom of a hole: x sits
 * right above pad), pad_bytes of it; without, pad holds it.  Appends x,
 * y, u.
 */
static void reuse_iteration(tmm_ctx *ctx, tmm_tensor w, bool room_below,
			    uint32_t *out)
{
	tmm_tensor pad, t[3];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, pad_bytes, TMM_ACTIVATION,
					   "pad", &pad), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "pad", TMM_OP_PURE, toy_fill, &w, 1, &pad, 1);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	if (room_below)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
	peak_in_use = 0;
	{
		struct tmm_sim_counters before, after;

		sim_counters(ctx, &before);
		if (rows_room && plan_in)
			ck_assert_int_eq(tmm_mover_set_limit(
						 ctx, tmm_pool_in_use(ctx->pool) +
							      rows_room),
					 0);
		split_run_op(ctx, "rows", rows_noting_peak,
			     rows_slice_noting_peak, &t[0], 1, t[1], NULL);
		if (rows_room && plan_in)
			ck_assert_int_eq(tmm_mover_set_limit(ctx, ctx->budget),
					 0);
		sim_counters(ctx, &after);
		rows_stall_ns = after.stall_ns - before.stall_ns;
		rows_copies_d2h = after.copies_d2h - before.copies_d2h;
	}
	x_after_rows = tmm_tensor_lookup(ctx, t[0], "test")->state;
	if (read_x_after_rows)
		ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0,
						 x_read_after_rows, BYTES), 0);
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

/* Iterations of reuse_run: the first unsplit, the others split. */
enum { RUNS = 3 };

/* The profile of the simulator that reuse_run ran on. */
static const struct tmm_sim_profile *sim_prof;

/* How the plans below evict x at rows. */
enum evict_x {
	DROP_X,		  /* recomputed for mix */
	SWAP_X,		  /* swapped in on demand by mix */
	SWAP_X_PREFETCH,  /* prefetched for mix once rows is over */
};

/* Splits rows into `parts` (none: 0) and evicts x at it, back at mix. */
static void install_plan(tmm_ctx *ctx, uint32_t parts, enum evict_x how)
{
	const struct tmm_trace *t = tmm_tracker_first(ctx);
	uint32_t rows = split_access_of(t, "rows", 0);
	uint32_t back = split_access_of(t, "mix", 1);
	uint64_t x = split_key_at(t, rows);
	struct tmm_plan plan;

	ck_assert_int_eq(tmm_plan_init(&plan, t, "split-test"), 0);
	if (parts)
		ck_assert_int_eq(tmm_plan_add_split(&plan, rows, x, parts), 0);
	ck_assert_int_eq(tmm_plan_add(&plan,
				      how == DROP_X ? TMM_ACT_EVICT_DROP
						    : TMM_ACT_EVICT_SWAP,
				      rows, x, back, 0), 0);
	/* Triggered by rows' write of y, its last access. */
	if (how == SWAP_X_PREFETCH)
		ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_PREFETCH,
					      rows + 1, x, back, 0), 0);
	tmm_plan_sort(&plan);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
}

/*
 * Iteration 1 runs rows whole; the next ones split it into `parts` and
 * evict x at it as `how` says.  Returns the peak in use during rows in
 * the last iteration, and in *whole_peak the first's; every iteration's
 * bytes must be the first's, x's too when it is read right after rows
 * (read_x_after_rows).
 */
static uint64_t reuse_run(uint32_t parts, bool room_below,
			  enum evict_x how, uint64_t *whole_peak,
			  struct tmm_stats *st)
{
	static uint32_t got[RUNS][3 * ELEMS];
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor w = toy_weight(ctx, 9);

	plan_in = false;
	peak_ctx = ctx;
	sim_prof = tmm_sim_profile_find(ctx->cfg.sim_profile);
	for (int it = 0; it < RUNS; it++) {
		reuse_iteration(ctx, w, room_below, got[it]);
		if (it == 0) {
			*whole_peak = peak_in_use;
			install_plan(ctx, parts, how);
			plan_in = true;
		} else {
			ck_assert_msg(!memcmp(got[it], got[0], sizeof(got[0])),
				      "%u parts: iteration %d differs from "
				      "the unsplit one", parts, it + 1);
		}
		if (read_x_after_rows)
			ck_assert_msg(!memcmp(x_read_after_rows, got[0],
					      BYTES),
				      "%u parts: x read after rows in "
				      "iteration %d is not x", parts, it + 1);
	}
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_uint_eq(st->split_ops, parts ? RUNS - 1 : 0);
	ck_assert_uint_eq(st->drops, how == DROP_X ? RUNS - 1 : 0);
	ck_assert_uint_eq(st->swap_out_count, how == DROP_X ? 0 : RUNS - 1);
	ck_assert_uint_eq(st->plan_actions_skipped, 0);
	/* Every host buffer a swap took is back with its tensor. */
	ck_assert_uint_eq(st->host_in_use, 0);
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

	split = reuse_run(parts, true, DROP_X, &whole, &st);
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

	split = reuse_run(4, false, DROP_X, &whole, &st);
	ck_assert_uint_eq(st.split_fallbacks, 2);
	ck_assert_uint_eq(split, whole);
}
END_TEST

/* The room below the input holds an eighth of it: not the lead of the
 * plan's 2 parts (half the output), but that of 8; and the limit leaves
 * a quarter of it free, no room for the whole output.  The op runs as 8
 * micro-ops, the output grows into the input's rows all the same, and the
 * device holds the input and an eighth of the output; same bytes.  (The
 * limit is x's in the iterations that split only: the first runs rows
 * whole.) */
START_TEST(small_room_below_takes_more_parts)
{
	uint64_t whole, split;
	struct tmm_stats st;

	pad_bytes = BYTES / 8;
	rows_room = BYTES / 4;
	split = reuse_run(2, true, DROP_X, &whole, &st);
	pad_bytes = BYTES;
	rows_room = 0;
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(st.micro_ops, 8 * (RUNS - 1));
	ck_assert_uint_eq(whole - split, BYTES - BYTES / 8);
}
END_TEST

/* The same small room below the input, with room for the whole output
 * under the limit: more micro-ops would only cost launches, so the
 * output is allocated whole, as the first iteration's, the op runs as
 * the plan's 2 micro-ops, and the fallback is counted; same bytes. */
START_TEST(small_room_below_with_room_elsewhere_falls_back)
{
	uint64_t whole, split;
	struct tmm_stats st;

	pad_bytes = BYTES / 8;
	split = reuse_run(2, true, DROP_X, &whole, &st);
	pad_bytes = BYTES;
	ck_assert_uint_eq(st.split_fallbacks, RUNS - 1);
	ck_assert_uint_eq(st.micro_ops, 2 * (RUNS - 1));
	ck_assert_uint_eq(split, whole);
}
END_TEST

/* A drop of a splittable op's input with no SPLIT is an ordinary drop
 * after the op: nothing placed, nothing saved, the same bytes. */
START_TEST(drop_without_split_is_whole)
{
	uint64_t whole, ran;
	struct tmm_stats st;

	ran = reuse_run(0, true, DROP_X, &whole, &st);
	ck_assert_uint_eq(st.micro_ops, 0);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(ran, whole);
}
END_TEST

/* The compute time a swapped x costs rows split into `parts` when each
 * part's rows are copied to the host and waited for at once, on an idle
 * copy engine.  The parts are as equal as can be, the longer first. */
static uint64_t part_copies_ns(uint32_t parts)
{
	uint64_t ns = 0;

	for (uint32_t k = 0; k < parts; k++) {
		uint64_t rows = ROWS / parts + (k < ROWS % parts ? 1 : 0);

		ns += tmm_sim_copy_ns(sim_prof, rows * COLS * 4, 0);
	}
	return ns;
}

/*
 * The same reuse with x swapped out at rows (TSPLIT's swap for a split
 * tensor): the same saving as the drop, each part's rows copied to the
 * host and waited for before the output may grow into them (no later),
 * and x on the host after the op, counted as one swap-out, then
 * prefetched for mix as the plan says.
 */
START_TEST(split_swaps_the_input_out_row_by_row)
{
	uint32_t parts = split_part_counts[_i];
	uint64_t whole, split, largest_part;
	struct tmm_stats st;

	split = reuse_run(parts, true, SWAP_X_PREFETCH, &whole, &st);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	largest_part = (ROWS + parts - 1) / parts * (uint64_t)COLS * 4;
	ck_assert_uint_eq(whole - split, BYTES - largest_part);
	ck_assert_uint_eq(st.swap_out_bytes, (RUNS - 1) * (uint64_t)BYTES);
	ck_assert_uint_eq(rows_copies_d2h, parts);
	/* Parts of equal rows: each writes the rows the one before read,
	 * and waits for their whole copy.  Unequal, the lead is the
	 * longest part: a shorter one's copy runs beside the next part. */
	if (ROWS % parts == 0)
		ck_assert_uint_eq(rows_stall_ns, part_copies_ns(parts));
	else
		ck_assert_uint_le(rows_stall_ns, part_copies_ns(parts));
	/* Its swap-out counted as done, the guide fired the prefetch. */
	ck_assert_int_eq(x_after_rows, TMM_TS_SWAPPING_IN);
	ck_assert_uint_eq(st.prefetches, RUNS - 1);
	ck_assert_uint_eq(st.on_demand_swap_ins, 0);
}
END_TEST

/* With no prefetch, x waits on the host after rows: read from there it
 * is exactly x, and mix brings it back on demand. */
START_TEST(swapped_input_is_whole_on_the_host)
{
	uint64_t whole, split;
	struct tmm_stats st;

	read_x_after_rows = true;
	split = reuse_run(4, true, SWAP_X, &whole, &st);
	ck_assert_int_eq(x_after_rows, TMM_TS_HOST);
	ck_assert_uint_eq(whole - split, BYTES - BYTES / 4);
	ck_assert_uint_eq(st.on_demand_swap_ins, RUNS - 1);
	ck_assert_uint_eq(st.prefetches, 0);
}
END_TEST

/* No room below a swapped input: nothing is reused, and the plan's swap
 * is the guide's, whole and not waited for, after the op. */
START_TEST(split_swap_without_room_below_falls_back)
{
	uint64_t whole, split;
	struct tmm_stats st;

	split = reuse_run(4, false, SWAP_X, &whole, &st);
	ck_assert_uint_eq(st.split_fallbacks, RUNS - 1);
	ck_assert_uint_eq(split, whole);
	ck_assert_uint_eq(rows_copies_d2h, 1);
	ck_assert_uint_eq(rows_stall_ns, 0);
}
END_TEST

/* A swap with no SPLIT is an ordinary swap after the op. */
START_TEST(swap_without_split_is_whole)
{
	uint64_t whole, ran;
	struct tmm_stats st;

	ran = reuse_run(0, true, SWAP_X, &whole, &st);
	ck_assert_uint_eq(st.micro_ops, 0);
	ck_assert_uint_eq(ran, whole);
	ck_assert_uint_eq(rows_copies_d2h, 1);
	ck_assert_uint_eq(rows_stall_ns, 0);
}
END_TEST

/* The row from which rows' slice callback fails. */
static size_t failing_row;

static int rows_slice_failing(void *const *in, void *const *out,
			      size_t begin, size_t end, void *user,
			      void *stream)
{
	if (end > failing_row)
		return -EIO;
	return toy_rows_slice(in, out, begin, end, user, stream);
}

/*
 * rows, split in 4 with x swapped there, fails in its first part (row 0)
 * or its third (row 40).  Having given rows to the output, x is on the
 * host; having given none, it is resident, its host buffer given back.
 * Either way its bytes are x's and the output holds nothing.
 */
START_TEST(failed_split_keeps_the_swapped_input)
{
	static const size_t rows_failing[] = { 0, 40 };
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor w = toy_weight(ctx, 9), pad, t[3];
	static uint32_t got[3 * ELEMS], x[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	bool gave_rows;
	tmm_op op = {
		.name = "rows", .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE, .inputs = &t[0], .n_inputs = 1,
		.outputs = &t[1], .n_outputs = 1, .run = toy_rows,
		.cost = { 2.0 * ELEMS * COLS, 12.0 * ELEMS },
		.run_slice = rows_slice_failing, .slice_extent = ROWS,
	};

	failing_row = rows_failing[_i];
	gave_rows = failing_row >= ROWS / 4;
	peak_ctx = ctx;
	reuse_iteration(ctx, w, true, got);
	install_plan(ctx, 4, SWAP_X);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "pad",
					   &pad), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "pad", TMM_OP_PURE, toy_fill, &w, 1, &pad, 1);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
	ck_assert_int_eq(tmm_run(ctx, &op), -EIO);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "run_slice"));
	ck_assert_int_eq(tmm_tensor_lookup(ctx, t[0], "test")->state,
			 gave_rows ? TMM_TS_HOST : TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_tensor_lookup(ctx, t[1], "test")->state,
			 TMM_TS_EMPTY);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.host_in_use, gave_rows ? BYTES : 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0, x, BYTES), 0);
	ck_assert_msg(!memcmp(x, got, BYTES),
		      "x differs after rows failed from row %zu",
		      failing_row);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("split_reuse");
	TCase *reuse = tcase_create("reuse");

	tcase_set_timeout(reuse, 120);
	tcase_add_loop_test(reuse, split_output_reuses_the_input_rows, 0,
			    SPLIT_PART_COUNTS);
	tcase_add_test(reuse, split_without_room_below_falls_back);
	tcase_add_test(reuse, small_room_below_takes_more_parts);
	tcase_add_test(reuse, small_room_below_with_room_elsewhere_falls_back);
	tcase_add_test(reuse, drop_without_split_is_whole);
	tcase_add_loop_test(reuse, split_swaps_the_input_out_row_by_row, 0,
			    SPLIT_PART_COUNTS);
	tcase_add_test(reuse, swapped_input_is_whole_on_the_host);
	tcase_add_test(reuse, split_swap_without_room_below_falls_back);
	tcase_add_test(reuse, swap_without_split_is_whole);
	tcase_add_loop_test(reuse, failed_split_keeps_the_swapped_input, 0, 2);
	suite_add_tcase(s, reuse);
	return check_run_all(srunner_create(s));
}
