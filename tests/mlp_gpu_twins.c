/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_twins.c — the launchers of examples/mlp_gpu_kernels.h for the
 * CUDA test double (tests/cudafake/): a test build of examples/mlp_gpu
 * links this file where the real build links nvcc's
 * mlp_gpu_kernels.o.
 *
 * Why this way: the kernels' arithmetic is compiled from the same source
 * as the GPU's (examples/mlp_gpu_kernel_body.h, a body per thread shared
 * with mlp_gpu_kernels.cu), so the double runs the program's own kernels,
 * not a copy of them; only the launch differs.  Each launcher here queues
 * its kernel with cudafake_launch on the same stream, with the bytes the
 * kernel reads and writes, so the double runs it in stream order in its
 * seeded schedule and the race detector checks its bytes against every
 * copy, prefetch and discard the library queued.  A twin runs the grid
 * of the launch configuration that mlp_gpu_kernels.cu uses (the same
 * blocks of MLP_GPU_THREADS threads, out-of-range threads included), one
 * thread after another; the kernels give each output to one thread, so
 * the order of the threads cannot change a bit.
 *
 * The real build is untouched: this file is compiled only into tests.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "cudafake/cudafake.h"
#include "mlp_gpu_kernel_body.h"
#include "mlp_gpu_kernels.h"

enum kernel {
	K_FILL_ROWS,
	K_RELU,
	K_RELU_BACKWARD,
	K_SOFTMAX_XENT_ROWS,
	K_LOSS_MEAN,
	K_SGD_MOMENTUM,
};

/* One launch: the kernel, its arguments, and its grid's threads. */
struct launch {
	enum kernel k;
	float *out0, *out1;
	const float *in0, *in1;
	const int32_t *labels;
	double *row_log;
	unsigned b, o;
	uint64_t n;
	float lr, momentum;
	uint64_t threads;
};

/* The grid, one thread after another; the double frees the launch
 * here, as it runs it once. */
static void twin(void *arg)
{
	struct launch *l = arg;

	for (uint64_t t = 0; t < l->threads; t++) {
		switch (l->k) {
		case K_FILL_ROWS:
			mlp_body_fill_rows(t, l->out0, l->in0, l->b, l->o);
			break;
		case K_RELU:
			mlp_body_relu(t, l->out0, l->in0, l->n);
			break;
		case K_RELU_BACKWARD:
			mlp_body_relu_backward(t, l->out0, l->in0, l->in1,
					       l->n);
			break;
		case K_SOFTMAX_XENT_ROWS:
			mlp_body_softmax_xent_row(t, l->row_log, l->out1,
						  l->in0, l->labels, l->b,
						  l->o);
			break;
		case K_LOSS_MEAN:
			/* <<<1, 1>>>: the kernel's one thread. */
			mlp_body_loss_mean(l->out0, l->row_log, l->b);
			break;
		case K_SGD_MOMENTUM:
			mlp_body_sgd_momentum(t, l->out0, l->out1, l->in0,
					      l->n, l->lr, l->momentum);
			break;
		}
	}
	free(l);
}

/* Queues l (malloc'd, taken) with the ranges r[0 .. n); returns the
 * launch's cudaError_t as mlp_gpu_kernels.cu's launchers do. */
static int launch(struct launch *l, const struct cudafake_range *r,
		  unsigned n, void *stream)
{
	cudaError_t e;

	if (!l)
		return (int)cudaErrorMemoryAllocation;
	e = cudafake_launch((cudaStream_t)stream, twin, l, r, n);
	if (e != cudaSuccess)
		free(l);
	return (int)e;
}

static struct launch *new_launch(enum kernel k, uint64_t threads)
{
	struct launch *l = calloc(1, sizeof(*l));

	if (l) {
		l->k = k;
		l->threads = threads;
	}
	return l;
}

/* The threads of a launch of blocks of MLP_GPU_THREADS over n outputs. */
static uint64_t grid(uint64_t n)
{
	return (uint64_t)mlp_gpu_blocks_for(n) * MLP_GPU_THREADS;
}

#define F(n) ((size_t)(n) * sizeof(float))
#define READS(p, bytes) { (p), (bytes), false }
#define WRITES(p, bytes) { (p), (bytes), true }

int mlp_gpu_fill_rows(float *z, const float *bias, unsigned b, unsigned o,
		      void *stream)
{
	uint64_t n = (uint64_t)b * o;
	struct launch *l = new_launch(K_FILL_ROWS, grid(n));
	struct cudafake_range r[] = { READS(bias, F(o)), WRITES(z, F(n)) };

	if (l) {
		l->out0 = z;
		l->in0 = bias;
		l->b = b;
		l->o = o;
	}
	return launch(l, r, 2, stream);
}

int mlp_gpu_relu(float *a, const float *z, uint64_t n, void *stream)
{
	struct launch *l = new_launch(K_RELU, grid(n));
	struct cudafake_range r[] = { READS(z, F(n)), WRITES(a, F(n)) };

	if (l) {
		l->out0 = a;
		l->in0 = z;
		l->n = n;
	}
	return launch(l, r, 2, stream);
}

int mlp_gpu_relu_backward(float *dz, const float *z, const float *da,
			  uint64_t n, void *stream)
{
	struct launch *l = new_launch(K_RELU_BACKWARD, grid(n));
	struct cudafake_range r[] = { READS(z, F(n)), READS(da, F(n)),
				      WRITES(dz, F(n)) };

	if (l) {
		l->out0 = dz;
		l->in0 = z;
		l->in1 = da;
		l->n = n;
	}
	return launch(l, r, 3, stream);
}

int mlp_gpu_softmax_xent(float *loss, float *dlogits, double *row_log,
			 const float *logits, const int32_t *labels,
			 unsigned b, unsigned o, void *stream)
{
	uint64_t n = (uint64_t)b * o;
	size_t logs = (size_t)b * sizeof(double);
	struct launch *l = new_launch(K_SOFTMAX_XENT_ROWS, grid(b));
	struct cudafake_range r[] = {
		READS(logits, F(n)), READS(labels, (size_t)b * sizeof(int32_t)),
		WRITES(dlogits, F(n)), WRITES(row_log, logs),
	};
	struct cudafake_range m[] = { READS(row_log, logs),
				      WRITES(loss, F(1)) };
	int e;

	if (l) {
		l->out1 = dlogits;
		l->row_log = row_log;
		l->in0 = logits;
		l->labels = labels;
		l->b = b;
		l->o = o;
	}
	e = launch(l, r, 4, stream);
	if (e)
		return e;
	l = new_launch(K_LOSS_MEAN, 1);
	if (l) {
		l->out0 = loss;
		l->row_log = row_log;
		l->b = b;
	}
	return launch(l, m, 2, stream);
}

int mlp_gpu_sgd_momentum(float *w, float *v, const float *g, uint64_t n,
			 float lr, float momentum, void *stream)
{
	struct launch *l = new_launch(K_SGD_MOMENTUM, grid(n));
	/* w and v are read and written: a write covers both. */
	struct cudafake_range r[] = { READS(g, F(n)), WRITES(w, F(n)),
				      WRITES(v, F(n)) };

	if (l) {
		l->out0 = w;
		l->out1 = v;
		l->in0 = g;
		l->n = n;
		l->lr = lr;
		l->momentum = momentum;
	}
	return launch(l, r, 3, stream);
}
