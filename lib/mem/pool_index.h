/* SPDX-License-Identifier: MIT */
/*
 * pool_index.h — the inside of the device pool: its block records, the
 * pool itself, and the index of free blocks by size class.
 *
 * struct tmm_pool spans three files, which all say so: pool.c hands out
 * and takes back blocks and keeps the records and the address list,
 * pool_index.c keeps the index of the free ones (class trees, pending
 * lists and bitmaps), and pool_check.c checks the whole for the tests.
 * Nothing outside lib/mem/pool*.c includes this header; everyone else
 * sees the pool only through pool.h.
 */
#ifndef TMM_POOL_INDEX_H
#define TMM_POOL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_block.h"

struct tmm_pool_map;

#define TMM_POOL_CACHE_LINE 64

/* The free states share TMM_BLOCK_FREE_BIT, so "is it free" is one test. */
#define TMM_BLOCK_FREE_BIT 2u

enum tmm_block_state {
	TMM_BLOCK_RECYCLED = 0,	/* on the spare list, describes nothing */
	TMM_BLOCK_USED = 1,	/* in the address list, handed to a caller */
	/* free, in its class tree */
	TMM_BLOCK_FREE_SORTED = TMM_BLOCK_FREE_BIT,
	/* free, in its exact class's unsorted list */
	TMM_BLOCK_FREE_PENDING = TMM_BLOCK_FREE_BIT | 1,
};

/*
 * The host record of one block.  The public part comes first so that the
 * pointer handed to callers converts back at no cost; one record is one
 * cache line, so visiting a neighbour or a tree node costs one line.
 */
struct tmm_block_rec {
	_Alignas(TMM_POOL_CACHE_LINE) struct tmm_pool_block pub;
	struct tmm_block_rec *prev;	/* lower neighbour in the arena */
	struct tmm_block_rec *next;	/* higher neighbour; spare link */
	struct tmm_block_rec *left;	/* class tree children, or the */
	struct tmm_block_rec *right;	/* pending list's prev and next */
	struct tmm_block_rec *parent;	/* class tree parent */
	uint32_t owner;			/* pool_tag(): another pool's block */
	int16_t height;			/* of the class subtree rooted here */
	uint16_t state;			/* enum tmm_block_state */
};

_Static_assert(sizeof(struct tmm_block_rec) == TMM_POOL_CACHE_LINE,
	       "a block record should fill exactly one cache line");

struct tmm_record_slab {
	_Alignas(TMM_POOL_CACHE_LINE) struct tmm_record_slab *next;
	size_t count;
	struct tmm_block_rec records[];
};

/*
 * The free blocks of one size class: a tree, and for an exact class also
 * a list of blocks not sorted into the tree yet.  Side by side, so that
 * looking at a class costs one cache line.
 */
struct tmm_size_class {
	struct tmm_block_rec *tree;
	struct tmm_block_rec *pending;
};

struct tmm_pool {
	uint32_t tag;			/* pool_tag(this), in every record */
	uint64_t capacity;
	uint64_t limit;			/* in_use may not pass it (alloc) */
	uint64_t in_use;
	uint64_t peak;
	uint64_t free_blocks;
	uint64_t used_blocks;
	struct tmm_block_rec *lowest;	/* head of the address-ordered list */
	struct tmm_block_rec *spare_records; /* linked by next */
	struct tmm_record_slab *slabs;
	struct tmm_block_rec *fresh;	/* never used records of the newest */
	struct tmm_block_rec *fresh_end; /* slab, touched only when needed */
	size_t records_total;		/* records ever handed out */
	/* pool=chunks: the physical chunks under the virtual range
	 * (pool_map.c); NULL for an arena, which is all device memory. */
	struct tmm_pool_map *map;
	bool map_failed;		/* the last alloc or extend, or an
					 * alloc_at since, failed in a map
					 * callback */
	bool moving;			/* tmm_pool_keep_mapped: a compaction
					 * is under way */

	/* The index of free blocks; the arrays follow this struct. */
	uint32_t class_count;		/* classes up to the capacity's */
	uint32_t word_count;		/* 64-bit words of class_bits */
	uint32_t group_count;		/* 64-bit words of word_bits */
	struct tmm_size_class *classes;	/* [class_count] */
	uint64_t *class_bits;		/* bit c: class c is not empty */
	uint64_t *word_bits;		/* bit w: class_bits[w] is not 0 */
};

/* Is the block free?  Inline: the allocator asks on its hot path. */
static inline bool tmm_block_is_free(const struct tmm_block_rec *rec)
{
	return rec->state & TMM_BLOCK_FREE_BIT;
}

/* The size class of a size; classes are ordered like their sizes. */
uint32_t tmm_pool_size_class(uint64_t size);

/* The class trees' (size, offset) order: is a before b? */
bool tmm_pool_key_less(const struct tmm_block_rec *a,
		       const struct tmm_block_rec *b);

/* Do all blocks of class cls have one size (and may wait unsorted)? */
bool tmm_pool_is_exact_class(uint32_t cls);

/* Does the bitmap say class cls holds a free block? */
bool tmm_pool_class_in_use(const struct tmm_pool *pool, uint32_t cls);

/* The smallest free block of at least `size` bytes, lowest offset first;
 * NULL when none is large enough. */
struct tmm_block_rec *tmm_pool_find_best_fit(struct tmm_pool *pool,
					     uint64_t size);

/* A largest free block, or NULL when none is free. */
const struct tmm_block_rec *tmm_pool_find_largest(const struct tmm_pool *pool);

/* Adds a free block to the index (and counts it in free_blocks). */
void tmm_pool_mark_free(struct tmm_pool *pool, struct tmm_block_rec *rec);

/* Takes a free block out of the index; its size must not have changed. */
void tmm_pool_unmark_free(struct tmm_pool *pool, struct tmm_block_rec *rec);

#endif /* TMM_POOL_INDEX_H */
