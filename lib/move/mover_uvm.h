/* SPDX-License-Identifier: MIT */
/*
 * mover_uvm.h — the mover in mode=uvm: tensor states over managed memory.
 *
 * In mode=uvm each tensor is a block of the context's managed arena
 * (lib/mem/uvm_arena.h: cached managed segments carved by the pool),
 * taken when it first holds bytes and given back when it is destroyed.
 * With uvm_cap=driver the runtime never evicts by itself: the driver
 * does (on the simulator, the model of sim_uvm.c, bounded by the
 * budget; on CUDA only when the device is full).  With uvm_cap=library
 * the mover also evicts as passive mode does in swap mode (mover.c),
 * keeping its count of the pages on the device within the budget.  The
 * tensor states stay as bookkeeping of what the plan asked (DESIGN.md,
 * "Tensor states"):
 *
 *   evict (EVICT_SWAP)  prefetch to the host + preferred location host,
 *                       RESIDENT -> HOST; the advice is unset when the
 *                       tensor is brought back
 *   drop (EVICT_DROP)   under pressure the range to the kept blocks,
 *                       else a discard (no write-back) where the pages
 *                       would die, else none (tmm_uvm_drop), RESIDENT ->
 *                       DROPPED; the recompute lineage regenerates it
 *                       on its next use
 *   prefetch            prefetch to the device, HOST -> SWAPPING_IN,
 *                       RESIDENT when the copy's event completes
 *   advise              the plan action's advice on the tensor's range
 *   on demand           HOST -> RESIDENT by a prefetch on the compute
 *                       stream just before the op's kernels (a discard
 *                       and the fresh prefetch where the op overwrites it)
 *
 * mover.c's entry points call these when ctx->mode is TMM_MODE_UVM, so the
 * rest of the runtime (run.c, guide.c, recompute.c) is the same in both
 * modes.  Before an op's kernels run, the runtime tells the backend which
 * managed ranges they touch (tmm_uvm_touch_op), which is where the
 * simulated driver takes its faults.
 */
#ifndef TMM_MOVER_UVM_H
#define TMM_MOVER_UVM_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/base/managed_page.h"
#include "lib/core/context.h"
#include "device_mem.h"
#include "uvm_fresh.h" /* its fresh pages */

struct tmm_pool_block;

/*
 * Whether `bytes` more of managed memory may come onto the device:
 * always with uvm_cap=driver, whose driver bounds the pages itself;
 * with uvm_cap=library or both, while the library's count of the pages
 * it keeps there (ctx->uvm_held, device_mem.h) stays within what the
 * driver keeps on the device (tmm_uvm_driver_room: the budget with
 * library, and with both where the driver's limit binds).
 */
static inline bool tmm_uvm_cap_fits(const struct tmm_ctx *ctx,
				    uint64_t bytes)
{
	return ctx->cfg.uvm_cap == TMM_UVM_CAP_DRIVER ||
	       ctx->uvm_held + tmm_managed_pages_bytes(bytes) <=
		       tmm_uvm_driver_room(ctx);
}

/* Gives t its block of the managed arena if it has none (t->dev,
 * t->block).  Returns 0, or -ENOMEM or the backend's error with a
 * message naming the op. */
int tmm_uvm_materialize(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);


/* RESIDENT -> HOST: by the context's way (uvm_path.h), or with `migrate`
 * by a prefetch to the host, with preferred location host, on the
 * migrate engine where that way is copy (TMM_ENGINE_MIGRATE; on the D2H
 * engine where it is prefetch already).  Returns 0 or a backend error (t
 * unchanged). */
int tmm_uvm_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     bool migrate);

/* HOST -> SWAPPING_IN by a prefetch to the device, RESIDENT once its
 * event completes (retired as a swap-in is).  Returns 0, -EINVAL (not
 * HOST) or a backend error. */
int tmm_uvm_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Between open and close, the prefetches of tmm_uvm_prefetch are gathered
 * (each tensor held, still HOST) and go to the device in one backend call
 * (tmm_backend_prefetch_many) at the next flush or at close; the guide
 * opens it around a run of the plan's actions and flushes before any
 * other action, so that the moves keep the plan's order, and before a
 * prefetch for another op than the batch's (a batch lands as a whole).  A prefetch
 * that comes back by copy flushes first.  Open only in mode=uvm.  flush
 * and close return 0 or the backend's error: the tensors not queued stay
 * HOST, their pages uncounted, and come back on demand.
 */
void tmm_uvm_batch_open(struct tmm_ctx *ctx);
int tmm_uvm_batch_flush(struct tmm_ctx *ctx);
int tmm_uvm_batch_close(struct tmm_ctx *ctx);

/* HOST -> RESIDENT on demand: the advice goes, the faults bring the pages
 * (or, when !need_data, the old pages are discarded).  Returns 0 or a
 * backend error. */
int tmm_uvm_bring_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool need_data);

/* A plan's ADVISE (enum tmm_plan_advice) on t's range.  Returns 0, -EINVAL
 * (t holds no allocation, or unknown advice) or a backend error. */
int tmm_uvm_advise(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		   uint32_t advice);

/*
 * A kernel touched [ptr, ptr + bytes), of tensor t (NULL: a scratch
 * block): its pages are on the device now, which the arena notes unless
 * t's advice keeps them elsewhere.
 */
void tmm_uvm_touched(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		     void *ptr, size_t bytes);

/*
 * Drops t's bytes (drop.c): its pages stop counting.  Where nothing
 * presses they stay in t's range for the re-run to overwrite; under
 * pressure the range goes back to the arena as a kept block (t then has
 * none until the recomputation places it), or, where it cannot be kept,
 * its pages are discarded (mover_uvm.c).
 */
void tmm_uvm_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* A throwaway block of the managed arena for a recomputation or a
 * workspace, and its release. */
int tmm_uvm_alloc_scratch(struct tmm_ctx *ctx, size_t bytes,
			  struct tmm_pool_block **block, void **ptr);
void tmm_uvm_free_scratch(struct tmm_ctx *ctx, struct tmm_pool_block *block);

/* Gives t's block back to the arena, unsetting its advice first and
 * discarding its pages if it was swapped out (the next tensor there
 * starts clean); t becomes EMPTY. */
void tmm_uvm_release(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Host writes and reads of a managed tensor: the host touches its pages,
 * which moves them, or, where they are known on the device, a copy on the
 * compute stream writes them, and reads them between steps
 * (uvm_access.c).  Return 0, -ENODATA (read of EMPTY), -ENOMEM, or a
 * backend error. */
int tmm_uvm_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		  size_t offset, const void *src, size_t bytes);
int tmm_uvm_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		 size_t offset, void *dst, size_t bytes);

/*
 * The ranges the next kernels touch: begin, add each input (write false)
 * and output (write true), commit before kernel_begin.  Commit hands them
 * to the backend, counts the time lost as stall and refreshes the uvm_*
 * counters.  Returns 0, -ENOMEM or a backend error.
 */
void tmm_uvm_access_begin(struct tmm_ctx *ctx);
void tmm_uvm_access_add(struct tmm_ctx *ctx, void *ptr, size_t bytes,
			bool write);
int tmm_uvm_access_commit(struct tmm_ctx *ctx);

/* The same for an op's tensors, recs[0..n) with outputs from n_inputs. */
int tmm_uvm_touch_op(struct tmm_ctx *ctx, struct tmm_tensor_rec *const *recs,
		     unsigned n_inputs, unsigned n);


#endif /* TMM_MOVER_UVM_H */
