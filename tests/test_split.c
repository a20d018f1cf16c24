/* SPDX-License-Identifier: MIT */
/*
 * test_split.c — running ops as micro-ops (TSPLIT, lib/exec/split.c).
 *
 * A small iteration with two splittable ops (a row-wise op and a matmul
 * with an unsliced weight) runs unplanned for a reference, then under
 * hand-made plans that split those ops into several part counts, some not
 * dividing the rows, together with swaps and drops at the split ops.
 * Every run's bytes must equal the reference's, and the counters must
 * show that the micro-ops really ran.  Descriptors that cannot be split
 * as they claim are refused, and on a phantom device splitting costs the
 * launches of the extra micro-ops.  The memory reuse of a split op is
 * tested in test_split_reuse.c.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "split_fixture.h"
#include "toy_ops.h"
#include "lib/record/tracker.h"

#define ITERATIONS 3
#define RESULTS 5 /* x, y, z, u, v */
#define RESULT_ELEMS ((size_t)RESULTS * ELEMS)

/*
 * x = fill(w); y = rows(x); z = matmul(y, m); u = mix(z, x);
 * v = mix(u, y).  x, y and z each have a later use, so a swap or a drop
 * at a split op must bring back the right bytes.  Appends x, y, z, u, v.
 */
static void iteration(tmm_ctx *ctx, tmm_tensor w, tmm_tensor m,
		      uint32_t *out)
{
	static const unsigned char matmul_sliced[] = { 1, 0, 1 };
	tmm_tensor t[RESULTS];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < RESULTS; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	split_run_op(ctx, "rows", toy_rows, toy_rows_slice, &t[0], 1, t[1],
		     NULL);
	{
		tmm_tensor in[2] = { t[1], m };

		split_run_op(ctx, "matmul", toy_matmul, toy_matmul_slice, in,
			     2, t[2], matmul_sliced);
	}
	{
		tmm_tensor in[2] = { t[2], t[0] };

		toy_run(ctx, "mix1", TMM_OP_PURE, toy_mix, in, 2, &t[3], 1);
	}
	{
		tmm_tensor in[2] = { t[3], t[1] };

		toy_run(ctx, "mix2", TMM_OP_PURE, toy_mix, in, 2, &t[4], 1);
	}
	for (int i = 0; i < RESULTS; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0,
						 out + (size_t)i * ELEMS,
						 BYTES), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	}
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

enum evictions { NO_EVICTIONS, SWAPS, DROPS };

/* Splits rows and matmul into `parts`, with the evictions of `ev` at
 * them: the input of each split op, and (swaps) matmul's output. */
static void split_plan(const struct tmm_trace *t, uint32_t parts,
		       enum evictions ev, struct tmm_plan *plan)
{
	uint32_t rows = split_access_of(t, "rows", 0);
	uint32_t matmul = split_access_of(t, "matmul", 0);
	enum tmm_action_type type = ev == DROPS ? TMM_ACT_EVICT_DROP
						: TMM_ACT_EVICT_SWAP;

	ck_assert_int_eq(tmm_plan_init(plan, t, "split-test"), 0);
	ck_assert_int_eq(tmm_plan_add_split(plan, rows, split_key_at(t, rows),
					    parts), 0);
	ck_assert_int_eq(tmm_plan_add_split(plan, matmul,
					    split_key_at(t, matmul), parts),
			 0);
	if (ev != NO_EVICTIONS) {
		/* x after rows reads it, back at mix1; y after matmul
		 * reads it, back at mix2. */
		ck_assert_int_eq(tmm_plan_add(plan, type, rows,
					      split_key_at(t, rows),
					      split_access_of(t, "mix1", 1),
					      0), 0);
		ck_assert_int_eq(tmm_plan_add(plan, type, matmul,
					      split_key_at(t, matmul),
					      split_access_of(t, "mix2", 1),
					      0), 0);
	}
	if (ev == SWAPS)
		/* z as matmul writes it, back at mix1. */
		ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_EVICT_SWAP,
					      matmul + 2,
					      split_key_at(t, matmul + 2),
					      split_access_of(t, "mix1", 0),
					      0), 0);
	tmm_plan_sort(plan);
}

/* Runs ITERATIONS iterations; with parts >= 2 the plan of split_plan is
 * followed from the second one.  Fills results and stats. */
static void train(const char *config, uint32_t parts, enum evictions ev,
		  uint32_t *results, struct tmm_stats *st)
{
	tmm_ctx *ctx = split_ctx(config);
	tmm_tensor w = toy_weight(ctx, 3), m;

	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "m",
					   &m), 0);
	{
		tmm_tensor in[1] = { w };

		toy_run(ctx, "m_init", 0, toy_fill, in, 1, &m, 1);
	}
	for (int it = 0; it < ITERATIONS; it++) {
		iteration(ctx, w, m, results + it * RESULT_ELEMS);
		if (it == 0 && parts >= 2) {
			struct tmm_plan plan;

			split_plan(tmm_tracker_first(ctx), parts, ev, &plan);
			ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
				      tmm_last_error(ctx));
			tmm_plan_free(&plan);
		}
	}
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static uint32_t *reference;

static void make_reference(void)
{
	struct tmm_stats st;

	reference = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);
	ck_assert_ptr_nonnull(reference);
	train(SWAP, 0, NO_EVICTIONS, reference, &st);
	ck_assert_uint_eq(st.split_ops, 0);
	ck_assert_uint_eq(st.micro_ops, 0);
}

static void free_reference(void)
{
	free(reference);
	reference = NULL;
}

/* Runs the split plan and compares every iteration with the reference. */
static void check_split(const char *config, uint32_t parts,
			enum evictions ev, struct tmm_stats *st)
{
	uint32_t *got = malloc(sizeof(uint32_t) * RESULT_ELEMS * ITERATIONS);

	ck_assert_ptr_nonnull(got);
	train(config, parts, ev, got, st);
	for (int it = 0; it < ITERATIONS; it++)
		ck_assert_msg(!memcmp(got + it * RESULT_ELEMS,
				      reference + it * RESULT_ELEMS,
				      sizeof(uint32_t) * RESULT_ELEMS),
			      "%s, %u parts: iteration %d differs from the "
			      "unsplit run", config, parts, it + 1);
	free(got);
	ck_assert_uint_eq(st->guided_iterations, ITERATIONS - 1);
	ck_assert_uint_eq(st->plan_divergences, 0);
	/* Two split ops in each guided iteration. */
	ck_assert_uint_eq(st->split_ops, 2 * (ITERATIONS - 1));
	ck_assert_uint_eq(st->micro_ops, 2ull * parts * (ITERATIONS - 1));
}

START_TEST(split_runs_are_bit_identical)
{
	struct tmm_stats st;

	check_split(SWAP, split_part_counts[_i], NO_EVICTIONS,
		    &st);
	ck_assert_uint_eq(st.swap_out_count, 0);
}
END_TEST

START_TEST(split_with_swaps_brings_back_the_same_bytes)
{
	struct tmm_stats st;

	check_split(SWAP, split_part_counts[_i], SWAPS, &st);
	/* x and z leave in each guided iteration (whether they are back
	 * from the host or still on their way out when read again depends
	 * on the copy's timing; the bytes are the same either way). */
	ck_assert_uint_ge(st.swap_out_count, 2 * (ITERATIONS - 1));
	ck_assert_uint_eq(st.plan_actions_skipped, 0);
}
END_TEST

START_TEST(split_with_drops_recomputes_the_same_bytes)
{
	struct tmm_stats st;

	check_split(SWAP, split_part_counts[_i], DROPS, &st);
	ck_assert_uint_eq(st.drops, 2 * (ITERATIONS - 1));
	ck_assert_uint_gt(st.recomputations, 0);
	ck_assert_uint_eq(st.plan_actions_skipped, 0);
}
END_TEST

/* Room for five of the eight tensors: the runtime evicts by itself on top
 * of the plan, and the bytes still match. */
START_TEST(split_under_memory_pressure)
{
	struct tmm_stats st;
	char config[96];

	snprintf(config, sizeof(config), SWAP ",budget=%uB",
		 5 * BYTES);
	check_split(config, 5, SWAPS, &st);
	ck_assert_uint_gt(st.passive_evictions, 0);
}
END_TEST

/* mode=uvm: the micro-ops run over managed memory, same bytes. */
START_TEST(split_in_uvm_mode)
{
	struct tmm_stats st;

	check_split(SWAP_BASE_UVM, 3, SWAPS, &st);
}
END_TEST

/* The trace gives the planner the rows of each sliced tensor's access,
 * and nothing for the unsliced weight. */
START_TEST(trace_records_slices)
{
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor w = toy_weight(ctx, 5), m;
	uint32_t *out = malloc(sizeof(uint32_t) * RESULT_ELEMS);
	const struct tmm_trace *t;
	uint32_t rows, matmul, fill;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "m",
					   &m), 0);
	{
		tmm_tensor in[1] = { w };

		toy_run(ctx, "m_init", 0, toy_fill, in, 1, &m, 1);
	}
	iteration(ctx, w, m, out);
	t = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(t);
	rows = split_access_of(t, "rows", 0);
	matmul = split_access_of(t, "matmul", 0);
	fill = split_access_of(t, "fill", 0);
	ck_assert_uint_eq(t->accesses[rows].slices, ROWS);
	ck_assert_uint_eq(t->accesses[rows + 1].slices, ROWS);
	ck_assert_uint_eq(t->accesses[matmul].slices, ROWS);
	ck_assert_uint_eq(t->accesses[matmul + 1].slices, 0);
	ck_assert_uint_eq(t->accesses[matmul + 2].slices, ROWS);
	ck_assert_uint_eq(t->accesses[fill].slices, 0);
	ck_assert_uint_eq(tmm_trace_op_slices(t, matmul), ROWS);
	ck_assert_uint_eq(tmm_trace_op_slices(t, fill), 0);
	free(out);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Runs a one-input, one-output op and returns tmm_run's result. */
static int try_op(tmm_ctx *ctx, tmm_run_fn run, tmm_run_slice_fn run_slice,
		  size_t extent, const unsigned char *sliced, tmm_tensor in,
		  tmm_tensor out)
{
	tmm_op op = {
		.name = "bad_split", .kind = TMM_OP_ELEMENTWISE,
		.inputs = &in, .n_inputs = 1, .outputs = &out,
		.n_outputs = 1, .run = run, .run_slice = run_slice,
		.slice_extent = extent, .sliced = sliced,
	};

	return tmm_run(ctx, &op);
}

START_TEST(bad_descriptors_are_refused)
{
	static const unsigned char only_input[] = { 1, 0 };
	tmm_ctx *ctx = split_ctx(SWAP);
	tmm_tensor in, odd;

	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, NULL,
					   &in), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES + 4, TMM_ACTIVATION,
					   "odd", &odd), 0);
	{
		static uint32_t zero[ELEMS];

		ck_assert_int_eq(tmm_tensor_write(ctx, in, 0, zero, BYTES), 0);
	}
	/* run_slice without rows */
	ck_assert_int_eq(try_op(ctx, toy_rows, toy_rows_slice, 0, NULL, in,
				in), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "bad_split"));
	/* rows without run_slice on a device that runs ops */
	ck_assert_int_eq(try_op(ctx, toy_rows, NULL, ROWS, NULL, in, in),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "run_slice"));
	/* a sliced tensor whose bytes are not whole rows */
	ck_assert_int_eq(try_op(ctx, toy_rows, toy_rows_slice, ROWS, NULL,
				in, odd), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "odd"));
	/* ... is fine when that tensor is not sliced */
	ck_assert_msg(try_op(ctx, toy_rows, toy_rows_slice, ROWS, only_input,
			     in, odd) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A cost-only op on a phantom device: rows without run_slice are allowed,
 * and a split costs the launches of its extra micro-ops. */
START_TEST(phantom_split_charges_launches)
{
	enum { PARTS = 4 };
	tmm_ctx *ctx = split_ctx(SWAP ",sim_memory=phantom");
	tmm_tensor a, b;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint64_t launch_ns, whole_ns, split_ns, before;
	tmm_op op = {
		.name = "big", .kind = TMM_OP_MATMUL, .flags = TMM_OP_PURE,
		.inputs = &a, .n_inputs = 1, .outputs = &b, .n_outputs = 1,
		.cost = { 1e9, 1e8 }, .slice_extent = ROWS,
	};
	tmm_op make = {
		.name = "make", .kind = TMM_OP_ELEMENTWISE, .outputs = &a,
		.n_outputs = 1,
	};
	tmm_op empty = {
		.name = "empty", .kind = TMM_OP_ELEMENTWISE, .inputs = &a,
		.n_inputs = 1,
	};
	struct tmm_plan plan;
	const struct tmm_trace *t;

	ck_assert_int_eq(tmm_tensor_create(ctx, 1u << 20, TMM_ACTIVATION,
					   NULL, &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 1u << 20, TMM_ACTIVATION,
					   NULL, &b), 0);
	ck_assert_int_eq(tmm_run(ctx, &make), 0);
	/* An op with no cost pays its launch alone. */
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	before = st.compute_ns;
	ck_assert_int_eq(tmm_run(ctx, &empty), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	launch_ns = st.compute_ns - before;
	ck_assert_uint_gt(launch_ns, 0);

	before = st.compute_ns;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	whole_ns = st.compute_ns - before;

	t = tmm_tracker_first(ctx);
	ck_assert_int_eq(tmm_plan_init(&plan, t, "split-test"), 0);
	ck_assert_int_eq(tmm_plan_add_split(&plan, 0, split_key_at(t, 0),
					    PARTS), 0);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
	before = st.compute_ns;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	split_ns = st.compute_ns - before;
	ck_assert_uint_eq(st.split_ops, 1);
	ck_assert_uint_eq(st.micro_ops, PARTS);
	/* The same work in four brackets: three more launches, give or
	 * take a nanosecond of rounding per part. */
	ck_assert_uint_ge(split_ns + PARTS, whole_ns + (PARTS - 1) * launch_ns);
	ck_assert_uint_le(split_ns, whole_ns + (PARTS - 1) * launch_ns + PARTS);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("split");
	TCase *runs = tcase_create("runs");
	TCase *rules = tcase_create("rules");
	int n = (int)SPLIT_PART_COUNTS;

	tcase_set_timeout(runs, 120);
	tcase_add_unchecked_fixture(runs, make_reference, free_reference);
	tcase_add_loop_test(runs, split_runs_are_bit_identical, 0, n);
	tcase_add_loop_test(runs, split_with_swaps_brings_back_the_same_bytes,
			    0, n);
	tcase_add_loop_test(runs, split_with_drops_recomputes_the_same_bytes,
			    0, n);
	tcase_add_test(runs, split_under_memory_pressure);
	tcase_add_test(runs, split_in_uvm_mode);
	suite_add_tcase(s, runs);
	tcase_add_test(rules, trace_records_slices);
	tcase_add_test(rules, bad_descriptors_are_refused);
	tcase_add_test(rules, phantom_split_charges_launches);
	suite_add_tcase(s, rules);
	return check_run_all(srunner_create(s));
}
