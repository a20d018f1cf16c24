/* SPDX-License-Identifier: MIT */
/*
 * cudnn_lib.h — cuDNN's entry points that the algorithm pickers call,
 * loaded by the first picker call (cudnn_algo.c) rather than linked, so
 * that a program that never picks an algorithm never loads cuDNN
 * (lib/base/dynlib.h).
 *
 * The table's fields are typed by cudnn.h and named as cuDNN's
 * functions; TMM_CUDNN_CALLS lists them, for the table here and for the
 * CUDA test double's stand-in library (tests/cudafake/), which must
 * provide each.  Built with cuDNN only (TMM_HAVE_CUDNN).
 */
#ifndef TMM_CUDNN_LIB_H
#define TMM_CUDNN_LIB_H

#include <stddef.h>

#include <cudnn.h>

#include "lib/base/dynlib.h"

#define TMM_CUDNN_CALLS(X)                                                 \
	X(cudnnGetVersion)                                                 \
	X(cudnnGetErrorString)                                             \
	X(cudnnGetConvolutionMathType)                                     \
	X(cudnnSetConvolutionMathType)                                     \
	X(cudnnGetConvolutionForwardAlgorithm_v7)                          \
	X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                     \
	X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)

struct tmm_cudnn {
	TMM_CUDNN_CALLS(TMM_DYNLIB_FIELD)
};

/*
 * cuDNN, loaded on the first call in the process from the directories of
 * dl_path (the tunable; NULL or "": the dynamic linker's search) and
 * checked to be the major version built against; NULL when it cannot be,
 * with the reason and what to do in why.
 */
const struct tmm_cudnn *tmm_cudnn_load(const char *dl_path, char *why,
				       size_t whylen);

#endif /* TMM_CUDNN_LIB_H */
