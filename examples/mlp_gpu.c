/*
 * mlp_gpu.c — the MLP demo on a real GPU: the training program of
 * examples/mlp.c (same model, initialisation, data, loss and steps, from
 * mlp_model.c) with its ops on the device: matrix products by
 * cublasSgemm, the element-wise work by the kernels of
 * mlp_gpu_kernels.cu.
 *
 * It trains once with 90% of the free device memory, which must not swap,
 * to measure the peak device memory,
 * then with a budget of a fraction of that peak (30% by default) in
 * mode=swap and in mode=uvm, and checks that each constrained run's
 * losses and final weights are bit-identical to the unconstrained run's.
 * Exit status: 0 when they are, 1 when not or on an error, 77 when there
 * is no GPU (the test suites' "skipped").
 *
 * Determinism: every kernel here computes each output in one thread in a
 * fixed order, and cuBLAS gives bit-identical results run to run on one
 * GPU for a fixed configuration: one handle on the runtime's compute
 * stream, one workspace of our own (cublasSetWorkspace), atomics not
 * allowed, default (not TF32) math.
 * CUBLAS_WORKSPACE_CONFIG=:4096:8 is set when unset, which is what cuBLAS
 * asks for reproducibility when a handle meets more than one stream; it
 * costs nothing with one.
 *
 *   examples/mlp_gpu [--fraction F] [--steps N] [--layers N] [--width N]
 *                    [--batch N]
 *
 * In mode=uvm the CUDA driver cannot be capped (backend.h): the budget
 * bounds what the runtime plans for, not the pages the driver keeps.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "demo_run.h"
#include "mlp_gpu_kernels.h"
#include "mlp_model.h"
#include "tensormm.h"

/* cuBLAS's scratch, ours so that it stays the same buffer (below). */
#define BLAS_WORKSPACE (32u << 20)

static cublasHandle_t blas;
static void *blas_ws;
static void *blas_stream; /* the stream the handle was last set to */

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

	return launch_failed("softmax_xent",
			     mlp_gpu_softmax_xent(out[0], out[1], in[0], in[1],
						  d->b, d->o, stream));
}

/* dW = Xᵀ·dZ, dbias = Σ dZ, and (has_dx) dX = dZ·Wᵀ */
static int gpu_fc_backward(void *const *in, void *const *out, void *user,
			   void *stream)
{
	const struct mlp_dims *d = user;
	int rc;

	rc = gemm(CUBLAS_OP_N, CUBLAS_OP_T, d->o, d->i, d->b, in[2], d->o,
		  in[0], d->i, 0.0f, out[0], d->o, stream);
	if (rc == 0)
		rc = launch_failed("column_sums",
				   mlp_gpu_column_sums(out[1], in[2], d->b,
						       d->o, stream));
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

/* ---- the demo --------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlp_gpu [--fraction F] [--steps N] [--layers N] "
		"[--width N] [--batch N]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 12)\n"
		"  --layers N    hidden layers (default 6)\n"
		"  --width N     units per hidden layer (default 256)\n"
		"  --batch N     samples per step (default 128)\n");
}

/* One training run's results. */
struct result {
	float *losses;
	uint8_t *weights;
	size_t len;
	unsigned long long peak;
	unsigned long long swap_outs;
};

static int train(const char *config, const struct mlp_config *mc,
		 struct result *r, FILE *log)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;
	int rc = tmm_ctx_create(&ctx, config);

	if (rc) {
		fprintf(stderr, "mlp_gpu: cannot create a context (%s): %s\n",
			config, tmm_last_error(NULL));
		return rc;
	}
	r->losses = calloc(mc->steps, sizeof(float));
	rc = r->losses ? mlp_train(ctx, mc, r->losses, &r->weights, &r->len,
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
	return rc;
}

static bool same(const struct result *a, const struct result *b,
		 unsigned steps)
{
	return a->len == b->len && !memcmp(a->weights, b->weights, a->len) &&
	       !memcmp(a->losses, b->losses, steps * sizeof(float));
}

/* Sets cuBLAS up for reproducible results (see the header comment). */
static int blas_open(void)
{
	int rc;

	cudaError_t e;

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
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "swap", "uvm" };
	struct result free_run = { 0 }, tight[2] = { { 0 } };
	struct mlp_config mc;
	double fraction = 0.3;
	unsigned long long budget;
	char config[160];
	bool ok = true;
	int n = 0;

	mlp_config_default(&mc);
	mc.kernels = &gpu_kernels;
	{
		const struct demo_opt opts[] = {
			{ "--fraction", DEMO_FRACTION, &fraction, 0 },
			{ "--steps", DEMO_COUNT, &mc.steps, 0 },
			{ "--layers", DEMO_COUNT, &mc.layers, 63 },
			{ "--width", DEMO_COUNT, &mc.width, 0 },
			{ "--batch", DEMO_COUNT, &mc.batch, 0 },
		};
		int parsed = demo_parse_args("mlp_gpu", argc, argv, opts,
					 sizeof(opts) / sizeof(opts[0]), usage);

		if (parsed)
			return parsed == 1 ? 0 : 2;
	}


	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		(void)cudaGetLastError();
		printf("mlp_gpu: no CUDA device; skipped\n");
		return 77;
	}
	if (blas_open())
		return 1;

	printf("libtensormm demo: an MLP (%u hidden layers of %u, batch %u) "
	       "on the GPU, cuBLAS\n\n", mc.layers, mc.width, mc.batch);
	printf("1) unconstrained run, to measure the peak device memory\n");
	/* Most of the free device memory (the rest is left to cuBLAS and
	 * the driver): a fixed size such as 1 GiB would swap at the
	 * larger shapes, and a fraction of a constrained peak could then
	 * fall below the largest op. */
	if (train("backend=cuda,mode=swap,budget=90%", &mc, &free_run,
		  NULL))
		return 1;
	if (free_run.swap_outs) {
		printf("mlp_gpu: the unconstrained run swapped %llu times: "
		       "the model needs more than 90%% of the free device "
		       "memory; use a smaller --width, --layers or --batch\n",
		       free_run.swap_outs);
		return 1;
	}
	budget = (unsigned long long)((double)free_run.peak * fraction);
	printf("\n2) budget %.0f%% of that peak (%.2f MiB), in both modes\n",
	       100.0 * fraction, budget / 1048576.0);
	for (int m = 0; m < 2; m++) {
		bool same_bits;

		snprintf(config, sizeof(config),
			 "backend=cuda,mode=%s,budget=%lluB", modes[m], budget);
		if (train(config, &mc, &tight[m], NULL))
			return 1;
		same_bits = same(&free_run, &tight[m], mc.steps);
		printf("   mode=%s: weights and losses bit-identical to the "
		       "unconstrained run: %s\n", modes[m],
		       same_bits ? "yes" : "NO");
		if (m == 0 && tight[m].peak > budget) {
			printf("   mode=swap: peak above the budget: NO\n");
			ok = false;
		}
		ok = ok && same_bits;
	}
	printf("\nfinal loss %.4f\n", free_run.losses[mc.steps - 1]);
	cublasDestroy(blas);
	cudaFree(blas_ws);
	free(free_run.losses);
	free(free_run.weights);
	for (int m = 0; m < 2; m++) {
		free(tight[m].losses);
		free(tight[m].weights);
	}
	return ok ? 0 : 1;
}
