/* SPDX-License-Identifier: MIT */
/*
 * cudnn_algo.c — the fastest convolution algorithm that fits right now
 * (tensormm_cudnn.h).
 *
 * Which query: cudnnGet*Algorithm_v7, not cudnnFind*AlgorithmEx.  The Find
 * calls run every algorithm on real buffers and time them, which needs
 * the tensors' device addresses (known only inside the op's callback),
 * a workspace as large as the hungriest algorithm's (the very memory the
 * budget is short of), and a synchronisation; a model with many layers
 * would pay it at every size change.  The _v7 calls are heuristics over
 * the descriptors alone: cheap enough to ask at every step, where the
 * free memory, and so the answer, changes.  Both list the algorithms
 * fastest first, each with its workspace need, which is all the choice
 * needs.
 *
 * Why the _v7 calls in cuDNN 9, where they are deprecated: cuDNN 9
 * deprecates the whole legacy convolution API with them, the
 * descriptors, cudnnConvolutionForward and cudnnFind* included (cuDNN API
 * reference, cudnn_cnn library; the graph API is the recommended one).
 * These pickers take the caller's legacy descriptors and answer an
 * algorithm number for the caller's cudnnConvolution* call; the graph
 * API's heuristics answer engine configurations that only a graph-API
 * execution plan can run, so they cannot answer this interface.  The
 * legacy calls are still present and supported in cuDNN 9 (libcudnn_cnn);
 * a picker for graph-API callers would be a new interface beside this
 * one.  configure finds cuDNN by cudnnGetConvolutionForwardAlgorithm_v7,
 * so a cuDNN without it builds the library without the pickers.
 *
 * cuDNN is not linked: the first picker call loads it (cudnn_lib.h), and
 * every call reaches it through that table, `dnn`.  A program that never
 * calls a picker never loads it.
 *
 * The math type.  A result's mathType is the math type the algorithm was
 * rated with (cuDNN API reference, cudnnConvolutionFwdAlgoPerf_t), and
 * the heuristics list results of other math types than the descriptor's.
 * A result is a candidate only when its math type asks no more than the
 * descriptor's allows (FMA only < default < tensor ops < tensor ops with
 * conversion): a caller who set CUDNN_FMA_MATH to keep FP32 accuracy
 * never gets a tensor-op algorithm.  The chosen result's math type is set
 * on the descriptor, so that the convolution runs with the math type
 * whose workspace need was taken (an algorithm rated with default math
 * may need another workspace with tensor ops).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>

#include "tensormm_cudnn.h"

#include "cudnn_lib.h"
#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "workspace.h"

/* One algorithm cuDNN offered, in its order (fastest first). */
struct cand {
	int algo;
	size_t memory;
	cudnnMathType_t math;
};

/* How much a math type allows, strictest first; unknown ones most. */
static int math_rank(cudnnMathType_t m)
{
	switch (m) {
	case CUDNN_FMA_MATH: return 0;
	case CUDNN_DEFAULT_MATH: return 1;
	case CUDNN_TENSOR_OP_MATH: return 2;
	case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return 3;
	default: return 4;
	}
}

/* Whether a result rated with `got` may run under a descriptor of
 * `allowed` (an unknown math type is allowed only by itself). */
static bool math_allows(cudnnMathType_t allowed, cudnnMathType_t got)
{
	return got == allowed ||
	       (math_rank(got) < 4 && math_rank(got) <= math_rank(allowed));
}

/* The errno for a cuDNN status, and the message naming the call. */
static int cudnn_fail(struct tmm_ctx *ctx, const struct tmm_cudnn *dnn,
		      cudnnStatus_t st, const char *call)
{
	int code;

	switch (st) {
	case CUDNN_STATUS_BAD_PARAM:
		code = -EINVAL;
		break;
	case CUDNN_STATUS_NOT_SUPPORTED:
		code = -ENOTSUP;
		break;
	case CUDNN_STATUS_ALLOC_FAILED:
		code = -ENOMEM;
		break;
	default:
		code = -EIO;
		break;
	}
	return tmm_fail(ctx, code, "%s: %s (status %d); check the tensor, "
			"filter and convolution descriptors", call,
			dnn->cudnnGetErrorString(st), (int)st);
}

/*
 * Takes a workspace for the candidates c[0 .. n) and picks the first that
 * fits in it.  Every candidate fits in what tmm_workspace gives at the
 * least, the smallest need.
 */
static int choose(struct tmm_ctx *ctx, const char *what, unsigned flags,
		  const struct cand *c, int n, int *at, void **ws,
		  size_t *ws_bytes)
{
	size_t lo = (size_t)-1, hi = 0, got = 0;
	void *p = NULL;
	int rc;

	if (n == 0)
		return tmm_fail(ctx, -ENOTSUP,
				"%s: cuDNN offers no algorithm for this "
				"convolution%s that its math type allows; "
				"allow more (cudnnSetConvolutionMathType) or "
				"change the descriptors", what,
				(flags & TMM_CUDNN_DETERMINISTIC)
					? " that is deterministic (or drop "
					  "TMM_CUDNN_DETERMINISTIC)"
					: "");
	for (int i = 0; i < n; i++) {
		lo = c[i].memory < lo ? c[i].memory : lo;
		hi = c[i].memory > hi ? c[i].memory : hi;
	}
	if (hi == 0) {
		/* No algorithm wants scratch: the fastest, and none held. */
		tmm_workspace_drop(ctx);
	} else {
		rc = tmm_workspace_take(ctx, lo, hi, &p, &got);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < n; i++) {
		if (c[i].memory > got)
			continue;
		*at = i;
		*ws = c[i].memory ? p : NULL;
		*ws_bytes = c[i].memory ? got : 0;
		return 0;
	}
	/* Not reached: the smallest need fits in what was given. */
	return tmm_fail(ctx, -ENOMEM, "%s: no algorithm fits a workspace of "
			"%zu bytes", what, got);
}

/*
 * Lets a picker into the context (lib/core/guard.h), checks the
 * arguments every picker shares and loads cuDNN into *dnn (from the
 * context's dl_path the first time in the process): what
 * tmm_guard_enter returned, for tmm_guard_leave, or a negative errno
 * (the context is not held then).
 */
static int enter(struct tmm_ctx *ctx, const char *what, cudnnHandle_t handle,
		 const void *algo, void *const *ws, const size_t *ws_bytes,
		 const struct tmm_cudnn **dnn)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_CUDNN_ALGO);
	char why[TMM_DYNLIB_WHY];
	int rc = 0;

	if (entered < 0)
		return entered;
	if (!handle || !algo || !ws || !ws_bytes) {
		rc = tmm_fail(ctx, -EINVAL, "%s: the handle, algo, workspace "
			      "and workspace_bytes must not be NULL", what);
	} else {
		*dnn = tmm_cudnn_load(ctx->cfg.dl_path, why, sizeof(why));
		if (!*dnn)
			rc = tmm_fail(ctx, -ENOSYS, "%s: %s", what, why);
	}
	if (rc < 0) {
		tmm_guard_leave(ctx, entered);
		return rc;
	}
	return entered;
}

/* Keeps the usable results: succeeded, of a math type the descriptor's
 * (math) allows, and deterministic when asked. */
#define KEEP(perf, n, flags, math, out, kept) \
	do { \
		for (int i_ = 0; i_ < (n); i_++) { \
			if ((perf)[i_].status != CUDNN_STATUS_SUCCESS || \
			    !math_allows((math), (perf)[i_].mathType) || \
			    (((flags) & TMM_CUDNN_DETERMINISTIC) && \
			     (perf)[i_].determinism != CUDNN_DETERMINISTIC)) \
				continue; \
			(out)[(kept)++] = (struct cand){ \
				(int)(perf)[i_].algo, (perf)[i_].memory, \
				(perf)[i_].mathType }; \
		} \
	} while (0)

/* The descriptor's math type, or the failure's errno (message set). */
static int math_of(struct tmm_ctx *ctx, const struct tmm_cudnn *dnn,
		   cudnnConvolutionDescriptor_t conv, cudnnMathType_t *math)
{
	cudnnStatus_t st = dnn->cudnnGetConvolutionMathType(conv, math);

	return st == CUDNN_STATUS_SUCCESS
		       ? 0
		       : cudnn_fail(ctx, dnn, st,
				    "cudnnGetConvolutionMathType");
}

/*
 * Chooses among the kept candidates c[0 .. n) (choose) and sets the
 * chosen one's math type on the descriptor when it is not already its.
 */
static int finish(struct tmm_ctx *ctx, const struct tmm_cudnn *dnn,
		  const char *what, unsigned flags,
		  cudnnConvolutionDescriptor_t conv, cudnnMathType_t math,
		  const struct cand *c, int n, int *algo, void **ws,
		  size_t *ws_bytes)
{
	cudnnStatus_t st;
	int at = 0, rc;

	rc = choose(ctx, what, flags, c, n, &at, ws, ws_bytes);
	if (rc < 0)
		return rc;
	if (c[at].math != math) {
		st = dnn->cudnnSetConvolutionMathType(conv, c[at].math);
		if (st != CUDNN_STATUS_SUCCESS)
			return cudnn_fail(ctx, dnn, st,
					  "cudnnSetConvolutionMathType");
	}
	*algo = c[at].algo;
	return 0;
}

/* One picker call's arguments: its descriptors, named by their role in
 * the convolution: the input side (x, or dx), the filter (w, or dw) and
 * the output side (y, or dy), which every direction's query takes
 * besides the handle and the convolution, in its own order; and the
 * caller's TMM_CUDNN_* flags. */
struct conv_call {
	cudnnHandle_t handle;
	cudnnConvolutionDescriptor_t conv;
	cudnnTensorDescriptor_t in;
	cudnnFilterDescriptor_t filter;
	cudnnTensorDescriptor_t out;
	unsigned flags;
};

/* The most algorithms a direction has: the room for its candidates
 * (the counts are members of three enum types, compared as ints). */
#define MAX2_(a, b) ((int)(a) > (int)(b) ? (int)(a) : (int)(b))
enum {
	CAND_MAX = MAX2_(CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
			 MAX2_(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
			       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT))
};

/* One direction: its picker's name and the cuDNN query it asks (both
 * named in messages), and a function that asks it and keeps the usable
 * results in c (KEEP), answering cuDNN's status. */
struct direction {
	const char *what;
	const char *query_name;
	cudnnStatus_t (*query)(const struct tmm_cudnn *dnn,
			       const struct conv_call *q, cudnnMathType_t math,
			       struct cand *c, int *kept);
};

static cudnnStatus_t query_fwd(const struct tmm_cudnn *dnn,
			       const struct conv_call *q, cudnnMathType_t math,
			       struct cand *c, int *kept)
{
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	int n = 0;
	cudnnStatus_t st = dnn->cudnnGetConvolutionForwardAlgorithm_v7(
		q->handle, q->in, q->filter, q->conv, q->out,
		CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);

	if (st == CUDNN_STATUS_SUCCESS)
		KEEP(perf, n, q->flags, math, c, *kept);
	return st;
}

static cudnnStatus_t query_bwd_data(const struct tmm_cudnn *dnn,
				    const struct conv_call *q,
				    cudnnMathType_t math, struct cand *c,
				    int *kept)
{
	cudnnConvolutionBwdDataAlgoPerf_t
		perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	int n = 0;
	cudnnStatus_t st = dnn->cudnnGetConvolutionBackwardDataAlgorithm_v7(
		q->handle, q->filter, q->out, q->conv, q->in,
		CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);

	if (st == CUDNN_STATUS_SUCCESS)
		KEEP(perf, n, q->flags, math, c, *kept);
	return st;
}

static cudnnStatus_t query_bwd_filter(const struct tmm_cudnn *dnn,
				      const struct conv_call *q,
				      cudnnMathType_t math, struct cand *c,
				      int *kept)
{
	cudnnConvolutionBwdFilterAlgoPerf_t
		perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	int n = 0;
	cudnnStatus_t st = dnn->cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		q->handle, q->in, q->out, q->conv, q->filter,
		CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);

	if (st == CUDNN_STATUS_SUCCESS)
		KEEP(perf, n, q->flags, math, c, *kept);
	return st;
}

static const struct direction fwd = {
	"tmm_cudnn_conv_fwd_algo", "cudnnGetConvolutionForwardAlgorithm_v7",
	query_fwd
};
static const struct direction bwd_data = {
	"tmm_cudnn_conv_bwd_data_algo",
	"cudnnGetConvolutionBackwardDataAlgorithm_v7", query_bwd_data
};
static const struct direction bwd_filter = {
	"tmm_cudnn_conv_bwd_filter_algo",
	"cudnnGetConvolutionBackwardFilterAlgorithm_v7", query_bwd_filter
};

/*
 * What every picker does, whatever the direction: enters, reads the
 * descriptor's math type, asks d's query, keeps the usable results and
 * chooses (finish).  algo is the caller's pointer, only checked here;
 * the choice goes to *a, for the caller to give its enum type.
 */
static int pick(struct tmm_ctx *ctx, const struct direction *d,
		const struct conv_call *q, const void *algo, int *a,
		void **workspace, size_t *workspace_bytes)
{
	struct cand c[CAND_MAX];
	int kept = 0, entered, rc;
	cudnnMathType_t math = CUDNN_DEFAULT_MATH;
	const struct tmm_cudnn *dnn = NULL;
	cudnnStatus_t st;

	entered = enter(ctx, d->what, q->handle, algo, workspace,
			workspace_bytes, &dnn);
	if (entered < 0)
		return entered;
	rc = math_of(ctx, dnn, q->conv, &math);
	if (rc < 0)
		goto out;
	st = d->query(dnn, q, math, c, &kept);
	if (st != CUDNN_STATUS_SUCCESS) {
		rc = cudnn_fail(ctx, dnn, st, d->query_name);
		goto out;
	}
	rc = finish(ctx, dnn, d->what, q->flags, q->conv, math, c, kept, a,
		    workspace, workspace_bytes);
out:
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_cudnn_conv_fwd_algo(tmm_ctx *ctx, cudnnHandle_t handle,
			    cudnnTensorDescriptor_t x,
			    cudnnFilterDescriptor_t w,
			    cudnnConvolutionDescriptor_t conv,
			    cudnnTensorDescriptor_t y, unsigned flags,
			    cudnnConvolutionFwdAlgo_t *algo,
			    void **workspace, size_t *workspace_bytes)
{
	const struct conv_call q = { handle, conv, x, w, y, flags };
	int a = 0, rc = pick(ctx, &fwd, &q, algo, &a, workspace,
			     workspace_bytes);

	if (rc == 0)
		*algo = (cudnnConvolutionFwdAlgo_t)a;
	return rc;
}

int tmm_cudnn_conv_bwd_data_algo(tmm_ctx *ctx, cudnnHandle_t handle,
				 cudnnFilterDescriptor_t w,
				 cudnnTensorDescriptor_t dy,
				 cudnnConvolutionDescriptor_t conv,
				 cudnnTensorDescriptor_t dx, unsigned flags,
				 cudnnConvolutionBwdDataAlgo_t *algo,
				 void **workspace, size_t *workspace_bytes)
{
	const struct conv_call q = { handle, conv, dx, w, dy, flags };
	int a = 0, rc = pick(ctx, &bwd_data, &q, algo, &a, workspace,
			     workspace_bytes);

	if (rc == 0)
		*algo = (cudnnConvolutionBwdDataAlgo_t)a;
	return rc;
}

int tmm_cudnn_conv_bwd_filter_algo(tmm_ctx *ctx, cudnnHandle_t handle,
				   cudnnTensorDescriptor_t x,
				   cudnnTensorDescriptor_t dy,
				   cudnnConvolutionDescriptor_t conv,
				   cudnnFilterDescriptor_t dw, unsigned flags,
				   cudnnConvolutionBwdFilterAlgo_t *algo,
				   void **workspace, size_t *workspace_bytes)
{
	const struct conv_call q = { handle, conv, x, dw, dy, flags };
	int a = 0, rc = pick(ctx, &bwd_filter, &q, algo, &a, workspace,
			     workspace_bytes);

	if (rc == 0)
		*algo = (cudnnConvolutionBwdFilterAlgo_t)a;
	return rc;
}
