/* SPDX-License-Identifier: MIT */
/*
 * split_stream.h — a split op's output leaving for the host as its rows
 * are written (TSPLIT §IV-B: "swaps out finished output slices early").
 *
 * When the plan SPLITs an op and swaps one of its sliced outputs out at
 * the op's own access of it (the output goes to the host right after the
 * op that wrote it), the rows that micro-op k wrote are copied to the
 * output's host buffer after micro-op k, on the D2H engine, ordered
 * after the compute that wrote them; the host does not wait, so micro-op
 * k + 1 computes while the copy runs.  After the last part the output is
 * SWAPPING_OUT, the newest copy's event its swap-out event, counted as
 * one swap-out: compute does not wait for the copies (Capuchin §5.3, as
 * for any swap-out), and the output is HOST, its device memory given
 * back, once they are over.  The guide counts the plan's EVICT_SWAP of
 * it as carried out.  Against the swap after the op, the output is on
 * the host earlier by all but the last part's copy time, less whatever
 * the copies already queued on the D2H engine delay them.
 *
 * The output's rows stay on the device until its swap-out is retired,
 * as any swap-out's do: its peak is the unstreamed one (giving rows back
 * to the pool as their copies complete is not done).  Where the host
 * buffer cannot be taken, or in mode=uvm, the plan's swap is the
 * guide's, whole, after the op.
 */
#ifndef TMM_SPLIT_STREAM_H
#define TMM_SPLIT_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"

/* One split op's streamed output; out NULL: none. */
struct tmm_split_stream {
	struct tmm_tensor_rec *out;
	uint64_t row;	   /* bytes per row of out */
	uint64_t issued;   /* bytes [0, issued) have their copy queued */
	tmm_event last;	   /* the newest copy, standing for all of them */
};

/*
 * Called by tmm_run once every tensor of the op is resident and before
 * it runs as `parts` micro-ops (recs as in tmm_run; flags[i] has
 * TMM_TRACK_REPEAT where recs[i] is listed earlier): sets up *s for the
 * first sliced output that the plan swaps out at the op's access of it,
 * that was empty before the op and is listed once, taking its host
 * buffer; otherwise leaves s->out NULL.
 */
void tmm_split_stream_begin(struct tmm_ctx *ctx, const tmm_op *op,
			    struct tmm_tensor_rec *const *recs,
			    const uint8_t *flags, uint32_t parts,
			    struct tmm_split_stream *s);

/*
 * After a micro-op that wrote the output's rows [0, end): queues their
 * copy to the host, not waited for.  Returns 0 or a backend error with
 * ctx->error set.
 */
int tmm_split_stream_rows(struct tmm_ctx *ctx, struct tmm_split_stream *s,
			  uint64_t end);

/*
 * After the op (its tensors unpinned; succeeded) or after it failed
 * (before its outputs are released).  Succeeded, every row's copy
 * queued: the output is SWAPPING_OUT as above and the guide counts the
 * plan's swap of it as done.  Otherwise: waits for the copies queued, so
 * that the host buffer can be given back, and gives it back; the output
 * is left as it was, resident, for tmm_run or the guide to deal with.
 * Returns 0 or the wait's error; the program's last message stays (a
 * failed op's own).  Nothing when s->out is NULL.
 */
int tmm_split_stream_finish(struct tmm_ctx *ctx, struct tmm_split_stream *s,
			    bool succeeded);

#endif /* TMM_SPLIT_STREAM_H */
