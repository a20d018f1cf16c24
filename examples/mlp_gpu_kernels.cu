/*
 * mlp_gpu_kernels.cu — the MLP's element-wise work on the GPU (see
 * mlp_gpu_kernels.h); the matrix products are cuBLAS's, in mlp_gpu.c.
 *
 * The softmax loss and the column sums loop over their rows in one
 * thread per output, in the same order every run: no atomics, no
 * reduction trees whose shape could vary.
 */
#include <cuda_runtime.h>

#include "mlp_gpu_kernels.h"

#define THREADS 256

static unsigned blocks_for(uint64_t n)
{
	return (unsigned)((n + THREADS - 1) / THREADS);
}

__global__ static void fill_rows(float *z, const float *bias, unsigned b,
				 unsigned o)
{
	uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (k < (uint64_t)b * o)
		z[k] = bias[k % o];
}

__global__ static void relu(float *a, const float *z, uint64_t n)
{
	uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (k < n)
		a[k] = z[k] > 0.0f ? z[k] : 0.0f;
}

__global__ static void relu_backward(float *dz, const float *z,
				     const float *da, uint64_t n)
{
	uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (k < n)
		dz[k] = z[k] > 0.0f ? da[k] : 0.0f;
}

/* One thread: the batch is small, and the mean must add in one order. */
__global__ static void softmax_xent(float *loss, float *dlogits,
				    const float *logits,
				    const int32_t *labels, unsigned b,
				    unsigned o)
{
	double total = 0.0;

	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	for (unsigned r = 0; r < b; r++) {
		const float *l = logits + (size_t)r * o;
		float *g = dlogits + (size_t)r * o;
		float max = l[0], sum = 0.0f;

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
				total -= log((double)g[c] + 1e-12);
			g[c] = (g[c] - ((int32_t)c == labels[r])) / b;
		}
	}
	loss[0] = (float)(total / b);
}

__global__ static void column_sums(float *db, const float *dz, unsigned b,
				   unsigned o)
{
	unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;

	if (c >= o)
		return;
	for (unsigned r = 0; r < b; r++)
		s += dz[(size_t)r * o + c];
	db[c] = s;
}

__global__ static void sgd_momentum(float *w, float *v, const float *g,
				    uint64_t n, float lr, float momentum)
{
	uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (k < n) {
		v[k] = momentum * v[k] + g[k];
		w[k] -= lr * v[k];
	}
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

	fill_rows<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
		z, bias, b, o);
	return launched();
}

int mlp_gpu_relu(float *a, const float *z, uint64_t n, void *stream)
{
	relu<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(a, z, n);
	return launched();
}

int mlp_gpu_relu_backward(float *dz, const float *z, const float *da,
			  uint64_t n, void *stream)
{
	relu_backward<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
		dz, z, da, n);
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
	column_sums<<<blocks_for(o), THREADS, 0, (cudaStream_t)stream>>>(
		db, dz, b, o);
	return launched();
}

int mlp_gpu_sgd_momentum(float *w, float *v, const float *g, uint64_t n,
			 float lr, float momentum, void *stream)
{
	sgd_momentum<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
		w, v, g, n, lr, momentum);
	return launched();
}
