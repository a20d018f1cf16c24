/* SPDX-License-Identifier: MIT */
/*
 * test_split_overlap.c — a split op's swapped input copied to the host
 * beside the op's later parts (lib/exec/split.c).
 *
 * The copy of each part's input rows is queued as the part ends and
 * waited for only when the output is about to grow into those rows.  An
 * op whose output rows are half its input's needs the input's rows at
 * half the pace it frees them, so its copies run beside later parts: it
 * waits less than if every part waited for its own copy, and its bytes,
 * and the input's on the host, are the unsplit run's.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend_sim.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "lib/base/sim_profile.h"
#include "lib/exec/split.h"
#include "split_big_ops.h"
#include "split_fixture.h"
#include "lib/record/tracker.h"

enum { RUNS = 3 };

/* y row r = the sums of x row r's column pairs: rows half the size. */
static int big_halve_slice(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream)
{
	const uint32_t *x = in[0];
	uint32_t *y = out[0];

	(void)user;
	(void)stream;
	for (size_t r = begin; r < end; r++)
		for (size_t c = 0; c < BIG_COLS / 2; c++)
			y[r * BIG_COLS / 2 + c] = x[r * BIG_COLS + 2 * c] +
						  x[r * BIG_COLS + 2 * c + 1];
	return 0;
}

static int big_halve(void *const *in, void *const *out, void *user,
		     void *stream)
{
	return big_halve_slice(in, out, 0, BIG_ROWS, user, stream);
}

/* What halve of the last iteration cost in waiting, and x from the host
 * right after it. */
static uint64_t halve_stall_ns;
static uint32_t x_after_halve[BIG_ELEMS];

/*
 * pad = fill(); x = fill(); pad goes; y = halve(x); u = tail(x): x may
 * leave at halve, its rows reused by y.  Appends x, y (half), u.
 */
static void halve_iteration(tmm_ctx *ctx, uint32_t *out)
{
	struct tmm_sim_counters before, after;
	tmm_tensor t[3];
	tmm_op halve = {
		.name = "halve", .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE, .inputs = &t[0], .n_inputs = 1,
		.outputs = &t[1], .n_outputs = 1, .run = big_halve,
		.run_slice = big_halve_slice, .slice_extent = BIG_ROWS,
		.cost = { 0, ROWS_COST_BYTES },
	};

	big_up_to_rows(ctx, t, 1);
	ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES / 2,
					   TMM_ACTIVATION, NULL, &t[1]), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES, TMM_ACTIVATION,
					   NULL, &t[2]), 0);
	big_sim_counters(ctx, &before);
	ck_assert_msg(tmm_run(ctx, &halve) == 0, "%s", tmm_last_error(ctx));
	big_sim_counters(ctx, &after);
	halve_stall_ns = after.stall_ns - before.stall_ns;
	ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0, x_after_halve,
					 BIG_BYTES), 0);
	big_run(ctx, "tail", big_tail, NULL, &t[0], 1, t[2], NULL);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0, out, BIG_BYTES), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[1], 0, out + BIG_ELEMS,
					 BIG_BYTES / 2), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[2], 0,
					 out + BIG_ELEMS + BIG_ELEMS / 2,
					 BIG_BYTES), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/*
 * halve split in `parts` with x swapped out at it: the copies of x's
 * rows are queued as the parts end and waited for only when y grows into
 * them.  y's rows are half x's, so y needs x's rows at half the pace
 * they are read, and the copies run beside later parts: halve waits less
 * than if each part's copy were waited for at once (what the runtime did
 * before, on an idle copy engine: the sum of the parts' copies), for
 * four parts or more.  (In two, the second part needs all the first
 * read.)  The bytes are the unsplit run's, x's on the host too.
 */
START_TEST(swapped_input_copies_overlap_the_parts)
{
	static const uint32_t parts_of[] = { 4, 16 };
	uint32_t parts = parts_of[_i];
	static uint32_t got[RUNS][3 * BIG_ELEMS];
	tmm_ctx *ctx = split_ctx(SWAP);
	const struct tmm_sim_profile *prof =
		tmm_sim_profile_find(ctx->cfg.sim_profile);
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint64_t per_part_waits = 0;

	for (uint32_t k = 0; k < parts; k++) {
		uint64_t begin, end;

		tmm_split_range(BIG_ROWS, parts, k, &begin, &end);
		per_part_waits += tmm_sim_copy_ns(
			prof, (end - begin) * BIG_COLS * 4, 0);
	}
	for (int it = 0; it < RUNS; it++) {
		halve_iteration(ctx, got[it]);
		ck_assert_msg(!memcmp(x_after_halve, got[0], BIG_BYTES),
			      "%u parts: x after halve differs", parts);
		if (it > 0) {
			ck_assert_msg(!memcmp(got[it], got[0],
					      sizeof(got[0])),
				      "%u parts: iteration %d differs from "
				      "the unsplit one", parts, it + 1);
			ck_assert_msg(halve_stall_ns < per_part_waits,
				      "%u parts: halve waited %llu ns, "
				      "%llu ns waiting for each part",
				      parts,
				      (unsigned long long)halve_stall_ns,
				      (unsigned long long)per_part_waits);
			continue;
		}
		{
			const struct tmm_trace *t = tmm_tracker_first(ctx);
			uint32_t at = split_access_of(t, "halve", 0);
			uint32_t back = split_access_of(t, "tail", 0);
			uint64_t x = split_key_at(t, at);
			struct tmm_plan plan;

			ck_assert_int_eq(tmm_plan_init(&plan, t, "halve"), 0);
			ck_assert_int_eq(tmm_plan_add_split(&plan, at, x,
							    parts), 0);
			ck_assert_int_eq(tmm_plan_add(&plan,
						      TMM_ACT_EVICT_SWAP, at,
						      x, back, 0), 0);
			tmm_plan_sort(&plan);
			ck_assert_int_eq(tmm_guide_install(ctx, &plan), 0);
			tmm_plan_free(&plan);
		}
	}
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.split_ops, RUNS - 1);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(st.swap_out_count, RUNS - 1);
	ck_assert_uint_eq(st.plan_actions_skipped, 0);
	ck_assert_uint_eq(st.host_in_use, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("split_overlap");
	TCase *tc = tcase_create("overlap");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, swapped_input_copies_overlap_the_parts, 0, 2);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
