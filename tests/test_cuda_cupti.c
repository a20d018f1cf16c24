/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_cupti.c — op times from CUPTI's activity records, on the CUDA
 * test double in its records mode (tests/cudafake/cupti.c), where a piece
 * of device work lasts exactly what the double's clock gives it: 1 µs
 * plus 0.1 ns a byte.
 *  - The timing module's CUPTI path reports each op's time, the sum of
 *    its kernels and fills, to the nanosecond.
 *  - Work an op queues on another stream, or on a stream of another
 *    device whose CUPTI stream id is the compute stream's (ids are unique
 *    only within a context), is not the op's.
 *  - A split op is timed over all its pieces, by CUPTI and by events,
 *    not by its last piece.
 *  - CUPTI older than the headers is not used, even where it records.
 *  - Ops whose times hold from one iteration to the next make one plan:
 *    the guide's drift check reads the GPU's times, not the zeros the
 *    trace holds before they are read (on the H200, every guided
 *    iteration re-planned).
 */
#include "config.h"

#include <check.h>
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/backend/cuda_timing.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "lib/record/tracker.h"
#include "tensormm.h"

/* What the double's clock gives a fill of `bytes`, in ns. */
static uint64_t fill_ns(size_t bytes)
{
	return 1000 + bytes / 10;
}

static void expect_near(uint64_t got, uint64_t want, const char *what)
{
	/* Each record's start and end are rounded to the nanosecond. */
	ck_assert_msg(got + 4 >= want && got <= want + 4,
		      "%s: %llu ns, expected %llu", what,
		      (unsigned long long)got, (unsigned long long)want);
}

static void nop_kernel(void *arg)
{
	(void)arg;
}

static void setup(void)
{
	cudafake_cupti_mode(CUDAFAKE_CUPTI_RECORDS);
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
}

static void teardown(void)
{
	cudafake_cupti_mode(CUDAFAKE_CUPTI_REFUSE);
}

START_TEST(cupti_reports_each_ops_time)
{
	struct tmm_cuda_timing *t;
	cudaStream_t s;
	char why[128], err[200];
	uint64_t after[2], last[2], ns[2];
	unsigned long records = cudafake_cupti_records();
	void *dev;

	ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
	ck_assert_int_eq(cudaMalloc(&dev, 1 << 20), cudaSuccess);
	ck_assert_int_eq(tmm_cuda_timing_open(&t, s, true, NULL, why,
					      sizeof(why)),
			 0);
	ck_assert_msg(strcmp(tmm_cuda_timing_method(t), "cupti") == 0, "%s",
		      why);
	/* Op 1: one fill.  Op 2: a kernel and two fills. */
	after[0] = tmm_cuda_timing_last(t);
	ck_assert_int_eq(tmm_cuda_timing_begin(t, err, sizeof(err)), 0);
	ck_assert_int_eq(cudaMemsetAsync(dev, 1, 4000, s), cudaSuccess);
	ck_assert_int_eq(tmm_cuda_timing_end(t, err, sizeof(err)), 0);
	last[0] = after[1] = tmm_cuda_timing_last(t);
	ck_assert_int_eq(tmm_cuda_timing_begin(t, err, sizeof(err)), 0);
	ck_assert_int_eq(cudafake_launch(s, nop_kernel, NULL, NULL, 0),
			 cudaSuccess);
	ck_assert_int_eq(cudaMemsetAsync(dev, 2, 20000, s), cudaSuccess);
	ck_assert_int_eq(cudaMemsetAsync(dev, 3, 100, s), cudaSuccess);
	ck_assert_int_eq(tmm_cuda_timing_end(t, err, sizeof(err)), 0);
	last[1] = tmm_cuda_timing_last(t);
	ck_assert_msg(tmm_cuda_timing_collect(t, after, last, ns, 2, err,
					      sizeof(err)) == 0, "%s", err);
	expect_near(ns[0], fill_ns(4000), "one fill");
	expect_near(ns[1], 1000 + fill_ns(20000) + fill_ns(100),
		    "a kernel and two fills");
	ck_assert_uint_gt(cudafake_cupti_records(), records);
	tmm_cuda_timing_close(t);
	/* Closed, CUPTI is free for the next owner. */
	ck_assert_int_eq(tmm_cuda_timing_open(&t, s, true, NULL, why,
					      sizeof(why)),
			 0);
	ck_assert_str_eq(tmm_cuda_timing_method(t), "cupti");
	tmm_cuda_timing_close(t);
	cudaFree(dev);
	cudaStreamDestroy(s);
}
END_TEST

START_TEST(work_of_other_streams_and_devices_is_not_the_ops)
{
	struct tmm_cuda_timing *t;
	cudaStream_t s, beside, far = NULL;
	uint32_t sid = 0, fid = 0;
	char why[128], err[200];
	uint64_t after = 0, last, ns = 0;
	void *dev, *far_dev;

	setenv("CUDAFAKE_DEVICES", "2", 1);
	ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
	ck_assert_int_eq(cudaStreamCreate(&beside), cudaSuccess);
	ck_assert_int_eq(cudaMalloc(&dev, 1 << 16), cudaSuccess);
	ck_assert_int_eq(cuptiGetStreamIdEx(NULL, s, 0, &sid), CUPTI_SUCCESS);
	/* A stream of device 1 with the compute stream's id: the records
	 * tell them apart by their device (their context) alone. */
	ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
	ck_assert_int_eq(cudaMalloc(&far_dev, 1 << 16), cudaSuccess);
	for (int k = 0; k < 10000 && fid != sid; k++) {
		if (far)
			cudaStreamDestroy(far);
		ck_assert_int_eq(cudaStreamCreate(&far), cudaSuccess);
		ck_assert_int_eq(cuptiGetStreamIdEx(NULL, far, 0, &fid),
				 CUPTI_SUCCESS);
	}
	ck_assert_uint_eq(fid, sid);
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);

	ck_assert_int_eq(tmm_cuda_timing_open(&t, s, true, NULL, why,
					      sizeof(why)),
			 0);
	ck_assert_msg(strcmp(tmm_cuda_timing_method(t), "cupti") == 0, "%s",
		      why);
	ck_assert_int_eq(tmm_cuda_timing_begin(t, err, sizeof(err)), 0);
	ck_assert_int_eq(cudaMemsetAsync(dev, 1, 3000, s), cudaSuccess);
	ck_assert_int_eq(cudaMemsetAsync(dev, 2, 50000, beside),
			 cudaSuccess);
	ck_assert_int_eq(cudafake_launch(beside, nop_kernel, NULL, NULL, 0),
			 cudaSuccess);
	ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
	ck_assert_int_eq(cudaMemsetAsync(far_dev, 3, 60000, far),
			 cudaSuccess);
	ck_assert_int_eq(cudafake_launch(far, nop_kernel, NULL, NULL, 0),
			 cudaSuccess);
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
	ck_assert_int_eq(tmm_cuda_timing_end(t, err, sizeof(err)), 0);
	last = tmm_cuda_timing_last(t);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_msg(tmm_cuda_timing_collect(t, &after, &last, &ns, 1, err,
					      sizeof(err)) == 0, "%s", err);
	expect_near(ns, fill_ns(3000), "the compute stream's fill alone");
	tmm_cuda_timing_close(t);
	cudaFree(dev);
	cudaStreamDestroy(beside);
	cudaStreamDestroy(s);
	ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
	cudaFree(far_dev);
	cudaStreamDestroy(far);
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
	unsetenv("CUDAFAKE_DEVICES");
}
END_TEST

#define ROWS 64
#define ROW_BYTES 16384
#define PARTS 4

static int fill_rows(void *const *in, void *const *out, size_t begin,
		     size_t end, void *user, void *stream)
{
	(void)in;
	(void)user;
	return cudaMemsetAsync((char *)out[0] + begin * ROW_BYTES, 7,
			       (end - begin) * ROW_BYTES,
			       (cudaStream_t)stream) == cudaSuccess
		       ? 0
		       : -5;
}

static int fill_all(void *const *in, void *const *out, void *user,
		    void *stream)
{
	return fill_rows(in, out, 0, ROWS, user, stream);
}

/* The compute time of one iteration running `op`. */
static uint64_t iteration_ns(tmm_ctx *ctx, const tmm_op *op)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint64_t before;

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	before = st.compute_ns;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_msg(tmm_run(ctx, op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st.compute_ns - before;
}

/* Times the op whole, then split in PARTS by a plan; returns both. */
static void whole_and_split(const char *cupti, uint64_t *whole,
			    uint64_t *split)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	char cfg[160];
	tmm_ctx *ctx;
	tmm_tensor a, b;
	struct tmm_plan plan;
	const struct tmm_trace *tr;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=64MiB,"
		 "cupti=%s,stats_shm=off,replan_drift=0", cupti);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	printf("%s: op timing by %s\n", cfg, ctx->be.info.timing);
	ck_assert_int_eq(tmm_tensor_create(ctx, ROWS * ROW_BYTES,
					   TMM_ACTIVATION, "a", &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, ROWS * ROW_BYTES,
					   TMM_ACTIVATION, "b", &b), 0);
	tmm_op make = { .name = "make", .outputs = &a, .n_outputs = 1,
			.run = fill_all };
	tmm_op op = {
		.name = "rows", .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE, .inputs = &a, .n_inputs = 1,
		.outputs = &b, .n_outputs = 1, .run = fill_all,
		.run_slice = fill_rows, .slice_extent = ROWS,
	};
	ck_assert_msg(tmm_run(ctx, &make) == 0, "%s", tmm_last_error(ctx));
	*whole = iteration_ns(ctx, &op);
	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	ck_assert_int_eq(tmm_plan_init(&plan, tr, "split-timing"), 0);
	ck_assert_int_eq(tmm_plan_add_split(&plan, 0,
					    tr->tensors[tr->accesses[0].tensor]
						    .key,
					    PARTS), 0);
	ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
		      tmm_last_error(ctx));
	tmm_plan_free(&plan);
	*split = iteration_ns(ctx, &op);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.split_ops, 1);
	ck_assert_uint_eq(st.micro_ops, PARTS);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

START_TEST(a_split_op_is_timed_over_all_its_pieces)
{
	uint64_t whole, split;

	whole_and_split("on", &whole, &split);
	printf("cupti: whole %llu ns, in %d pieces %llu ns\n",
	       (unsigned long long)whole, PARTS, (unsigned long long)split);
	/* The same bytes in PARTS fills: PARTS - 1 more microseconds.  Its
	 * last piece alone would be a quarter of it. */
	expect_near(whole, fill_ns(ROWS * ROW_BYTES), "whole");
	expect_near(split, whole + (PARTS - 1) * 1000, "split");

	/* Events time each piece by its own pair: their sum, the pairs'
	 * own records included, is no less than the whole op. */
	whole_and_split("off", &whole, &split);
	printf("events: whole %llu ns, in %d pieces %llu ns\n",
	       (unsigned long long)whole, PARTS, (unsigned long long)split);
	ck_assert_uint_ge(split, whole);
}
END_TEST

START_TEST(an_older_cupti_is_not_used_though_it_records)
{
	struct tmm_cuda_timing *t;
	cudaStream_t s;
	char why[160];

	ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
	setenv("CUDAFAKE_CUPTI_VERSION", "18", 1);
	ck_assert_int_eq(tmm_cuda_timing_open(&t, s, true, NULL, why,
					      sizeof(why)),
			 0);
	unsetenv("CUDAFAKE_CUPTI_VERSION");
	ck_assert_str_eq(tmm_cuda_timing_method(t), "events");
	ck_assert_msg(strstr(why, "CUPTI API version 18 is older"), "%s",
		      why);
	tmm_cuda_timing_close(t);
	cudaStreamDestroy(s);
}
END_TEST

#define CHAIN 6
#define ITERATIONS 8

/* A chain of CHAIN fills through one tensor each, ITERATIONS times,
 * under policy `policy` with op times read the way `cupti` says; returns
 * how many plans were made. */
static uint64_t plans_over_steady_iterations(const char *cupti,
					     const char *policy)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_tensor t[CHAIN];
	tmm_op op[CHAIN];
	char cfg[200];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=64MiB,"
		 "cupti=%s,stats_shm=off,policy=%s", cupti, policy);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	for (int i = 0; i < CHAIN; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, ROWS * ROW_BYTES,
						   TMM_ACTIVATION, "link",
						   &t[i]), 0);
		op[i] = (tmm_op){ .name = "fill", .outputs = &t[i],
				  .n_outputs = 1, .run = fill_all };
		if (i) {
			op[i].inputs = &t[i - 1];
			op[i].n_inputs = 1;
		}
	}
	for (int it = 0; it < ITERATIONS; it++) {
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		for (int i = 0; i < CHAIN; i++)
			ck_assert_msg(tmm_run(ctx, &op[i]) == 0, "%s",
				      tmm_last_error(ctx));
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	}
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.iterations, ITERATIONS);
	ck_assert_uint_gt(st.compute_ns, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return st.plans_made;
}

START_TEST(steady_op_times_make_one_plan)
{
	static const char *const policies[] = { "tensile", "none" };

	for (size_t p = 0; p < 2; p++) {
		ck_assert_uint_eq(plans_over_steady_iterations("on",
							       policies[p]),
				  1);
		ck_assert_uint_eq(plans_over_steady_iterations("off",
							       policies[p]),
				  1);
	}
}
END_TEST

static Suite *cupti_suite(void)
{
	Suite *s = suite_create("cuda_cupti");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cupti_reports_each_ops_time);
	tcase_add_test(tc, work_of_other_streams_and_devices_is_not_the_ops);
	tcase_add_test(tc, a_split_op_is_timed_over_all_its_pieces);
	tcase_add_test(tc, an_older_cupti_is_not_used_though_it_records);
	tcase_add_test(tc, steady_op_times_make_one_plan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(cupti_suite);
}
