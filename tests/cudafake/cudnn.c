/* SPDX-License-Identifier: MIT */
/*
 * cudnn.c — the cuDNN entry points the project calls (the version, the
 * handle, 4-d tensor, filter and 2-d convolution descriptors, the
 * convolution's math type, and the three _v7 algorithm queries), enough
 * for the algorithm pickers (lib/exec/cudnn_algo.c) and their workspace
 * logic; no convolution runs.  The prototypes are cudnn.h's.
 *
 * The queries are heuristics over the descriptors, as cuDNN's are: they
 * list algorithms fastest first, each with its status, workspace need,
 * determinism and the math type it was rated with (cuDNN API reference,
 * cudnn_cnn library: cudnnConvolutionFwdAlgoPerf_t, "mathType: the math
 * type provided to the algorithm"; one algorithm may appear once per math
 * type, and results of a math type other than the descriptor's are
 * listed too).  The double's own list, for an input (x, or dx) of B
 * bytes:
 *   algo 1, tensor op math, deterministic,      2 B of workspace
 *   algo 1, default math,   deterministic,        B
 *   algo 2, default math,   not deterministic,    B / 4
 *   algo 0, FMA math,       deterministic,        0
 * A test may set another (cudafake_cudnn_results).  The fault tunable's
 * sites are the three query names; an injected failure answers
 * CUDNN_STATUS_INTERNAL_ERROR.
 *
 * A test calls the handle and descriptor functions itself, as a program
 * linked with cuDNN does; the library, which loads cuDNN rather than
 * links it, reaches the pickers' calls through the double's
 * libcudnn.so.N (cudnn_so.c, stand_in.h) and the table at the end of
 * this file.
 */
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

#include "cudafake.h"
#include "lib/base/fault.h"
#include "stand_in.h"

struct cudnnContext {
	int magic;
};

struct cudnnTensorStruct {
	int n, c, h, w;
	bool set;
};

struct cudnnFilterStruct {
	int k, c, h, w;
	bool set;
};

struct cudnnConvolutionStruct {
	cudnnMathType_t math;	/* CUDNN_DEFAULT_MATH when made */
	bool set;
};

#define MAX_RESULTS 16

static struct cudafake_cudnn_result given[MAX_RESULTS];
static int n_given;

void cudafake_cudnn_results(const struct cudafake_cudnn_result *r, int n)
{
	n_given = n < 0 ? 0 : n > MAX_RESULTS ? MAX_RESULTS : n;
	if (n_given)
		memcpy(given, r, (size_t)n_given * sizeof(*r));
}

/* The headers' version, unless CUDAFAKE_CUDNN_VERSION names another (a
 * cuDNN of another major version found at run time). */
size_t cudnnGetVersion(void)
{
	const char *v = getenv("CUDAFAKE_CUDNN_VERSION");

	return v ? (size_t)strtoul(v, NULL, 10) : CUDNN_VERSION;
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
	switch (status) {
	case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
	case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
	case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
	case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
	case CUDNN_STATUS_INTERNAL_ERROR:
		return "CUDNN_STATUS_INTERNAL_ERROR";
	default: return "a cuDNN status the double does not name";
	}
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
	if (!handle)
		return CUDNN_STATUS_BAD_PARAM;
	*handle = calloc(1, sizeof(**handle));
	return *handle ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
	free(handle);
	return CUDNN_STATUS_SUCCESS;
}

/* Makes and frees a descriptor of each kind: zeroed, so not set. */
#define DESCRIPTOR(kind, type)                                             \
	cudnnStatus_t cudnnCreate##kind##Descriptor(type *d)               \
	{                                                                  \
		if (!d)                                                    \
			return CUDNN_STATUS_BAD_PARAM;                     \
		*d = calloc(1, sizeof(**d));                               \
		return *d ? CUDNN_STATUS_SUCCESS                           \
			  : CUDNN_STATUS_ALLOC_FAILED;                     \
	}                                                                  \
	cudnnStatus_t cudnnDestroy##kind##Descriptor(type d)               \
	{                                                                  \
		free(d);                                                   \
		return CUDNN_STATUS_SUCCESS;                               \
	}

DESCRIPTOR(Tensor, cudnnTensorDescriptor_t)
DESCRIPTOR(Filter, cudnnFilterDescriptor_t)
DESCRIPTOR(Convolution, cudnnConvolutionDescriptor_t)

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d,
					 cudnnTensorFormat_t format,
					 cudnnDataType_t type, int n, int c,
					 int h, int w)
{
	(void)format;
	if (!d || type != CUDNN_DATA_FLOAT || n <= 0 || c <= 0 || h <= 0 ||
	    w <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	*d = (struct cudnnTensorStruct){ n, c, h, w, true };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d,
					 cudnnDataType_t type,
					 cudnnTensorFormat_t format, int k,
					 int c, int h, int w)
{
	(void)format;
	if (!d || type != CUDNN_DATA_FLOAT || k <= 0 || c <= 0 || h <= 0 ||
	    w <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	*d = (struct cudnnFilterStruct){ k, c, h, w, true };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d,
					      int pad_h, int pad_w, int u,
					      int v, int dilation_h,
					      int dilation_w,
					      cudnnConvolutionMode_t mode,
					      cudnnDataType_t type)
{
	(void)mode;
	if (!d || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 ||
	    dilation_h <= 0 || dilation_w <= 0 || type != CUDNN_DATA_FLOAT)
		return CUDNN_STATUS_BAD_PARAM;
	d->set = true;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
					  cudnnMathType_t math)
{
	if (!d || (unsigned)math > CUDNN_FMA_MATH)
		return CUDNN_STATUS_BAD_PARAM;
	d->math = math;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d,
					  cudnnMathType_t *math)
{
	if (!d || !math)
		return CUDNN_STATUS_BAD_PARAM;
	*math = d->math;
	return CUDNN_STATUS_SUCCESS;
}

/*
 * The results for a convolution whose input has `bytes`, into
 * r[0 .. *n) (at most `want`), or the status of a failed query: bad
 * descriptors, or an injected fault at `call`.
 */
static cudnnStatus_t results(const char *call, cudnnHandle_t handle,
			     const struct cudnnTensorStruct *t,
			     const struct cudnnConvolutionStruct *conv,
			     bool filter_set, int want, int *n,
			     struct cudafake_cudnn_result *r)
{
	size_t bytes;

	if (!handle || !t || !conv || !n || !r || want <= 0 || !t->set ||
	    !conv->set || !filter_set)
		return CUDNN_STATUS_BAD_PARAM;
	if (tmm_fault_hit(call))
		return CUDNN_STATUS_INTERNAL_ERROR;
	if (n_given) {
		*n = n_given < want ? n_given : want;
		memcpy(r, given, (size_t)*n * sizeof(*r));
		return CUDNN_STATUS_SUCCESS;
	}
	bytes = (size_t)t->n * t->c * t->h * t->w * sizeof(float);
	{
		const struct cudafake_cudnn_result own[] = {
			{ 1, CUDNN_STATUS_SUCCESS, 2 * bytes,
			  CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH },
			{ 1, CUDNN_STATUS_SUCCESS, bytes, CUDNN_DETERMINISTIC,
			  CUDNN_DEFAULT_MATH },
			{ 2, CUDNN_STATUS_SUCCESS, bytes / 4,
			  CUDNN_NON_DETERMINISTIC, CUDNN_DEFAULT_MATH },
			{ 0, CUDNN_STATUS_SUCCESS, 0, CUDNN_DETERMINISTIC,
			  CUDNN_FMA_MATH },
		};
		int k = (int)(sizeof(own) / sizeof(own[0]));

		*n = k < want ? k : want;
		memcpy(r, own, (size_t)*n * sizeof(*r));
	}
	return CUDNN_STATUS_SUCCESS;
}

/* Copies the results into cuDNN's perf structs, whichever the query's. */
#define FILL(perf, type, r, n)                                             \
	do {                                                               \
		for (int i_ = 0; i_ < (n); i_++) {                         \
			memset(&(perf)[i_], 0, sizeof((perf)[i_]));        \
			(perf)[i_].algo = (type)(r)[i_].algo;              \
			(perf)[i_].status = (cudnnStatus_t)(r)[i_].status; \
			(perf)[i_].time = -1;                              \
			(perf)[i_].memory = (r)[i_].memory;                \
			(perf)[i_].determinism =                           \
				(cudnnDeterminism_t)(r)[i_].determinism;   \
			(perf)[i_].mathType =                              \
				(cudnnMathType_t)(r)[i_].math;             \
		}                                                          \
	} while (0)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
	cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
	const cudnnFilterDescriptor_t w,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnTensorDescriptor_t y, const int want, int *n,
	cudnnConvolutionFwdAlgoPerf_t *perf)
{
	struct cudafake_cudnn_result r[MAX_RESULTS];
	cudnnStatus_t st;

	if (!y || !y->set || !perf)
		return CUDNN_STATUS_BAD_PARAM;
	st = results("cudnnGetConvolutionForwardAlgorithm_v7", handle, x,
		     conv, w && w->set, want > MAX_RESULTS ? MAX_RESULTS : want,
		     n, r);
	if (st == CUDNN_STATUS_SUCCESS)
		FILL(perf, cudnnConvolutionFwdAlgo_t, r, *n);
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
	cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
	const cudnnTensorDescriptor_t dy,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnTensorDescriptor_t dx, const int want, int *n,
	cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
	struct cudafake_cudnn_result r[MAX_RESULTS];
	cudnnStatus_t st;

	if (!dy || !dy->set || !perf)
		return CUDNN_STATUS_BAD_PARAM;
	st = results("cudnnGetConvolutionBackwardDataAlgorithm_v7", handle,
		     dx, conv, w && w->set,
		     want > MAX_RESULTS ? MAX_RESULTS : want, n, r);
	if (st == CUDNN_STATUS_SUCCESS)
		FILL(perf, cudnnConvolutionBwdDataAlgo_t, r, *n);
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
	cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
	const cudnnTensorDescriptor_t dy,
	const cudnnConvolutionDescriptor_t conv,
	const cudnnFilterDescriptor_t dw, const int want, int *n,
	cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
	struct cudafake_cudnn_result r[MAX_RESULTS];
	cudnnStatus_t st;

	if (!dy || !dy->set || !perf)
		return CUDNN_STATUS_BAD_PARAM;
	st = results("cudnnGetConvolutionBackwardFilterAlgorithm_v7", handle,
		     x, conv, dw && dw->set,
		     want > MAX_RESULTS ? MAX_RESULTS : want, n, r);
	if (st == CUDNN_STATUS_SUCCESS)
		FILL(perf, cudnnConvolutionBwdFilterAlgo_t, r, *n);
	return st;
}

/* What the double's libcudnn.so.N hands its calls to (stand_in.h). */
const struct tmm_cudnn cudafake_cudnn = {
	TMM_CUDNN_CALLS(CUDAFAKE_STAND_IN_CALL)
};
