/* SPDX-License-Identifier: MIT */
/*
 * uvm_kept.h — the managed arena's kept blocks (uvm_kept.c): blocks whose
 * pages wait populated for the next tensor.  uvm_arena.h includes it.
 */
#ifndef TMM_UVM_KEPT_H
#define TMM_UVM_KEPT_H

#include <stdbool.h>
#include <stdint.h>

#include "pool_block.h"

struct tmm_uvm_arena;

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
 *  - else the window of its size over kept and free space that covers
 *    the most kept pages (a kept block grown up or down, or several with
 *    free space between them): the tensor has those pages made already,
 *    and what lies outside the window of a kept block stays kept.
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
 * A kept block is never in an allocation's way (the window may cover it),
 * so kept blocks never make the arena grow; where the window could not
 * be looked for (no host memory), an allocation that finds no free block
 * trims to 0 before it makes a new segment.
 */
bool tmm_uvm_arena_keep(struct tmm_uvm_arena *a, struct tmm_pool_block *block);
uint64_t tmm_uvm_arena_trim(struct tmm_uvm_arena *a, uint64_t limit,
			    bool *failed);

/* The bytes of the blocks kept (0 for NULL), in O(1). */
uint64_t tmm_uvm_arena_kept(const struct tmm_uvm_arena *a);

/*
 * The arena's allocations try this first: a kept block for `want` bytes
 * (whole big pages) into *block and *ptr, counted handed out, chosen as
 * above.  False when none will do (nothing changed, though a failure may
 * have discarded kept pages).
 */
bool tmm_uvm_kept_take(struct tmm_uvm_arena *a, uint64_t want,
		       struct tmm_pool_block **block, void **ptr);

#endif /* TMM_UVM_KEPT_H */
