/* SPDX-License-Identifier: MIT */
/*
 * pool.c — the device memory pool: best fit with coalescing, over offsets.
 *
 * The arena is one big device allocation made up front (SuperNeurons
 * §3.2.1), so that the runtime never calls cudaMalloc/cudaFree, which are
 * slow and synchronise the device, on its hot path.  This file only hands
 * out and takes back ranges of offsets into that arena; it never touches
 * the arena itself, because device memory is not readable from the host.
 *
 * Every block, free or used, has an out-of-band host record, and all
 * records are chained in one doubly-linked list in address order that
 * covers the arena exactly.  Freeing finds its neighbours in O(1) and
 * merges with the free ones, so no two free blocks are ever adjacent.
 *
 * Free blocks are indexed by size class, with an AVL tree per class
 * (pool_index.c), so the best fit — the smallest free block that fits,
 * the lowest offset among equals — is exact, and O(log n) at worst.
 *
 * struct tmm_pool (pool_index.h) spans this file, which keeps the records
 * and the address list and hands out and takes back blocks,
 * pool_index.c, which keeps the index of the free ones, and pool_check.c,
 * which checks the whole for the tests.  Every block that comes free here
 * is added to the index, and taken out of it before its size or offset
 * changes.
 *
 * Records are carved from slabs and recycled through a free list, so in
 * steady state alloc and free do no host allocation, and free never fails.
 *
 * An allocation takes the low end of the chosen free block; the rest, if
 * any, stays free.  Offsets and sizes are multiples of TMM_POOL_ALIGN.
 *
 * pool=chunks: every change of what allocated blocks cover goes to the
 * chunk map (pool_map.c) before the records change, since mapping may
 * fail and a failure must leave the pool as it was: alloc, extend and
 * alloc_at map within the cap (alloc_at not while a compaction moves
 * tensors: tmm_pool_keep_mapped), free and trim give chunks back.
 * The hole is chosen as for an arena (best fit), but which end of it a
 * block takes is the one that needs fewer chunks mapped, the arena's rule
 * breaking ties: blocks then gather in the chunks already mapped instead
 * of spreading one per chunk, which the cap would make evictions of
 * (inception_v4 under tensile replayed on its twin: 1614 passive
 * evictions by the arena's rule, none by this one).
 */
#include "pool.h"
#include "pool_index.h"
#include "pool_map.h"
#include "lib/base/xalloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

/*
 * Record slabs: a small first one, so that small pools stay small, then
 * 2 MiB ones that the kernel may back with a huge page each.  Records are
 * visited in random order; with 4 KiB pages most visits also missed the
 * TLB, which cost about a tenth of an alloc+free pair.
 */
#define FIRST_SLAB_RECORDS 32u
#define HUGE_SLAB_BYTES (2u << 20)

static struct tmm_block_rec *block_of(struct tmm_pool_block *pub)
{
	return (struct tmm_block_rec *)((char *)pub -
					offsetof(struct tmm_block_rec, pub));
}

/*
 * A 32-bit stamp of a pool's address for its records: a pointer would not
 * fit in the record's cache line next to the parent link.  Two live pools
 * whose addresses are under 4 GiB apart never share a stamp.
 */
static uint32_t pool_tag(const struct tmm_pool *pool)
{
	uint64_t address = (uint64_t)(uintptr_t)pool;

	return (uint32_t)(address ^ (address >> 32));
}

static uint64_t round_up_to_align(uint64_t bytes)
{
	return (bytes + (TMM_POOL_ALIGN - 1)) & ~(uint64_t)(TMM_POOL_ALIGN - 1);
}

/* ------------------------------------------------------------------------
 * Record slabs and recycling
 * ---------------------------------------------------------------------- */

static int grow_records(struct tmm_pool *pool)
{
	bool first = !pool->slabs;
	size_t bytes = HUGE_SLAB_BYTES;
	struct tmm_record_slab *slab;

	if (first)
		bytes = sizeof(*slab) +
			FIRST_SLAB_RECORDS * sizeof(struct tmm_block_rec);

	/* aligned_alloc wants a size that is a multiple of the alignment. */
	slab = tmm_aligned_alloc(first ? TMM_POOL_CACHE_LINE : HUGE_SLAB_BYTES,
				 bytes);
	if (!slab)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	/* Only a hint: without transparent huge pages nothing changes. */
	if (!first)
		(void)madvise(slab, bytes, MADV_HUGEPAGE);
#endif
	slab->count = (bytes - sizeof(*slab)) / sizeof(slab->records[0]);
	slab->next = pool->slabs;
	pool->slabs = slab;
	pool->fresh = slab->records;
	pool->fresh_end = slab->records + slab->count;
	return 0;
}

/*
 * Returns a recycled record, else a fresh one, or NULL when the host is
 * out of memory.
 */
static struct tmm_block_rec *take_record(struct tmm_pool *pool)
{
	struct tmm_block_rec *rec = pool->spare_records;

	if (rec) {
		pool->spare_records = rec->next;
	} else {
		if (pool->fresh == pool->fresh_end && grow_records(pool) < 0)
			return NULL;
		rec = pool->fresh++;
		rec->owner = pool->tag;
		pool->records_total++;
	}
	rec->prev = rec->next = rec->left = rec->right = rec->parent = NULL;
	return rec;
}

static void recycle_record(struct tmm_pool *pool, struct tmm_block_rec *rec)
{
	rec->state = TMM_BLOCK_RECYCLED;
	rec->prev = rec->left = rec->right = rec->parent = NULL;
	rec->next = pool->spare_records;
	pool->spare_records = rec;
}

/* Takes `rec` (not the lowest block) out of the address list. */
static void unlink_block(struct tmm_block_rec *rec)
{
	rec->prev->next = rec->next;
	if (rec->next)
		rec->next->prev = rec->prev;
}

/* ------------------------------------------------------------------------
 * Chunks (pool=chunks; no-ops for an arena)
 * ---------------------------------------------------------------------- */

/* Takes chunks [first, end), noting a refused map for get_stats. */
static int chunks_take_span(struct tmm_pool *pool, uint64_t first,
			    uint64_t end, bool capped)
{
	int rc = tmm_pool_map_take(pool->map, first, end, capped);

	if (rc < 0) {
		struct tmm_pool_map_stats ms;

		tmm_pool_map_get_stats(pool->map, &ms);
		pool->map_failed = ms.map_failed;
	}
	return rc;
}

/* Maps what [offset, offset + size) needs, within the cap if capped. */
static int chunks_take(struct tmm_pool *pool, uint64_t offset, uint64_t size,
		       bool capped)
{
	uint64_t first, end;

	if (!pool->map)
		return 0;
	tmm_pool_map_span(offset, size, &first, &end);
	return chunks_take_span(pool, first, end, capped);
}

static void chunks_give(struct tmm_pool *pool, uint64_t offset, uint64_t size)
{
	uint64_t first, end;

	if (!pool->map)
		return;
	tmm_pool_map_span(offset, size, &first, &end);
	tmm_pool_map_give(pool->map, first, end);
}

/*
 * pool=chunks: which end of the hole `chosen` a block of `size` goes to.
 * Where blocks lie in the range matters less than which chunks they
 * need, so the end that needs fewer chunks mapped wins, and the usual
 * rule (`top`: large ones at the top) breaks ties.
 */
static bool top_needs_fewer_chunks(const struct tmm_pool *pool,
				   const struct tmm_block_rec *chosen,
				   uint64_t size, bool top)
{
	uint64_t first, end, at_bottom, at_top;

	tmm_pool_map_span(chosen->pub.offset, size, &first, &end);
	at_bottom = tmm_pool_map_missing(pool->map, first, end);
	tmm_pool_map_span(chosen->pub.offset + chosen->pub.size - size, size,
			  &first, &end);
	at_top = tmm_pool_map_missing(pool->map, first, end);
	return at_top == at_bottom ? top : at_top < at_bottom;
}

/*
 * The cap for a limit: the limit in whole chunks, plus the chunk that a
 * block below an op's tensors may share with them, so that tensors that
 * fit the limit fit the cap once packed (pool_map.c).
 */
static uint64_t cap_chunks(uint64_t limit)
{
	return (limit + TMM_POOL_CHUNK - 1) / TMM_POOL_CHUNK + 1;
}

/* ------------------------------------------------------------------------
 * The interface
 * ---------------------------------------------------------------------- */

/*
 * A capacity that is not a multiple of TMM_POOL_ALIGN is rounded down: the
 * tail could never hold an aligned block.  Returns 0, -EINVAL when nothing
 * is left (capacity below TMM_POOL_ALIGN) or `out` is NULL, -ENOMEM.
 */
int tmm_pool_create(struct tmm_pool **out, uint64_t capacity)
{
	struct tmm_pool *pool;
	struct tmm_block_rec *whole;
	uint64_t usable = capacity & ~(uint64_t)(TMM_POOL_ALIGN - 1);
	uint32_t classes, words, groups;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (usable == 0)
		return -EINVAL;

	/* The index arrays live right after the struct: one allocation. */
	classes = tmm_pool_size_class(usable) + 1;
	words = (classes + 63) / 64;
	groups = (words + 63) / 64;
	pool = tmm_calloc(1, sizeof(*pool) +
				     classes * sizeof(struct tmm_size_class) +
				     (words + groups) * sizeof(uint64_t));
	if (!pool)
		return -ENOMEM;
	pool->class_count = classes;
	pool->word_count = words;
	pool->group_count = groups;
	pool->classes = (struct tmm_size_class *)(pool + 1);
	pool->class_bits = (uint64_t *)(pool->classes + classes);
	pool->word_bits = pool->class_bits + words;
	pool->tag = pool_tag(pool);
	pool->capacity = usable;
	pool->limit = usable;

	whole = take_record(pool);
	if (!whole)
		goto err;
	whole->pub.offset = 0;
	whole->pub.size = usable;
	pool->lowest = whole;
	tmm_pool_mark_free(pool, whole);

	*out = pool;
	return 0;
err:
	free(pool);
	return -ENOMEM;
}

int tmm_pool_create_mapped(struct tmm_pool **out, uint64_t va_bytes,
			   const struct tmm_pool_mapper *mapper)
{
	uint64_t chunks = va_bytes / TMM_POOL_CHUNK;
	struct tmm_pool *pool;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (chunks == 0 || !mapper || !mapper->map || !mapper->unmap)
		return -EINVAL;
	rc = tmm_pool_create(&pool, chunks * TMM_POOL_CHUNK);
	if (rc < 0)
		return rc;
	rc = tmm_pool_map_create(&pool->map, chunks, mapper);
	if (rc < 0) {
		tmm_pool_destroy(pool);
		return rc;
	}
	*out = pool;
	return 0;
}

bool tmm_pool_is_mapped(const struct tmm_pool *pool)
{
	return pool && pool->map;
}

void tmm_pool_keep_mapped(struct tmm_pool *pool, bool keep)
{
	if (!pool)
		return;
	pool->moving = keep;
	tmm_pool_map_keep(pool->map, keep);
}

void tmm_pool_destroy(struct tmm_pool *pool)
{
	struct tmm_record_slab *slab, *next;

	if (!pool)
		return;
	tmm_pool_map_destroy(pool->map);
	for (slab = pool->slabs; slab; slab = next) {
		next = slab->next;
		free(slab);
	}
	free(pool);
}

/*
 * Returns 0 and sets *out, -EINVAL for 0 bytes or NULL arguments, -ENOMEM
 * when no free block is large enough or the host cannot hold one more
 * record.  On failure the pool is unchanged.
 */
int tmm_pool_alloc(struct tmm_pool *pool, uint64_t bytes,
		   struct tmm_pool_block **out)
{
	struct tmm_block_rec *chosen, *rest;
	uint64_t size;
	bool top;

	if (!pool || !out || bytes == 0)
		return -EINVAL;
	pool->map_failed = false;
	/* Checked before rounding, which could otherwise wrap around. */
	if (bytes > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	/* The limit is the caller's share of a device used by several
	 * processes (gpu_share.c): past it is like having no hole. */
	if (size > pool->limit - (pool->in_use < pool->limit ? pool->in_use
							     : pool->limit))
		return -ENOMEM;

	chosen = tmm_pool_find_best_fit(pool, size);
	if (!chosen)
		return -ENOMEM;
	/* Records and chunks first, so that failure changes nothing. */
	rest = NULL;
	if (chosen->pub.size > size && !(rest = take_record(pool)))
		return -ENOMEM;
	top = rest && size >= TMM_POOL_LARGE;
	if (rest && pool->map)
		top = top_needs_fewer_chunks(pool, chosen, size, top);
	if (chunks_take(pool, top ? chosen->pub.offset + chosen->pub.size - size
				  : chosen->pub.offset,
			size, true) < 0) {
		if (rest)
			recycle_record(pool, rest);
		return -ENOMEM;
	}

	if (top) {
		/* A large block comes from the top of the hole, a small one
		 * from the bottom: sizes that mix in one region leave small
		 * gaps between large blocks, and a large allocation then
		 * finds no hole although the bytes are free. */
		tmm_pool_unmark_free(pool, chosen);
		rest->pub.offset = chosen->pub.offset;
		rest->pub.size = chosen->pub.size - size;
		chosen->pub.offset += rest->pub.size;
		chosen->pub.size = size;
		rest->next = chosen;
		rest->prev = chosen->prev;
		if (chosen->prev)
			chosen->prev->next = rest;
		else
			pool->lowest = rest;
		chosen->prev = rest;
		tmm_pool_mark_free(pool, rest);
	} else if (rest) {
		tmm_pool_unmark_free(pool, chosen);
		rest->pub.offset = chosen->pub.offset + size;
		rest->pub.size = chosen->pub.size - size;
		chosen->pub.size = size;
		rest->prev = chosen;
		rest->next = chosen->next;
		if (chosen->next)
			chosen->next->prev = rest;
		chosen->next = rest;
		tmm_pool_mark_free(pool, rest);
	} else {
		tmm_pool_unmark_free(pool, chosen);
	}

	chosen->state = TMM_BLOCK_USED;
	pool->used_blocks++;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	*out = &chosen->pub;
	return 0;
}

/*
 * NULL arguments are ignored, and so are blocks that are not currently
 * allocated from this pool (a double free, or another pool's block), as
 * far as the record can tell: a record that was recycled and handed out
 * again cannot be told apart from its new self.
 */
void tmm_pool_free(struct tmm_pool *pool, struct tmm_pool_block *block)
{
	struct tmm_block_rec *rec, *lower, *higher;
	bool lower_free, higher_free;

	if (!pool || !block)
		return;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != TMM_BLOCK_USED)
		return;

	pool->used_blocks--;
	pool->in_use -= rec->pub.size;
	chunks_give(pool, rec->pub.offset, rec->pub.size);

	/*
	 * Both neighbours are read before acting on either, so that the two
	 * cache misses overlap instead of following each other.
	 */
	lower = rec->prev;
	higher = rec->next;
	lower_free = lower && tmm_block_is_free(lower);
	higher_free = higher && tmm_block_is_free(higher);
	if (higher_free) {
		tmm_pool_unmark_free(pool, higher);
		rec->pub.size += higher->pub.size;
		unlink_block(higher);
		recycle_record(pool, higher);
	}
	if (lower_free) {
		/* The lower block absorbs this one; its key changes. */
		tmm_pool_unmark_free(pool, lower);
		lower->pub.size += rec->pub.size;
		unlink_block(rec);
		recycle_record(pool, rec);
		rec = lower;
	}
	tmm_pool_mark_free(pool, rec);
}

int tmm_pool_alloc_at(struct tmm_pool *pool, uint64_t offset,
		      uint64_t bytes, struct tmm_pool_block **out)
{
	struct tmm_block_rec *rec, *lower = NULL, *higher = NULL;
	uint64_t size, end, rec_end;

	if (!pool || !out || bytes == 0 || offset % TMM_POOL_ALIGN)
		return -EINVAL;
	if (bytes > pool->capacity || offset > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	/* An arena is the budget, so no placement passes it; a virtual
	 * range is twice that, and a placement that is not a compaction's
	 * move (TSPLIT's, tmm_mover_place_at) must keep to the limit. */
	if (pool->map && !pool->moving && pool->in_use + size > pool->limit)
		return -ENOMEM;
	end = offset + size;
	/* A walk: this is for compaction, which is rare. */
	for (rec = pool->lowest;
	     rec && rec->pub.offset + rec->pub.size <= offset;
	     rec = rec->next)
		;
	if (!rec || !tmm_block_is_free(rec) || rec->pub.offset > offset ||
	    end > rec->pub.offset + rec->pub.size)
		return -ENOMEM;
	rec_end = rec->pub.offset + rec->pub.size;
	/* Records first, so that failure changes nothing. */
	if (offset > rec->pub.offset && !(lower = take_record(pool)))
		return -ENOMEM;
	if ((end < rec_end && !(higher = take_record(pool))) ||
	    chunks_take(pool, offset, size, !pool->moving) < 0) {
		if (lower)
			recycle_record(pool, lower);
		if (higher)
			recycle_record(pool, higher);
		return -ENOMEM;
	}
	tmm_pool_unmark_free(pool, rec);
	if (lower) {
		lower->pub.offset = rec->pub.offset;
		lower->pub.size = offset - rec->pub.offset;
		lower->prev = rec->prev;
		lower->next = rec;
		if (rec->prev)
			rec->prev->next = lower;
		else
			pool->lowest = lower;
		rec->prev = lower;
		tmm_pool_mark_free(pool, lower);
	}
	if (higher) {
		higher->pub.offset = end;
		higher->pub.size = rec_end - end;
		higher->prev = rec;
		higher->next = rec->next;
		if (rec->next)
			rec->next->prev = higher;
		rec->next = higher;
		tmm_pool_mark_free(pool, higher);
	}
	rec->pub.offset = offset;
	rec->pub.size = size;
	rec->state = TMM_BLOCK_USED;
	pool->used_blocks++;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	*out = &rec->pub;
	return 0;
}

/*
 * Frees the front of a used block: what a shrinking input gives back row
 * by row while a split op runs (TSPLIT Eq. 5), so that the output placed
 * below it can grow into those rows with tmm_pool_extend.
 */
int tmm_pool_trim(struct tmm_pool *pool, struct tmm_pool_block *block,
		  uint64_t bytes)
{
	struct tmm_block_rec *rec, *lower, *freed = NULL;

	if (!pool || !block || bytes == 0 || bytes % TMM_POOL_ALIGN)
		return -EINVAL;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != TMM_BLOCK_USED ||
	    bytes >= rec->pub.size)
		return -EINVAL;
	lower = rec->prev;
	if (lower && tmm_block_is_free(lower)) {
		/* The free neighbour absorbs the front; its key changes. */
		tmm_pool_unmark_free(pool, lower);
		lower->pub.size += bytes;
		tmm_pool_mark_free(pool, lower);
	} else {
		freed = take_record(pool);
		if (!freed)
			return -ENOMEM;
		freed->pub.offset = rec->pub.offset;
		freed->pub.size = bytes;
		freed->prev = lower;
		freed->next = rec;
		if (lower)
			lower->next = freed;
		else
			pool->lowest = freed;
		rec->prev = freed;
		tmm_pool_mark_free(pool, freed);
	}
	/* The chunks below the one the block now starts in. */
	if (pool->map && rec->pub.offset / TMM_POOL_CHUNK <
				 (rec->pub.offset + bytes) / TMM_POOL_CHUNK)
		tmm_pool_map_give(pool->map, rec->pub.offset / TMM_POOL_CHUNK,
				  (rec->pub.offset + bytes) / TMM_POOL_CHUNK);
	rec->pub.offset += bytes;
	rec->pub.size -= bytes;
	pool->in_use -= bytes;
	return 0;
}

/* Grows a used block into the free block right above it. */
int tmm_pool_extend(struct tmm_pool *pool, struct tmm_pool_block *block,
		    uint64_t bytes)
{
	struct tmm_block_rec *rec, *higher;
	uint64_t size;

	if (!pool || !block || bytes == 0)
		return -EINVAL;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != TMM_BLOCK_USED)
		return -EINVAL;
	pool->map_failed = false;
	if (bytes > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	/* The limit binds growth as it binds allocation (gpu_share.c). */
	if (pool->in_use + size > pool->limit)
		return -ENOMEM;
	higher = rec->next;
	if (!higher || !tmm_block_is_free(higher) || higher->pub.size < size)
		return -ENOMEM;
	if (pool->map) {
		/* The chunks past the one the block now ends in. */
		uint64_t end = rec->pub.offset + rec->pub.size;
		uint64_t first = (end + TMM_POOL_CHUNK - 1) / TMM_POOL_CHUNK;
		uint64_t last = (end + size + TMM_POOL_CHUNK - 1) /
				TMM_POOL_CHUNK;

		if (first < last &&
		    chunks_take_span(pool, first, last, true) < 0)
			return -ENOMEM;
	}
	tmm_pool_unmark_free(pool, higher);
	if (higher->pub.size == size) {
		unlink_block(higher);
		recycle_record(pool, higher);
	} else {
		higher->pub.offset += size;
		higher->pub.size -= size;
		tmm_pool_mark_free(pool, higher);
	}
	rec->pub.size += size;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	return 0;
}

void tmm_pool_walk(const struct tmm_pool *pool,
		   void (*fn)(void *arg, const struct tmm_pool_block *block,
			      int used),
		   void *arg)
{
	for (const struct tmm_block_rec *rec = pool ? pool->lowest : NULL; rec;
	     rec = rec->next)
		fn(arg, &rec->pub, !tmm_block_is_free(rec));
}

int tmm_pool_owns(const struct tmm_pool *pool,
		  const struct tmm_pool_block *block)
{
	const struct tmm_block_rec *rec;

	if (!pool || !block)
		return 0;
	rec = block_of((struct tmm_pool_block *)block);
	return rec->owner == pool->tag && rec->state == TMM_BLOCK_USED;
}

/*
 * Returns 1 when a free block can hold `bytes` now, else 0 (also for 0
 * bytes or a NULL pool).  The host memory a split may need for one more
 * record is not counted: that alloc can still fail if the host runs out.
 */
int tmm_pool_fits(const struct tmm_pool *pool, uint64_t bytes)
{
	const struct tmm_block_rec *largest;

	if (!pool || bytes == 0 || bytes > pool->capacity)
		return 0;
	/* Past the limit, as tmm_pool_alloc sees it. */
	if (round_up_to_align(bytes) >
	    pool->limit - (pool->in_use < pool->limit ? pool->in_use
						      : pool->limit))
		return 0;
	largest = tmm_pool_find_largest(pool);
	return largest && largest->pub.size >= round_up_to_align(bytes);
}

void tmm_pool_set_limit(struct tmm_pool *pool, uint64_t limit)
{
	if (!pool)
		return;
	limit &= ~(uint64_t)(TMM_POOL_ALIGN - 1);
	pool->limit = limit < pool->capacity ? limit : pool->capacity;
	if (pool->map)
		tmm_pool_map_set_cap(pool->map, cap_chunks(pool->limit));
}

uint64_t tmm_pool_in_use(const struct tmm_pool *pool)
{
	return pool ? pool->in_use : 0;
}

void tmm_pool_reset_peak(struct tmm_pool *pool)
{
	if (!pool)
		return;
	pool->peak = pool->in_use;
	tmm_pool_map_reset_peak(pool->map);
}

/* Fills *st; all zero for a NULL pool.  O(log n) for largest_free. */

void tmm_pool_get_stats(const struct tmm_pool *pool,
			struct tmm_pool_stats *st)
{
	const struct tmm_block_rec *largest;
	uint64_t free_bytes;

	if (!st)
		return;
	*st = (struct tmm_pool_stats){ 0 };
	if (!pool)
		return;
	largest = tmm_pool_find_largest(pool);
	st->capacity = pool->capacity;
	st->limit = pool->limit;
	st->in_use = pool->in_use;
	st->peak = pool->peak;
	st->largest_free = largest ? largest->pub.size : 0;
	st->free_blocks = pool->free_blocks;
	st->used_blocks = pool->used_blocks;
	free_bytes = pool->capacity - pool->in_use;
	if (pool->map) {
		struct tmm_pool_map_stats ms;

		tmm_pool_map_get_stats(pool->map, &ms);
		st->mapped = ms.mapped * TMM_POOL_CHUNK;
		st->mapped_peak = ms.mapped_peak * TMM_POOL_CHUNK;
		st->mapped_cap = ms.cap * TMM_POOL_CHUNK;
		st->map_failed = pool->map_failed;
		/* The virtual range is not memory: what may be had is what
		 * the limit leaves. */
		free_bytes = pool->limit > pool->in_use
				     ? pool->limit - pool->in_use
				     : 0;
		if (st->largest_free > free_bytes)
			st->largest_free = free_bytes;
	}
	st->fragmentation = free_bytes ?
		1.0 - (double)st->largest_free / (double)free_bytes : 0.0;
}
