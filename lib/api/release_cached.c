/* SPDX-License-Identifier: MIT */
/*
 * release_cached.c — giving back the memory a context keeps for reuse
 * (tmm_release_cached in tensormm.h).
 *
 * Caches are what make steady-state swapping cheap (pinning a buffer
 * maps and locks its pages), and what a long-running program that
 * changes phase pays for: the memory stays the library's (pinned host
 * buffers, and in mode=uvm the managed arena's segments).  This hands it
 * back between phases.  Only what holds nothing goes: a buffer a copy
 * still reads waits on the deferred list and is left alone.
 */
#include <errno.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/mem/hostmem.h"
#include "lib/mem/uvm_arena.h"
#include "lib/move/mover.h"

int tmm_release_cached(tmm_ctx *ctx, uint64_t *bytes)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_RELEASE_CACHED);
	uint64_t freed;

	if (entered < 0)
		return entered;
	/* Copies that have finished give their buffers to the cache
	 * first, so that those go too. */
	tmm_mover_progress(ctx);
	freed = tmm_hostmem_release_cached(ctx->hostmem) +
		tmm_uvm_arena_release_empty(ctx->uvm_arena);
	if (bytes)
		*bytes = freed;
	tmm_guard_leave(ctx, entered);
	return 0;
}
