/* SPDX-License-Identifier: MIT */
/*
 * gpt_model.h — a small GPT (decoder-only transformer) trained through
 * libtensormm.
 *
 * Real CPU math (the simulator's backed memory is host memory) on synthetic
 * token sequences from a fixed random Markov chain, written as a framework
 * would: the weights and the AdamW moments are PERSISTENT tensors made
 * once; every step creates fresh input, activation, gradient and scratch
 * tensors, runs the forward, the loss, the backward and the optimizer as
 * ops through tmm_run, and destroys them.  The sibling of mlp_model.h,
 * with more kinds of op (embedding, layer norm, attention, GELU, residual
 * adds) and more tensors per step.
 *
 * The model: token and learned position embeddings; `layers` blocks of
 * x += proj(attn(ln1(x))), x += fc2(gelu(fc(ln2(x)))) with causal
 * multi-head attention and a 4× MLP; a final layer norm; a separate LM
 * head; softmax cross-entropy against the next token.
 *
 * Every op but the optimizer's can be split by the runtime into micro-ops
 * over ranges of its rows (TSPLIT: tmm_op.run_slice and slice_extent, the
 * batch × seq tokens, or the batch's sequences for the attention), with
 * bit-identical results.
 */
#ifndef GPT_MODEL_H
#define GPT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensormm.h"

/*
 * One parameter's gradient, as the backward pass leaves it (for data
 * parallelism, examples/gpt_dp.c): after its backward in micro-batch
 * `micro`, g[k] is its gradient of micro-batches k = 0 .. micro, each
 * over its own sequences only (the loss of each is its own mean), kept
 * until the step ends.  param numbers it in the order the backward
 * finishes them (gpt_param_layout); w is the parameter.  update runs the
 * model's own AdamW of this step on that parameter with a gradient g
 * (update_arg is its argument); valid until the step ends.
 */
struct gpt_grad {
	unsigned param, micro;
	tmm_tensor w;
	const tmm_tensor *g;
	int (*update)(tmm_ctx *ctx, unsigned param, tmm_tensor g,
		      void *update_arg);
	void *update_arg;
};

struct gpt_config {
	unsigned batch;	  /* sequences per step */
	unsigned seq;	  /* tokens per sequence (the context length) */
	unsigned vocab;	  /* token ids 0..vocab-1 (>= 2) */
	unsigned d_model; /* residual stream width */
	unsigned heads;	  /* attention heads; must divide d_model */
	unsigned layers;  /* transformer blocks (1..64) */
	unsigned steps;	  /* training steps (iterations) */
	float lr, beta1, beta2, eps, weight_decay; /* AdamW */
	uint64_t seed;	  /* data and initial weights */
	/* Called after each step when not NULL (as in mlp_config: a test
	 * can install a plan there); a nonzero return stops the training
	 * with that value. */
	int (*after_step)(tmm_ctx *ctx, unsigned step, void *arg);
	void *after_step_arg;
	/* As in mlp_config: called with each op just before tmm_run when
	 * not NULL; a nonzero return stops the training with that value. */
	int (*before_op)(tmm_ctx *ctx, const tmm_op *op, void *arg);
	void *before_op_arg;
	/* Rehearse the first step (tmm_rehearsal_begin/end) before
	 * training, so that the plan is made from predicted op times and
	 * the first real step is already guided. */
	bool rehearse;
	/*
	 * Data parallelism and gradient accumulation (examples/gpt_dp.c),
	 * as in mlp_config.  micro: micro-batches of `batch` sequences per
	 * step (0 counts as 1), each through forward, loss and backward in
	 * turn, their gradients kept apart; more than one needs after_grad.
	 * shards, shard: the data set is that of a step of batch x micro x
	 * shards sequences, of which this context trains part `shard`
	 * (0 .. shards-1; 0 and 0 count as one shard, the whole).
	 */
	unsigned micro, shards, shard;
	/* When not NULL, the model updates no parameter itself: after each
	 * parameter's backward (micro-batch by micro-batch) it calls this,
	 * which reduces the gradients and calls g->update when it will; a
	 * nonzero return stops the training with that value. */
	int (*after_grad)(tmm_ctx *ctx, const struct gpt_grad *g, void *arg);
	void *after_grad_arg;
};

/* A small default (12 steps take about a second on one core) that still
 * needs several MiB of device memory. */
void gpt_config_default(struct gpt_config *cfg);

/*
 * The parameters in the order the backward pass finishes their
 * gradients: the head, the final norm's gain and bias, each block from
 * the last (fc2, fc, ln2, proj, qkv, ln1: weight or gain first), then the
 * token and position embeddings.  Returns how many; for each k below
 * that, fills floats[k] (its size) and group[k] (0: the head and the
 * final norm; 1 + i: the i-th block the backward visits; layers + 1: the
 * embeddings) where the arrays are not NULL.
 */
unsigned gpt_param_layout(const struct gpt_config *cfg, size_t *floats,
			  unsigned *group);

/*
 * Trains cfg->steps steps in ctx.  losses (cfg->steps floats, may be NULL)
 * receives the loss of each step; when weights is not NULL, *weights
 * receives a malloc'd copy of every trainable parameter after training (in
 * a fixed order: embeddings, then each block, then the final norm and the
 * head; the bytes a run must reproduce) and *weights_len its length.
 * Progress lines ("step  3  loss 3.1234") go to `log` when not NULL.
 * Returns 0, -EINVAL for a bad config (a zero size, d_model not divisible
 * by heads, micro above 1 without after_grad, shard not below shards,
 * ...), or the negative errno of the failing libtensormm call (its
 * message is in tmm_last_error(ctx)), or after_grad's nonzero return.
 */
int gpt_train(tmm_ctx *ctx, const struct gpt_config *cfg, float *losses,
	      uint8_t **weights, size_t *weights_len, FILE *log);

#endif /* GPT_MODEL_H */
