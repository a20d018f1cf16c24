/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_train.c — the training of examples/mlp_gpu (mlp_gpu_train.h):
 * the op callbacks of mlp_model.c on the device, matrix products by
 * cublasSgemm and the element-wise work by the kernels of
 * mlp_gpu_kernels.cu, and one training run.
 *
 * Determinism: every kernel computes each output in one thread in a
 * fixed order, and cuBLAS (the matrix products and the bias gradients)
 * gives bit-identical results run to run on one GPU for a fixed
 * configuration: one handle on the runtime's compute
 * stream, one workspace of our own (cublasSetWorkspace), atomics not
 * allowed, default (not TF32) math.
 * CUBLAS_WORKSPACE_CONFIG=:4096:8 is set when unset, which is what cuBLAS
 * asks for reproducibility when a handle meets more than one stream; it
 * costs nothing with one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "mlp_gpu_kernels.h"
#include "mlp_gpu_train.h"
#include "tensormm.h"

/* cuBLAS's scratch, ours so that it stays the same buffer (below). */
#define BLAS_WORKSPACE (32u << 20)

static cublasHandle_t blas;
static void *blas_ws;
static void *blas_stream; /* the stream the handle was last set to */

/*
 * Device scratch of the loss and the bias gradients, ours as cuBLAS's
 * workspace is, made with it before any context takes its budget, for
 * the largest batch asked or seen: a column of ones, since a bias
 * gradient is dZᵀ·1, a product cuBLAS spreads over the device (a thread
 * a column adding the rows in turn ran 1024 columns on 4 blocks), and
 * each row's log-probability of its label, which the loss adds up in
 * one thread after a thread a row made them.
 */
static float *ones;
static double *row_log;
static unsigned scratch_rows;

/* ---- op callbacks ----------------------------------------------------- */

/* Reports a failed CUDA launch, naming it; returns -EIO for tmm_run. */
static int launch_failed(const char *what, int e)
{
	if (e == 0)
		return 0;
	fprintf(stderr, "mlp_gpu: %s: %s (%s)\n", what,
		cudaGetErrorString((cudaError_t)e),
		cudaGetErrorName((cudaError_t)e));
	return -EIO;
}

static int blas_failed(const char *what, cublasStatus_t st)
{
	if (st == CUBLAS_STATUS_SUCCESS)
		return 0;
	fprintf(stderr, "mlp_gpu: %s: %s (%s)\n", what,
		cublasGetStatusString(st), cublasGetStatusName(st));
	return st == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : -EIO;
}

static void scratch_free(void)
{
	cudaFree(ones);
	cudaFree(row_log);
	ones = NULL;
	row_log = NULL;
	scratch_rows = 0;
}

/* The scratch for b rows.  cudaFree waits for the device, so no kernel
 * still reads the smaller one it replaces. */
static int scratch_for(unsigned b)
{
	cudaError_t e;
	float *h;

	if (b <= scratch_rows)
		return 0;
	scratch_free();
	/* The host's column of ones, short of memory, fails as the
	 * device's would. */
	h = malloc((size_t)b * sizeof(float));
	for (unsigned r = 0; h && r < b; r++)
		h[r] = 1.0f;
	e = h ? cudaMalloc((void **)&ones, (size_t)b * sizeof(float))
	      : cudaErrorMemoryAllocation;
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&row_log, (size_t)b * sizeof(double));
	if (e == cudaSuccess)
		e = cudaMemcpy(ones, h, (size_t)b * sizeof(float),
			       cudaMemcpyHostToDevice);
	free(h);
	if (e == cudaSuccess) {
		scratch_rows = b;
		return 0;
	}
	fprintf(stderr, "mlp_gpu: scratch of the loss and bias gradients "
		"(%zu bytes): %s (%s)\n", (size_t)b * 12,
		cudaGetErrorString(e), cudaGetErrorName(e));
	scratch_free();
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

/*
 * Row-major matrices are column-major transposes, so each product is
 * written for cuBLAS on the transposes: Zᵀ = Wᵀ·Xᵀ, dWᵀ = dZᵀ·X,
 * dXᵀ = W·dZᵀ.
 */
static int gemm(cublasOperation_t ta, cublasOperation_t tb, unsigned m,
		unsigned n, unsigned k, const float *a, unsigned lda,
		const float *b, unsigned ldb, float beta, float *c,
		unsigned ldc, void *stream)
{
	const float one = 1.0f;
	int rc;

	/* Each context has its own compute stream.  Setting a stream
	 * gives the handle back its default workspace, so ours is set
	 * again after it. */
	if (stream != blas_stream) {
		rc = blas_failed("cublasSetStream",
				 cublasSetStream(blas, (cudaStream_t)stream));
		if (rc == 0)
			rc = blas_failed("cublasSetWorkspace",
					 cublasSetWorkspace(blas, blas_ws,
							    BLAS_WORKSPACE));
		if (rc)
			return rc;
		blas_stream = stream;
	}
	return blas_failed("cublasSgemm",
			   cublasSgemm(blas, ta, tb, (int)m, (int)n, (int)k,
				       &one, a, (int)lda, b, (int)ldb, &beta,
				       c, (int)ldc));
}

/* Z[b×o] = X[b×i] · W[i×o] + bias[o] */
static int gpu_fc_forward(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct mlp_dims *d = user;
	int rc;

	rc = launch_failed("fill_rows", mlp_gpu_fill_rows(out[0], in[2], d->b,
							  d->o, stream));
	if (rc)
		return rc;
	return gemm(CUBLAS_OP_N, CUBLAS_OP_N, d->o, d->b, d->i, in[1], d->o,
		    in[0], d->i, 1.0f, out[0], d->o, stream);
}

static int gpu_relu_forward(void *const *in, void *const *out, void *user,
			    void *stream)
{
	const struct mlp_dims *d = user;

	return launch_failed("relu", mlp_gpu_relu(out[0], in[0],
						  (uint64_t)d->b * d->o,
						  stream));
}

static int gpu_relu_backward(void *const *in, void *const *out, void *user,
			     void *stream)
{
	const struct mlp_dims *d = user;

	return launch_failed("relu_backward",
			     mlp_gpu_relu_backward(out[0], in[0], in[1],
						   (uint64_t)d->b * d->o,
						   stream));
}

static int gpu_softmax_xent(void *const *in, void *const *out, void *user,
			    void *stream)
{
	const struct mlp_dims *d = user;
	int rc = scratch_for(d->b);

	return rc ? rc
		  : launch_failed("softmax_xent",
				  mlp_gpu_softmax_xent(out[0], out[1], row_log,
						       in[0], in[1], d->b,
						       d->o, stream));
}

/* dW = Xᵀ·dZ, dbias = dZᵀ·1 (the sums of dZ's columns), and (has_dx)
 * dX = dZ·Wᵀ */
static int gpu_fc_backward(void *const *in, void *const *out, void *user,
			   void *stream)
{
	const struct mlp_dims *d = user;
	int rc = scratch_for(d->b);

	if (rc == 0)
		rc = gemm(CUBLAS_OP_N, CUBLAS_OP_T, d->o, d->i, d->b, in[2],
			  d->o, in[0], d->i, 0.0f, out[0], d->o, stream);
	if (rc == 0)
		rc = gemm(CUBLAS_OP_N, CUBLAS_OP_N, d->o, 1, d->b, in[2],
			  d->o, ones, d->b, 0.0f, out[1], d->o, stream);
	if (rc == 0 && d->has_dx)
		rc = gemm(CUBLAS_OP_T, CUBLAS_OP_N, d->i, d->b, d->o, in[1],
			  d->o, in[2], d->o, 0.0f, out[2], d->i, stream);
	return rc;
}

static int gpu_sgd_momentum(void *const *in, void *const *out, void *user,
			    void *stream)
{
	const struct mlp_dims *d = user;

	return launch_failed("sgd_momentum",
			     mlp_gpu_sgd_momentum(out[0], out[1], in[2], d->o,
						  d->lr, d->momentum, stream));
}

static const struct mlp_kernels gpu_kernels = {
	.fc_forward = gpu_fc_forward,
	.relu_forward = gpu_relu_forward,
	.relu_backward = gpu_relu_backward,
	.softmax_xent = gpu_softmax_xent,
	.fc_backward = gpu_fc_backward,
	.sgd_momentum = gpu_sgd_momentum,
};

/* ---- one run -------------------------------------------------------- */

/* Sets cuBLAS up for reproducible results (see the header comment). */
int mlp_gpu_blas_open(unsigned batch)
{
	cudaError_t e;
	int rc;

	setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
	e = cudaMalloc(&blas_ws, BLAS_WORKSPACE);
	if (e != cudaSuccess)
		return launch_failed("cudaMalloc(cuBLAS workspace)", (int)e);
	rc = blas_failed("cublasCreate", cublasCreate(&blas));
	if (rc == 0)
		rc = blas_failed("cublasSetAtomicsMode",
				 cublasSetAtomicsMode(
					 blas, CUBLAS_ATOMICS_NOT_ALLOWED));
	if (rc == 0)
		rc = blas_failed("cublasSetMathMode",
				 cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
	return rc ? rc : scratch_for(batch);
}

void mlp_gpu_blas_close(void)
{
	cublasDestroy(blas);
	cudaFree(blas_ws);
	scratch_free();
	blas = NULL;
	blas_ws = NULL;
	blas_stream = NULL;
}

void mlp_gpu_blas_forget_stream(void)
{
	blas_stream = NULL;
}

const struct mlp_kernels *mlp_gpu_ops(void)
{
	return &gpu_kernels;
}

int mlp_gpu_train(const char *config, const struct mlp_config *mc,
		  struct mlp_gpu_result *r, FILE *log)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct mlp_config gpu = *mc;
	tmm_ctx *ctx;
	int rc = tmm_ctx_create(&ctx, config);

	if (rc) {
		fprintf(stderr, "mlp_gpu: cannot create a context (%s): %s\n",
			config, tmm_last_error(NULL));
		return rc;
	}
	gpu.kernels = &gpu_kernels;
	r->losses = calloc(mc->steps, sizeof(float));
	rc = r->losses ? mlp_train(ctx, &gpu, r->losses, &r->weights, &r->len,
				   log)
		       : -ENOMEM;
	if (rc) {
		fprintf(stderr, "mlp_gpu: training (%s) failed: %s (%s)\n",
			config, tmm_last_error(ctx), tmm_strerror(rc));
	} else {
		tmm_stats_get(ctx, &st);
		r->peak = st.device_peak;
		r->swap_outs = st.swap_out_count;
		printf("   %s: peak %.2f MiB, %llu swap-outs, %llu swap-ins, "
		       "last step %.3f ms (wall), %.3f ms in ops "
		       "(GPU-measured)\n", st.mode, r->peak / 1048576.0,
		       (unsigned long long)st.swap_out_count,
		       (unsigned long long)st.swap_in_count,
		       st.last_iteration_ns / 1e6, st.compute_ns / 1e6);
	}
	tmm_ctx_destroy(ctx);
	/* The stream is gone; a later context's may have its address. */
	mlp_gpu_blas_forget_stream();
	return rc;
}
