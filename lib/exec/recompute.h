/*
 * recompute.h — lineage, dropping, and recomputation (Capuchin §4.4, §5.3).
 *
 * While an iteration runs, every op flagged TMM_OP_PURE is remembered with
 * its callback, its inputs and the version of each input.  A tensor whose
 * bytes came from such an op may be *dropped*: its device memory is freed
 * and it becomes DROPPED.  Acquiring it again re-runs its producer, first
 * regenerating any dropped inputs the same way (recursively).  The
 * intermediates regenerated on the way are kept while memory allows and
 * are the first to be dropped again when it does not (collective
 * recomputation).
 *
 * The invariant that makes this safe: a DROPPED tensor's producer and the
 * exact bytes of its inputs are still at hand.  So before anything
 * overwrites or destroys a tensor that a dropped tensor's lineage reads,
 * the dropped tensor is regenerated first (tmm_recompute_settle_readers).
 */
#ifndef TMM_RECOMPUTE_H
#define TMM_RECOMPUTE_H

#include <stdbool.h>

#include "lib/core/context.h"

int tmm_lineage_create(struct tmm_ctx *ctx);
void tmm_lineage_destroy(struct tmm_ctx *ctx);

/*
 * A new iteration: regenerates every tensor still DROPPED (their
 * producers are about to be forgotten), then forgets the previous
 * iteration's lineage.  Returns 0 or the error of a regeneration.
 */
int tmm_lineage_iteration_begin(struct tmm_ctx *ctx);

/*
 * Remembers op, which just ran on recs[0 .. n) (inputs then outputs, as
 * in tmm_tracker_op), as the producer of its outputs when it is pure, and
 * bumps the version of every output.  An output that the op also reads
 * gets no producer: an in-place update cannot be re-run.
 */
void tmm_lineage_record(struct tmm_ctx *ctx, const tmm_op *op,
			struct tmm_tensor_rec *const *recs,
			const uint8_t *flags, unsigned n);

/* t's bytes were written by the host: they have no producer. */
void tmm_lineage_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Can t be dropped now?  It must be RESIDENT, unpinned, made by a pure op
 * of this iteration whose inputs are still live and unchanged.  Returns 0
 * or -EINVAL with the reason in ctx->error.
 */
int tmm_recompute_check(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Drops t (after tmm_recompute_check).  Returns 0 or -EINVAL. */
int tmm_recompute_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Makes a DROPPED tensor RESIDENT again by re-running its producer (and,
 * first, those of its dropped inputs).  The caller pins t.  Returns 0,
 * -ENOMEM, a backend error, or the error of an op callback.
 */
int tmm_recompute_regenerate(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * A DROPPED tensor is about to be overwritten or destroyed: it leaves the
 * dropped list without being regenerated, and becomes EMPTY.
 */
void tmm_recompute_forget(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * t is about to be overwritten or destroyed: regenerates first every
 * DROPPED tensor whose lineage reads t.  Returns 0 or the error of a
 * regeneration (then t must be left alone).
 */
int tmm_recompute_settle_readers(struct tmm_ctx *ctx,
				 struct tmm_tensor_rec *t);

/*
 * The program destroys t during an iteration.  When a dropped tensor
 * needs t to be recomputed, or a drop the plan will make does
 * (tmm_guide_keeps: Capuchin §4.4's T3, gone after its last use, through
 * which T4 is recomputed from T2), and t can be recomputed itself (it is
 * dropped, or resident and droppable), t becomes a *ghost*: dropped, out
 * of the program's reach, kept for the lineage until the next iteration
 * begins.  Returns true when t is now a ghost.
 */
bool tmm_recompute_ghost(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Ghosts that a recomputation brought back are dropped again when they
 * still can be, and freed when they cannot and no dropped tensor needs
 * them; with `all`, every ghost no dropped tensor needs is freed (the
 * lineage is ending).  Called after each op (never between an op's
 * settling of its outputs' readers and its run) and when an iteration
 * begins.
 */
void tmm_recompute_reap(struct tmm_ctx *ctx, bool all);

/*
 * Memory is short: drops the least recently used unpinned tensor that a
 * recomputation regenerated on the way to another (cheaper than swapping
 * anything out).  Returns true when it freed something.
 */
bool tmm_recompute_shed(struct tmm_ctx *ctx);

#endif /* TMM_RECOMPUTE_H */
