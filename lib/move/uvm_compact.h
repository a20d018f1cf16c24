/* SPDX-License-Identifier: MIT */
/*
 * uvm_compact.h — compaction in mode=uvm: a large tensor placed over kept
 * pages, the idle tensors in their way moved out (uvm_compact.c).
 *
 * A tensor's managed range is made afresh where no kept block is as large
 * as it (the arena's window over kept and free space aside), at the rate
 * a prefetch populates pages (90 GB/s on the measured H100), on the
 * compute stream.  A workspace of a few hundred MiB then costs a few
 * milliseconds every step, while the kept pages of the arena lie in runs
 * between live tensors, which swap mode's pool would move out of the way
 * (lib/mem/compact.c).  So where a window of the arena (uvm_window.h)
 * over kept, free and idle tensors' blocks makes a quarter of the
 * tensor's pages fewer afresh than the arena's own placement would,
 * counting the pages of moved tensors that no kept block takes, the
 * idle tensors in it are moved out by a copy on the device, at the
 * memory's rate, each to a kept block where one holds it, and the
 * tensor takes the window.  Not in the iteration the
 * planners measure (no plan installed yet): the moves' time on the
 * compute stream would count as the ops', and the plans made from it
 * would be another's (TSPLIT on DenseNet-121 at 30% of its peak,
 * simulated: swaps where it recomputes, 76 to 139 ms a step).
 *
 * Idle: RESIDENT, its block its own (no view, no views of it), not
 * pinned (but by the op placing it, which holds no address yet) or
 * acquired, nothing in flight on its bytes (no swap-out still reading
 * them, no collective), no advice on its range, its pages not touched by
 * the host since they were made.  Its address changes, as
 * a compaction's does in swap mode: ops and acquires take it anew.
 */
#ifndef TMM_UVM_COMPACT_H
#define TMM_UVM_COMPACT_H

#include <stddef.h>

#include "lib/core/context.h"

/*
 * For a tensor of `bytes` about to be placed, or a workspace or a
 * recomputation's buffer (mode=uvm, uvm_compact=on, a plan installed):
 * where it is worth it, moves idle tensors out of a window of kept pages
 * and gives the window to the caller in *block and *ptr (handed out, as
 * tmm_uvm_arena_alloc would).  Returns 1 then, 0 where it placed nothing
 * (small tensor, a kept block large enough, no window worth it, or no
 * host memory for the search: nothing changed), or the backend's error
 * of a move, with the context's message (every tensor is where its
 * bytes are, moved or not, and the window is given up).
 */
int tmm_uvm_compact_for(struct tmm_ctx *ctx, size_t bytes,
			struct tmm_pool_block **block, void **ptr);

#endif /* TMM_UVM_COMPACT_H */
