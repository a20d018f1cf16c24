/* SPDX-License-Identifier: MIT */
/*
 * placing.c — the pins of an op placing its tensors (see placing.h).
 */
#include "placing.h"

void tmm_placing_begin(struct tmm_ctx *ctx)
{
	ctx->placing_depth++;
}

void tmm_placing_pin(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	t->pins++;
	t->placing_pins++;
	/* The innermost placing holds it.  When that one is done with it
	 * the level stays until every placing is: a deeper placing then
	 * leaves alone a tensor it could have evicted, never the other
	 * way round. */
	if (t->placing_level < ctx->placing_depth)
		t->placing_level = ctx->placing_depth;
}

void tmm_placing_done(struct tmm_tensor_rec *t)
{
	if (--t->placing_pins == 0)
		t->placing_level = 0;
}

void tmm_placing_end(struct tmm_ctx *ctx)
{
	ctx->placing_depth--;
}
