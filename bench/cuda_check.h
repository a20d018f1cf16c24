/* SPDX-License-Identifier: MIT */
/*
 * cuda_check.h — how the GPU benchmarks report a failed CUDA call: the
 * program's name, the call, and CUDA's description and name of the error,
 * on stderr.  Each program wraps it with its own name.
 */
#ifndef BENCH_CUDA_CHECK_H
#define BENCH_CUDA_CHECK_H

#include <stdio.h>

#include <cuda_runtime_api.h>

/* 0 when e is cudaSuccess, else -1 with the message written. */
static inline int bench_cuda_check(const char *prog, cudaError_t e,
				   const char *call)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "%s: %s: %s (%s)\n", prog, call, cudaGetErrorString(e),
		cudaGetErrorName(e));
	return -1;
}

#endif /* BENCH_CUDA_CHECK_H */
