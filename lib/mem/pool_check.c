/* SPDX-License-Identifier: MIT */
/*
 * pool_check.c — the device pool's invariant checker, for the tests.
 *
 * tmm_pool_check() (pool.h) walks every record of a pool and trusts no
 * count and no pointer chain: the address list must cover the arena
 * exactly, every free block must be in its class's tree or pending list,
 * the trees must be AVL trees in (size, offset) order, and the counts and
 * bitmaps must agree with what the walk finds.  test_pool.c calls it
 * after every step of its random sequences.
 *
 * struct tmm_pool (pool_index.h) spans pool.c, pool_index.c and this
 * file, which only reads it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool.h"
#include "pool_index.h"
#include "pool_map.h"

/* An AVL tree of 2^64 nodes is under 93 levels high; deeper means a cycle. */
#define MAX_TREE_DEPTH 128

static const struct tmm_block_rec *tree_find(const struct tmm_block_rec *node,
					     const struct tmm_block_rec *key)
{
	int depth = 0;

	while (node && depth++ < MAX_TREE_DEPTH) {
		if (node == key)
			return node;
		node = tmm_pool_key_less(key, node) ? node->left : node->right;
	}
	return NULL;
}

/* Is a free block where its state says: in its class tree or list? */
static bool is_indexed(const struct tmm_pool *pool,
		       const struct tmm_block_rec *rec)
{
	uint32_t cls = tmm_pool_size_class(rec->pub.size);

	if (rec->state == TMM_BLOCK_FREE_SORTED)
		return tree_find(pool->classes[cls].tree, rec) == rec;
	/* A well-formed list (checked) that links to rec holds it. */
	return tmm_pool_is_exact_class(cls) &&
	       (rec->left ? rec->left->right == rec :
			    pool->classes[cls].pending == rec);
}

struct tree_walk {
	const struct tmm_pool *pool;
	uint32_t cls;
	const struct tmm_block_rec *last;	/* previous node in key order */
	uint64_t nodes;
};

/*
 * Checks the subtree at `node`, whose parent must be `parent`; returns its
 * height, or -1 when an invariant is broken.
 */
static int check_subtree(struct tree_walk *walk,
			 const struct tmm_block_rec *node,
			 const struct tmm_block_rec *parent, int depth)
{
	int hl, hr;

	if (!node)
		return 0;
	if (depth > MAX_TREE_DEPTH || node->parent != parent ||
	    node->owner != walk->pool->tag ||
	    node->state != TMM_BLOCK_FREE_SORTED ||
	    tmm_pool_size_class(node->pub.size) != walk->cls)
		return -1;
	hl = check_subtree(walk, node->left, node, depth + 1);
	if (hl < 0)
		return -1;
	if (walk->last && !tmm_pool_key_less(walk->last, node))
		return -1;
	walk->last = node;
	walk->nodes++;
	hr = check_subtree(walk, node->right, node, depth + 1);
	if (hr < 0 || hl - hr > 1 || hr - hl > 1)
		return -1;
	if (node->height != 1 + (hl > hr ? hl : hr))
		return -1;
	return node->height;
}

/* Counts a pending list of `cls`; returns -1 when it is malformed. */
static int check_pending(const struct tmm_pool *pool, uint32_t cls,
			 uint64_t *nodes)
{
	const struct tmm_block_rec *rec, *prev = NULL;

	for (rec = pool->classes[cls].pending; rec; rec = rec->right) {
		if (++*nodes > pool->records_total || rec->left != prev ||
		    rec->parent || rec->owner != pool->tag ||
		    rec->state != TMM_BLOCK_FREE_PENDING ||
		    tmm_pool_size_class(rec->pub.size) != cls)
			return -1;
		prev = rec;
	}
	return 0;
}

/*
 * Every class tree is a valid AVL tree of its own free blocks, every
 * pending list a well-formed list of them, and the bitmaps say which
 * classes are not empty.
 */
static int check_index(const struct tmm_pool *pool, uint64_t *nodes)
{
	uint32_t cls, word;

	*nodes = 0;
	for (cls = 0; cls < pool->class_count; cls++) {
		const struct tmm_size_class *class = &pool->classes[cls];
		struct tree_walk walk = { .pool = pool, .cls = cls };

		if (!class->tree && !class->pending) {
			if (tmm_pool_class_in_use(pool, cls))
				return -1;
			continue;
		}
		/* Only exact classes may hold blocks unsorted. */
		if (!tmm_pool_class_in_use(pool, cls) ||
		    (class->pending && !tmm_pool_is_exact_class(cls)) ||
		    check_pending(pool, cls, nodes) < 0 ||
		    check_subtree(&walk, class->tree, NULL, 0) < 0)
			return -1;
		*nodes += walk.nodes;
	}
	/* No stray bits past the last class; summary bits match words. */
	if (pool->class_count % 64 &&
	    pool->class_bits[pool->word_count - 1] >> (pool->class_count % 64))
		return -1;
	for (word = 0; word < pool->group_count * 64; word++) {
		bool summary = pool->word_bits[word / 64] >> (word % 64) & 1;
		bool any = word < pool->word_count && pool->class_bits[word];

		if (summary != any)
			return -1;
	}
	return 0;
}

/* Returns 0, -EINVAL for a NULL pool, -EFAULT when an invariant is broken. */
/*
 * pool=chunks: each chunk's count of users is the number of allocated
 * blocks that overlap it, every used chunk is mapped, and the map's
 * totals agree.  Counted in a scratch array; without host memory for it
 * the check is skipped.
 */
static int check_chunks(const struct tmm_pool *pool)
{
	struct tmm_pool_map_stats ms;
	uint64_t mapped = 0, cached = 0;
	uint32_t *users;
	int rc = 0;

	if (!pool->map)
		return 0;
	tmm_pool_map_get_stats(pool->map, &ms);
	if (ms.chunks * TMM_POOL_CHUNK != pool->capacity)
		return -EFAULT;
	users = calloc(ms.chunks, sizeof(*users));
	if (!users)
		return 0;
	for (const struct tmm_block_rec *rec = pool->lowest; rec;
	     rec = rec->next) {
		uint64_t first, end;

		if (tmm_block_is_free(rec))
			continue;
		tmm_pool_map_span(rec->pub.offset, rec->pub.size, &first, &end);
		for (uint64_t k = first; k < end; k++)
			users[k]++;
	}
	for (uint64_t k = 0; k < ms.chunks && rc == 0; k++) {
		bool is_mapped = tmm_pool_map_is_mapped(pool->map, k);

		if (users[k] != tmm_pool_map_users(pool->map, k) ||
		    (users[k] && !is_mapped))
			rc = -EFAULT;
		mapped += is_mapped;
		cached += is_mapped && !users[k];
	}
	if (rc == 0 && (mapped != ms.mapped || cached != ms.cached ||
			ms.mapped_peak < ms.mapped))
		rc = -EFAULT;
	free(users);
	return rc;
}

int tmm_pool_check(const struct tmm_pool *pool)
{
	const struct tmm_block_rec *rec, *prev = NULL;
	const struct tmm_record_slab *slab;
	uint64_t expect_offset = 0, used_bytes = 0, indexed;
	uint64_t free_count = 0, used_count = 0, largest = 0;
	size_t steps = 0, slab_records = 0, spare = 0;

	if (!pool)
		return -EINVAL;
	if (pool->capacity == 0 || pool->capacity % TMM_POOL_ALIGN ||
	    pool->class_count != tmm_pool_size_class(pool->capacity) + 1)
		return -EFAULT;

	/* Every slab record is handed out already, or still fresh. */
	for (slab = pool->slabs; slab; slab = slab->next) {
		slab_records += slab->count;
		if (slab_records > SIZE_MAX / 2)
			return -EFAULT;
	}
	if (!pool->slabs || pool->fresh < pool->slabs->records ||
	    pool->fresh > pool->fresh_end ||
	    pool->fresh_end != pool->slabs->records + pool->slabs->count ||
	    slab_records != pool->records_total +
				    (size_t)(pool->fresh_end - pool->fresh))
		return -EFAULT;

	if (check_index(pool, &indexed) < 0)
		return -EFAULT;

	/* The address list: contiguous, aligned, covering the arena. */
	for (rec = pool->lowest; rec; prev = rec, rec = rec->next) {
		if (++steps > pool->records_total)
			return -EFAULT;
		if (rec->owner != pool->tag || rec->prev != prev ||
		    rec->pub.offset != expect_offset || rec->pub.size == 0 ||
		    rec->pub.size % TMM_POOL_ALIGN ||
		    rec->pub.size > pool->capacity - expect_offset)
			return -EFAULT;
		if (tmm_block_is_free(rec)) {
			if (prev && tmm_block_is_free(prev))
				return -EFAULT;
			if (!is_indexed(pool, rec))
				return -EFAULT;
			free_count++;
			if (rec->pub.size > largest)
				largest = rec->pub.size;
		} else if (rec->state == TMM_BLOCK_USED) {
			used_count++;
			used_bytes += rec->pub.size;
		} else {
			return -EFAULT;
		}
		expect_offset += rec->pub.size;
	}
	if (expect_offset != pool->capacity)
		return -EFAULT;

	/*
	 * Every list free block is in its class's tree or list, and those
	 * hold as many distinct free records as the address list has: the
	 * two sets are equal.
	 */
	if (indexed != free_count || free_count != pool->free_blocks ||
	    used_count != pool->used_blocks || used_bytes != pool->in_use ||
	    pool->peak < pool->in_use || pool->peak > pool->capacity)
		return -EFAULT;
	rec = tmm_pool_find_largest(pool);
	if ((rec ? rec->pub.size : 0) != largest)
		return -EFAULT;

	/* Every record is either in the arena list or spare. */
	for (rec = pool->spare_records; rec; rec = rec->next) {
		if (++spare > pool->records_total ||
		    rec->state != TMM_BLOCK_RECYCLED || rec->owner != pool->tag)
			return -EFAULT;
	}
	if (steps + spare != pool->records_total)
		return -EFAULT;
	return check_chunks(pool);
}
