/* SPDX-License-Identifier: MIT */
/*
 * test_cudnn_fake.c — the cuDNN algorithm pickers (lib/exec/cudnn_algo.c)
 * on the CUDA test double's cuDNN (tests/cudafake/cudnn.c), whose
 * heuristics answer lists the test knows or sets:
 *  - the descriptor's math type bounds the candidates (FMA only: no
 *    tensor-op algorithm, whatever the room), and the chosen result's math
 *    type is set on the descriptor when room makes the picker fall back
 *    to one rated with less;
 *  - the workspace logic: the fastest that fits what the budget gives,
 *    results that failed or are not deterministic when asked left out;
 *  - no allowed algorithm, a refused descriptor and a failed query each
 *    fail with a message naming why, and the context goes on.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_3x3.h"
#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "tensormm.h"
#include "tensormm_cudnn.h"

/* x, dx: 1 × 16 × 128 × 128 floats, 1 MiB. */
#define X_BYTES ((size_t)1 << 20)

static cudnnHandle_t h;
static cudnnTensorDescriptor_t x, y;
static cudnnFilterDescriptor_t w;
static cudnnConvolutionDescriptor_t conv;

static void setup(void)
{
	conv_3x3_make(&h, &x, &y, &w, &conv, 1, 16, 128);
	cudafake_cudnn_results(NULL, 0);
}

static void teardown(void)
{
	cudafake_cudnn_results(NULL, 0);
	tmm_fault_set("");
	conv_3x3_free(h, x, y, w, conv);
}

static tmm_ctx *make_ctx(const char *budget)
{
	char cfg[128];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=%s,"
		 "cupti=off,stats_shm=off", budget);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

static cudnnMathType_t math_now(void)
{
	cudnnMathType_t m;

	ck_assert_int_eq(cudnnGetConvolutionMathType(conv, &m), 0);
	return m;
}

START_TEST(an_fma_descriptor_never_gets_tensor_ops)
{
	tmm_ctx *ctx = make_ctx("1GiB");
	cudnnConvolutionFwdAlgo_t fa;
	cudnnConvolutionBwdDataAlgo_t da;
	cudnnConvolutionBwdFilterAlgo_t fw;
	void *ws;
	size_t got;

	/* Room for every algorithm: the FMA one all the same. */
	ck_assert_int_eq(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), 0);
	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &fa,
					      &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fa, 0);
	ck_assert_uint_eq(got, 0);
	ck_assert_ptr_null(ws);
	ck_assert_msg(tmm_cudnn_conv_bwd_data_algo(ctx, h, w, y, conv, x, 0,
						   &da, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(da, 0);
	ck_assert_msg(tmm_cudnn_conv_bwd_filter_algo(ctx, h, x, y, conv, w,
						     0, &fw, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fw, 0);
	ck_assert_int_eq(math_now(), CUDNN_FMA_MATH);

	/* The default math type: the default-math rating, not tensor ops. */
	ck_assert_int_eq(cudnnSetConvolutionMathType(conv, CUDNN_DEFAULT_MATH),
			 0);
	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &fa,
					      &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fa, 1);
	ck_assert_uint_ge(got, X_BYTES);
	ck_assert_uint_lt(got, 2 * X_BYTES);
	ck_assert_int_eq(math_now(), CUDNN_DEFAULT_MATH);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(tensor_ops_where_they_fit_and_the_math_type_follows_the_choice)
{
	tmm_ctx *ctx = make_ctx("16MiB");
	cudnnConvolutionFwdAlgo_t fa;
	tmm_tensor t;
	void *ws, *p;
	size_t got;

	ck_assert_int_eq(cudnnSetConvolutionMathType(conv,
						     CUDNN_TENSOR_OP_MATH),
			 0);
	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &fa,
					      &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fa, 1);
	ck_assert_uint_ge(got, 2 * X_BYTES);
	ck_assert_int_eq(math_now(), CUDNN_TENSOR_OP_MATH);

	/* Room for 1.5 MiB only: algorithm 1 as rated with default math,
	 * and the descriptor now says so. */
	ck_assert_int_eq(tmm_workspace_release(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, (16u << 20) - (3u << 19),
					   TMM_PERSISTENT, "most", &t), 0);
	ck_assert_int_eq(tmm_acquire(ctx, t, TMM_WRITE, &p), 0);
	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &fa,
					      &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fa, 1);
	ck_assert_uint_ge(got, X_BYTES);
	ck_assert_uint_lt(got, 2 * X_BYTES);
	ck_assert_int_eq(math_now(), CUDNN_DEFAULT_MATH);
	ck_assert_int_eq(tmm_release(ctx, t), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(the_fastest_usable_result_that_fits)
{
	static const struct cudafake_cudnn_result r[] = {
		{ 5, CUDNN_STATUS_NOT_SUPPORTED, 10, CUDNN_DETERMINISTIC,
		  CUDNN_DEFAULT_MATH },
		{ 6, CUDNN_STATUS_SUCCESS, 50, CUDNN_DETERMINISTIC, 7 },
		{ 3, CUDNN_STATUS_SUCCESS, 100, CUDNN_NON_DETERMINISTIC,
		  CUDNN_DEFAULT_MATH },
		{ 4, CUDNN_STATUS_SUCCESS, 200, CUDNN_DETERMINISTIC,
		  CUDNN_FMA_MATH },
	};
	tmm_ctx *ctx = make_ctx("64MiB");
	cudnnConvolutionBwdDataAlgo_t da;
	void *ws;
	size_t got;

	cudafake_cudnn_results(r, 4);
	/* Not supported, and a math type cuDNN did not have when this was
	 * written: neither is a candidate. */
	ck_assert_msg(tmm_cudnn_conv_bwd_data_algo(ctx, h, w, y, conv, x, 0,
						   &da, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(da, 3);
	ck_assert_uint_ge(got, 100);
	ck_assert_msg(tmm_cudnn_conv_bwd_data_algo(ctx, h, w, y, conv, x,
						   TMM_CUDNN_DETERMINISTIC,
						   &da, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(da, 4);
	ck_assert_uint_ge(got, 200);
	/* FMA math asks less than the default: allowed, and now set. */
	ck_assert_int_eq(math_now(), CUDNN_FMA_MATH);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(failures_name_their_cause_and_the_context_goes_on)
{
	static const struct cudafake_cudnn_result tensor_ops[] = {
		{ 1, CUDNN_STATUS_SUCCESS, 64, CUDNN_DETERMINISTIC,
		  CUDNN_TENSOR_OP_MATH },
	};
	tmm_ctx *ctx = make_ctx("64MiB");
	cudnnTensorDescriptor_t unset;
	cudnnConvolutionBwdFilterAlgo_t fw;
	cudnnConvolutionFwdAlgo_t fa;
	void *ws;
	size_t got;

	/* Only tensor-op results for a default-math descriptor. */
	cudafake_cudnn_results(tensor_ops, 1);
	ck_assert_int_eq(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0,
						 &fa, &ws, &got), -ENOTSUP);
	ck_assert_msg(strstr(tmm_last_error(ctx), "math type"), "%s",
		      tmm_last_error(ctx));
	cudafake_cudnn_results(NULL, 0);

	/* A descriptor never set: cuDNN's BAD_PARAM, named. */
	ck_assert_int_eq(cudnnCreateTensorDescriptor(&unset), 0);
	ck_assert_int_eq(tmm_cudnn_conv_fwd_algo(ctx, h, unset, w, conv, y, 0,
						 &fa, &ws, &got), -EINVAL);
	ck_assert_msg(strstr(tmm_last_error(ctx),
			     "cudnnGetConvolutionForwardAlgorithm_v7"),
		      "%s", tmm_last_error(ctx));
	cudnnDestroyTensorDescriptor(unset);

	/* The query fails. */
	ck_assert_int_eq(
		tmm_fault_set("cudnnGetConvolutionBackwardFilterAlgorithm_v7"),
		0);
	ck_assert_int_eq(tmm_cudnn_conv_bwd_filter_algo(ctx, h, x, y, conv, w,
							0, &fw, &ws, &got),
			 -EIO);
	ck_assert_msg(strstr(tmm_last_error(ctx),
			     "cudnnGetConvolutionBackwardFilterAlgorithm_v7"),
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(tmm_cudnn_conv_bwd_filter_algo(ctx, h, x, y, conv, w, 0,
						     &fw, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(fw, 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *cudnn_suite(void)
{
	Suite *s = suite_create("cudnn_fake");
	TCase *tc = tcase_create("pickers");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, an_fma_descriptor_never_gets_tensor_ops);
	tcase_add_test(
		tc,
		tensor_ops_where_they_fit_and_the_math_type_follows_the_choice);
	tcase_add_test(tc, the_fastest_usable_result_that_fits);
	tcase_add_test(tc, failures_name_their_cause_and_the_context_goes_on);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(cudnn_suite);
}
