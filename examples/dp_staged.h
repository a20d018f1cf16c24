/* SPDX-License-Identifier: MIT */
/*
 * dp_staged.h — examples/mlp_dp on the cuda backend without NCCL
 * (`--transport mpi`): the MLP's GPU ops (mlp_gpu_train.h), and each
 * collective of dp_grads.h staged through host memory.  The gradients
 * are copied to the host on the collective's stream, summed by the sim's
 * own host transport (dp_host.c, MPI in rank order) and copied back, so
 * that several ranks may share one GPU, which NCCL refuses.  Built where
 * configure finds CUDA, cuBLAS and nvcc (MLP_DP_STAGED); elsewhere
 * dp_cuda.c's "mpi" row refuses the cuda backend with what to do
 * instead, and none of these is defined.
 */
#ifndef DP_STAGED_H
#define DP_STAGED_H

#include "dp_comm.h"
#include "dp_grads.h"
#include "mlp_model.h"

/* Sets s (and mc's kernels) up for the cuda backend on CUDA device
 * `device` (the context's, tmm_stats.device_index, made current here as
 * dp_nccl_setup does).  Returns 0 or a nonzero code for dp_staged_why. */
int dp_staged_setup(const struct dp_comm *c, struct mlp_config *mc,
		    int device, struct dp_setup *s);

/* Ends what a successful dp_staged_setup made. */
void dp_staged_close(struct dp_setup *s);

/* Why dp_staged_setup failed, and what to do. */
const char *dp_staged_why(int code);

/* The staged transport itself (for a test that drives it directly). */
const struct dp_transport *dp_staged_transport(void);

#endif /* DP_STAGED_H */
