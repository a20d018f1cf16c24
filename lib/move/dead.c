/* SPDX-License-Identifier: MIT */
/*
 * dead.c — discarding dead tensors (see dead.h).
 */
#include "dead.h"
#include "mover.h"
#include "lib/record/tracker.h"

bool tmm_dead_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->state != TMM_TS_RESIDENT || t->pins || t->n_views ||
	    t->view_parent || t->dropped_dependents || t->ghost)
		return false;
	/* A collective still reducing it ends before its memory is reused
	 * (swap mode defers the block on it instead). */
	if (ctx->mode == TMM_MODE_UVM &&
	    tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false) < 0)
		return false;
	ctx->c.dead_discards++;
	ctx->c.dead_discard_bytes += t->bytes;
	tmm_tracker_event_dead(ctx, t);
	tmm_mover_release(ctx, t);
	t->dead = true;
	return true;
}
