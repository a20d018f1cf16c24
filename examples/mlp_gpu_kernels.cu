/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_kernels.cu — the MLP's element-wise work on the GPU (see
 * mlp_gpu_kernels.h); the matrix products are cuBLAS's, in mlp_gpu.c.
 *
 * Each kernel finds its thread's index and runs the body of
 * mlp_gpu_kernel_body.h, the same source the CUDA test double's host
 * twins run (tests/mlp_gpu_twins.c).  The softmax loss and the column
 * sums loop over their rows in one thread per output, in the same order
 * every run: no atomics, no reduction trees whose shape could vary.
 */
#include <cuda_runtime.h>

#include "mlp_gpu_kernel_body.h"
#include "mlp_gpu_kernels.h"

__global__ static void fill_rows(float *z, const float *bias, unsigned b,
				 unsigned o)
{
	mlp_body_fill_rows((uint64_t)blockIdx.x * blockDim.x + threadIdx.x, z,
			   bias, b, o);
}

__global__ static void relu(float *a, const float *z, uint64_t n)
{
	mlp_body_relu((uint64_t)blockIdx.x * blockDim.x + threadIdx.x, a, z,
		      n);
}

__global__ static void relu_backward(float *dz, const float *z,
				     const float *da, uint64_t n)
{
	mlp_body_relu_backward((uint64_t)blockIdx.x * blockDim.x +
				       threadIdx.x,
			       dz, z, da, n);
}

/* One thread: the batch is small, and the mean must add in one order. */
__global__ static void softmax_xent(float *loss, float *dlogits,
				    const float *logits,
				    const int32_t *labels, unsigned b,
				    unsigned o)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	mlp_body_softmax_xent(loss, dlogits, logits, labels, b, o);
}

__global__ static void column_sums(float *db, const float *dz, unsigned b,
				   unsigned o)
{
	mlp_body_column_sums(blockIdx.x * blockDim.x + threadIdx.x, db, dz, b,
			     o);
}

__global__ static void sgd_momentum(float *w, float *v, const float *g,
				    uint64_t n, float lr, float momentum)
{
	mlp_body_sgd_momentum((uint64_t)blockIdx.x * blockDim.x + threadIdx.x,
			      w, v, g, n, lr, momentum);
}

/* The launch's own error (a bad configuration), not an earlier one's. */
static int launched(void)
{
	return (int)cudaGetLastError();
}

int mlp_gpu_fill_rows(float *z, const float *bias, unsigned b, unsigned o,
		      void *stream)
{
	uint64_t n = (uint64_t)b * o;

	fill_rows<<<mlp_gpu_blocks_for(n), MLP_GPU_THREADS, 0,
		    (cudaStream_t)stream>>>(z, bias, b, o);
	return launched();
}

int mlp_gpu_relu(float *a, const float *z, uint64_t n, void *stream)
{
	relu<<<mlp_gpu_blocks_for(n), MLP_GPU_THREADS, 0,
	       (cudaStream_t)stream>>>(a, z, n);
	return launched();
}

int mlp_gpu_relu_backward(float *dz, const float *z, const float *da,
			  uint64_t n, void *stream)
{
	relu_backward<<<mlp_gpu_blocks_for(n), MLP_GPU_THREADS, 0,
			(cudaStream_t)stream>>>(dz, z, da, n);
	return launched();
}

int mlp_gpu_softmax_xent(float *loss, float *dlogits, const float *logits,
			 const int32_t *labels, unsigned b, unsigned o,
			 void *stream)
{
	softmax_xent<<<1, 1, 0, (cudaStream_t)stream>>>(loss, dlogits, logits,
							labels, b, o);
	return launched();
}

int mlp_gpu_column_sums(float *db, const float *dz, unsigned b, unsigned o,
			void *stream)
{
	column_sums<<<mlp_gpu_blocks_for(o), MLP_GPU_THREADS, 0,
		      (cudaStream_t)stream>>>(db, dz, b, o);
	return launched();
}

int mlp_gpu_sgd_momentum(float *w, float *v, const float *g, uint64_t n,
			 float lr, float momentum, void *stream)
{
	sgd_momentum<<<mlp_gpu_blocks_for(n), MLP_GPU_THREADS, 0,
		       (cudaStream_t)stream>>>(w, v, g, n, lr, momentum);
	return launched();
}
