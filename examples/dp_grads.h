/* SPDX-License-Identifier: MIT */
/*
 * dp_grads.h — the gradients of a data-parallel example (examples/mlp_dp,
 * examples/gpt_dp): buckets, their reduction across ranks as
 * TMM_OP_COLLECTIVE ops, and the hand-over to the model's own optimizer.
 *
 * A model describes its parameters as a list in the order its backward
 * pass finishes their gradients, each in a group (a layer, a transformer
 * block, the embeddings): struct dp_model.  The parameters are grouped
 * into buckets, in that order, each closed between two groups when it
 * holds --bucket-kib of gradients (or when the group is one that wants a
 * bucket of its own).  Right after the backward of a bucket's last
 * parameter (in the last micro-batch of the step) its gradients are
 * reduced by one collective op, while the backward of the groups below
 * goes on; the model's update runs on each of its parameters once the
 * next bucket's collective is issued (the step's last bucket's at once),
 * so that the reduction has that bucket's backward to hide behind.  With
 * ZeRO the update runs at once.
 *
 * The reduction is deterministic: every rank's (and every micro-batch's)
 * gradients are gathered, then summed in the order rank 0 micro-batch 0,
 * rank 0 micro-batch 1, ... rank N-1 micro-batch M-1, and multiplied by
 * 1/(N x M).  So N ranks give the same bits as one rank accumulating N
 * micro-batches, whatever the transport, the policy or the budget.
 *
 * With ZeRO stage 1 (dp_setup.zero; only for a model with an
 * update_shard, the MLP's, dp_mlp.h), each rank keeps the optimizer
 * state of 1/N of each bucket's elements only (one tensor per bucket):
 * the gradients are reduce-scattered (the same sum, for its part only),
 * each rank updates its part of the parameters, and an all-gather of the
 * parameters gives every rank all of them.  The update must be
 * elementwise, so that the result is bit-identical to the plain one.
 */
#ifndef DP_GRADS_H
#define DP_GRADS_H

#include <stdbool.h>
#include <stddef.h>

#include "dp_comm.h"
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

/* The host-memory transport (dp_host.c). */
const struct dp_transport *dp_host_transport(void);

/*
 * A model's parameters, as the trainer sees them, numbered in the order
 * the backward pass finishes their gradients.
 */
struct dp_model {
	unsigned n_params;
	const size_t *floats;	/* each parameter's */
	/* Each parameter's group, non-decreasing: a bucket closes only
	 * between groups. */
	const unsigned *group;
	/* Per group (NULL: none): true for a group that gets a bucket of
	 * its own, whatever its size (the GPT's head, its embeddings). */
	const bool *alone;
	/* The model's optimizer: updates parameter p (its tensor w) with
	 * its reduced gradient g.  Runs its own ops; 0 or a negative errno
	 * (stops the training). */
	int (*update)(tmm_ctx *ctx, unsigned p, tmm_tensor w, tmm_tensor g,
		      void *arg);
	/* ZeRO-1, NULL where the model has none: a tmm_run_fn (user: the
	 * struct dp_bucket) that updates this rank's part [lo, hi) of the
	 * bucket's P parameters; in: the P parameters, their P reduced
	 * gradients, the part's state; out: the P parameters, the state.
	 * shard_state: floats of optimizer state per element. */
	tmm_run_fn update_shard;
	unsigned shard_state;
	void *arg;		/* the model's, for its callbacks */
};

struct dp_setup {
	const struct dp_comm *comm;
	const struct dp_model *model;
	const struct dp_transport *transport;
	void *transport_arg;	/* the transport's (NCCL's) state */
	unsigned micro;		/* micro-batches a step (0: 1) */
	size_t bucket_bytes;	/* close a bucket at this size */
	bool zero;		/* ZeRO stage 1 */
};

struct dp_trainer;

/*
 * Plans the buckets and, with ZeRO, makes each bucket's part of the
 * optimizer state (persistent tensors in ctx, zeroed).  The model and
 * its arrays must outlive the trainer.  Returns 0, -EINVAL (ZeRO for a
 * model without update_shard, a group order that goes back) or a
 * negative errno (with ctx's message for a libtensormm failure).
 */
int dp_trainer_open(tmm_ctx *ctx, const struct dp_setup *s,
		    struct dp_trainer **out);
void dp_trainer_close(tmm_ctx *ctx, struct dp_trainer *t);

/*
 * What the model calls after the backward of parameter p (the
 * dp_model's numbering) in micro-batch `micro`: w is the parameter,
 * g[k] its gradient of micro-batch k = 0 .. micro, each over its own
 * samples only, valid until the step ends.  Reduces and updates a bucket
 * once all of its gradients of the last micro-batch are there.  0 or a
 * negative errno (dp_trainer_failed).  A bucket held from a step that
 * failed before its end is dropped when the next step's first bucket is
 * reduced.
 */
int dp_grad_ready(tmm_ctx *ctx, struct dp_trainer *t, unsigned p,
		  unsigned micro, tmm_tensor w, const tmm_tensor *g);

/* How the gradients were grouped: buckets, and the bytes this rank has
 * declared in cost.net_bytes so far (every step's ops that ran). */
unsigned dp_trainer_buckets(const struct dp_trainer *t);
double dp_trainer_net_bytes(const struct dp_trainer *t);

/*
 * After dp_grad_ready failed: which of the trainer's ops failed, as "the
 * all-reduce of bucket 1 of 3" or "the update of parameter 2 (held for
 * the next all-reduce) of bucket 0 of 3" (the library's message says
 * why, tmm_last_error); NULL when the failure was not one of them (an
 * argument, or t NULL).  Such a failure ends the step part done, with no
 * bucket held (buckets before the failed one updated, the rest not): stop
 * training.
 */
const char *dp_trainer_failed(const struct dp_trainer *t);

/* What a collective callback sees of its bucket (user is one). */
struct dp_param {
	size_t off, count;	/* floats, in the bucket's flat layout */
};

struct dp_bucket {
	const struct dp_trainer *t;
	unsigned first;		/* its parameters: first onwards */
	unsigned n_params;
	struct dp_param *param;
	size_t floats;		/* all its parameters' */
	size_t shard;		/* ZeRO: floats per rank's part (rounded up) */
	size_t lo, hi;		/* ZeRO: this rank's part [lo, hi) */
	tmm_tensor state;	/* ZeRO: the optimizer state of that part */
};

/* The trainer's world and micro-batches, for a transport; the model's
 * arg, for its update_shard. */
const struct dp_comm *dp_trainer_comm(const struct dp_trainer *t);
unsigned dp_trainer_micro(const struct dp_trainer *t);
void *dp_trainer_transport_arg(const struct dp_trainer *t);
void *dp_trainer_model_arg(const struct dp_trainer *t);

#endif /* DP_GRADS_H */
