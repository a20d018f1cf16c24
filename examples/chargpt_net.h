/* SPDX-License-Identifier: MIT */
/*
 * chargpt_net.h — what the two halves of the character-level transformer
 * share (chargpt_model.c: the text, the buffers, the steps;
 * chargpt_pass.c: the forward and backward passes): the slots of its three
 * layouts, the model, and the views the ops name.  Private to them.
 */
#ifndef CHARGPT_NET_H
#define CHARGPT_NET_H

#include <stddef.h>
#include <stdint.h>

#include "chargpt_buffers.h"
#include "chargpt_model.h"
#include "gpt_ops.h"
#include "row_split.h"

/* The parameters, in buffer order (llm.c's order, plus an untied head:
 * gpt_ops' product takes its weight as [in × out], the embedding as
 * [vocab × width], so one matrix cannot serve both). */
enum {
	P_WTE, P_WPE,
	P_LN1_G, P_LN1_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B,
	P_LN2_G, P_LN2_B, P_FC_W, P_FC_B, P_FC2_W, P_FC2_B,
	P_LNF_G, P_LNF_B, P_HEAD_W, N_PARAM_SLOTS
};

/* A micro-batch's activations.  Per block: the first norm and its
 * statistics, the attention's input, output and probabilities, the
 * projection, the stream after the attention (r), the second norm, the
 * MLP's hidden layer before and after GELU, its output, and the stream
 * after the block (out, the next block's input). */
enum {
	A_X0, /* the embeddings: the stream into block 0 */
	A_H1, A_MEAN1, A_RSTD1, A_QKV, A_ATTY, A_PROBS, A_PROJ, A_R,
	A_H2, A_MEAN2, A_RSTD2, A_U, A_GU, A_MLP, A_OUT,
	A_HF, A_MEANF, A_RSTDF, A_LOGITS, A_LOSS, N_ACT_SLOTS
};

/* Their gradients: per block those of gu, u, h2, r, atty, qkv, the
 * attention backward's scratch row, h1 and the block's input (x). */
enum {
	D_LOGITS, D_HF, D_TOP, /* D_TOP: the stream out of the last block */
	D_GU, D_U, D_H2, D_R, D_ATTY, D_QKV, D_ATTN_DP, D_H1, D_X,
	N_DACT_SLOTS
};

/* grads[p] += micro_grads[p] · scale, over `count` floats */
struct grad_sum_dims {
	size_t count;
	float scale;
};

/* Each byte's token id (or -1 for a byte the text lacks), and how many. */
struct chargpt_vocab {
	int32_t id[256];
	unsigned size;
};

/* The model: its shapes, its buffers, and the ops' user data. */
struct chargpt_net {
	const struct chargpt_config *cfg;
	tmm_ctx *ctx;
	struct chargpt_vocab voc;
	size_t n; /* tokens per micro-batch: batch × seq */

	struct chargpt_slot pslot[N_PARAM_SLOTS], aslot[N_ACT_SLOTS],
		dslot[N_DACT_SLOTS];
	struct chargpt_layout play, alay, dlay;
	struct chargpt_buffer params, grads, micro, adam_m, adam_v, acts,
		dacts;
	tmm_tensor tokens, targets, adam_step; /* int32, rewritten */
	int32_t *tok_host, *tgt_host;	       /* one micro-batch's */

	/* The ops' user data.  It stays unchanged as long as the model:
	 * the library may call a pure op again to recompute its outputs. */
	struct gpt_embed_dims embed;
	struct gpt_ln_dims ln, ln_res;
	struct gpt_mm_dims qkv, proj, fc, fc2, head;
	struct gpt_attn_dims attn;
	struct gpt_ew_dims gelu, add;
	struct gpt_xent_dims xent;
	struct gpt_adamw_dims adamw;
	struct grad_sum_dims sum[N_PARAM_SLOTS];
};

/* ---- the views the ops name ------------------------------------------- */

/* Slot s of layer l (l ignored for a slot that is not per layer) of the
 * parameters, of one micro-batch's gradient, of the activations and of
 * their gradients. */
static inline tmm_tensor param(const struct chargpt_net *m, unsigned s,
			       unsigned l)
{
	return chargpt_view(&m->params, &m->play, s, l);
}

static inline tmm_tensor micro_grad(const struct chargpt_net *m, unsigned s,
				    unsigned l)
{
	return chargpt_view(&m->micro, &m->play, s, l);
}

static inline tmm_tensor act(const struct chargpt_net *m, unsigned s,
			     unsigned l)
{
	return chargpt_view(&m->acts, &m->alay, s, l);
}

static inline tmm_tensor dact(const struct chargpt_net *m, unsigned s,
			      unsigned l)
{
	return chargpt_view(&m->dacts, &m->dlay, s, l);
}

/* The residual stream into block l (l == layers: out of the last). */
static inline tmm_tensor block_input(const struct chargpt_net *m,
				     unsigned l)
{
	return l == 0 ? act(m, A_X0, 0) : act(m, A_OUT, l - 1);
}

/*
 * Runs op, split as `split` says (NULL: it does not split), with a cost
 * hint of `flops` and every byte the op names read or written once.
 * Returns tmm_run's result.
 */
int chargpt_run(struct chargpt_net *m, tmm_op *op, double flops,
		const struct row_split *split);

/* The forward pass of the micro-batch in m->tokens: the logits. */
int chargpt_forward(struct chargpt_net *m);

/* The backward pass from the gradient of the logits: every parameter's
 * gradient, each added into grads (scaled by 1/accum) as soon as made. */
int chargpt_backward(struct chargpt_net *m);

#endif /* CHARGPT_NET_H */
