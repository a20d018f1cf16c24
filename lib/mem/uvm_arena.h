/* SPDX-License-Identifier: MIT */
/*
 * uvm_arena.h — the managed memory of mode=uvm: a few large managed
 * segments, cached for the context's life and sub-allocated by the pool.
 *
 * A fresh managed allocation is expensive where it matters: a kernel's
 * first touch of one costs 17-67x a cudaMalloc'd buffer on an H100
 * (../shared/reference/gpu-h100.md), and a program that makes and frees
 * its activations every step would pay that for every tensor of every
 * step.  So managed memory is allocated in segments that are never given
 * back before the context goes, and each segment is carved by the device
 * pool's allocator (pool.h: best fit with coalescing), one pool per
 * segment.  A tensor that comes back to a range the previous step used
 * finds its pages still populated, often still on the device.
 *
 * Every block is aligned and sized to the managed big page
 * (TMM_MANAGED_PAGE, lib/base/managed_page.h), so a discard or a
 * migration of one block never touches its neighbour's bytes.  The arena
 * bounds address space only: how many of its pages the device holds is
 * the driver's business, bounded by the budget (managed_limit).
 */
#ifndef TMM_UVM_ARENA_H
#define TMM_UVM_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/backend/backend.h"
#include "pool_block.h"
#include "uvm_kept.h"
#include "uvm_pages.h"

struct tmm_uvm_arena;

/* Its kept blocks are uvm_kept.h's, what it knows of where its pages are
 * uvm_pages.h's; both are included here. */

struct tmm_uvm_arena_stats {
	uint64_t segments; /* managed allocations made, all still held */
	uint64_t capacity; /* their bytes */
	uint64_t in_use;   /* bytes in blocks handed out */
	uint64_t peak;	   /* the most in_use has been */
	uint64_t kept;	   /* bytes of blocks kept populated (keep) */
	uint64_t kept_hits; /* allocations served by a kept block */
	uint64_t kept_discards; /* kept blocks let go with a discard */
	uint64_t discards_failed; /* ... that the backend refused */
};

/*
 * An arena taking managed memory from `be`, with segments of at least
 * twice `budget` (see uvm_arena.c).  No managed memory is allocated
 * before the first tmm_uvm_arena_alloc.  Returns 0 or -ENOMEM.
 */
int tmm_uvm_arena_create(struct tmm_uvm_arena **out, struct tmm_backend *be,
			 uint64_t budget);

/* Gives every segment back to the backend; blocks still handed out are
 * gone with them.  NULL is ignored. */
void tmm_uvm_arena_destroy(struct tmm_uvm_arena *a);

/*
 * `bytes` (> 0) of managed memory, rounded up to whole big pages, from
 * the first segment with a free block that fits, else from a new
 * segment.  Sets *block (the handle for tmm_uvm_arena_free) and *ptr.
 * Returns 0, -EINVAL (0 bytes), -ENOMEM (host memory), or the backend's
 * error when a new segment is refused; on failure `why` says what failed
 * (the backend's message included) and nothing changed.
 */
int tmm_uvm_arena_alloc(struct tmm_uvm_arena *a, uint64_t bytes,
			struct tmm_pool_block **block, void **ptr, char *why,
			size_t why_len);

/* Where `block`, handed out by this arena, starts; NULL for any other
 * block. */
void *tmm_uvm_arena_block_ptr(const struct tmm_uvm_arena *a,
			      const struct tmm_pool_block *block);

/* Gives a block back to its segment, which keeps the memory.  NULL, and
 * blocks this arena did not hand out, are ignored. */
void tmm_uvm_arena_free(struct tmm_uvm_arena *a, struct tmm_pool_block *block);

/* Lets every kept block go (tmm_uvm_arena_trim to 0), then gives back
 * to the backend every segment with no block handed out, and returns
 * their bytes (tmm_release_cached).  The next allocation that
 * finds no room makes a segment again. */
uint64_t tmm_uvm_arena_release_empty(struct tmm_uvm_arena *a);

void tmm_uvm_arena_get_stats(const struct tmm_uvm_arena *a,
			     struct tmm_uvm_arena_stats *st);

/* The most bytes the arena has had in blocks handed out at once (0 for
 * NULL), in O(1). */
uint64_t tmm_uvm_arena_peak(const struct tmm_uvm_arena *a);

#endif /* TMM_UVM_ARENA_H */
