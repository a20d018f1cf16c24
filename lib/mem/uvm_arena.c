/* SPDX-License-Identifier: MIT */
/*
 * uvm_arena.c — managed segments sub-allocated by the pool (see
 * uvm_arena.h).
 *
 * Segment size: the larger of twice the budget, the bytes of all the
 * segments so far, and the request, rounded up to a whole 2 MiB VA block
 * (TMM_MANAGED_BLOCK).  A run under a budget keeps more than the budget
 * alive (that is why it runs under one), commonly two to four times it,
 * so twice the budget makes one segment enough for a light
 * oversubscription; each further segment at least doubles the arena, so
 * a footprint of F takes O(log F) managed allocations in all, and the
 * first step makes a handful however many tensors it creates.  Address
 * space is all a large segment costs: managed pages take memory only once
 * touched, on the device or on the host, and a phantom simulated segment
 * takes none at all.  Whole VA blocks keep the last block of a segment
 * from being shared with another allocation.
 *
 * Blocks are found by trying the segments oldest first (best fit inside
 * each): there are few, and the oldest are the ones whose pages the
 * previous steps populated.  A block's segment is the one whose pool owns
 * it (tmm_pool_owns).
 *
 * An allocation tries the kept blocks first (uvm_kept.c); the arena's
 * inside, which the three files share, is uvm_inside.h.
 *
 * Alignment: every block size is a multiple of TMM_MANAGED_PAGE and so is
 * every segment, and the pool carves a block from the bottom or the top
 * of a free hole and merges holes at block edges, so every offset stays a
 * multiple of the big page too.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/managed_page.h"
#include "lib/base/xalloc.h"
#include "pool.h"
#include "uvm_arena.h"
#include "uvm_inside.h"

int tmm_uvm_arena_create(struct tmm_uvm_arena **out, struct tmm_backend *be,
			 uint64_t budget)
{
	struct tmm_uvm_arena *a = tmm_calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->be = be;
	a->segment_min = tmm_uvm_round_up(
		budget > UINT64_MAX / 2 ? budget : 2 * budget,
		TMM_MANAGED_BLOCK);
	if (!a->segment_min)
		a->segment_min = TMM_MANAGED_BLOCK;
	*out = a;
	return 0;
}

void tmm_uvm_arena_destroy(struct tmm_uvm_arena *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		tmm_pool_destroy(a->seg[i].pool);
		a->be->ops->managed_free(a->be, a->seg[i].base,
					 a->seg[i].bytes);
		free(a->seg[i].on_dev);
	}
	free(a->seg);
	free(a->kept);
	free(a);
}

uint64_t tmm_uvm_arena_release_empty(struct tmm_uvm_arena *a)
{
	uint64_t freed = 0;
	size_t kept = 0;

	if (!a)
		return 0;
	tmm_uvm_arena_trim(a, 0, NULL);
	for (size_t i = 0; i < a->n; i++) {
		struct segment *s = &a->seg[i];

		if (tmm_pool_in_use(s->pool)) {
			a->seg[kept++] = *s;
			continue;
		}
		tmm_pool_destroy(s->pool);
		a->be->ops->managed_free(a->be, s->base, s->bytes);
		free(s->on_dev);
		a->capacity -= s->bytes;
		freed += s->bytes;
	}
	a->n = kept;
	return freed;
}

/* Adds a segment that can hold `want` bytes (whole big pages). */
static int add_segment(struct tmm_uvm_arena *a, uint64_t want, char *why,
		       size_t why_len)
{
	uint64_t bytes = a->segment_min;
	struct segment s;
	void *base;
	int rc;

	if (bytes < a->capacity)
		bytes = a->capacity;
	if (bytes < want)
		bytes = want;
	bytes = tmm_uvm_round_up(bytes, TMM_MANAGED_BLOCK);
	if (!bytes || bytes > SIZE_MAX) {
		snprintf(why, why_len, "a %llu-byte managed segment is more "
			 "than this machine can address",
			 (unsigned long long)want);
		return -ENOMEM;
	}
	/* Room for its record first: nothing to undo on the backend. */
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 4;
		void *p = tmm_realloc(a->seg, cap * sizeof(*a->seg));

		if (!p) {
			snprintf(why, why_len, "out of host memory recording "
				 "a managed segment");
			return -ENOMEM;
		}
		a->seg = p;
		a->cap = cap;
	}
	rc = a->be->ops->managed_alloc(a->be, (size_t)bytes, &base);
	if (rc < 0) {
		snprintf(why, why_len, "adding a %llu-byte segment to the "
			 "managed arena (segments are twice the budget, "
			 "TENSORMM_BUDGET, or more): %s",
			 (unsigned long long)bytes, a->be->error);
		return rc;
	}
	s = (struct segment){ .base = base, .bytes = bytes };
	if (bytes / TMM_MANAGED_PAGE <= ON_DEV_MAX_BITS)
		s.on_dev = tmm_calloc(1, (size_t)(bytes / TMM_MANAGED_PAGE +
						  7) / 8);
	rc = tmm_pool_create(&s.pool, bytes);
	if (rc < 0) {
		a->be->ops->managed_free(a->be, base, (size_t)bytes);
		free(s.on_dev);
		snprintf(why, why_len, "out of host memory for the pool of "
			 "a managed segment");
		return rc;
	}
	a->seg[a->n++] = s;
	a->capacity += bytes;
	return 0;
}

/* A free block of `want` bytes from the first segment that has one, into
 * *block; returns that segment's index, or a->n (with *rc) if none. */
static size_t pool_alloc(struct tmm_uvm_arena *a, uint64_t want,
			 struct tmm_pool_block **block, int *rc)
{
	size_t i;

	*rc = -ENOMEM;
	for (i = 0; i < a->n; i++) {
		*rc = tmm_pool_alloc(a->seg[i].pool, want, block);
		if (*rc == 0 || *rc != -ENOMEM)
			break;
	}
	return i;
}

int tmm_uvm_arena_alloc(struct tmm_uvm_arena *a, uint64_t bytes,
			struct tmm_pool_block **block, void **ptr, char *why,
			size_t why_len)
{
	uint64_t want = tmm_uvm_round_up(bytes, TMM_MANAGED_PAGE);
	size_t i;
	int rc = -ENOMEM;

	*block = NULL;
	*ptr = NULL;
	if (!bytes) {
		snprintf(why, why_len, "0 bytes of managed memory asked for");
		return -EINVAL;
	}
	if (!want) {
		snprintf(why, why_len, "%llu bytes cannot be rounded up to "
			 "whole managed pages", (unsigned long long)bytes);
		return -ENOMEM;
	}
	if (tmm_uvm_kept_take(a, want, block, ptr))
		return 0;
	i = pool_alloc(a, want, block, &rc);
	if (i == a->n && a->n_kept) {
		/* Kept blocks take room a new segment would add. */
		tmm_uvm_arena_trim(a, 0, NULL);
		i = pool_alloc(a, want, block, &rc);
	}
	if (i == a->n) {
		rc = add_segment(a, want, why, why_len);
		if (rc < 0)
			return rc;
		rc = tmm_pool_alloc(a->seg[i].pool, want, block);
	}
	if (rc < 0) {
		/* The pool had no host record for a split. */
		snprintf(why, why_len, "out of host memory in the pool of a "
			 "managed segment");
		*block = NULL;
		return rc;
	}
	assert((*block)->offset % TMM_MANAGED_PAGE == 0);
	*ptr = a->seg[i].base + (*block)->offset;
	tmm_uvm_arena_hand_out(a, *block);
	return 0;
}

void *tmm_uvm_arena_block_ptr(const struct tmm_uvm_arena *a,
			      const struct tmm_pool_block *block)
{
	const struct segment *s =
		a && block ? tmm_uvm_arena_owner(a, block) : NULL;

	return s ? s->base + block->offset : NULL;
}

void tmm_uvm_arena_free(struct tmm_uvm_arena *a, struct tmm_pool_block *block)
{
	struct segment *s;

	if (!a || !block)
		return;
	s = tmm_uvm_arena_owner(a, block);
	if (!s)
		return;
	a->in_use -= block->size;
	tmm_pool_free(s->pool, block);
}

uint64_t tmm_uvm_arena_peak(const struct tmm_uvm_arena *a)
{
	return a ? a->peak : 0;
}

void tmm_uvm_arena_get_stats(const struct tmm_uvm_arena *a,
			     struct tmm_uvm_arena_stats *st)
{
	*st = (struct tmm_uvm_arena_stats){ 0 };
	if (!a)
		return;
	st->segments = a->n;
	st->capacity = a->capacity;
	st->in_use = a->in_use;
	st->peak = a->peak;
	st->kept = a->kept_bytes;
	st->kept_hits = a->kept_hits;
	st->kept_discards = a->kept_discards;
	st->discards_failed = a->discards_failed;
}
