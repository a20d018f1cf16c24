/* SPDX-License-Identifier: MIT */
/*
 * mover.h — where a tensor's bytes are, and bringing them where they are
 * needed: making room (choosing what to evict), swapping in, host access.
 * The copies themselves, and their queue, are the swap engine's
 * (swap_engine.h, which this includes): the mover spans the two files,
 * and both name their calls tmm_mover_.
 *
 * In mode=uvm the same entry points act on managed memory instead
 * (mover_uvm.h): same states, no pool; passive eviction only with
 * uvm_cap=library, against the library's count of the pages on the
 * device (device_mem.h) instead of the pool.
 *
 * Mechanism only: the mover executes evictions and swap-ins it is asked for
 * (by the runtime on an access, by a plan, or by passive mode when an
 * allocation does not fit) and keeps the invariants of tensor_state.h.
 */
#ifndef TMM_MOVER_H
#define TMM_MOVER_H

#include <stdbool.h>

#include "lib/core/context.h"
#include "device_mem.h"
#include "swap_engine.h"

/*
 * Makes t usable by the next compute work: on return t holds device memory
 * and, when need_data, its bytes are there or queued to arrive before any
 * later compute.  Handles every state: EMPTY (allocates; -ENODATA when
 * need_data), SWAPPING_OUT (cancels the eviction), HOST (swaps in on
 * demand, a counted stall; or, when !need_data, discards the host copy),
 * SWAPPING_IN (makes compute wait for the copy), DROPPED (recomputes it;
 * or, when !need_data, forgets it).  The caller pins t first.
 * Returns 0, -ENODATA, -ENOMEM, or a backend error.
 */
int tmm_mover_make_resident(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			    bool need_data);

/*
 * Evicts a RESIDENT tensor that nothing but placing pins hold to the
 * host.  Swap mode: a device-to-host copy queued after the compute work
 * issued so far; the device memory is released when the copy completes
 * (tmm_mover_progress), and compute does not wait for it (Capuchin §5.3,
 * decoupled swapping).  mode=uvm: the way uvm_path.h chooses.  With
 * `sync`, the host waits for the copy and the tensor is HOST on return.
 * Returns 0, -EINVAL (wrong state or pinned), -ENOMEM (host), or a backend
 * error; on failure the tensor is unchanged.
 */
int tmm_mover_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool sync);

/*
 * tmm_mover_swap_out(ctx, t, false) for a plan's EVICT_SWAP flagged
 * TMM_ACT_MIGRATE: in mode=uvm, t leaves by a prefetch to the host, on
 * the migrate engine where the context's way is copy, and comes back the
 * same way (mover_uvm.h).  The same errors.
 */
int tmm_mover_migrate_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Starts bringing a HOST tensor back: allocates device memory (which may
 * wait or evict) and queues a host-to-device copy.  Returns 0, -EINVAL
 * (wrong state), -ENOMEM, or a backend error.
 */
int tmm_mover_swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Starts bringing a HOST tensor back ahead of its use (a plan's PREFETCH),
 * but only into memory that is free or about to be: it may wait for a
 * pending swap-out, never evicts.  Returns 0, -ENOSPC (no room: the
 * back-access will bring it in), or an error as tmm_mover_swap_in.
 */
int tmm_mover_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Gives t (EMPTY, HOST or DROPPED) device memory of its size, by best fit
 * in the pool.  When the pool has no room: waits for the earliest pending
 * swap-out, then drops what a recomputation regenerated on the way, then
 * evicts the least recently used unpinned tensors synchronously (passive
 * mode), counting each.  Returns 0 or -ENOMEM with a message naming the
 * tensor, the op and the bytes.
 */
int tmm_mover_alloc_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Makes an EMPTY tensor RESIDENT in exactly [offset, offset + bytes) of
 * the pool, evicting nothing: a split op's output placed below the input
 * it grows into (split.c), which may start smaller than the tensor and is
 * extended to its whole size as its rows are written.  Swap mode only.
 * Returns 0, -EINVAL (not EMPTY, or mode=uvm) or -ENOMEM (not free).
 */
int tmm_mover_place_at(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       uint64_t offset, uint64_t bytes);

/*
 * Device memory that belongs to no tensor, for an output a recomputation
 * must produce but not keep; made room for as tmm_mover_alloc_device
 * does.  Returns 0 or -ENOMEM.  Freeing NULL does nothing.
 */
int tmm_mover_alloc_scratch(struct tmm_ctx *ctx, size_t bytes,
			    struct tmm_pool_block **block, void **ptr);
void tmm_mover_free_scratch(struct tmm_ctx *ctx, struct tmm_pool_block *block);

/* What the budget bounds now: the pool's bytes in use, or in mode=uvm
 * the library's count of the pages it keeps on the device. */
uint64_t tmm_mover_held(const struct tmm_ctx *ctx);

/* Evicts (swap-outs, waited for) until the device pool holds at most
 * `limit` bytes (mode=uvm: the library's count of the pages it keeps on
 * the device, device_mem.h).  Returns 0, -EBUSY (no message) when only
 * pinned tensors are left, or a negative errno from a copy. */
int tmm_mover_shrink_to(struct tmm_ctx *ctx, uint64_t limit);

/*
 * The device bytes the tensors may hold become `limit` (the budget
 * moves: budget=N%peak, share): the pool's limit in swap mode, the
 * driver's in mode=uvm with uvm_cap=driver, and with uvm_cap=library the
 * library's own count of pages; in swap mode and with uvm_cap=library
 * the tensors over it are swapped out now (tmm_mover_shrink_to).  The
 * caller sets ctx->budget.  Returns 0, -EBUSY (no message: pinned
 * tensors are over it, the next ops' allocations evict the rest), or a
 * negative errno with a message.
 */
int tmm_mover_set_limit(struct tmm_ctx *ctx, uint64_t limit);

/*
 * The device bytes `bytes` of a tensor take: whole pool units
 * (TMM_POOL_ALIGN) in mode=swap, whole managed big pages
 * (TMM_MANAGED_PAGE) in mode=uvm, where the arena hands out and the
 * driver moves nothing smaller.  What an op needs of the budget.
 */
uint64_t tmm_mover_footprint(const struct tmm_ctx *ctx, uint64_t bytes);

/* Marks an access: t becomes the most recently used. */
static inline void tmm_mover_touch(struct tmm_ctx *ctx,
				   struct tmm_tensor_rec *t)
{
	t->last_use = ctx->use_clock;
	if (tmm_list_linked(&t->on_device))
		tmm_list_move_tail(&ctx->device_lru, &t->on_device);
}

/* Releases everything t holds (device, host, copies); t becomes EMPTY. */
void tmm_mover_release(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * A plan's ADVISE (enum tmm_plan_advice) on t: mode=uvm advises its
 * managed range; the pinned-copy engine places bytes itself, so in
 * mode=swap it does nothing.  Returns 0, -EINVAL or a backend error.
 */
int tmm_mover_advise(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     uint32_t advice);

/* Frees a tensor's record and everything it holds (no checks). */
void tmm_tensor_retire(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Destroys every live tensor (context teardown). */
void tmm_tensor_table_clear(struct tmm_ctx *ctx);

/*
 * Host <-> tensor copies for tmm_tensor_write/read, wherever t is but
 * DROPPED (lib/exec/tensor.c recomputes or forgets that first).  Writing
 * an EMPTY tensor materialises it zero-filled: on the device when it fits
 * without evicting anything, else on the host.  Return 0, -ENODATA (read of
 * an EMPTY tensor), -ENOMEM, or a backend error.  On a phantom device
 * write's src may be NULL: the moves and their times, no bytes (a trial
 * replaying the program's host writes, lib/twin/trial.c).
 */
int tmm_mover_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		    size_t offset, const void *src, size_t bytes);
int tmm_mover_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		   size_t offset, void *dst, size_t bytes);

#endif /* TMM_MOVER_H */
