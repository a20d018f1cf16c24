/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_kernel_body.h — what one thread of each of the MLP's kernels
 * computes, written once for two compilers: nvcc builds the kernels of
 * mlp_gpu_kernels.cu from it (each __global__ kernel finds its thread's
 * index and calls the body here), and a C compiler builds the host twins
 * of the CUDA test double from it (tests/mlp_gpu_twins.c, which calls the
 * body for every thread index of the same launch configuration).
 *
 * Why one source: the double's runs must be the program's own kernels,
 * not a second copy that could drift from them.  The bodies are inline
 * functions, so the device code nvcc makes is what it made when they
 * were written inside the kernels.  C11 and CUDA C++ both accept
 * everything here (no C++-only or C-only construct).
 */
#ifndef MLP_GPU_KERNEL_BODY_H
#define MLP_GPU_KERNEL_BODY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MLP_HD __host__ __device__
#else
#define MLP_HD
#endif

/* Threads per block of every kernel but loss_mean's one thread. */
#define MLP_GPU_THREADS 256u

/* Blocks of MLP_GPU_THREADS threads that cover n outputs. */
static inline MLP_HD unsigned mlp_gpu_blocks_for(uint64_t n)
{
	return (unsigned)((n + MLP_GPU_THREADS - 1) / MLP_GPU_THREADS);
}

static inline MLP_HD void mlp_body_fill_rows(uint64_t k, float *z,
					     const float *bias, unsigned b,
					     unsigned o)
{
	if (k < (uint64_t)b * o)
		z[k] = bias[k % o];
}

static inline MLP_HD void mlp_body_relu(uint64_t k, float *a, const float *z,
					uint64_t n)
{
	if (k < n)
		a[k] = z[k] > 0.0f ? z[k] : 0.0f;
}

static inline MLP_HD void mlp_body_relu_backward(uint64_t k, float *dz,
						 const float *z,
						 const float *da, uint64_t n)
{
	if (k < n)
		dz[k] = z[k] > 0.0f ? da[k] : 0.0f;
}

/*
 * Row r of the softmax cross-entropy: its softmax, its gradient (over
 * the mean's b rows) into dlogits, and the log of its label's
 * probability into row_log[r].  One thread a row, each row in column
 * order.
 */
static inline MLP_HD void mlp_body_softmax_xent_row(uint64_t r,
						    double *row_log,
						    float *dlogits,
						    const float *logits,
						    const int32_t *labels,
						    unsigned b, unsigned o)
{
	const float *l;
	float *g;
	float max, sum = 0.0f;

	if (r >= b)
		return;
	l = logits + (size_t)r * o;
	g = dlogits + (size_t)r * o;
	max = l[0];
	for (unsigned c = 1; c < o; c++)
		if (l[c] > max)
			max = l[c];
	for (unsigned c = 0; c < o; c++) {
		g[c] = expf(l[c] - max);
		sum += g[c];
	}
	for (unsigned c = 0; c < o; c++) {
		g[c] /= sum;
		if ((int32_t)c == labels[r])
			row_log[r] = log((double)g[c] + 1e-12);
		g[c] = (g[c] - ((int32_t)c == labels[r])) / b;
	}
}

/* The mean loss in one thread, the rows' terms taken in row order so
 * that it adds up the same every run. */
static inline MLP_HD void mlp_body_loss_mean(float *loss,
					     const double *row_log, unsigned b)
{
	double total = 0.0;

	for (unsigned r = 0; r < b; r++)
		total -= row_log[r];
	loss[0] = (float)(total / b);
}

static inline MLP_HD void mlp_body_sgd_momentum(uint64_t k, float *w,
						float *v, const float *g,
						uint64_t n, float lr,
						float momentum)
{
	if (k < n) {
		v[k] = momentum * v[k] + g[k];
		w[k] -= lr * v[k];
	}
}

#endif /* MLP_GPU_KERNEL_BODY_H */
