/* SPDX-License-Identifier: MIT */
/*
 * uvm_inside.h — the inside of mode=uvm's managed arena: its segments, its
 * kept blocks and the arena itself.
 *
 * struct tmm_uvm_arena spans four files, which all say so: uvm_arena.c
 * makes the segments and hands out and takes back blocks, uvm_kept.c
 * keeps blocks populated for the next tensors, uvm_window.c finds a large
 * tensor a window over kept pages and the live blocks in their way, and
 * uvm_pages.c keeps the bitmap of pages known on the device.  Nothing
 * outside lib/mem/uvm_*.c includes this header; everyone else sees the
 * arena through uvm_arena.h, which includes uvm_kept.h and uvm_pages.h,
 * and through uvm_window.h.
 */
#ifndef TMM_UVM_INSIDE_H
#define TMM_UVM_INSIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/backend/backend.h"
#include "pool.h"

struct segment {
	char *base;
	uint64_t bytes;
	struct tmm_pool *pool;
	/* One bit a big page: the library knows the page populated on the
	 * device (tmm_uvm_arena_note); NULL when host memory for it was
	 * refused, which only means nothing is known. */
	uint8_t *on_dev;
};

/* The largest residency bitmap a segment gets (2^27 bits: 8 TiB of big
 * pages); a larger segment simply knows nothing. */
#define ON_DEV_MAX_BITS ((uint64_t)1 << 27)

/* A block kept populated for the next tensor of its size. */
struct kept {
	struct tmm_pool_block *block;
	char *ptr;
};

struct tmm_uvm_arena {
	struct tmm_backend *be;
	struct kept *kept;    /* oldest first */
	uint32_t n_kept, cap_kept;
	uint64_t kept_bytes, kept_hits, kept_discards, discards_failed;
	uint64_t segment_min; /* twice the budget, in whole VA blocks */
	uint64_t capacity;    /* bytes of all the segments */
	uint64_t in_use, peak; /* bytes in blocks handed out, its most */
	struct segment *seg;  /* oldest first */
	size_t n, cap;
};

/* The segment that handed `block` out, or NULL. */
static inline struct segment *
tmm_uvm_arena_owner(const struct tmm_uvm_arena *a,
		    const struct tmm_pool_block *block)
{
	for (size_t i = 0; i < a->n; i++)
		if (tmm_pool_owns(a->seg[i].pool, block))
			return &a->seg[i];
	return NULL;
}

/* Counts `block` handed out. */
static inline void tmm_uvm_arena_hand_out(struct tmm_uvm_arena *a,
					  const struct tmm_pool_block *b)
{
	a->in_use += b->size;
	if (a->in_use > a->peak)
		a->peak = a->in_use;
}

/* x rounded up to a multiple of `to`; 0 where that passes UINT64_MAX. */
static inline uint64_t tmm_uvm_round_up(uint64_t x, uint64_t to)
{
	return x > UINT64_MAX - (to - 1) ? 0 : (x + to - 1) / to * to;
}

#endif /* TMM_UVM_INSIDE_H */
