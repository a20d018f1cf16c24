/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_kernels.cu — the MLP's element-wise work on the GPU (see
 * mlp_gpu_kernels.h); the matrix products are cuBLAS's, in mlp_gpu.c.
 *
 * Each kernel finds its thread's index and runs the body of
 * mlp_gpu_kernel_body.h, the same source the CUDA test double's host
 * twins run (tests/mlp_gpu_twins.c).  The softmax takes a thread a row,
 * and the mean loss adds the rows' terms in one thread, in the same
 * order every run: no atomics, no reduction trees whose shape could
 * vary.  The bias gradients are cuBLAS's (mlp_gpu_train.c).
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

__global__ static void softmax_xent_rows(double *row_log, float *dlogits,
					 const float *logits,
					 const int32_t *labels, unsigned b,
					 unsigned o)
{
	mlp_body_softmax_xent_row((uint64_t)blockIdx.x * blockDim.x +
					  threadIdx.x,
				  row_log, dlogits, logits, labels, b, o);
}

/* One thread: the mean must add in one order. */
__global__ static void loss_mean(float *loss, const double *row_log,
				 unsigned b)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	mlp_body_loss_mean(loss, row_log, b);
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

int mlp_gpu_softmax_xent(float *loss, float *dlogits, double *row_log,
			 const float *logits, const int32_t *labels,
			 unsigned b, unsigned o, void *stream)
{
	int e;

	softmax_xent_rows<<<mlp_gpu_blocks_for(b), MLP_GPU_THREADS, 0,
			    (cudaStream_t)stream>>>(row_log, dlogits, logits,
						    labels, b, o);
	e = launched();
	if (e)
		return e;
	loss_mean<<<1, 1, 0, (cudaStream_t)stream>>>(loss, row_log, b);
	return launched();
}

int mlp_gpu_sgd_momentum(float *w, float *v, const float *g, uint64_t n,
			 float lr, float momentum, void *stream)
{
	sgd_momentum<<<mlp_gpu_blocks_for(n), MLP_GPU_THREADS, 0,
		       (cudaStream_t)stream>>>(w, v, g, n, lr, momentum);
	return launched();
}
