/* SPDX-License-Identifier: MIT */
/*
 * placing.h — the pins of an op placing its tensors.
 *
 * tmm_run pins all of an op's tensors, then makes them resident one by
 * one, and only then reads their device addresses for the callback; a
 * recomputation does the same for the op it re-runs, inside the placing
 * of the op that needs the dropped tensor.  Until the addresses are
 * read no one holds them, so a placing pin is weaker than a pin: the
 * tensor is never evicted by passive mode, but compaction may move it
 * (compact.h), and a deeper placing, short of room even so, may swap
 * out a tensor that only outer placings pin (mover.c, make_room_for),
 * which the outer placing then brings back before it reads addresses.
 * Each tensor notes the innermost placing that pins it (placing_level),
 * each context how deep the placings go (placing_depth).
 */
#ifndef TMM_PLACING_H
#define TMM_PLACING_H

#include "lib/core/context.h"

/* A placing begins: one level deeper. */
void tmm_placing_begin(struct tmm_ctx *ctx);

/* Pins t for the placing under way. */
void tmm_placing_pin(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* The placing under way is done with t, which keeps its pin: its address
 * may be handed out now. */
void tmm_placing_done(struct tmm_tensor_rec *t);

/* The placing under way ends, every tensor it pinned done with. */
void tmm_placing_end(struct tmm_ctx *ctx);

#endif /* TMM_PLACING_H */
