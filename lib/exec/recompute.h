/* SPDX-License-Identifier: MIT */
/*
 * recompute.h — recomputation (Capuchin §4.4, §5.3); the lineage and the
 * drop itself are lib/move/drop.h's.
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
#include "lib/move/drop.h"

/*
 * A new iteration: regenerates every tensor still DROPPED (their
 * producers are about to be forgotten), then forgets the previous
 * iteration's lineage.  Returns 0 or the error of a regeneration.
 */
int tmm_lineage_iteration_begin(struct tmm_ctx *ctx);

/*
 * tmm_mover_make_resident for every state: a DROPPED tensor whose bytes
 * are needed is recomputed (tmm_recompute_regenerate), since the mover
 * below cannot run its producer.  What tmm_run, the guide and a
 * recomputation's inputs call.
 */
int tmm_recompute_make_resident(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
				bool need_data);

/*
 * Makes a DROPPED tensor RESIDENT again by re-running its producer (and,
 * first, those of its dropped inputs).  The caller pins t.  Returns 0,
 * -ENOMEM, a backend error, or the error of an op callback.
 */
int tmm_recompute_regenerate(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

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
 * them; a dropped ghost no dropped tensor needs stays only while a drop
 * the plan has still to make may (tmm_guide_keeps), so that the sources
 * it holds are let go once the iteration is past those drops; with
 * `all`, every ghost no dropped tensor needs is freed (the lineage is
 * ending).  Called after each op (never between an op's
 * settling of its outputs' readers and its run) and when an iteration
 * begins.
 */
void tmm_recompute_reap(struct tmm_ctx *ctx, bool all);

#endif /* TMM_RECOMPUTE_H */
