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

struct tmm_uvm_arena;

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

/*
 * Populated blocks, kept for the next tensor that fits them.  A managed
 * range costs its pages' making whenever it is populated afresh (31.6
 * GB/s by prefetch on the H200 of docs/gpu-h200.md, a fault a page
 * otherwise), where swap mode's pool hands the same memory on for
 * nothing.  A tensor destroyed with its pages on the device gives its
 * block here instead of back to the pool, and the next allocation takes
 * populated pages where it can:
 *  - a kept block of its size (page-rounded), the most recently kept:
 *    the next step's copy of that tensor, most often, whose own range a
 *    swap-out by copy has since discarded;
 *  - else the smallest larger one: the tensor takes its tail, and its
 *    head stays kept, pages and all (an allocation that evicted a larger
 *    tensor for its room takes that tensor's pages);
 *  - else the largest smaller one that the free space right after it
 *    lets grow to the size: the tensor has those pages made already.
 * Blocks kept side by side are merged as they are kept, so that the
 * pages a step's activations leave behind serve a larger tensor later.
 *
 * keep: `block` (handed out by this arena, its pages on the device as
 * far as the caller knows) waits for a tensor.  False where no host
 * memory records it: the caller frees it as it would have.
 *
 * trim: lets kept pages go, the longest kept first, until at most
 * `limit` bytes are kept: whole blocks, and of the last one only the
 * head that passes the limit (whole big pages).  Their pages die with a
 * discard (no write-back) and go back to the pool.  Returns the bytes
 * let go.  A discard the backend refuses still frees them (they only
 * cost room), is counted in the stats, and sets *failed where given
 * (the backend's message is in its error).
 *
 * An allocation that finds no free block in any segment trims to 0
 * before it makes a new segment, so kept blocks never grow the arena.
 */
bool tmm_uvm_arena_keep(struct tmm_uvm_arena *a, struct tmm_pool_block *block);
uint64_t tmm_uvm_arena_trim(struct tmm_uvm_arena *a, uint64_t limit,
			    bool *failed);

/* The bytes of the blocks kept (0 for NULL), in O(1). */
uint64_t tmm_uvm_arena_kept(const struct tmm_uvm_arena *a);

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

/*
 * What the library knows of where the arena's pages are, a big page at a
 * time, so that it need not ask the driver to put pages where they are
 * already (issue #19: a prefetch of pages already on the device still
 * costs a driver call and its ordering events, every op of every step).
 * tmm_uvm_arena_note(..., true) after the device has populated
 * [ptr, ptr + bytes) (a kernel touched it, a prefetch to the device was
 * queued), false after anything that may take pages off it (a discard, a
 * prefetch to the host, a host access).  Knowledge, not a guarantee: the
 * driver may still evict a page on its own where the device runs out,
 * and the caller only skips hints on it (a fault brings back what a hint
 * would have).  A new segment knows nothing.  Ranges no segment holds
 * are ignored.
 */
void tmm_uvm_arena_note(struct tmm_uvm_arena *a, const void *ptr,
			uint64_t bytes, bool on_device);

/* Whether every big page of [ptr, ptr + bytes) is noted on the device. */
bool tmm_uvm_arena_on_device(const struct tmm_uvm_arena *a, const void *ptr,
			     uint64_t bytes);

#endif /* TMM_UVM_ARENA_H */
