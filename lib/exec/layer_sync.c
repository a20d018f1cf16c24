/* SPDX-License-Identifier: MIT */
/*
 * layer_sync.c — a plan's layer-synchronous copies; see layer_sync.h.
 *
 * The copy of a swap-out that runs beside the op reading its tensor is
 * the split ops' swap-out in pieces (swap_engine.h), in one piece: the
 * host buffer is taken and the copy queued while the tensor stays
 * resident and pinned by the op, which only reads it, so the bytes that
 * reach the host are the op's input.  Only the wait is new: compute
 * waits for the copy's event, the layer boundary of vDNN.
 */
#include <string.h>

#include "layer_sync.h"
#include "lib/move/mover.h"
#include "lib/record/guide_state.h"
#include "lib/record/tracker.h"

/* Whether the op lists t among its tensors other than as its i-th. */
static bool listed_again(const tmm_op *op, struct tmm_tensor_rec *const *recs,
			 unsigned i)
{
	for (unsigned j = 0; j < op->n_inputs + op->n_outputs; j++)
		if (j != i && recs[j] == recs[i])
			return true;
	return false;
}

void tmm_layer_sync_begin(struct tmm_ctx *ctx, const tmm_op *op,
			  struct tmm_tensor_rec *const *recs,
			  const uint8_t *flags, unsigned n)
{
	struct tmm_guide *g = ctx->guide;

	if (!tmm_guide_following(ctx) || ctx->mode == TMM_MODE_UVM)
		return;
	for (unsigned i = 0; i < op->n_inputs && i < n; i++) {
		struct tmm_tensor_rec *t = recs[i];
		struct tmm_sync_copy c = { .t = t };
		int nth = tmm_track_access_of(flags, i);

		/* Read once by this op alone: a copy beside it sees the
		 * bytes the op reads, and nothing else moves them. */
		if (nth < 0 || g->n_beside == TMM_SYNC_MAX ||
		    t->state != TMM_TS_RESIDENT || t->pins != 1 ||
		    t->acquires || t->host || listed_again(op, recs, i) ||
		    !tmm_guide_sync_swap_at_op(ctx, (unsigned)nth))
			continue;
		if (!tmm_mover_swap_out_take_host(ctx, t))
			continue;
		/* Queued after the compute issued so far: beside the op. */
		if (tmm_mover_swap_out_piece_async(ctx, t, 0, t->bytes,
						   &c.ev) < 0) {
			tmm_mover_swap_out_cancel(ctx, t);
			continue; /* the guide copies it after the op */
		}
		g->beside[g->n_beside++] = c;
	}
}

bool tmm_layer_sync_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_guide *g = ctx->guide;

	for (uint32_t i = 0; i < g->n_beside; i++) {
		if (g->beside[i].t != t)
			continue;
		if (t->state != TMM_TS_RESIDENT)
			return false; /* abandoned below */
		tmm_mover_swap_out_end_async(ctx, t, &g->beside[i].ev);
		g->beside[i] = g->beside[--g->n_beside];
		return true;
	}
	return false;
}

int tmm_layer_sync_wait_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	if (t->state != TMM_TS_SWAPPING_OUT || !t->copy.valid)
		return 0;
	rc = tmm_mover_compute_wait(ctx, &t->copy);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	/* The layer boundary: the device memory is free from here on. */
	tmm_mover_progress(ctx);
	return 0;
}

void tmm_layer_sync_prefetched(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_guide *g = ctx->guide;

	/* Past the limit the back-access still waits for it. */
	if (g->n_sync_prefetch < TMM_SYNC_MAX)
		g->sync_prefetch[g->n_sync_prefetch++] =
			tmm_tracker_key(ctx, t);
}

int tmm_layer_sync_after_op(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t n = g->n_sync_prefetch;
	int rc = 0;

	g->n_sync_prefetch = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct tmm_tensor_rec *t =
			tmm_tracker_tensor_of_key(ctx, g->sync_prefetch[i]);

		if (!t || t->state != TMM_TS_SWAPPING_IN || !t->copy.valid)
			continue;
		rc = tmm_mover_compute_wait(ctx, &t->copy);
		if (rc < 0)
			rc = tmm_mover_backend_error(ctx, rc);
	}
	return rc;
}

void tmm_layer_sync_abandon(struct tmm_ctx *ctx, bool forget_prefetches)
{
	struct tmm_guide *g = ctx->guide;

	/* The host buffer waits on the deferred list until its copy is
	 * over; the tensor keeps its device bytes. */
	for (uint32_t i = 0; i < g->n_beside; i++)
		tmm_mover_host_give_back(ctx, g->beside[i].t,
					 &g->beside[i].ev);
	g->n_beside = 0;
	if (forget_prefetches)
		g->n_sync_prefetch = 0;
}
