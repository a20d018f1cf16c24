/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_cudnn.c — the cuDNN algorithm pickers on a real GPU.
 *
 * For a 3×3 convolution of a 32×64×56×56 batch, each picker returns an
 * algorithm cuDNN supports with a workspace the context handed out; with
 * a budget that leaves no room beyond the tensors, the picker still
 * succeeds with the algorithm of the smallest need; bad arguments are
 * refused with a message.
 *
 * Without a GPU it exits 77, automake's "skipped".  Tests run in the
 * test process (CK_NOFORK), as in test_cuda_backend.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "tensormm.h"
#include "tensormm_cudnn.h"
#include "conv_3x3.h"
#include "cuda_main.h"

static cudnnHandle_t h;
static cudnnTensorDescriptor_t x, y;
static cudnnFilterDescriptor_t w;
static cudnnConvolutionDescriptor_t conv;

static void setup(void)
{
	conv_3x3_make(&h, &x, &y, &w, &conv, 32, 64, 56);
}

static void teardown(void)
{
	conv_3x3_free(h, x, y, w, conv);
}

static void pick_all(tmm_ctx *ctx, unsigned flags)
{
	cudnnConvolutionFwdAlgo_t fa;
	cudnnConvolutionBwdDataAlgo_t da;
	cudnnConvolutionBwdFilterAlgo_t fw;
	void *ws;
	size_t got;

	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, flags,
					      &fa, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert(got == 0 || ws != NULL);
	printf("fwd algo %d, workspace %zu\n", (int)fa, got);
	ck_assert_msg(tmm_cudnn_conv_bwd_data_algo(ctx, h, w, y, conv, x,
						   flags, &da, &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	printf("bwd data algo %d, workspace %zu\n", (int)da, got);
	ck_assert_msg(tmm_cudnn_conv_bwd_filter_algo(ctx, h, x, y, conv, w,
						     flags, &fw, &ws,
						     &got) == 0,
		      "%s", tmm_last_error(ctx));
	printf("bwd filter algo %d, workspace %zu\n", (int)fw, got);
}

START_TEST(pickers_with_room)
{
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
					      "budget=1GiB,stats_shm=off"),
			 0);
	pick_all(ctx, 0);
	pick_all(ctx, TMM_CUDNN_DETERMINISTIC);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(pickers_without_room)
{
	tmm_ctx *ctx;
	tmm_tensor t;
	void *ws;
	size_t got = 1;
	cudnnConvolutionFwdAlgo_t fa;
	static char zeros[1 << 20];

	/* 16 MiB budget, all of it held by pinned tensors. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
					      "budget=16MiB,stats_shm=off"),
			 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 16 << 20, TMM_PERSISTENT,
					   "all", &t), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, zeros, sizeof(zeros)),
			 0);
	ck_assert_int_eq(tmm_acquire(ctx, t, TMM_READ, &ws), 0);
	ck_assert_msg(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &fa,
					      &ws, &got) == 0,
		      "%s", tmm_last_error(ctx));
	ck_assert_uint_eq(got, 0);
	ck_assert_ptr_null(ws);
	ck_assert_int_eq(tmm_release(ctx, t), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(bad_arguments)
{
	tmm_ctx *ctx;
	cudnnConvolutionFwdAlgo_t fa;
	void *ws;
	size_t got;

	ck_assert_int_eq(tmm_cudnn_conv_fwd_algo(NULL, h, x, w, conv, y, 0,
						 &fa, &ws, &got), -EBADF);
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
					      "budget=64MiB,stats_shm=off"),
			 0);
	ck_assert_int_eq(tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0,
						 NULL, &ws, &got), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "NULL"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *cudnn_suite(void)
{
	Suite *s = suite_create("cuda_cudnn");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pickers_with_room);
	tcase_add_test(tc, pickers_without_room);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(cudnn_suite);
}
