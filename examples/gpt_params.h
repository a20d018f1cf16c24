/* SPDX-License-Identifier: MIT */
/*
 * gpt_params.h — the GPT example's parameters, where they are and how
 * large (gpt_model.c's own numbering, the order of its weights blob),
 * and in which order the backward pass finishes their gradients (what
 * gpt_param_layout, gpt_model.h, tells examples/gpt_dp).  Private to the
 * model's files.
 */
#ifndef GPT_PARAMS_H
#define GPT_PARAMS_H

#include <stddef.h>

#include "gpt_model.h"

/* A block's parameters, in the order of the weights blob.  A bias always
 * follows its weight, and a norm's bias its gain. */
enum {
	LN1_G, LN1_B, QKV_W, QKV_B, PROJ_W, PROJ_B,
	LN2_G, LN2_B, FC_W, FC_B, FC2_W, FC2_B, BLOCK_PARAMS
};

/* Indices into model.param: the embeddings, the blocks, then the top. */
#define P_WTE 0u
#define P_WPE 1u
#define P_BLOCK(l, k) (2u + (l) * BLOCK_PARAMS + (k))
#define P_LNF(L) (2u + (L) * BLOCK_PARAMS) /* gain; the bias follows */
#define P_HEAD(L) (P_LNF(L) + 2u)
#define N_PARAMS(L) (P_LNF(L) + 3u)

/* Parameter idx's floats under cfg. */
size_t gpt_param_floats(const struct gpt_config *cfg, unsigned idx);

/* Parameter idx's place in gpt_param_layout's order; its group there in
 * *group. */
unsigned gpt_param_rank(const struct gpt_config *cfg, unsigned idx,
			unsigned *group);

#endif /* GPT_PARAMS_H */
