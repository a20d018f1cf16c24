/* SPDX-License-Identifier: MIT */
/*
 * conv_3x3.c — the picker tests' convolution (see conv_3x3.h).
 */
#include <check.h>

#include "conv_3x3.h"

void conv_3x3_make(cudnnHandle_t *h, cudnnTensorDescriptor_t *x,
		   cudnnTensorDescriptor_t *y, cudnnFilterDescriptor_t *w,
		   cudnnConvolutionDescriptor_t *conv, int n, int channels,
		   int hw)
{
	ck_assert_int_eq(cudnnCreate(h), CUDNN_STATUS_SUCCESS);
	ck_assert_int_eq(cudnnCreateTensorDescriptor(x), 0);
	ck_assert_int_eq(cudnnCreateTensorDescriptor(y), 0);
	ck_assert_int_eq(cudnnCreateFilterDescriptor(w), 0);
	ck_assert_int_eq(cudnnCreateConvolutionDescriptor(conv), 0);
	ck_assert_int_eq(cudnnSetTensor4dDescriptor(*x, CUDNN_TENSOR_NCHW,
						    CUDNN_DATA_FLOAT, n,
						    channels, hw, hw), 0);
	ck_assert_int_eq(cudnnSetTensor4dDescriptor(*y, CUDNN_TENSOR_NCHW,
						    CUDNN_DATA_FLOAT, n,
						    channels, hw, hw), 0);
	ck_assert_int_eq(cudnnSetFilter4dDescriptor(*w, CUDNN_DATA_FLOAT,
						    CUDNN_TENSOR_NCHW,
						    channels, channels, 3, 3),
			 0);
	ck_assert_int_eq(cudnnSetConvolution2dDescriptor(
				 *conv, 1, 1, 1, 1, 1, 1,
				 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), 0);
}

void conv_3x3_free(cudnnHandle_t h, cudnnTensorDescriptor_t x,
		   cudnnTensorDescriptor_t y, cudnnFilterDescriptor_t w,
		   cudnnConvolutionDescriptor_t conv)
{
	cudnnDestroyConvolutionDescriptor(conv);
	cudnnDestroyFilterDescriptor(w);
	cudnnDestroyTensorDescriptor(y);
	cudnnDestroyTensorDescriptor(x);
	cudnnDestroy(h);
}
