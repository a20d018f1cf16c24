/* SPDX-License-Identifier: MIT */
/*
 * uvm_window.h — a window of the managed arena for one large allocation,
 * over kept pages and the live blocks in their way (uvm_window.c).
 *
 * A managed range cannot take another range's pages: where no kept block
 * is as large as an allocation, its pages are made afresh (at 90 GB/s on
 * the measured H100, a step's activations at a time), while the kept
 * pages of the arena lie in runs between live tensors.  Swap mode's pool
 * moves live tensors out of a window to make a hole (compact.c); this is
 * the same for the arena, with pages in place of holes: a window whose
 * blocks are kept (populated), free (to be made) or movable live blocks
 * (the caller's tensors, moved out by a copy on the device, at the
 * memory's rate), chosen to make the fewest pages afresh.
 *
 * The caller (lib/move/uvm_compact.c) finds a window, holds it (its kept
 * and free blocks are taken out of every other allocation's way, so that
 * the moves land elsewhere), moves each of its movable blocks out and
 * hands each vacated block to it, then takes the window as one block, or
 * releases it where a move failed (every block it held goes back as it
 * was: kept pages kept, free space free, vacated pages kept).
 */
#ifndef TMM_UVM_WINDOW_H
#define TMM_UVM_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_block.h"

struct tmm_uvm_arena;

/* A block the window holds, and whether its pages are on the device. */
struct tmm_uvm_window_held {
	struct tmm_pool_block *block;
	bool populated;
};

/* A live block in the window, to be moved out by the caller. */
struct tmm_uvm_window_move {
	void *ptr;
	uint64_t bytes;
};

struct tmm_uvm_window {
	size_t seg;	   /* its segment, by index */
	uint64_t at, want; /* where it starts in the segment, its bytes */
	uint64_t cold;	   /* of want, bytes to be made afresh */
	uint64_t warm;	   /* of want, kept bytes (populated) */
	uint64_t moving;   /* bytes of the live blocks to move out */
	struct tmm_uvm_window_held *held;
	uint32_t n_held, cap_held;
	struct tmm_uvm_window_move *moves;
	uint32_t n_moves;
};

/* Whether the live block at `ptr` may be moved (the caller's tensor,
 * idle); any other live block bounds the windows. */
typedef bool (*tmm_uvm_movable_fn)(void *arg, const void *ptr);

/* The size of the largest kept block (0 for none or NULL). */
uint64_t tmm_uvm_arena_kept_largest(const struct tmm_uvm_arena *a);

/*
 * The window of `want` bytes (whole big pages) that costs least, where a
 * byte to be made afresh costs 1 and a byte moved `move_cost` (its copy)
 * plus 1 where no kept block outside the window holds it (the moved
 * blocks placed largest first, best fit, as the arena places them), into
 * *w (its moves listed, nothing held yet).  Returns 1, or 0 where it
 * would not make a quarter of `want` fewer pages afresh than the best
 * window that moves nothing (the arena's own over kept and free space,
 * uvm_kept.h), or -ENOMEM.  Windows start or end at a block's edge.
 */
int tmm_uvm_window_find(struct tmm_uvm_arena *a, uint64_t want,
			double move_cost, tmm_uvm_movable_fn movable,
			void *arg, struct tmm_uvm_window *w);

/* Holds w's kept and free blocks (0), or -ENOMEM with nothing held. */
int tmm_uvm_window_hold(struct tmm_uvm_arena *a, struct tmm_uvm_window *w);

/* `block`, a live block of w that the caller moved out, is w's now: its
 * pages are on the device, and it counts no longer as handed out.
 * Returns 0, or -ENOMEM where w cannot record it (nothing changed). */
int tmm_uvm_window_vacated(struct tmm_uvm_arena *a, struct tmm_uvm_window *w,
			   struct tmm_pool_block *block);

/*
 * Every live block of w moved out: w becomes one block handed out, into
 * *block and *ptr, and what its held blocks had beyond it stays kept
 * where it was populated.  Returns 0, or -ENOMEM (w released instead).
 * Frees w's lists either way.
 */
int tmm_uvm_window_take(struct tmm_uvm_arena *a, struct tmm_uvm_window *w,
			struct tmm_pool_block **block, void **ptr);

/* Gives w up: every block it holds goes back as it was (populated ones
 * kept), and its lists are freed.  For a window found but not held,
 * only the lists. */
void tmm_uvm_window_release(struct tmm_uvm_arena *a,
			    struct tmm_uvm_window *w);

#endif /* TMM_UVM_WINDOW_H */
