/* SPDX-License-Identifier: MIT */
/*
 * workspace.c — tmm_workspace: scratch of a size chosen by what is free.
 *
 * A convolution can run with several algorithms; the faster ones need
 * more scratch.  Reserving the largest workspace for every layer wastes
 * the memory that tensors need, reserving none forces the slow ones
 * (SuperNeurons §3.5).  So the size is decided when the op is about to
 * run: as much as the pool has in one free block, up to what the caller
 * can use, and eviction only for the minimum the caller cannot do
 * without.  The block is a pool block owned by no tensor, so compaction
 * leaves it where it is and the budget counts it.
 */
#include <errno.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/move/mover.h"
#include "lib/mem/pool.h"
#include "workspace.h"

/* Bytes that may be given without evicting anything, at most `max`. */
static size_t free_now(struct tmm_ctx *ctx, size_t max)
{
	uint64_t avail;

	if (ctx->mode == TMM_MODE_UVM) {
		/* Managed pages: what the budget has left for the driver,
		 * or with uvm_cap=library under the library's count. */
		uint64_t held = ctx->cfg.uvm_cap == TMM_UVM_CAP_LIBRARY
					? ctx->uvm_held
					: ctx->c.uvm_resident;

		avail = ctx->budget > held ? ctx->budget - held : 0;
	} else {
		struct tmm_pool_stats ps;

		tmm_pool_get_stats(ctx->pool, &ps);
		avail = ps.largest_free;
	}
	avail = avail / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
	return avail >= max ? max : (size_t)avail;
}

void tmm_workspace_drop(struct tmm_ctx *ctx)
{
	if (!ctx->ws_block)
		return;
	tmm_mover_free_scratch(ctx, ctx->ws_block);
	ctx->ws_block = NULL;
	ctx->ws_bytes = 0;
}

int tmm_workspace_take(struct tmm_ctx *ctx, size_t min, size_t max,
		       void **ptr, size_t *got)
{
	struct tmm_pool_block *b = NULL;
	size_t want;
	char b1[32], b2[32];
	int rc;

	if (!ptr || !got)
		return tmm_fail(ctx, -EINVAL, "tmm_workspace: %s is NULL",
				!ptr ? "ptr" : "got");
	*ptr = NULL;
	*got = 0;
	if (max == 0 || min > max)
		return tmm_fail(ctx, -EINVAL,
				"tmm_workspace: min %zu and max %zu bytes: "
				"max must be at least 1 and at least min",
				min, max);
	/* The previous workspace is given back first: its room counts. */
	tmm_workspace_drop(ctx);
	want = free_now(ctx, max);
	if (want < min)
		want = min; /* evicts, but only for min */
	if (want == 0)
		return 0;
	if (min > ctx->budget)
		return tmm_fail(ctx, -ENOMEM,
				"tmm_workspace: a minimum of %s is more than "
				"the whole device budget (%s); raise "
				"TENSORMM_BUDGET or ask for less",
				tmm_fmt_bytes(min, b1, sizeof(b1)),
				tmm_fmt_bytes(ctx->budget, b2, sizeof(b2)));
	ctx->current_op = "tmm_workspace";
	rc = tmm_mover_alloc_scratch(ctx, want, &b, ptr);
	if (rc < 0)
		return rc;
	ctx->ws_block = b;
	ctx->ws_bytes = want;
	*got = want;
	return 0;
}

int tmm_workspace(tmm_ctx *ctx, size_t min, size_t max, void **ptr,
		  size_t *got)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_WORKSPACE);
	int rc;

	if (entered < 0)
		return entered;
	rc = tmm_workspace_take(ctx, min, max, ptr, got);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_workspace_release(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_WORKSPACE_RELEASE);

	if (entered < 0)
		return entered;
	tmm_workspace_drop(ctx);
	tmm_guard_leave(ctx, entered);
	return 0;
}
