/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_kernels.h — the MLP's element-wise CUDA kernels
 * (mlp_gpu_kernels.cu), for examples/mlp_gpu.c.
 *
 * Each launcher queues its kernel on `stream` (a cudaStream_t) and
 * returns the cudaError_t of the launch as an int (0: queued).  Every
 * kernel gives each output element to one thread, which computes it in
 * the CPU loop's order, so the results do not depend on scheduling: runs
 * with the same inputs are bit-identical.
 */
#ifndef MLP_GPU_KERNELS_H
#define MLP_GPU_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* z[r][c] = bias[c] for b rows of o columns. */
int mlp_gpu_fill_rows(float *z, const float *bias, unsigned b, unsigned o,
		      void *stream);
/* a = max(z, 0), n elements. */
int mlp_gpu_relu(float *a, const float *z, uint64_t n, void *stream);
/* dz = da where z > 0, else 0. */
int mlp_gpu_relu_backward(float *dz, const float *z, const float *da,
			  uint64_t n, void *stream);
/* Mean softmax cross-entropy of b rows of o logits: loss[0], dlogits;
 * row_log is device scratch of b doubles (each row's term). */
int mlp_gpu_softmax_xent(float *loss, float *dlogits, double *row_log,
			 const float *logits, const int32_t *labels,
			 unsigned b, unsigned o, void *stream);
/* v = momentum v + g; w -= lr v, n elements. */
int mlp_gpu_sgd_momentum(float *w, float *v, const float *g, uint64_t n,
			 float lr, float momentum, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MLP_GPU_KERNELS_H */
