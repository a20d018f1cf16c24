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

/* Copies the backend's managed-memory counters into ctx->c. */
void tmm_uvm_sync_counters(struct tmm_ctx *ctx);

#endif /* TMM_DEVICE_MEM_H */
