/* SPDX-License-Identifier: MIT */
/*
 * conv_3x3.h — the convolution the cuDNN picker tests ask about
 * (test_cuda_cudnn.c on a GPU and on the double, test_cudnn_fake.c,
 * test_cuda_dlopen.c): float NCHW, a 3×3 filter from `channels` to
 * `channels`, stride 1 and padding 1, so that y is as large as x.  Only
 * the sizes differ from test to test.
 */
#ifndef CONV_3X3_H
#define CONV_3X3_H

#include <cudnn.h>

/* Makes the handle and the descriptors of the convolution of n ×
 * channels × hw × hw into as many; a failure fails the test. */
void conv_3x3_make(cudnnHandle_t *h, cudnnTensorDescriptor_t *x,
		   cudnnTensorDescriptor_t *y, cudnnFilterDescriptor_t *w,
		   cudnnConvolutionDescriptor_t *conv, int n, int channels,
		   int hw);

/* Destroys what conv_3x3_make made. */
void conv_3x3_free(cudnnHandle_t h, cudnnTensorDescriptor_t x,
		   cudnnTensorDescriptor_t y, cudnnFilterDescriptor_t w,
		   cudnnConvolutionDescriptor_t conv);

#endif /* CONV_3X3_H */
