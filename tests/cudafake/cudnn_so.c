/* SPDX-License-Identifier: MIT */
/*
 * cudnn_so.c — the double's libcudnn.so.N (stand_in.h): the cuDNN entry
 * points libtensormm looks up (TMM_CUDNN_CALLS), each handing its call
 * to the double's cuDNN in the program that loaded it.
 */
#include "stand_in.h"

size_t cudnnGetVersion(void)
{
	return cudafake_cudnn.cudnnGetVersion();
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
	return cudafake_cudnn.cudnnGetErrorString(status);
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d,
					  cudnnMathType_t *math)
{
	return cudafake_cudnn.cudnnGetConvolutionMathType(d, math);
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
					  cudnnMathType_t math)
{
	return cudafake_cudnn.cudnnSetConvolutionMathType(d, math);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
	cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
	const cudnnFilterDescriptor_t w,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnTensorDescriptor_t y, const int want, int *n,
	cudnnConvolutionFwdAlgoPerf_t *perf)
{
	return cudafake_cudnn.cudnnGetConvolutionForwardAlgorithm_v7(
		handle, x, w, conv, y, want, n, perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
	cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
	const cudnnTensorDescriptor_t dy,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnTensorDescriptor_t dx, const int want, int *n,
	cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
	return cudafake_cudnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
		handle, w, dy, conv, dx, want, n, perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
	cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
	const cudnnTensorDescriptor_t dy,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnFilterDescriptor_t dw, const int want, int *n,
	cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
	return cudafake_cudnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		handle, x, dy, conv, dw, want, n, perf);
}
