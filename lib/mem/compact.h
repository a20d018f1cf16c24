/* SPDX-License-Identifier: MIT */
/*
 * compact.h — making a hole in the device pool by moving tensors (see
 * compact.c for the method).
 */
#ifndef TMM_COMPACT_H
#define TMM_COMPACT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/core/context.h"

/*
 * Whether the pool has `bytes` free in all, so that compaction may make
 * them one hole; without them, eviction must make the room.
 */
bool tmm_compact_has_bytes(const struct tmm_ctx *ctx, size_t bytes);

/*
 * Moves resident tensors on the device so that a free block of
 * `bytes` exists, when the pool has that many free bytes but no hole
 * holds them.  A tensor moves only when no one holds its address:
 * unpinned, or with placing_too pinned only by an op still placing its
 * tensors (placing_pins in context.h), which reads their addresses after
 * the last move.  Returns 0 (tmm_pool_alloc of `bytes` now succeeds),
 * -ENOSPC when no such move exists (eviction must make the room), or a
 * backend error with a message in ctx->error.  A tensor whose swap-in
 * has landed may move only once retired: the caller retires completed
 * copies first (tmm_mover_progress), which compaction, below the mover,
 * cannot call.
 *
 * With pool=chunks (tmm_pool_is_mapped) a hole costs no device memory:
 * without placing_too it returns -ENOSPC at once (eviction frees chunks,
 * moves would not), and with it, the last resort, it packs the movable
 * tensors at the bottom of the range so that they share chunks; 0 then
 * means something moved, and the caller tries its allocation again.
 */
int tmm_compact_for(struct tmm_ctx *ctx, size_t bytes, bool placing_too);

/*
 * After tmm_compact_for found no way: whether one would exist were the
 * swap-ins still landing (ctx->swapping_in) movable, as they are once
 * landed and retired.  Returns the swap-in, queued earliest, of the
 * window that would move the fewest bytes, for the caller to wait for
 * before compacting again; NULL where waiting would make no hole (no
 * swap-in in the way, too few free bytes, pool=chunks, or short of
 * host memory to look).  Moves nothing.
 */
struct tmm_tensor_rec *tmm_compact_landing_in_the_way(struct tmm_ctx *ctx,
						      size_t bytes);

/* Orders the work queued next on `waiter` after what `waited` has queued
 * so far: a copy engine after a compaction's moves on the compute engine
 * (here and in mode=uvm's, lib/move/uvm_compact.c).  Returns 0, or the
 * backend's error with the context's message. */
int tmm_compact_order(struct tmm_ctx *ctx, enum tmm_engine waiter,
		      enum tmm_engine waited);

#endif /* TMM_COMPACT_H */
