/* SPDX-License-Identifier: MIT */
/*
 * gpt_params.c — the GPT example's parameter sizes and backward order
 * (gpt_params.h, gpt_param_layout in gpt_model.h).
 */
#include "gpt_params.h"

/* Where each block's parameters come in the backward pass: its pairs
 * (weight and bias, gain and bias) in reverse, fc2's first. */
static unsigned block_rank(unsigned k)
{
	return BLOCK_PARAMS - 2 - 2 * (k / 2) + k % 2;
}

size_t gpt_param_floats(const struct gpt_config *c, unsigned idx)
{
	unsigned L = c->layers;
	size_t d = c->d_model;
	static const unsigned char blk[BLOCK_PARAMS][2] = {
		/* d^2 and d multiples */
		[LN1_G] = { 0, 1 }, [LN1_B] = { 0, 1 }, [QKV_W] = { 3, 0 },
		[QKV_B] = { 0, 3 }, [PROJ_W] = { 1, 0 }, [PROJ_B] = { 0, 1 },
		[LN2_G] = { 0, 1 }, [LN2_B] = { 0, 1 }, [FC_W] = { 4, 0 },
		[FC_B] = { 0, 4 }, [FC2_W] = { 4, 0 }, [FC2_B] = { 0, 1 },
	};

	if (idx == P_WTE || idx == P_HEAD(L))
		return c->vocab * d;
	if (idx == P_WPE)
		return c->seq * d;
	if (idx >= P_LNF(L))
		return d;
	idx = (idx - P_BLOCK(0, 0)) % BLOCK_PARAMS;
	return blk[idx][0] * d * d + blk[idx][1] * d;
}

unsigned gpt_param_rank(const struct gpt_config *c, unsigned idx,
			unsigned *group)
{
	unsigned L = c->layers, b = (idx - P_BLOCK(0, 0)) / BLOCK_PARAMS;

	if (idx >= P_LNF(L)) {
		*group = 0;
		return idx == P_HEAD(L) ? 0 : 1 + idx - P_LNF(L);
	}
	if (idx <= P_WPE) {
		*group = L + 1;
		return 3 + L * BLOCK_PARAMS + idx;
	}
	*group = L - b;
	return 3 + (L - 1 - b) * BLOCK_PARAMS +
	       block_rank((idx - P_BLOCK(0, 0)) % BLOCK_PARAMS);
}

unsigned gpt_param_layout(const struct gpt_config *cfg, size_t *floats,
			  unsigned *group)
{
	unsigned n = N_PARAMS(cfg->layers);

	for (unsigned idx = 0; idx < n; idx++) {
		unsigned g, k = gpt_param_rank(cfg, idx, &g);

		if (floats)
			floats[k] = gpt_param_floats(cfg, idx);
		if (group)
			group[k] = g;
	}
	return n;
}
