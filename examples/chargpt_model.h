/* SPDX-License-Identifier: MIT */
/*
 * chargpt_model.h — a character-level transformer trained in the
 * pre-allocated style: every buffer is made once, and the tensors an op
 * names are views into those buffers (tmm_tensor_view).
 *
 * It is written the way C trainers without a framework are (llm.c's
 * train_gpt2.c): one buffer holds every parameter, one the step's
 * gradient, one each AdamW moment, one every activation of a micro-batch
 * and one their gradients.  A view names each parameter of each layer
 * and each activation of each layer, and the ops of gpt_ops.h run on
 * those views; the parents are used whole where a whole buffer is meant:
 * the gradient is zeroed with one fill, AdamW updates every parameter in
 * one op, and the weights are read back in one read.  Nothing is created
 * or destroyed once training starts.
 *
 * The model is gpt_model.h's (embeddings, `layers` pre-norm blocks with
 * causal attention and a 4x GELU MLP, a final norm and an untied head,
 * softmax cross-entropy); its data is a short text in the source, its
 * vocabulary the text's distinct characters, and a step's batch random
 * windows of it.  A step sums the gradients of `accum` micro-batches.
 */
#ifndef CHARGPT_MODEL_H
#define CHARGPT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensormm.h"

struct chargpt_config {
	unsigned batch;	  /* windows per micro-batch */
	unsigned accum;	  /* micro-batches per step, their gradients
			   * averaged */
	unsigned seq;	  /* characters per window (the context) */
	unsigned d_model; /* residual stream width */
	unsigned heads;	  /* attention heads; must divide d_model */
	unsigned layers;  /* transformer blocks (1..64) */
	unsigned steps;	  /* training steps (iterations) */
	float lr, beta1, beta2, eps, weight_decay; /* AdamW */
	uint64_t seed;	  /* initial weights and the windows */
	/* Called after each step when not NULL; a nonzero return stops
	 * the training with that value (as gpt_config's). */
	int (*after_step)(tmm_ctx *ctx, unsigned step, void *arg);
	void *after_step_arg;
	/* Rehearse the first step before training (gpt_config's). */
	bool rehearse;
};

/* The size of examples/chargpt's default run: a fraction of a second on
 * one core, with activations several times the parameters. */
void chargpt_config_default(struct chargpt_config *cfg);

/* The vocabulary: how many distinct characters the text has. */
unsigned chargpt_vocab_size(void);

/* The length of the text: a window is at most this minus one. */
size_t chargpt_text_length(void);

/*
 * Trains cfg->steps steps in ctx.  losses (cfg->steps floats, may be NULL)
 * receives each step's loss, the mean over its micro-batches; when
 * weights is not NULL, *weights receives a malloc'd copy of the whole
 * parameter buffer after training and *weights_len its length.  Progress
 * lines go to `log` when not NULL.  Returns 0, -EINVAL for a bad config
 * (a zero size, d_model not divisible by heads, a window longer than the
 * text allows, ...), -ENOMEM, or the negative errno of the failing
 * libtensormm call (its message is in tmm_last_error(ctx)).
 */
int chargpt_train(tmm_ctx *ctx, const struct chargpt_config *cfg,
		  float *losses, uint8_t **weights, size_t *weights_len,
		  FILE *log);

#endif /* CHARGPT_MODEL_H */
