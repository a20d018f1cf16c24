/* SPDX-License-Identifier: MIT */
/*
 * dp_grads.h — the gradients of examples/mlp_dp: buckets, their
 * reduction across ranks as TMM_OP_COLLECTIVE ops, and the update.
 *
 * The layers are grouped into buckets, last layer first (the order the
 * backward pass finishes them), each closed when it holds --bucket-kib of
 * gradients.  Right after the backward of a bucket's last layer (in the
 * last micro-batch of the step) its gradients are reduced by one
 * collective op and its parameters updated, while the backward of the
 * layers below goes on.
 *
 * The reduction is deterministic: every rank's (and every micro-batch's)
 * gradients are gathered, then summed in the order rank 0 micro-batch 0,
 * rank 0 micro-batch 1, ... rank N-1 micro-batch M-1, and multiplied by
 * 1/(N x M).  So N ranks give the same bits as one rank accumulating N
 * micro-batches, whatever the transport, the policy or the budget.
 *
 * With ZeRO stage 1 (dp_setup.zero), each rank keeps the momentum of
 * 1/N of each bucket's elements only (one tensor per bucket): the
 * gradients are reduce-scattered (the same sum, for its part only), each
 * rank updates its part of the parameters, and an all-gather of the
 * parameters gives every rank all of them.  The update is elementwise,
 * so the result is bit-identical to the plain one.
 */
#ifndef DP_GRADS_H
#define DP_GRADS_H

#include <stdbool.h>
#include <stddef.h>

#include "dp_comm.h"
#include "mlp_model.h"
#include "tensormm.h"

/*
 * How the collectives move bytes: on host memory over MPI (the sim,
 * whose backed memory is host memory), or on the device (NCCL).  Each is
 * a tmm_run_fn whose user is the struct dp_bucket, with M micro-batches
 * and the bucket's parameters p = 0 .. n_params-1:
 *   allreduce:      in[p x M + k] is parameter p's gradient of
 *                   micro-batch k; out[p] (micro-batch 0's) receives the
 *                   deterministic mean over every rank and micro-batch.
 *   reduce_scatter: the same, but only the elements [lo, hi) of the
 *                   bucket's flat layout are written.
 *   allgather:      in[p] = out[p] = parameter p; every rank's part
 *                   [lo, hi) reaches every rank.
 */
struct dp_transport {
	tmm_run_fn allreduce, reduce_scatter, allgather;
};

/* The host-memory transport (dp_grads.c). */
const struct dp_transport *dp_host_transport(void);

struct dp_setup {
	const struct dp_comm *comm;
	const struct mlp_config *model;	   /* its micro-batches and shape */
	const struct mlp_kernels *kernels; /* the update's sgd_momentum */
	const struct dp_transport *transport;
	size_t bucket_bytes;		   /* close a bucket at this size */
	bool zero;			   /* ZeRO stage 1 */
	void *transport_arg;		   /* the transport's (NCCL's) state */
};

struct dp_trainer;

/*
 * Plans the buckets and makes the optimizer state (persistent tensors
 * in ctx, zeroed).  Returns 0 or a negative errno (with ctx's message
 * for a libtensormm failure).
 */
int dp_trainer_open(tmm_ctx *ctx, const struct dp_setup *s,
		    struct dp_trainer **out);
void dp_trainer_close(tmm_ctx *ctx, struct dp_trainer *t);

/* The mlp_config.after_backward hook; arg is the struct dp_trainer. */
int dp_after_backward(tmm_ctx *ctx, const struct mlp_layer_grads *g,
		      void *arg);

/* How the gradients were grouped: buckets, and the bytes this rank has
 * declared in cost.net_bytes so far (every step's). */
unsigned dp_trainer_buckets(const struct dp_trainer *t);
double dp_trainer_net_bytes(const struct dp_trainer *t);

/* What a collective callback sees of its bucket (user is one). */
struct dp_param {
	size_t off, count;	/* floats, in the bucket's flat layout */
};

struct dp_bucket {
	const struct dp_trainer *t;
	unsigned high, low;	/* its layers, high down to low */
	unsigned n_params;	/* 2 per layer: W, then b */
	struct dp_param *param;
	size_t floats;		/* all its parameters' */
	size_t shard;		/* ZeRO: floats per rank's part (rounded up) */
	size_t lo, hi;		/* ZeRO: this rank's part [lo, hi) */
	tmm_tensor v_shard;	/* ZeRO: the momentum of that part */
};

/* The trainer's world and micro-batches, for a transport. */
const struct dp_comm *dp_trainer_comm(const struct dp_trainer *t);
unsigned dp_trainer_micro(const struct dp_trainer *t);
void *dp_trainer_transport_arg(const struct dp_trainer *t);

#endif /* DP_GRADS_H */
