/* SPDX-License-Identifier: MIT */
/*
 * uvm_fresh.c — mode=uvm's fresh pages (see uvm_fresh.h).
 */
#include "uvm_fresh.h"
#include "device_mem.h"
#include "swap_engine.h"
#include "lib/mem/uvm_arena.h"

/*
 * Whether t's range is known to be on the device still: the arena noted
 * its pages there (a kernel touched them, a prefetch brought them) and
 * nothing since took them off, and no more bytes than tmm_uvm_driver_room have
 * ever been live, so the driver had no cause to evict them (a driver
 * that cannot be capped may still, where the device itself runs out of
 * memory taken by others: then a hint skipped costs a fault, never a
 * byte).
 */
static bool range_on_device(const struct tmm_ctx *ctx, const void *ptr,
			    size_t bytes)
{
	return tmm_uvm_arena_peak(ctx->uvm_arena) <= tmm_uvm_driver_room(ctx) &&
	       tmm_uvm_arena_on_device(ctx->uvm_arena, ptr, bytes);
}

bool tmm_uvm_known_on_device(const struct tmm_ctx *ctx,
			     const struct tmm_tensor_rec *t)
{
	return range_on_device(ctx, t->dev, t->bytes);
}

int tmm_uvm_prefetch_fresh_range(struct tmm_ctx *ctx, void *ptr,
				 size_t bytes)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	/* auto: without a figure the two ways cost the same (the sim's
	 * faults of fresh pages are free where its profile has none). */
	if (!ptr || !bytes || ctx->cfg.uvm_fresh == TMM_UVM_FRESH_FAULT ||
	    (ctx->cfg.uvm_fresh == TMM_UVM_FRESH_AUTO &&
	     !(be->info.uvm_fresh_gbps > 0)))
		return 0;
	/* The range's last tensor left its pages on the device (the arena
	 * keeps them, pages_die): nothing is fresh, and a prefetch would
	 * only cost the driver call and its ordering, every step. */
	if (range_on_device(ctx, ptr, bytes))
		return 0;
	/* On the compute stream: in order with the kernels, behind no
	 * copy the copy engines have queued for later ops. */
	rc = be->ops->prefetch(be, TMM_ENGINE_COMPUTE, ptr, bytes,
			       TMM_LOC_DEVICE, -1);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_uvm_arena_note(ctx->uvm_arena, ptr, bytes, true);
	return 0;
}

int tmm_uvm_prefetch_fresh(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	return tmm_uvm_prefetch_fresh_range(ctx, t->dev, t->bytes);
}
