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
 * Kept blocks (tmm_uvm_arena_keep) are a list, oldest first, searched
 * newest first for an exact size, else for the best fit, else for the
 * largest smaller one that can grow in place: a training step makes its
 * tensors in the same sizes every step, and a model has a few hundred at
 * most.  Kept blocks that touch are merged as they are kept, so the list
 * stays as short as the holes between live tensors.
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

#include "lib/base/grow.h"
#include "lib/base/managed_page.h"
#include "lib/base/xalloc.h"
#include "pool.h"
#include "uvm_arena.h"

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

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return x > UINT64_MAX - (to - 1) ? 0 : (x + to - 1) / to * to;
}

int tmm_uvm_arena_create(struct tmm_uvm_arena **out, struct tmm_backend *be,
			 uint64_t budget)
{
	struct tmm_uvm_arena *a = tmm_calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->be = be;
	a->segment_min = round_up(budget > UINT64_MAX / 2 ? budget : 2 * budget,
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
	bytes = round_up(bytes, TMM_MANAGED_BLOCK);
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

static bool take_kept(struct tmm_uvm_arena *a, uint64_t want,
		      struct tmm_pool_block **block, void **ptr);

/* Counts `block` handed out. */
static void hand_out(struct tmm_uvm_arena *a, const struct tmm_pool_block *b)
{
	a->in_use += b->size;
	if (a->in_use > a->peak)
		a->peak = a->in_use;
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
	uint64_t want = round_up(bytes, TMM_MANAGED_PAGE);
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
	if (take_kept(a, want, block, ptr))
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
	hand_out(a, *block);
	return 0;
}

/* The segment that handed `block` out, or NULL. */
static struct segment *owner(const struct tmm_uvm_arena *a,
			     const struct tmm_pool_block *block)
{
	for (size_t i = 0; i < a->n; i++)
		if (tmm_pool_owns(a->seg[i].pool, block))
			return &a->seg[i];
	return NULL;
}

void *tmm_uvm_arena_block_ptr(const struct tmm_uvm_arena *a,
			      const struct tmm_pool_block *block)
{
	const struct segment *s = a && block ? owner(a, block) : NULL;

	return s ? s->base + block->offset : NULL;
}

void tmm_uvm_arena_free(struct tmm_uvm_arena *a, struct tmm_pool_block *block)
{
	struct segment *s;

	if (!a || !block)
		return;
	s = owner(a, block);
	if (!s)
		return;
	a->in_use -= block->size;
	tmm_pool_free(s->pool, block);
}

/* ---- kept blocks ------------------------------------------------------- */

/* Removes kept entry i from the list, keeping the others' order. */
static void drop_entry(struct tmm_uvm_arena *a, uint32_t i)
{
	memmove(&a->kept[i], &a->kept[i + 1],
		(a->n_kept - i - 1) * sizeof(*a->kept));
	a->n_kept--;
}

/* Entry i is no longer kept: its block is the caller's. */
static void unkeep(struct tmm_uvm_arena *a, uint32_t i)
{
	a->kept_bytes -= a->kept[i].block->size;
	drop_entry(a, i);
}

/* Drops the first `bytes` of kept entry i's pages and gives them back to
 * the pool (tmm_pool_trim; whole big pages).  Returns 0, or the pool's
 * error, where nothing changed. */
static int discard_head(struct tmm_uvm_arena *a, uint32_t i, uint64_t bytes,
			bool *failed)
{
	struct kept *k = &a->kept[i];
	struct segment *s = owner(a, k->block);

	if (!s || tmm_pool_trim(s->pool, k->block, bytes) < 0)
		return -ENOMEM;
	a->kept_bytes -= bytes;
	tmm_uvm_arena_note(a, k->ptr, bytes, false);
	if (a->be->ops->discard(a->be, k->ptr, bytes) < 0) {
		a->discards_failed++;
		if (failed)
			*failed = true;
	}
	a->kept_discards++;
	k->ptr += bytes;
	return 0;
}

/*
 * Kept blocks that touch in a segment are one: a tensor destroyed beside
 * another's kept range, as a step frees its activations, adds its pages
 * to that range, so that a larger tensor later finds them all in one
 * place instead of fresh ones (issue #19: BERT-base under auto at half its
 * peak, on the simulated H100, discarded 4.9 GB of pages a step and made
 * them afresh, where each size found no kept block of its own; 0.7 GB
 * with kept blocks merged, split and grown).  The newest entry (just kept) merges with an entry that
 * ends where it starts or starts where it ends, again until none does:
 * the higher block is freed and the lower grows over it
 * (tmm_pool_extend, which needs no host memory: the space right after
 * the lower block is then free and at least as large).  The merged
 * entry is the newest.
 */
static void coalesce(struct tmm_uvm_arena *a)
{
	uint32_t i = a->n_kept - 1;
	struct segment *s = owner(a, a->kept[i].block);

	for (uint32_t j = 0; s && j < a->n_kept; j++) {
		struct tmm_pool_block *bi = a->kept[i].block;
		struct tmm_pool_block *bj = a->kept[j].block;
		struct kept low;
		struct tmm_pool_block *high;
		uint64_t size;
		int rc;

		if (j == i || owner(a, bj) != s)
			continue;
		if (bj->offset + bj->size == bi->offset) {
			low = a->kept[j];
			high = bi;
		} else if (bi->offset + bi->size == bj->offset) {
			low = a->kept[i];
			high = bj;
		} else {
			continue;
		}
		size = high->size;
		tmm_pool_free(s->pool, high);
		rc = tmm_pool_extend(s->pool, low.block, size);
		assert(rc == 0);
		(void)rc;
		/* Both entries go; the merged one is the newest. */
		drop_entry(a, i > j ? i : j);
		drop_entry(a, i > j ? j : i);
		a->kept[a->n_kept++] = low;
		i = a->n_kept - 1;
		j = (uint32_t)-1; /* from the start again */
	}
}

/* An interval of a segment, in bytes from its base. */
struct span {
	uint64_t at, len;
};

/* What place_over_kept gathers walking one segment's pool: the runs of
 * free and kept space, each with its kept blocks, and the best window. */
struct placing {
	uint64_t want;
	const uint64_t *kept_at; /* the segment's kept offsets, sorted */
	uint32_t n_kept_at, next_kept;
	struct span run;	 /* the run so far */
	struct span *in_run;	 /* its kept blocks */
	uint32_t n_in_run;
	struct span best;	 /* the window chosen, len 0: none */
	uint64_t best_warm;
};

static uint64_t overlap(struct span x, struct span y)
{
	uint64_t lo = x.at > y.at ? x.at : y.at;
	uint64_t hi = x.at + x.len < y.at + y.len ? x.at + x.len
						  : y.at + y.len;

	return hi > lo ? hi - lo : 0;
}

/* The window of `want` bytes at `at`, moved inside the run, if it covers
 * more kept bytes than the best so far. */
static void try_window(struct placing *pl, uint64_t at)
{
	struct span w;
	uint64_t warm = 0;

	if (at + pl->want > pl->run.at + pl->run.len)
		at = pl->run.at + pl->run.len - pl->want;
	if (at < pl->run.at)
		at = pl->run.at;
	w = (struct span){ at, pl->want };
	for (uint32_t i = 0; i < pl->n_in_run; i++)
		warm += overlap(w, pl->in_run[i]);
	if (warm > pl->best_warm) {
		pl->best_warm = warm;
		pl->best = w;
	}
}

/* The run ends: its windows that start or end with one of its kept
 * blocks are tried (the best one does, or covers a whole run). */
static void end_run(struct placing *pl)
{
	if (pl->run.len >= pl->want)
		for (uint32_t i = 0; i < pl->n_in_run; i++) {
			try_window(pl, pl->in_run[i].at);
			if (pl->in_run[i].at + pl->in_run[i].len >= pl->want)
				try_window(pl, pl->in_run[i].at +
						       pl->in_run[i].len -
						       pl->want);
		}
	pl->run.len = 0;
	pl->n_in_run = 0;
}

static void walk_block(void *arg, const struct tmm_pool_block *b, int used)
{
	struct placing *pl = arg;
	bool kept = false;

	/* The pool walks in address order, as kept_at is sorted. */
	while (pl->next_kept < pl->n_kept_at &&
	       pl->kept_at[pl->next_kept] < b->offset)
		pl->next_kept++;
	if (used && pl->next_kept < pl->n_kept_at &&
	    pl->kept_at[pl->next_kept] == b->offset)
		kept = true;
	if (used && !kept) {
		end_run(pl);
		return;
	}
	if (!pl->run.len)
		pl->run.at = b->offset;
	pl->run.len += b->size;
	if (kept)
		pl->in_run[pl->n_in_run++] = (struct span){ b->offset,
							    b->size };
}

static int by_offset(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p < q ? -1 : p > q;
}

/*
 * Kept entry i loses its block: freed to its pool but for the parts of it
 * outside `w`, which stay kept (tmm_pool_alloc_at gives each a block of
 * its own) or, where the pool has no host record for that, die with a
 * discard.
 */
static void give_up_entry(struct tmm_uvm_arena *a, struct segment *s,
			  uint32_t i, struct span w,
			  struct span rest[2], unsigned *n_rest)
{
	struct tmm_pool_block *b = a->kept[i].block;
	struct span k = { b->offset, b->size };

	unkeep(a, i);
	tmm_pool_free(s->pool, b);
	if (k.at < w.at)
		rest[(*n_rest)++] = (struct span){ k.at, w.at - k.at };
	if (k.at + k.len > w.at + w.len)
		rest[(*n_rest)++] = (struct span){
			w.at + w.len, k.at + k.len - (w.at + w.len)
		};
}

/* The part `r` of a kept block, free in its pool now: kept again, or
 * discarded where no block can be had for it. */
static void keep_again(struct tmm_uvm_arena *a, struct segment *s,
		       struct span r)
{
	struct tmm_pool_block *b;

	if (tmm_pool_alloc_at(s->pool, r.at, r.len, &b) == 0) {
		if (tmm_grow((void **)&a->kept, &a->cap_kept,
			     a->n_kept + 1ull, sizeof(*a->kept))) {
			a->kept[a->n_kept++] = (struct kept){
				.block = b, .ptr = s->base + r.at
			};
			a->kept_bytes += r.len;
			return;
		}
		tmm_pool_free(s->pool, b);
	}
	tmm_uvm_arena_note(a, s->base + r.at, r.len, false);
	if (a->be->ops->discard(a->be, s->base + r.at, r.len) < 0)
		a->discards_failed++;
	a->kept_discards++;
}

/*
 * Where no kept block is as large as `want`: the window of `want` bytes
 * over free and kept space that covers the most kept pages, so that the
 * tensor finds those made (a kept block grown into the free space after
 * or before it, or several kept blocks with free space between them).
 * The kept blocks it covers are its own; what lies outside it of them
 * stays kept.  Into *block and *ptr; false when no window covers a kept
 * page, or on a failure, which changes nothing but may discard pages.
 */
static bool place_over_kept(struct tmm_uvm_arena *a, uint64_t want,
			    struct tmm_pool_block **block, void **ptr)
{
	struct placing best = { .best_warm = 0 };
	struct segment *best_s = NULL;
	uint64_t *at = tmm_calloc(a->n_kept ? a->n_kept : 1, sizeof(*at));
	struct span *in_run = tmm_calloc(a->n_kept ? a->n_kept : 1,
					 sizeof(*in_run));
	struct span rest[2 * 2];
	unsigned n_rest = 0;
	bool ok = false;

	for (size_t si = 0; at && in_run && si < a->n; si++) {
		struct segment *s = &a->seg[si];
		struct placing pl = { .want = want, .kept_at = at,
				      .in_run = in_run };

		for (uint32_t i = 0; i < a->n_kept; i++)
			if (owner(a, a->kept[i].block) == s)
				at[pl.n_kept_at++] = a->kept[i].block->offset;
		if (!pl.n_kept_at)
			continue;
		qsort(at, pl.n_kept_at, sizeof(*at), by_offset);
		tmm_pool_walk(s->pool, walk_block, &pl);
		end_run(&pl);
		if (pl.best_warm > best.best_warm) {
			best = pl;
			best_s = s;
		}
	}
	free(at);
	free(in_run);
	if (!best_s)
		return false;
	/* The window's kept blocks, at most one at each end cut. */
	for (uint32_t i = a->n_kept; i-- > 0;) {
		const struct tmm_pool_block *k = a->kept[i].block;

		if (owner(a, k) == best_s &&
		    overlap(best.best, (struct span){ k->offset, k->size }))
			give_up_entry(a, best_s, i, best.best, rest, &n_rest);
	}
	if (tmm_pool_alloc_at(best_s->pool, best.best.at, want, block) == 0) {
		*ptr = best_s->base + best.best.at;
		ok = true;
	} else {
		/* No host record to carve it: the covered pages die. */
		rest[n_rest++] = best.best;
	}
	for (unsigned r = 0; r < n_rest; r++)
		keep_again(a, best_s, rest[r]);
	return ok;
}

/*
 * A kept block for `want` bytes into *block and *ptr: one of exactly that
 * size, the most recently kept; else the smallest larger one, of which
 * the tensor takes the tail while the head stays kept with its pages
 * (tmm_pool_trim, then tmm_pool_alloc_at gives the head a block of its
 * own; where the pool has no host record for that, the head's pages are
 * discarded and it goes back to the pool); else a window over kept and
 * free space (place_over_kept).  False when none will do.
 */
static bool take_kept(struct tmm_uvm_arena *a, uint64_t want,
		      struct tmm_pool_block **block, void **ptr)
{
	uint32_t best = a->n_kept;
	struct tmm_pool_block *head_block;
	struct segment *s;
	struct kept k;
	uint64_t head;

	for (uint32_t i = a->n_kept; i-- > 0;) {
		uint64_t size = a->kept[i].block->size;

		if (size == want) {
			best = i;
			break;
		}
		if (size > want && (best == a->n_kept ||
				    size < a->kept[best].block->size))
			best = i;
	}
	if (best == a->n_kept) {
		if (!place_over_kept(a, want, block, ptr))
			return false;
	} else if (a->kept[best].block->size == want) {
		*block = a->kept[best].block;
		*ptr = a->kept[best].ptr;
		unkeep(a, best);
	} else {
		k = a->kept[best];
		head = k.block->size - want;
		s = owner(a, k.block);
		if (!s || tmm_pool_trim(s->pool, k.block, head) < 0)
			return false;
		*block = k.block;
		*ptr = k.ptr + head;
		if (tmm_pool_alloc_at(s->pool, (uint64_t)(k.ptr - s->base),
				      head, &head_block) == 0) {
			a->kept[best].block = head_block;
			a->kept_bytes -= want;
		} else {
			tmm_uvm_arena_note(a, k.ptr, head, false);
			if (a->be->ops->discard(a->be, k.ptr, head) < 0)
				a->discards_failed++;
			a->kept_discards++;
			a->kept_bytes -= k.block->size + head;
			drop_entry(a, best);
		}
	}
	hand_out(a, *block);
	a->kept_hits++;
	return true;
}

bool tmm_uvm_arena_keep(struct tmm_uvm_arena *a, struct tmm_pool_block *block)
{
	struct segment *s;

	if (!a || !block)
		return false;
	s = owner(a, block);
	if (!s)
		return false;
	if (!tmm_grow((void **)&a->kept, &a->cap_kept, a->n_kept + 1ull,
		      sizeof(*a->kept)))
		return false;
	a->kept[a->n_kept++] = (struct kept){ .block = block,
					      .ptr = s->base + block->offset };
	a->in_use -= block->size;
	a->kept_bytes += block->size;
	coalesce(a);
	return true;
}

uint64_t tmm_uvm_arena_trim(struct tmm_uvm_arena *a, uint64_t limit,
			    bool *failed)
{
	uint64_t gone = 0;

	if (!a)
		return 0;
	while (a->kept_bytes > limit) {
		uint64_t excess = round_up(a->kept_bytes - limit,
					   TMM_MANAGED_PAGE);
		struct kept k = a->kept[0];

		/* Only what passes the limit, where the oldest has more. */
		if (k.block->size > excess &&
		    discard_head(a, 0, excess, failed) == 0) {
			gone += excess;
			break;
		}
		unkeep(a, 0);
		tmm_uvm_arena_note(a, k.ptr, k.block->size, false);
		if (a->be->ops->discard(a->be, k.ptr, k.block->size) < 0) {
			a->discards_failed++;
			if (failed)
				*failed = true;
		}
		a->kept_discards++;
		gone += k.block->size;
		/* Back as handed out, then freed as any block. */
		a->in_use += k.block->size;
		tmm_uvm_arena_free(a, k.block);
	}
	return gone;
}

uint64_t tmm_uvm_arena_kept(const struct tmm_uvm_arena *a)
{
	return a ? a->kept_bytes : 0;
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

/*
 * The segment holding [ptr, ptr + bytes) and the range's big pages in
 * it, [*first, *last]; NULL when no segment holds it all or the segment
 * keeps no bitmap.
 */
static struct segment *pages_of(const struct tmm_uvm_arena *a,
				const void *ptr, uint64_t bytes,
				uint64_t *first, uint64_t *last)
{
	const char *p = ptr;

	if (!a || !p || !bytes)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		struct segment *s = &a->seg[i];
		uint64_t off;

		if (p < s->base || (uint64_t)(p - s->base) >= s->bytes)
			continue;
		off = (uint64_t)(p - s->base);
		if (!s->on_dev || bytes > s->bytes - off)
			return NULL;
		*first = off / TMM_MANAGED_PAGE;
		*last = (off + bytes - 1) / TMM_MANAGED_PAGE;
		return s;
	}
	return NULL;
}

void tmm_uvm_arena_note(struct tmm_uvm_arena *a, const void *ptr,
			uint64_t bytes, bool on_device)
{
	uint64_t first, last;
	struct segment *s = pages_of(a, ptr, bytes, &first, &last);

	if (!s)
		return;
	for (uint64_t b = first; b <= last; b++) {
		if (on_device)
			s->on_dev[b / 8] |= (uint8_t)(1u << (b % 8));
		else
			s->on_dev[b / 8] &= (uint8_t)~(1u << (b % 8));
	}
}

bool tmm_uvm_arena_on_device(const struct tmm_uvm_arena *a, const void *ptr,
			     uint64_t bytes)
{
	uint64_t first, last;
	const struct segment *s = pages_of(a, ptr, bytes, &first, &last);

	if (!s)
		return false;
	for (uint64_t b = first; b <= last; b++)
		if (!(s->on_dev[b / 8] & (1u << (b % 8))))
			return false;
	return true;
}
