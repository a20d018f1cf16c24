/* SPDX-License-Identifier: MIT */
/*
 * split_stream.c — a split op's output streamed to the host; see
 * split_stream.h.
 *
 * Only the copies' issue is per part; nothing waits for them.  The D2H
 * engine runs its copies in order, each queued after the compute issued
 * so far, so part k's rows are on the host once part k and every copy
 * before it are over, and the newest copy's event stands for all: after
 * the op it becomes the output's swap-out event, and the output is
 * retired to HOST as any swap-out is.  The device rows are given back
 * only then, and nothing writes them in the meantime (the op writes each
 * row once), so the bytes that reach the host are the op's.
 */
#include <string.h>

#include "lib/record/guide_state.h"
#include "lib/move/mover.h"
#include "lib/core/split_op.h"
#include "split_stream.h"
#include "lib/record/tracker.h"

void tmm_split_stream_begin(struct tmm_ctx *ctx, const tmm_op *op,
			    struct tmm_tensor_rec *const *recs,
			    const uint8_t *flags, uint32_t parts,
			    struct tmm_split_stream *s)
{
	unsigned n = op->n_inputs + op->n_outputs;

	memset(s, 0, sizeof(*s));
	if (parts < 2 || ctx->mode == TMM_MODE_UVM)
		return;
	for (unsigned i = op->n_inputs; i < n; i++) {
		struct tmm_tensor_rec *t = recs[i];
		int nth;

		if (!tmm_split_sliced(op, i))
			continue;
		nth = tmm_track_access_of(flags, i);
		/* Held by this op alone: nothing else may see its rows
		 * leave, nor its state change after the op. */
		if (nth < 0 || t->state != TMM_TS_RESIDENT || t->pins != 1 ||
		    t->acquires || !tmm_guide_swaps_at_op(ctx, (unsigned)nth))
			continue;
		if (!tmm_mover_swap_out_take_host(ctx, t))
			return;
		s->out = t;
		s->row = t->bytes / op->slice_extent;
		return;
	}
}

int tmm_split_stream_rows(struct tmm_ctx *ctx, struct tmm_split_stream *s,
			  uint64_t end)
{
	uint64_t written = end * s->row;
	int rc;

	rc = tmm_mover_swap_out_piece_async(ctx, s->out, s->issued,
					    written - s->issued, &s->last);
	if (rc < 0)
		return rc;
	s->issued = written;
	return 0;
}

int tmm_split_stream_finish(struct tmm_ctx *ctx, struct tmm_split_stream *s,
			    bool succeeded)
{
	char saved[sizeof(ctx->error)];
	int rc = 0;

	if (!s->out)
		return 0;
	if (succeeded && s->issued == s->out->bytes) {
		/* Every byte's copy is queued: the output leaves as any
		 * swap-out does, and compute does not wait for it. */
		tmm_mover_swap_out_end_async(ctx, s->out, &s->last);
		ctx->split_streamed = s->out;
		s->out = NULL;
		return 0;
	}
	memcpy(saved, ctx->error, sizeof(saved));
	/* The host buffer may be given back only once the copies into it
	 * are over; the output stays on the device, whole. */
	rc = tmm_mover_swap_out_wait(ctx, &s->last);
	tmm_mover_swap_out_cancel(ctx, s->out);
	memcpy(ctx->error, saved, sizeof(saved));
	s->out = NULL;
	return rc;
}
