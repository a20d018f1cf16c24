/* SPDX-License-Identifier: MIT */
/*
 * uvm_window.c — a window of the managed arena over kept pages and the
 * live blocks in their way (see uvm_window.h; the arena's inside is
 * uvm_inside.h).
 *
 * The search walks each segment's blocks in address order, as kept,
 * free, movable or fixed, and tries every window of the size that starts
 * or ends at a block's edge inside a run of blocks with no fixed one: a
 * window cut elsewhere covers no more kept pages than one of those and
 * moves no fewer blocks.  A segment has a few hundred blocks, and the
 * window is looked for only where no kept block is large enough, a few
 * times a step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/grow.h"
#include "uvm_inside.h"
#include "uvm_pages.h"
#include "uvm_window.h"

enum blk_kind { BLK_FREE, BLK_KEPT, BLK_MOVABLE, BLK_FIXED };

struct blk {
	uint64_t at, len;
	enum blk_kind kind;
};

/* A segment's blocks, as the walk classifies them. */
struct walk {
	const struct segment *s;
	const uint64_t *kept_at; /* its kept blocks' offsets, sorted */
	size_t n_kept_at, next_kept;
	tmm_uvm_movable_fn movable;
	void *arg;
	struct blk *b;
	uint32_t n, cap;
	bool nomem;
};

static void collect(void *arg, const struct tmm_pool_block *b, int used)
{
	struct walk *w = arg;
	enum blk_kind kind = BLK_FREE;

	if (w->nomem)
		return;
	if (used) {
		while (w->next_kept < w->n_kept_at &&
		       w->kept_at[w->next_kept] < b->offset)
			w->next_kept++;
		if (w->next_kept < w->n_kept_at &&
		    w->kept_at[w->next_kept] == b->offset)
			kind = BLK_KEPT;
		else
			kind = w->movable(w->arg, w->s->base + b->offset)
				       ? BLK_MOVABLE
				       : BLK_FIXED;
	}
	if (!tmm_grow((void **)&w->b, &w->cap, w->n + 1ull, sizeof(*w->b))) {
		w->nomem = true;
		return;
	}
	w->b[w->n++] = (struct blk){ b->offset, b->size, kind };
}

static int by_offset(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p < q ? -1 : p > q;
}

uint64_t tmm_uvm_arena_kept_largest(const struct tmm_uvm_arena *a)
{
	uint64_t largest = 0;

	for (uint32_t i = 0; a && i < a->n_kept; i++)
		if (a->kept[i].block->size > largest)
			largest = a->kept[i].block->size;
	return largest;
}

/* What a window makes afresh (its free bytes), finds kept, and moves
 * (the whole of each live block it cuts). */
struct cost {
	uint64_t cold, warm, moving;
};

static uint64_t overlap(uint64_t at, uint64_t want, const struct blk *b)
{
	uint64_t lo = b->at > at ? b->at : at;
	uint64_t hi = b->at + b->len < at + want ? b->at + b->len : at + want;

	return hi > lo ? hi - lo : 0;
}

/* The cost of the window at [at, at + want) whose blocks are from `i`
 * on, up or down (step +1 or -1); false where a fixed block or the
 * segment's edge cuts it. */
static bool cost_of(const struct walk *w, size_t i, int step, uint64_t at,
		    uint64_t want, struct cost *c)
{
	*c = (struct cost){ 0, 0, 0 };
	for (size_t j = i; j < w->n; j += (size_t)step) {
		const struct blk *b = &w->b[j];
		uint64_t in = overlap(at, want, b);

		if (!in)
			return step > 0 ? b->at >= at + want : b->at < at;
		if (b->kind == BLK_FIXED)
			return false;
		if (b->kind == BLK_FREE)
			c->cold += in;
		else if (b->kind == BLK_KEPT)
			c->warm += in;
		else
			c->moving += b->len; /* it moves whole */
		if (step < 0 && j == 0)
			return b->at <= at;
	}
	return step > 0 && w->n && w->b[w->n - 1].at + w->b[w->n - 1].len >=
					   at + want;
}

/* A window worth a closer look: its segment, where it starts, what it
 * covers, and its cost with every moved byte finding a kept block (a
 * bound: the kept blocks may be too small). */
struct cand {
	size_t seg;
	uint64_t at, want;
	struct cost c;
	double bound;
};

struct cands {
	struct cand *c;
	uint32_t n, cap;
	bool nomem;
	double no_move; /* the least cost of a window that moves nothing */
};

/* The moved bytes that no kept block outside the window can take, by
 * bytes: their destinations' pages are made afresh instead. */
static uint64_t dest_cold_bound(uint64_t kept, const struct cost *c)
{
	uint64_t outside = kept > c->warm ? kept - c->warm : 0;

	return c->moving > outside ? c->moving - outside : 0;
}

static void try_windows(const struct walk *w, size_t seg, uint64_t want,
			double move_cost, uint64_t kept, struct cands *cs)
{
	for (size_t i = 0; i < w->n && !cs->nomem; i++) {
		const struct blk *b = &w->b[i];
		struct cost c;

		if (b->kind == BLK_FIXED)
			continue;
		for (int end = 0; end < 2; end++) {
			uint64_t at = end ? b->at + b->len - want : b->at;
			double bound;

			if (end && b->at + b->len < want)
				continue;
			if (!cost_of(w, i, end ? -1 : 1, at, want, &c))
				continue;
			if (!c.moving) {
				if ((double)c.cold < cs->no_move)
					cs->no_move = (double)c.cold;
				continue;
			}
			bound = (double)c.cold + move_cost * (double)c.moving +
				(double)dest_cold_bound(kept, &c);
			if (!tmm_grow((void **)&cs->c, &cs->cap, cs->n + 1ull,
				      sizeof(*cs->c))) {
				cs->nomem = true;
				return;
			}
			cs->c[cs->n++] = (struct cand){ seg, at, want, c, bound };
		}
	}
}

static int by_bound(const void *x, const void *y)
{
	double p = ((const struct cand *)x)->bound;
	double q = ((const struct cand *)y)->bound;

	return p < q ? -1 : p > q;
}

static int by_size_down(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p > q ? -1 : p < q;
}

/* Walks segment `seg` of a into *w (w->b grown), its kept offsets from
 * `at` (room for a->n_kept).  False where host memory ran out. */
static bool walk_segment(struct tmm_uvm_arena *a, size_t seg, uint64_t *at,
			 tmm_uvm_movable_fn movable, void *arg,
			 struct walk *w)
{
	const struct segment *s = &a->seg[seg];

	w->s = s;
	w->kept_at = at;
	w->n_kept_at = 0;
	w->next_kept = 0;
	w->movable = movable;
	w->arg = arg;
	w->n = 0;
	for (uint32_t k = 0; k < a->n_kept; k++)
		if (tmm_uvm_arena_owner(a, a->kept[k].block) == s)
			at[w->n_kept_at++] = a->kept[k].block->offset;
	qsort(at, w->n_kept_at, sizeof(*at), by_offset);
	tmm_pool_walk(s->pool, collect, w);
	return !w->nomem;
}

/*
 * The cost of window x of segment walk w, its moved blocks placed as the
 * arena would place them: the largest first, each in the smallest kept
 * block outside x that holds it (whose rest stays kept, sizes[] shrinks
 * in place); a block no kept one holds has its pages made.  sizes[]
 * and moved[]: room for the kept blocks' sizes (0 for those in x) and
 * for x's moved blocks' sizes.
 */
static double exact_cost(const struct tmm_uvm_arena *a, const struct walk *w,
			 const struct cand *x, double move_cost,
			 uint64_t *sizes, uint64_t *moved)
{
	const struct segment *s = &a->seg[x->seg];
	uint32_t n = 0;
	double cost = (double)x->c.cold + move_cost * (double)x->c.moving;

	for (uint32_t k = 0; k < a->n_kept; k++) {
		const struct tmm_pool_block *kb = a->kept[k].block;
		struct blk kx = { kb->offset, kb->size, BLK_KEPT };

		sizes[k] = tmm_uvm_arena_owner(a, kb) == s &&
					   overlap(x->at, x->want, &kx)
				   ? 0
				   : kb->size;
	}
	for (uint32_t i = 0; i < w->n; i++)
		if (w->b[i].kind == BLK_MOVABLE &&
		    overlap(x->at, x->want, &w->b[i]))
			moved[n++] = w->b[i].len;
	qsort(moved, n, sizeof(*moved), by_size_down);
	for (uint32_t m = 0; m < n; m++) {
		uint32_t fit = a->n_kept;

		for (uint32_t k = 0; k < a->n_kept; k++)
			if (sizes[k] >= moved[m] &&
			    (fit == a->n_kept || sizes[k] < sizes[fit]))
				fit = k;
		if (fit == a->n_kept)
			cost += (double)moved[m];
		else
			sizes[fit] -= moved[m];
	}
	return cost;
}

int tmm_uvm_window_find(struct tmm_uvm_arena *a, uint64_t want,
			double move_cost, tmm_uvm_movable_fn movable,
			void *arg, struct tmm_uvm_window *out)
{
	struct walk w = { 0 };
	struct cands cs = { .no_move = (double)want };
	uint64_t *at = NULL, *sizes = NULL, *moved = NULL;
	struct cand best = { 0 };
	double best_cost = 0;
	bool found = false;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!a || !want || !a->n_kept)
		return 0;
	at = malloc(sizeof(*at) * a->n_kept);
	sizes = malloc(sizeof(*sizes) * a->n_kept);
	if (!at || !sizes)
		goto out;
	for (size_t seg = 0; seg < a->n; seg++) {
		if (!walk_segment(a, seg, at, movable, arg, &w))
			goto out;
		cs.n = 0;
		try_windows(&w, seg, want, move_cost, a->kept_bytes, &cs);
		free(moved);
		moved = malloc(sizeof(*moved) * (w.n ? w.n : 1));
		if (cs.nomem || !moved)
			goto out;
		/* Cheapest bound first; none past the best exact cost. */
		if (cs.n)
			qsort(cs.c, cs.n, sizeof(*cs.c), by_bound);
		for (uint32_t k = 0; k < cs.n; k++) {
			double cost;

			if (found && cs.c[k].bound >= best_cost)
				break;
			cost = exact_cost(a, &w, &cs.c[k], move_cost, sizes,
					  moved);
			if (!found || cost < best_cost) {
				found = true;
				best = cs.c[k];
				best_cost = cost;
			}
		}
	}
	rc = 0;
	/* Worth it where it makes a quarter of the tensor's pages fewer
	 * than the arena's own window over kept and free space would. */
	if (!found || best_cost > cs.no_move - (double)want / 4)
		goto out;
	rc = -ENOMEM;
	/* The chosen window's live blocks, for the caller to move. */
	if (!walk_segment(a, best.seg, at, movable, arg, &w))
		goto out;
	out->moves = calloc(w.n ? w.n : 1, sizeof(*out->moves));
	if (!out->moves)
		goto out;
	for (size_t i = 0; i < w.n; i++)
		if (w.b[i].kind == BLK_MOVABLE &&
		    overlap(best.at, want, &w.b[i]))
			out->moves[out->n_moves++] =
				(struct tmm_uvm_window_move){
					a->seg[best.seg].base + w.b[i].at,
					w.b[i].len
				};
	out->seg = best.seg;
	out->at = best.at;
	out->want = want;
	out->cold = best.c.cold;
	out->warm = best.c.warm;
	out->moving = best.c.moving;
	rc = 1;
out:
	free(at);
	free(sizes);
	free(moved);
	free(cs.c);
	free(w.b);
	return rc;
}

static int held_add(struct tmm_uvm_window *w, struct tmm_pool_block *b,
		    bool populated)
{
	if (!tmm_grow((void **)&w->held, &w->cap_held, w->n_held + 1ull,
		      sizeof(*w->held)))
		return -ENOMEM;
	w->held[w->n_held++] = (struct tmm_uvm_window_held){ b, populated };
	return 0;
}

/* Kept entry i's block leaves the list: held by the window now. */
static void unkeep_entry(struct tmm_uvm_arena *a, uint32_t i)
{
	a->kept_bytes -= a->kept[i].block->size;
	memmove(&a->kept[i], &a->kept[i + 1],
		(a->n_kept - i - 1) * sizeof(*a->kept));
	a->n_kept--;
}

/* `b`, allocated in segment s and not handed out, kept (populated);
 * discarded and freed where the list cannot grow. */
static void keep_block(struct tmm_uvm_arena *a, struct segment *s,
		       struct tmm_pool_block *b)
{
	if (tmm_grow((void **)&a->kept, &a->cap_kept, a->n_kept + 1ull,
		     sizeof(*a->kept))) {
		a->kept[a->n_kept++] = (struct kept){ b, s->base + b->offset };
		a->kept_bytes += b->size;
		return;
	}
	tmm_uvm_arena_note(a, s->base + b->offset, b->size, false);
	if (a->be->ops->discard(a->be, s->base + b->offset, b->size) < 0)
		a->discards_failed++;
	a->kept_discards++;
	tmm_pool_free(s->pool, b);
}

/* What hold() gathers: the window's kept and free blocks. */
struct gather {
	uint64_t at, want;
	struct blk *b;
	uint32_t n, cap;
	bool nomem;
};

static void gather_block(void *arg, const struct tmm_pool_block *b, int used)
{
	struct gather *g = arg;
	struct blk x = { b->offset, b->size, used ? BLK_KEPT : BLK_FREE };

	if (g->nomem || !overlap(g->at, g->want, &x))
		return;
	if (!tmm_grow((void **)&g->b, &g->cap, g->n + 1ull, sizeof(*g->b))) {
		g->nomem = true;
		return;
	}
	g->b[g->n++] = x;
}

int tmm_uvm_window_hold(struct tmm_uvm_arena *a, struct tmm_uvm_window *w)
{
	struct segment *s = &a->seg[w->seg];
	struct gather g = { .at = w->at, .want = w->want };
	int rc = 0;

	tmm_pool_walk(s->pool, gather_block, &g);
	if (g.nomem) {
		free(g.b);
		return -ENOMEM;
	}
	/* Room first, so that nothing below fails half way. */
	if (!tmm_grow((void **)&w->held, &w->cap_held,
		      (uint64_t)g.n + w->n_moves, sizeof(*w->held))) {
		free(g.b);
		return -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < g.n; i++) {
		struct tmm_pool_block *b = NULL;

		if (g.b[i].kind == BLK_FREE) {
			rc = tmm_pool_alloc_at(s->pool, g.b[i].at, g.b[i].len,
					       &b);
			if (rc == 0)
				rc = held_add(w, b, false);
			continue;
		}
		/* A used block: kept, or a live one the caller moves. */
		for (uint32_t k = 0; k < a->n_kept; k++)
			if (a->kept[k].block->offset == g.b[i].at &&
			    tmm_uvm_arena_owner(a, a->kept[k].block) == s) {
				b = a->kept[k].block;
				unkeep_entry(a, k);
				rc = held_add(w, b, true);
				break;
			}
	}
	free(g.b);
	if (rc < 0)
		tmm_uvm_window_release(a, w);
	return rc;
}

int tmm_uvm_window_vacated(struct tmm_uvm_arena *a, struct tmm_uvm_window *w,
			   struct tmm_pool_block *block)
{
	int rc = held_add(w, block, true);

	if (rc == 0)
		a->in_use -= block->size;
	return rc;
}

static void free_lists(struct tmm_uvm_window *w)
{
	free(w->held);
	free(w->moves);
	w->held = NULL;
	w->moves = NULL;
	w->n_held = w->cap_held = w->n_moves = 0;
}

void tmm_uvm_window_release(struct tmm_uvm_arena *a, struct tmm_uvm_window *w)
{
	struct segment *s = w->n_held ? &a->seg[w->seg] : NULL;

	for (uint32_t i = 0; i < w->n_held; i++) {
		if (w->held[i].populated)
			keep_block(a, s, w->held[i].block);
		else
			tmm_pool_free(s->pool, w->held[i].block);
	}
	free_lists(w);
}

int tmm_uvm_window_take(struct tmm_uvm_arena *a, struct tmm_uvm_window *w,
			struct tmm_pool_block **block, void **ptr)
{
	struct segment *s = &a->seg[w->seg];
	uint64_t lo = w->at, hi = w->at + w->want;
	bool lo_warm = false, hi_warm = false;
	struct tmm_pool_block *rest;
	int rc;

	/* The held blocks cover the window; one at each end may pass it. */
	for (uint32_t i = 0; i < w->n_held; i++) {
		const struct tmm_pool_block *b = w->held[i].block;

		if (b->offset < lo) {
			lo = b->offset;
			lo_warm = w->held[i].populated;
		}
		if (b->offset + b->size > hi) {
			hi = b->offset + b->size;
			hi_warm = w->held[i].populated;
		}
	}
	for (uint32_t i = 0; i < w->n_held; i++)
		tmm_pool_free(s->pool, w->held[i].block);
	w->n_held = 0;
	rc = tmm_pool_alloc_at(s->pool, w->at, w->want, block);
	if (rc < 0) {
		/* Not reached: the blocks freed were one run. */
		free_lists(w);
		return rc;
	}
	*ptr = s->base + w->at;
	tmm_uvm_arena_hand_out(a, *block);
	/* What lies beyond the window of a populated block stays kept. */
	if (lo < w->at && lo_warm &&
	    tmm_pool_alloc_at(s->pool, lo, w->at - lo, &rest) == 0)
		keep_block(a, s, rest);
	if (hi > w->at + w->want && hi_warm &&
	    tmm_pool_alloc_at(s->pool, w->at + w->want,
			      hi - (w->at + w->want), &rest) == 0)
		keep_block(a, s, rest);
	free_lists(w);
	return 0;
}
