/* SPDX-License-Identifier: MIT */
/*
 * dp_nccl.h — examples/mlp_dp on the cuda backend: the MLP's GPU ops
 * (mlp_gpu_train.h) and the collectives of dp_grads.h with NCCL on the
 * compute stream, its communicator bootstrapped over MPI (rank 0's
 * ncclGetUniqueId broadcast).  Built where configure finds CUDA, cuBLAS,
 * nvcc and NCCL (MLP_DP_NCCL); elsewhere dp_cuda.c's "nccl" row says
 * what is missing.
 */
#ifndef DP_NCCL_H
#define DP_NCCL_H

#include "dp_comm.h"
#include "dp_grads.h"
#include "mlp_model.h"

/* Sets s (and mc's kernels) up for the cuda backend, on CUDA device
 * `device`: the rank's context's (tmm_stats.device_index), made current
 * here so that the communicator and the cuBLAS handle join the device
 * the context's tensors live on, whatever TENSORMM_DEVICE chose.
 * Returns 0 or a nonzero code for dp_nccl_why. */
int dp_nccl_setup(const struct dp_comm *c, struct mlp_config *mc,
		  int device, struct dp_setup *s);

/* Ends what dp_nccl_setup made, if anything. */
void dp_nccl_close(struct dp_setup *s);

/* Why dp_nccl_setup failed, and what to do. */
const char *dp_nccl_why(int code);

#endif /* DP_NCCL_H */
