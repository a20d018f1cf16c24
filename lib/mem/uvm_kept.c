/* SPDX-License-Identifier: MIT */
/*
 * uvm_kept.c — the managed arena's kept blocks (see uvm_kept.h; the
 * arena's inside is uvm_inside.h).
 *
 * Kept blocks are a list, oldest first, searched newest first for an
 * exact size, else for the best fit, else for the window over kept and
 * free space that covers the most kept pages: a training step makes its
 * tensors in the same sizes every step, and a model has a few hundred at
 * most.  Kept blocks that touch are merged as they are kept, so the list
 * stays as short as the holes between live tensors.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/grow.h"
#include "lib/base/managed_page.h"
#include "lib/base/xalloc.h"
#include "uvm_inside.h"
#include "uvm_kept.h"
#include "uvm_pages.h"

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
	struct segment *s = tmm_uvm_arena_owner(a, k->block);

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
 * with kept blocks merged, split and grown).  The newest entry (just
 * kept) merges with an entry that ends where it starts or starts where it
 * ends, again until none does:
 * the higher block is freed and the lower grows over it
 * (tmm_pool_extend, which needs no host memory: the space right after
 * the lower block is then free and at least as large).  The merged
 * entry is the newest.
 */
static void coalesce(struct tmm_uvm_arena *a)
{
	uint32_t i = a->n_kept - 1;
	struct segment *s = tmm_uvm_arena_owner(a, a->kept[i].block);

	for (uint32_t j = 0; s && j < a->n_kept; j++) {
		struct tmm_pool_block *bi = a->kept[i].block;
		struct tmm_pool_block *bj = a->kept[j].block;
		struct kept low;
		struct tmm_pool_block *high;
		uint64_t size;
		int rc;

		if (j == i || tmm_uvm_arena_owner(a, bj) != s)
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
			  uint32_t i, struct span w, struct span *rest,
			  unsigned *n_rest)
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
	/* At most a part of a kept block at each end of the window, and
	 * the window itself where it cannot be carved. */
	struct span rest[3];
	unsigned n_rest = 0;
	bool ok = false;

	for (size_t si = 0; at && in_run && si < a->n; si++) {
		struct segment *s = &a->seg[si];
		struct placing pl = { .want = want, .kept_at = at,
				      .in_run = in_run };

		for (uint32_t i = 0; i < a->n_kept; i++)
			if (tmm_uvm_arena_owner(a, a->kept[i].block) == s)
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

		if (tmm_uvm_arena_owner(a, k) == best_s &&
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
bool tmm_uvm_kept_take(struct tmm_uvm_arena *a, uint64_t want,
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
		s = tmm_uvm_arena_owner(a, k.block);
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
	tmm_uvm_arena_hand_out(a, *block);
	a->kept_hits++;
	return true;
}

bool tmm_uvm_arena_keep(struct tmm_uvm_arena *a, struct tmm_pool_block *block)
{
	struct segment *s;

	if (!a || !block)
		return false;
	s = tmm_uvm_arena_owner(a, block);
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
		uint64_t excess = tmm_uvm_round_up(a->kept_bytes - limit,
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
		/* To its pool: a kept block is not in in_use. */
		tmm_pool_free(tmm_uvm_arena_owner(a, k.block)->pool, k.block);
	}
	return gone;
}

uint64_t tmm_uvm_arena_kept(const struct tmm_uvm_arena *a)
{
	return a ? a->kept_bytes : 0;
}
