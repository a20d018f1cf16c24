/* SPDX-License-Identifier: MIT */
/*
 * device_mem.h — a tensor's device memory (see device_mem.c).
 */
#ifndef TMM_DEVICE_MEM_H
#define TMM_DEVICE_MEM_H

#include "lib/core/context.h"

/* Swap mode: a block of the pool for t, with no eviction: 0, or the
 * pool's -ENOMEM (no message). */
int tmm_device_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Swap mode: t holds block b of the pool (allocated by the caller), and
 * joins the device's LRU list. */
void tmm_device_hold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     struct tmm_pool_block *b);

/* Swap mode: gives t's block back to the pool. */
void tmm_device_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Gives back t's device memory in either mode (a drop: the caller
 * changes its state). */
void tmm_device_free(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* mode=uvm: discards t's pages, keeping its range (a drop, or the copy
 * way's eviction, uvm_path.h: the caller changes its state). */
void tmm_uvm_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * mode=uvm: the library's count of the pages it keeps on the device,
 * ctx->uvm_held.  A tensor counts, with the whole big pages of its
 * bytes, from when it is given room on the device (allocated, brought
 * back, prefetched, written by the host while it fits) to when its
 * pages leave (swapped out by prefetch, discarded by a drop or by the
 * end of a copy out, released), so in every on-device state: RESIDENT,
 * SWAPPING_IN, and SWAPPING_OUT while a copy out still reads it.  While
 * it counts it is on ctx->device_lru, as a tensor holding a pool block
 * is in swap mode, so that passive mode's choice of victim (mover.c)
 * serves both modes.  Both calls may be repeated: only a change counts.
 */
void tmm_uvm_hold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);
void tmm_uvm_unhold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* mode=uvm: a scratch block of `bytes` (whole pages) comes into the count
 * (+1) or leaves it (-1). */
void tmm_uvm_hold_scratch(struct tmm_ctx *ctx, uint64_t bytes, int sign);

/*
 * mode=uvm: the live managed bytes beyond which the driver evicts: the
 * budget, where the driver is held to it (uvm_cap=driver on a backend
 * whose managed_limit binds, the simulator) or the library holds it
 * (uvm_cap=library); else the device's free memory at open, since a
 * driver that cannot be capped (CUDA's) evicts only where the device is
 * full (issue #19: at 40% of the peak on an H200, every tensor's pages
 * died each step and the next step's outputs were made afresh, 27-50 ms
 * a step with no byte moved).  The arena's kept blocks (uvm_arena.h) and
 * the held pages together stay under it: each hold trims the kept ones.
 */
uint64_t tmm_uvm_driver_room(const struct tmm_ctx *ctx);

/*
 * mode=uvm: whether `bytes` more of kept pages fit: keeping is on
 * (uvm_keep), an iteration runs (the next step makes its tensors again),
 * and the pages the library holds, the blocks kept already and these fit
 * under tmm_uvm_driver_room, so that the driver has no cause to evict
 * them.
 */
bool tmm_uvm_room_to_keep(const struct tmm_ctx *ctx, uint64_t bytes);

/*
 * mode=uvm: whether t's block, pages and all, may wait in the arena for
 * the next tensor of its size (tmm_uvm_arena_keep) rather than go back
 * to its pool or have its pages discarded: inside an iteration (the
 * next step makes a tensor of that size again), every page of t known
 * on the device and never touched by the host since, and room for them
 * under tmm_uvm_driver_room beside the pages the library holds and the
 * blocks kept already, so that the driver has no cause to evict them.
 * The next tensor there takes no fault and no prefetch of fresh pages
 * (issue #19: in mode=uvm a tensor the plan swaps out by copy had its
 * range discarded, and its next copy, in the same range, had the pages
 * made afresh on the compute stream).  Call it with t unheld.
 */
bool tmm_uvm_may_keep(const struct tmm_ctx *ctx,
		      const struct tmm_tensor_rec *t);

/*
 * mode=uvm: lets the arena's kept blocks go (tmm_uvm_arena_trim), the
 * longest kept first, until they fit under tmm_uvm_driver_room beside
 * the pages the library holds and `coming` more bytes about to be
 * populated, so that a driver held to the budget never evicts for them:
 * their pages die with a discard, where an eviction would write them
 * back.  Every hold calls it; so does a new range before its pages are
 * made.
 */
void tmm_uvm_trim_kept(struct tmm_ctx *ctx, uint64_t coming);

/*
 * mode=uvm: the copy way's swap-out of t is over (uvm_path.h): its bytes
 * are its host buffer's and its pages count no more.  Its block goes to
 * the arena's kept ones where tmm_uvm_may_keep allows and t carries no
 * plan advice (advice belongs to the range), and t holds no range until
 * it comes back (tmm_uvm_copy_in takes one, kept or new), as a swapped
 * out tensor holds no pool block in swap mode.  Otherwise its pages are
 * discarded and the range stays t's.
 */
void tmm_uvm_copied_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Copies the backend's managed-memory counters into ctx->c. */
void tmm_uvm_sync_counters(struct tmm_ctx *ctx);

/*
 * t's way back to the device in mode=uvm is queued, by prefetch or by
 * copy, with the event that ends it in t->copy: SWAPPING_IN until the
 * mover retires it, its pages held, and counted as a swap-in.
 */
void tmm_uvm_arriving(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * mode=uvm with uvm_cap=library: nothing left to swap out, and `bytes`
 * for t (NULL: a recomputation buffer or the workspace) would take the
 * count of pages past the budget.  Fails with -ENOMEM and a message that
 * says what holds the count, and the knobs.
 */
int tmm_uvm_no_room(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		    size_t bytes);

#endif /* TMM_DEVICE_MEM_H */
