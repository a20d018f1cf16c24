/* SPDX-License-Identifier: MIT */
/*
 * dp_cuda.h — the ways examples/mlp_dp's collectives move on the cuda
 * backend, one row a --transport value: "nccl" (dp_nccl.h) and "mpi",
 * staged through the host (dp_staged.h).  A build without what a
 * transport needs keeps its row, saying what is missing instead of
 * setting up, so that mlp_dp refuses it with what to do; a new
 * transport is one more row in dp_cuda.c, not one more stub file.
 */
#ifndef DP_CUDA_H
#define DP_CUDA_H

#include "dp_comm.h"
#include "dp_grads.h"
#include "mlp_model.h"

struct dp_cuda_transport {
	const char *name; /* --transport's value */
	/* NULL where this build has the transport; else why it has not
	 * (what configure did not find) and what to do instead.  The
	 * calls below are NULL then. */
	const char *missing;
	/* As dp_nccl_setup: 0, or a nonzero code for why(). */
	int (*setup)(const struct dp_comm *c, struct mlp_config *mc,
		     int device, struct dp_setup *s);
	void (*close)(struct dp_setup *s);
	const char *(*why)(int code);
};

/* The row named `name`, or NULL where no transport has that name. */
const struct dp_cuda_transport *dp_cuda_transport(const char *name);

#endif /* DP_CUDA_H */
