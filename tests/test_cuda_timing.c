/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_timing.c — op times on a real GPU reach the trace.
 *
 * A context on the cuda backend runs ops that fill device memory on the
 * compute stream; at the iteration's end every op of the trace has a
 * duration above zero, with cupti=off (cudaEvent pairs) and cupti=on
 * (CUPTI activity records, or events where the driver refuses
 * profiling, which the test reports).  The timing module is also driven
 * directly: ids, a collect that forgets, and CUPTI taken by one owner.
 *
 * Without a GPU it exits 77, automake's "skipped".  Tests run in the
 * test process (CK_NOFORK), as in test_cuda_backend.c.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lib/core/context.h"
#include "lib/backend/cuda_timing.h"
#include "lib/record/tracker.h"
#include "cuda_main.h"

#define FILL_BYTES ((size_t)64 << 20)

/* Fills the output four times: tens of microseconds on any GPU. */
static int fill_op(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)in;
	(void)user;
	for (int k = 0; k < 4; k++)
		if (cudaMemsetAsync(out[0], k, FILL_BYTES,
				    (cudaStream_t)stream) != cudaSuccess)
			return -5;
	return 0;
}

static void run_iteration(const char *config)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	const struct tmm_trace *tr;
	tmm_ctx *ctx;
	tmm_tensor t;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	printf("%s: op timing by %s\n", config, ctx->be.info.timing);
	ck_assert_int_eq(tmm_tensor_create(ctx, FILL_BYTES, TMM_ACTIVATION,
					   "t", &t), 0);
	tmm_op op = { .name = "fill", .outputs = &t, .n_outputs = 1,
		      .run = fill_op };
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(tmm_run(ctx, &op) == 0, "%s",
			      tmm_last_error(ctx));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);

	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	ck_assert_uint_eq(tr->n_ops, 3);
	for (uint32_t i = 0; i < tr->n_ops; i++) {
		uint64_t d = tr->ops[i].end_ns - tr->ops[i].begin_ns;

		ck_assert_msg(d > 0, "op %u has no time", i);
		printf("  op %u: %.1f us\n", i, d / 1e3);
	}
	for (uint32_t i = 0; i < tr->n_accesses; i++)
		ck_assert_uint_gt(tr->accesses[i].end_ns,
				  tr->accesses[i].begin_ns);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_gt(st.compute_ns, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

START_TEST(events_time_ops)
{
	run_iteration("backend=cuda,mode=swap,budget=256MiB,cupti=off,"
		      "stats_shm=off");
}
END_TEST

START_TEST(cupti_times_ops)
{
	run_iteration("backend=cuda,mode=swap,budget=256MiB,cupti=on,"
		      "stats_shm=off");
}
END_TEST

START_TEST(module_ids_and_collect)
{
	struct tmm_cuda_timing *a, *b;
	cudaStream_t s;
	char why[128], err[200];
	uint64_t ids[3], after[2], last[2], ns[2] = { 1, 1 };
	void *dev;

	ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
	ck_assert_int_eq(cudaMalloc(&dev, FILL_BYTES), cudaSuccess);
	ck_assert_int_eq(tmm_cuda_timing_open(&a, s, true, NULL, why,
					      sizeof(why)),
			 0);
	printf("first: %s %s\n", tmm_cuda_timing_method(a), why);
	/* CUPTI belongs to the process: a second owner gets events. */
	ck_assert_int_eq(tmm_cuda_timing_open(&b, s, true, NULL, why,
					      sizeof(why)),
			 0);
	ck_assert_str_eq(tmm_cuda_timing_method(b), "events");
	ck_assert(why[0] != '\0');
	tmm_cuda_timing_close(b);

	ck_assert_uint_eq(tmm_cuda_timing_last(a), 0);
	/* Op 0 is one bracket; op 1 two, as a split op's pieces. */
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(tmm_cuda_timing_begin(a, err, sizeof(err)),
				 0);
		ck_assert_int_eq(cudaMemsetAsync(dev, k, FILL_BYTES, s),
				 cudaSuccess);
		ck_assert_int_eq(tmm_cuda_timing_end(a, err, sizeof(err)), 0);
		ids[k] = tmm_cuda_timing_last(a);
	}
	ck_assert_uint_lt(ids[0], ids[1]);
	ck_assert_uint_lt(ids[1], ids[2]);
	after[0] = 0;
	last[0] = after[1] = ids[0];
	last[1] = ids[2];
	ck_assert_int_eq(tmm_cuda_timing_collect(a, after, last, ns, 2, err,
						 sizeof(err)), 0);
	ck_assert_uint_gt(ns[0], 0);
	/* Two fills of the same size take longer than one. */
	ck_assert_uint_gt(ns[1], ns[0]);
	/* Collected ops are forgotten. */
	ck_assert_int_eq(tmm_cuda_timing_collect(a, after, last, ns, 2, err,
						 sizeof(err)), 0);
	ck_assert_uint_eq(ns[0], 0);
	tmm_cuda_timing_close(a);
	cudaFree(dev);
	cudaStreamDestroy(s);
}
END_TEST

static Suite *timing_suite(void)
{
	Suite *s = suite_create("cuda_timing");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, events_time_ops);
	tcase_add_test(tc, cupti_times_ops);
	tcase_add_test(tc, module_ids_and_collect);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(timing_suite);
}
