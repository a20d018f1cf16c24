/* SPDX-License-Identifier: MIT */
/*
 * cublas.c — the cuBLAS entry points the project calls (examples/mlp_gpu:
 * the handle, its stream, workspace, atomics and math modes, sgemm and
 * the status strings), on the double's streams, with the prototypes of
 * the real cublas_v2.h (included, so the compiler holds each definition
 * to its declaration; cublas_v2.h names them cublasCreate_v2 and so on).
 *
 * cublasSgemm is queued on the handle's stream as a kernel, with the
 * bytes it reads and writes, so the double runs it in stream order in its
 * seeded schedule, after the copies and prefetches queued before it, and
 * the race detector checks it like any kernel.  It is a host sgemm that
 * adds in one fixed order every run (below), so two runs of the same
 * program agree to the bit, as cuBLAS's do on one GPU with the
 * configuration examples/mlp_gpu.c sets (cuBLAS Library, "Results
 * reproducibility").  Its results are not the GPU's: a test compares the
 * double with itself, never with a GPU.
 *
 * Where the double's behaviour is an assumption about cuBLAS, the comment
 * names the section of the cuBLAS Library documentation (docs.nvidia.com/
 * cuda/cublas) it follows.  The `fault` tunable's sites here
 * (lib/base/fault.h): cublasCreate (answers CUBLAS_STATUS_ALLOC_FAILED)
 * and cublasSgemm (answers CUBLAS_STATUS_EXECUTION_FAILED, the kernel's
 * launch failing; nothing is queued).
 */
#include <cublas_v2.h>
#include <stdlib.h>

#include "fake.h"
#include "lib/base/fault.h"

struct cublasContext {
	cudaStream_t stream;	/* NULL: the default stream */
	void *workspace;	/* NULL: cuBLAS's own pool */
	size_t workspace_bytes;
	cublasAtomicsMode_t atomics;
	cublasMath_t math;
};

static unsigned long sgemms;

unsigned long cudafake_cublas_sgemms(void)
{
	return sgemms;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
	switch (status) {
	case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
	case CUBLAS_STATUS_NOT_INITIALIZED:
		return "CUBLAS_STATUS_NOT_INITIALIZED";
	case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
	case CUBLAS_STATUS_INVALID_VALUE:
		return "CUBLAS_STATUS_INVALID_VALUE";
	case CUBLAS_STATUS_ARCH_MISMATCH:
		return "CUBLAS_STATUS_ARCH_MISMATCH";
	case CUBLAS_STATUS_MAPPING_ERROR:
		return "CUBLAS_STATUS_MAPPING_ERROR";
	case CUBLAS_STATUS_EXECUTION_FAILED:
		return "CUBLAS_STATUS_EXECUTION_FAILED";
	case CUBLAS_STATUS_INTERNAL_ERROR:
		return "CUBLAS_STATUS_INTERNAL_ERROR";
	case CUBLAS_STATUS_NOT_SUPPORTED:
		return "CUBLAS_STATUS_NOT_SUPPORTED";
	case CUBLAS_STATUS_LICENSE_ERROR:
		return "CUBLAS_STATUS_LICENSE_ERROR";
	default: return "CUBLAS_STATUS_UNKNOWN";
	}
}

const char *cublasGetStatusString(cublasStatus_t status)
{
	switch (status) {
	case CUBLAS_STATUS_SUCCESS: return "success";
	case CUBLAS_STATUS_NOT_INITIALIZED: return "the handle is not set up";
	case CUBLAS_STATUS_ALLOC_FAILED: return "resources could not be "
						"allocated";
	case CUBLAS_STATUS_INVALID_VALUE: return "an argument is out of range";
	case CUBLAS_STATUS_EXECUTION_FAILED:
		return "the kernel failed to launch (the double's fault)";
	default: return "a cuBLAS status the double does not give";
	}
}

/* cublasCreate: the handle starts on the default stream with cuBLAS's
 * own workspace, atomics not allowed and default math (cuBLAS Library,
 * cublasCreate(), cublasSetAtomicsMode(), cublasSetMathMode()). */
cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
	if (!handle)
		return CUBLAS_STATUS_INVALID_VALUE;
	*handle = NULL;
	if (tmm_fault_hit("cublasCreate"))
		return CUBLAS_STATUS_ALLOC_FAILED;
	*handle = calloc(1, sizeof(**handle));
	if (!*handle)
		return CUBLAS_STATUS_ALLOC_FAILED;
	(*handle)->atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
	(*handle)->math = CUBLAS_DEFAULT_MATH;
	return CUBLAS_STATUS_SUCCESS;
}

/* Releasing the handle synchronises the device (cuBLAS Library,
 * cublasCreate(): "the release of those resources by calling
 * cublasDestroy() will implicitly call cudaDeviceSynchronize()"). */
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	(void)cudaDeviceSynchronize();
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

/* Setting a stream gives the handle back cuBLAS's default workspace pool
 * (cuBLAS Library, cublasSetStream(): it "unconditionally resets the
 * cuBLAS library workspace back to the default workspace pool"). */
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle,
				  cudaStream_t streamId)
{
	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = streamId;
	handle->workspace = NULL;
	handle->workspace_bytes = 0;
	return CUBLAS_STATUS_SUCCESS;
}

/* The workspace is used by the calls that follow on the handle's current
 * stream (cuBLAS Library, cublasSetWorkspace()); the double counts every
 * sgemm as writing all of it, so that two sgemms on it that no stream
 * rule orders are reported as a race. */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
				     size_t workspaceSizeInBytes)
{
	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (workspace && workspaceSizeInBytes == 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->workspace = workspace;
	handle->workspace_bytes = workspace ? workspaceSizeInBytes : 0;
	return CUBLAS_STATUS_SUCCESS;
}

/* Kept, not acted on: sgemm uses no atomics in cuBLAS (cuBLAS Library,
 * cublasSetAtomicsMode(): the routines with an atomics variant are
 * symv and hemv), and the double's sgemm is exact float arithmetic in
 * every math mode. */
cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle,
				    cublasAtomicsMode_t mode)
{
	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (mode != CUBLAS_ATOMICS_NOT_ALLOWED &&
	    mode != CUBLAS_ATOMICS_ALLOWED)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->atomics = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

/* One sgemm, its arguments copied at the call. */
struct sgemm {
	bool ta, tb;		/* op(A) = Aᵀ, op(B) = Bᵀ */
	int m, n, k;
	float alpha, beta;
	const float *a, *b;
	float *c;
	int lda, ldb, ldc;
};

/*
 * C = alpha op(A) op(B) + beta C, column-major (cuBLAS Library, "Data
 * layout": element (i, j) of a matrix with leading dimension ld is at
 * i + j ld; cublas<t>gemm(): op(A) is m×k, op(B) k×n, C m×n, and op(X)
 * is X for CUBLAS_OP_N, Xᵀ for CUBLAS_OP_T and, for real data,
 * CUBLAS_OP_C).  Each element of C adds its k products in order of l
 * from 0, in float, then scales: the one summation order of the double.
 * With beta == 0, C is not read ("if beta == 0, C does not have to be a
 * valid input"), so a NaN there does not survive.
 */
static void sgemm_run(void *arg)
{
	struct sgemm *g = arg;

	for (int j = 0; j < g->n; j++) {
		for (int i = 0; i < g->m; i++) {
			float s = 0.0f;
			float *c = &g->c[i + (size_t)j * g->ldc];

			/* alpha == 0: A and B are not read (as BLAS). */
			for (int l = 0; g->alpha != 0.0f && l < g->k; l++) {
				float a = g->ta ? g->a[l + (size_t)i * g->lda]
						: g->a[i + (size_t)l * g->lda];
				float b = g->tb ? g->b[j + (size_t)l * g->ldb]
						: g->b[l + (size_t)j * g->ldb];

				s += a * b;
			}
			*c = g->beta == 0.0f ? g->alpha * s
					     : g->alpha * s + g->beta * *c;
		}
	}
	free(g);
}

/* The bytes a column-major matrix of `rows` x `cols` with leading
 * dimension ld spans. */
static size_t span(int rows, int cols, int ld)
{
	if (rows <= 0 || cols <= 0)
		return 0;
	return ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * sizeof(float);
}

static bool op_ok(cublasOperation_t op)
{
	return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
			      cublasOperation_t transb, int m, int n, int k,
			      const float *alpha, const float *A, int lda,
			      const float *B, int ldb, const float *beta,
			      float *C, int ldc)
{
	struct fake_access acc[4];
	unsigned n_acc = 0;
	struct fake_op *op;
	struct sgemm *g;
	bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;

	if (!handle)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	/* cublas<t>gemm(): the argument checks of its "Return Value"
	 * table, CUBLAS_STATUS_INVALID_VALUE. */
	if (!op_ok(transa) || !op_ok(transb) || m < 0 || n < 0 || k < 0 ||
	    !alpha || !beta || lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) ||
	    ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) ||
	    ldc < (m > 1 ? m : 1))
		return CUBLAS_STATUS_INVALID_VALUE;
	if (tmm_fault_hit("cublasSgemm"))
		return CUBLAS_STATUS_EXECUTION_FAILED;
	sgemms++;
	if (m == 0 || n == 0)
		return CUBLAS_STATUS_SUCCESS;
	g = malloc(sizeof(*g));
	if (!g)
		return CUBLAS_STATUS_ALLOC_FAILED;
	/* The default pointer mode is the host's (cublasPointerMode_t):
	 * the scalars are read now, so the caller's may go out of scope. */
	*g = (struct sgemm){ ta, tb, m, n, k, *alpha, *beta, A, B, C,
			     lda, ldb, ldc };
	if (k > 0 && g->alpha != 0.0f) {
		acc[n_acc++] = (struct fake_access){
			(uintptr_t)A,
			(uintptr_t)A + span(ta ? k : m, ta ? m : k, lda),
			USE_READ };
		acc[n_acc++] = (struct fake_access){
			(uintptr_t)B,
			(uintptr_t)B + span(tb ? n : k, tb ? k : n, ldb),
			USE_READ };
	}
	/* A write covers the read of C that beta != 0 makes. */
	acc[n_acc++] = (struct fake_access){
		(uintptr_t)C, (uintptr_t)C + span(m, n, ldc), USE_WRITE };
	if (handle->workspace)
		acc[n_acc++] = (struct fake_access){
			(uintptr_t)handle->workspace,
			(uintptr_t)handle->workspace +
				handle->workspace_bytes,
			USE_WRITE };
	op = fake_op_new(OP_KERNEL, handle->stream);
	/* A kernel goes to a stream of the current device (as
	 * cudafake_launch's). */
	if (op && op->s->device >= 0 &&
	    op->s->device != fake_current_device()) {
		free(op);
		op = NULL;
	}
	if (!op) {
		free(g);
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	op->fn = sgemm_run;
	op->arg = g;
	/* Timed by its matrices: the workspace, last, is scratch. */
	op->bytes = fake_kernel_cost(acc, handle->workspace ? n_acc - 1
							   : n_acc);
	return fake_enqueue(op, acc, n_acc, "cublasSgemm",
			    __builtin_return_address(0)) == cudaSuccess
		       ? CUBLAS_STATUS_SUCCESS
		       : CUBLAS_STATUS_EXECUTION_FAILED;
}
