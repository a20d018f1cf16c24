/* SPDX-License-Identifier: MIT */
/*
 * tensormm_cudnn.h — cuDNN convolution algorithms that fit the budget.
 *
 * Installed when libtensormm was built with cuDNN.  Each function asks
 * cuDNN which algorithms can compute the convolution, fastest first, and
 * how much workspace each needs; takes a workspace from tmm_workspace()
 * between the smallest and the largest of those needs (so it is as large
 * as what is free in the budget right now, evicting only for the
 * smallest); and picks the fastest algorithm that fits in what it got
 * (SuperNeurons §3.5).  Only algorithms of a math type the convolution
 * descriptor allows are considered (CUDNN_FMA_MATH: FMA only; the
 * default: no tensor ops asked for; CUDNN_TENSOR_OP_MATH: tensor ops
 * too), and the chosen one's math type is set on the descriptor
 * (cudnnSetConvolutionMathType), so that the convolution runs as the
 * workspace was sized for.  Call it just before the tmm_run whose callback
 * runs the convolution, and hand the algorithm and the workspace to that
 * callback; the workspace stays valid as tmm_workspace() says.
 *
 * Each returns 0, with *algo, *workspace (NULL when the algorithm needs
 * none) and *workspace_bytes set; or a negative errno with the reason in
 * tmm_last_error(ctx): -EBADF, -EINVAL (a NULL argument, or cuDNN
 * rejected the descriptors: CUDNN_STATUS_BAD_PARAM), -ENOTSUP (no
 * algorithm supports this convolution, none of a math type the
 * descriptor allows, or none that is deterministic with
 * TMM_CUDNN_DETERMINISTIC), -ENOMEM (not even the smallest
 * workspace fits), -EIO (another cuDNN error; the message names the call
 * and cuDNN's description), -ENOSYS (cuDNN could not be loaded: the
 * message names the library file, the dynamic linker's reason and what
 * to do).
 *
 * libtensormm does not link cuDNN: the first call of one of these in the
 * process loads it (dlopen), from the directories of the dl_path tunable
 * or where the dynamic linker looks (tensormm(7)); with dl_path empty, a
 * program linked with cuDNN gets the copy it already has.
 */
#ifndef TENSORMM_CUDNN_H
#define TENSORMM_CUDNN_H

#include <stddef.h>

#include <cudnn.h>

#include "tensormm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags: consider only algorithms whose results are bit-reproducible. */
#define TMM_CUDNN_DETERMINISTIC 0x1u

/* Forward: y = conv(x, w). */
TMM_EXPORT
int tmm_cudnn_conv_fwd_algo(tmm_ctx *ctx, cudnnHandle_t handle,
			    cudnnTensorDescriptor_t x,
			    cudnnFilterDescriptor_t w,
			    cudnnConvolutionDescriptor_t conv,
			    cudnnTensorDescriptor_t y, unsigned flags,
			    cudnnConvolutionFwdAlgo_t *algo,
			    void **workspace, size_t *workspace_bytes);

/* Backward data: dx from dy and w. */
TMM_EXPORT
int tmm_cudnn_conv_bwd_data_algo(tmm_ctx *ctx, cudnnHandle_t handle,
				 cudnnFilterDescriptor_t w,
				 cudnnTensorDescriptor_t dy,
				 cudnnConvolutionDescriptor_t conv,
				 cudnnTensorDescriptor_t dx, unsigned flags,
				 cudnnConvolutionBwdDataAlgo_t *algo,
				 void **workspace, size_t *workspace_bytes);

/* Backward filter: dw from x and dy. */
TMM_EXPORT
int tmm_cudnn_conv_bwd_filter_algo(tmm_ctx *ctx, cudnnHandle_t handle,
				   cudnnTensorDescriptor_t x,
				   cudnnTensorDescriptor_t dy,
				   cudnnConvolutionDescriptor_t conv,
				   cudnnFilterDescriptor_t dw, unsigned flags,
				   cudnnConvolutionBwdFilterAlgo_t *algo,
				   void **workspace, size_t *workspace_bytes);

#ifdef __cplusplus
}
#endif

#endif /* TENSORMM_CUDNN_H */
