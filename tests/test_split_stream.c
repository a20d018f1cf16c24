/* SPDX-License-Identifier: MIT */
/*
 * test_split_stream.c — a split op's output streamed to the host as its
 * rows are written (lib/exec/split_stream.c), alone and with its input's rows
 * reused (TSPLIT Eq. 5, lib/exec/split.c).
 *
 * A row-wise op runs whole in the first iteration, then split under a
 * plan that swaps its output y out at the op's own access of y, and
 * prefetches it for a later op.  Every iteration's bytes must be the
 * unsplit one's, y's too when read from the host right after the op;
 * the guide must count its swap as done (one swap-out per iteration, one
 * copy per part, nothing skipped, no divergence), and y must be on the
 * host earlier than when the same plan swaps it after the op.  A run
 * that fails part way loses nothing; and tsplit, under a budget where
 * streaming y out is the cheapest fit, plans it and the plan runs.
 *
 * The tensors are larger than the toy ops' (a megabyte): on the
 * simulator each copy pays a fixed latency, and the copies of a part's
 * rows overlap the next part only where they take longer than that.
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
#include "lib/move/mover.h"
#include "lib/io/plan.h"
#include "split_big_ops.h"
#include "split_fixture.h"
#include "lib/record/tracker.h"

/* The part counts the tests loop over. */
static const uint32_t stream_parts[] = { 2, 4, 16 };
#define STREAM_PART_COUNTS \
	((int)(sizeof(stream_parts) / sizeof(stream_parts[0])))

/* How the plan moves the row op's tensors (x its input, y its output). */
enum how {
	STREAM_Y,	   /* y swapped at rows' access of y: streamed */
	STREAM_Y_SWAP_X,   /* ... and x swapped at rows: its rows reused */
	SWAP_Y_AFTER,	   /* y swapped at rows' access of x: after rows */
};

/* What the row op of the last iteration did, seen from the simulator. */
struct rows_seen {
	uint64_t copies_d2h;	/* copies it queued to the host */
	uint64_t stall_ns;	/* compute time it lost waiting */
	uint64_t y_on_host_ns;	/* from its start until y's copies end */
	enum tmm_tstate y_state; /* right after it */
	uint32_t y[BIG_ELEMS];	/* y, read from the host after it */
};

static struct rows_seen seen;

/* Runs rows over x into y, split or not as the plan says, noting what
 * it did; then waits for y to be on the host, and reads it there. */
static void run_rows(tmm_ctx *ctx, tmm_tensor x, tmm_tensor y)
{
	struct tmm_sim_counters before, after;
	struct tmm_tensor_rec *yr;

	big_sim_counters(ctx, &before);
	big_run(ctx, "rows", big_rows, big_rows_slice, &x, 1, y, NULL);
	big_sim_counters(ctx, &after);
	seen.copies_d2h = after.copies_d2h - before.copies_d2h;
	seen.stall_ns = after.stall_ns - before.stall_ns;
	/* The D2H engine runs in order and y's copies are the last it
	 * was given: its time is when y is all on the host. */
	seen.y_on_host_ns = after.engine_ns[TMM_ENGINE_D2H] -
			    before.engine_ns[TMM_ENGINE_COMPUTE];
	yr = tmm_tensor_lookup(ctx, y, "test");
	seen.y_state = yr->state;
	if (yr->state == TMM_TS_SWAPPING_OUT)
		ck_assert_int_eq(tmm_mover_settle(ctx, yr), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, y, 0, seen.y, BIG_BYTES), 0);
}

/* x = fill(); y = rows(x); z = fill(); u = mix(y, x), after up_to_rows.
 * Appends x, y, z, u. */
static void stream_iteration(tmm_ctx *ctx, uint32_t *out)
{
	tmm_tensor t[4];

	big_up_to_rows(ctx, t, 4);
	run_rows(ctx, t[0], t[1]);
	big_run(ctx, "gap", big_fill, NULL, NULL, 0, t[2], &big_salts[2]);
	{
		tmm_tensor in[2] = { t[1], t[0] };

		big_run(ctx, "mix", big_mix, NULL, in, 2, t[3], NULL);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0,
						 out + (size_t)i * BIG_ELEMS,
						 BIG_BYTES), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	}
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/* Splits rows into `parts`, swaps y (and x) out as `how` says, and
 * prefetches what it swapped at gap, for mix. */
static void install_plan(tmm_ctx *ctx, uint32_t parts, enum how how)
{
	const struct tmm_trace *t = tmm_tracker_first(ctx);
	uint32_t rows = split_access_of(t, "rows", 0);
	uint32_t gap = split_access_of(t, "gap", 0);
	uint32_t mix_y = split_access_of(t, "mix", 0);
	uint32_t mix_x = split_access_of(t, "mix", 1);
	uint64_t x = split_key_at(t, rows), y = split_key_at(t, rows + 1);
	struct tmm_plan plan;

	ck_assert_int_eq(tmm_plan_init(&plan, t, "stream-test"), 0);
	ck_assert_int_eq(tmm_plan_add_split(&plan, rows, x, parts), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP,
				      how == SWAP_Y_AFTER ? rows : rows + 1,
				      y, mix_y, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_PREFETCH, gap, y, mix_y,
				      0), 0);
	if (how == STREAM_Y_SWAP_X) {
		ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP, rows,
					      x, mix_x, 0), 0);
		ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_PREFETCH, gap, x,
					      mix_x, 0), 0);
	}
	tmm_plan_sort(&plan);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
}

enum { RUNS = 3 };

/*
 * Iteration 1 runs rows whole; the others split it under the plan.
 * Every iteration's bytes, and y read after rows, must be the first's;
 * the stats of the run are left in *st.
 */
static void stream_run(uint32_t parts, enum how how, struct tmm_stats *st)
{
	static uint32_t got[RUNS][4 * BIG_ELEMS];
	tmm_ctx *ctx = split_ctx(SWAP);
	uint64_t swapped = how == STREAM_Y_SWAP_X ? 2 : 1;

	for (int it = 0; it < RUNS; it++) {
		stream_iteration(ctx, got[it]);
		ck_assert_msg(!memcmp(seen.y, got[0] + BIG_ELEMS, BIG_BYTES),
			      "%u parts: y read after rows in iteration %d "
			      "is not y", parts, it + 1);
		if (it == 0) {
			install_plan(ctx, parts, how);
			continue;
		}
		ck_assert_msg(!memcmp(got[it], got[0], sizeof(got[0])),
			      "%u parts: iteration %d differs from the "
			      "unsplit one", parts, it + 1);
	}
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_uint_eq(st->split_ops, RUNS - 1);
	ck_assert_uint_eq(st->swap_out_count, swapped * (RUNS - 1));
	ck_assert_uint_eq(st->swap_out_bytes,
			  swapped * (RUNS - 1) * (uint64_t)BIG_BYTES);
	ck_assert_uint_eq(st->plan_actions_skipped, 0);
	ck_assert_uint_eq(st->plan_divergences, 0);
	ck_assert_uint_eq(st->prefetches, swapped * (RUNS - 1));
	ck_assert_uint_eq(st->on_demand_swap_ins, 0);
	ck_assert_uint_eq(st->host_in_use, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/*
 * y leaves part by part: one copy per part, queued behind the part that
 * wrote it and never waited for by compute, and the guide does not swap
 * it again.  y ends on the host, exact.
 */
START_TEST(split_streams_its_output_out)
{
	uint32_t parts = stream_parts[_i];
	struct tmm_stats st;

	stream_run(parts, STREAM_Y, &st);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(seen.copies_d2h, parts);
	ck_assert_uint_eq(seen.stall_ns, 0);
	ck_assert(seen.y_state == TMM_TS_SWAPPING_OUT ||
		  seen.y_state == TMM_TS_HOST);
}
END_TEST

/*
 * With x swapped at rows too, y grows into x's rows (Eq. 5) while both
 * leave part by part: a copy of each per part, and the same bytes.
 */
START_TEST(streamed_output_reuses_the_swapped_input)
{
	uint32_t parts = stream_parts[_i];
	struct tmm_stats st;

	stream_run(parts, STREAM_Y_SWAP_X, &st);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(seen.copies_d2h, 2 * parts);
}
END_TEST

/*
 * Streamed, y is on the host earlier than when the same split op's
 * output is swapped after it: its copies ran beside the later parts.
 */
START_TEST(streamed_output_reaches_the_host_earlier)
{
	uint32_t parts = stream_parts[_i];
	uint64_t streamed, after;
	struct tmm_stats st;

	stream_run(parts, SWAP_Y_AFTER, &st);
	ck_assert_uint_eq(seen.copies_d2h, 1); /* whole, by the guide */
	after = seen.y_on_host_ns;
	stream_run(parts, STREAM_Y, &st);
	streamed = seen.y_on_host_ns;
	ck_assert_msg(streamed < after,
		      "%u parts: y on the host after %llu ns streamed, "
		      "%llu ns swapped after the op",
		      parts, (unsigned long long)streamed,
		      (unsigned long long)after);
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
	return big_rows_slice(in, out, begin, end, user, stream);
}

/*
 * rows, split in 4 with y streamed (and x swapped), fails in its third
 * part, two parts' copies of y queued: y holds nothing, x is whole and
 * exact wherever it is, and every host buffer that is not x's is back.
 */
START_TEST(failed_streamed_split_loses_nothing)
{
	enum how how = _i ? STREAM_Y_SWAP_X : STREAM_Y;
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor t[2];
	static uint32_t got[4 * BIG_ELEMS], x[BIG_ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	enum tmm_tstate x_state;

	failing_row = BIG_ROWS / 2;
	stream_iteration(ctx, got);
	install_plan(ctx, 4, how);
	big_up_to_rows(ctx, t, 2);
	ck_assert_int_eq(big_op(ctx, "rows", big_rows, rows_slice_failing,
				&t[0], 1, t[1], NULL), -EIO);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "run_slice"));
	ck_assert_int_eq(tmm_tensor_lookup(ctx, t[1], "test")->state,
			 TMM_TS_EMPTY);
	x_state = tmm_tensor_lookup(ctx, t[0], "test")->state;
	/* Having given rows to y, a swapped x is on the host, whole. */
	ck_assert_int_eq(x_state, how == STREAM_Y_SWAP_X ? TMM_TS_HOST
							  : TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.host_in_use,
			  x_state == TMM_TS_HOST ? BIG_BYTES : 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0, x, BIG_BYTES), 0);
	ck_assert_msg(!memcmp(x, got, BIG_BYTES),
		      "x differs after rows failed");
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.host_in_use, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Writes two big tensors: an op that needs room. */
static int big_fill_two(void *const *in, void *const *out, void *user,
			void *stream)
{
	void *one[1] = { out[1] };
	int rc = big_fill(in, out, user, stream);

	return rc ? rc : big_fill(in, one, user, stream);
}

/*
 * x = fill(); y = rows(x); c, d = fill_two(); u = tail(y): under a
 * budget that holds x and y at rows but not y, c and d at fill_two, y
 * must leave right after rows.  Appends y and u.
 */
static void tsplit_iteration(tmm_ctx *ctx, uint32_t *out)
{
	tmm_tensor t[5];
	tmm_op two = {
		.name = "fill_two", .kind = TMM_OP_ELEMENTWISE,
		.inputs = NULL, .n_inputs = 0, .outputs = &t[2],
		.n_outputs = 2, .run = big_fill_two, .user = &big_salts[2],
		.cost = { 0, 6.0 * BIG_BYTES },
	};
	tmm_op rows = {
		.name = "rows", .kind = TMM_OP_ELEMENTWISE,
		.inputs = &t[0], .n_inputs = 1, .outputs = &t[1],
		.n_outputs = 1, .run = big_rows, .run_slice = big_rows_slice,
		.slice_extent = BIG_ROWS, .cost = { 0, ROWS_COST_BYTES },
	};

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
	big_run(ctx, "fill", big_fill, NULL, NULL, 0, t[0], &big_salts[1]);
	/* Not pure: y cannot be recomputed, it must be swapped. */
	ck_assert_msg(tmm_run(ctx, &rows) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[0]), 0);
	ck_assert_msg(tmm_run(ctx, &two) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[2]), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[3]), 0);
	big_run(ctx, "tail", big_tail, NULL, &t[1], 1, t[4], NULL);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[1], 0, out, BIG_BYTES), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[4], 0, out + BIG_ELEMS,
					 BIG_BYTES), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[1]), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t[4]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/*
 * policy=tsplit on tsplit_iteration: y's swap after rows would be
 * fill_two's wait for its whole copy; streamed out of rows split, only
 * for its last part's.  The plan splits rows, streams y out, and runs
 * as planned: no passive eviction, no divergence, its SPLIT and its swap
 * of y carried out every time (one swap-out per iteration), and the bytes
 * of the measured iteration.  (y's prefetch is triggered by fill_two's
 * writes, before the program destroys c and d: there is no room for it
 * then, it is skipped and tail brings y back on demand.  That is the
 * same for a whole swap, and no concern of the split.)
 */
START_TEST(tsplit_plans_a_streamed_output_that_runs)
{
	enum { ITERATIONS = 4 };
	static uint32_t got[ITERATIONS][2 * BIG_ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx = split_ctx("backend=sim,sim_memory=backed,mode=swap,"
				 "budget=2700000B,policy=tsplit,"
				 "replan_drift=0,log=error");
	uint64_t measured_swaps = 0;
	const struct tmm_plan *plan;
	unsigned splits = 0, swaps = 0, parts = 0;
	struct tmm_sim_counters measured, end;

	for (int it = 0; it < ITERATIONS; it++) {
		tsplit_iteration(ctx, got[it]);
		ck_assert_msg(!memcmp(got[it], got[0], sizeof(got[0])),
			      "iteration %d differs from the measured one",
			      it + 1);
		if (it == 0) {
			ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
			measured_swaps = st.swap_out_count;
			big_sim_counters(ctx, &measured);
		}
	}
	big_sim_counters(ctx, &end);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.plan_state, TMM_PLAN_GUIDED);
	ck_assert_uint_eq(st.split_ops, ITERATIONS - 1);
	ck_assert_uint_eq(st.swap_out_count - measured_swaps, ITERATIONS - 1);
	ck_assert_uint_eq(st.guided_passive_evictions, 0);
	ck_assert_uint_eq(st.plan_divergences, 0);
	ck_assert_uint_eq(st.host_in_use, 0);
	plan = tmm_guide_plan(ctx);
	for (uint32_t k = 0; k < plan->n_actions; k++) {
		const struct tmm_plan_action *a = &plan->actions[k];

		splits += a->type == TMM_ACT_SPLIT;
		if (a->type == TMM_ACT_SPLIT)
			parts = a->parts;
		swaps += a->type == TMM_ACT_EVICT_SWAP;
		if (a->type == TMM_ACT_SPLIT || a->type == TMM_ACT_EVICT_SWAP)
			ck_assert_uint_eq(a->skipped, 0);
	}
	ck_assert_uint_eq(splits, 1);
	ck_assert_uint_eq(swaps, 1);
	/* Streamed: one copy of y per part, and the two reads of each
	 * iteration's results; a whole swap would be one copy. */
	ck_assert_uint_ge(parts, 2);
	ck_assert_uint_eq(end.copies_d2h - measured.copies_d2h,
			  (uint64_t)(ITERATIONS - 1) * (parts + 2));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("split_stream");
	TCase *tc = tcase_create("stream");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, split_streams_its_output_out, 0,
			    STREAM_PART_COUNTS);
	tcase_add_loop_test(tc, streamed_output_reuses_the_swapped_input, 0,
			    STREAM_PART_COUNTS);
	tcase_add_loop_test(tc, streamed_output_reaches_the_host_earlier, 0,
			    STREAM_PART_COUNTS);
	tcase_add_loop_test(tc, failed_streamed_split_loses_nothing, 0, 2);
	tcase_add_test(tc, tsplit_plans_a_streamed_output_that_runs);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
