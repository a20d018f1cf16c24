/* SPDX-License-Identifier: MIT */
/*
 * compact.c — making a hole in the device pool by moving tensors.
 *
 * Tensors come and go in every size, so free bytes end up split into
 * holes that no large allocation fits, though their sum would (the GPT
 * example at half its peak had 1.3 MiB free and no hole of 256 KiB).
 * Evicting to make a hole costs a copy to the host and one back later;
 * moving a tensor to another hole costs one copy on the device, at memory
 * bandwidth, and loses nothing.  No one holds a device address but the
 * runtime until it is handed out: op callbacks get pointers per call, so
 * a resident tensor may move unless it is acquired or its op's callback
 * has its address.  As a last resort the running op's own tensors may
 * move too, while the op is still placing them (placing_pins in
 * context.h): without that, an op whose tensors fit the budget could
 * find its inputs pinned across the one hole its output needs.
 *
 * The window: a run of neighbouring blocks, each free or holding a
 * movable tensor, as large as the allocation, holding the fewest movable
 * bytes.  Its free blocks are reserved so that the moves land elsewhere,
 * each movable tensor is copied into a hole outside it, and then the
 * whole run is free and coalesced.
 *
 * When no hole outside can take them (the pool nearly full of what the
 * running op needs), the last resort slides instead: a run of blocks
 * with enough free bytes among them has its tensors moved down, in
 * address order, onto the free bytes below them, which leaves one hole
 * at its top.  A tensor that moves by less than its size is copied in
 * pieces no larger than the distance, lowest first, so that no piece
 * reads bytes a piece before it wrote.
 *
 * A swap-in still landing cannot move (its copy writes the block), so a
 * host that runs ahead of its device, whose prefetches land late as it
 * sees them, can find every window passing one.  The mover then asks
 * which swap-in, once landed, would let a window empty
 * (tmm_compact_landing_in_the_way), waits for it, and compacts, rather
 * than evict tensors that need not leave.
 *
 * pool=chunks (pool_map.c): a hole costs address space, not device
 * memory, and the range has room for any hole, so moving tensors to make
 * one is pointless; what can run short is chunks.  There compaction only
 * packs, as the last resort: every movable tensor, the running op's
 * included, slides down to the bottom of the range by the same
 * machinery, so that the tensors share chunks and the chunks they leave
 * come free.  The pool keeps every chunk mapped until the moves are done,
 * since a tensor's block is freed before its bytes are copied out.
 */
#include <errno.h>
#include <stdlib.h>

#include "compact.h"
#include "pool.h"
#include "lib/base/xalloc.h"

/* Windows tried for one allocation before giving up to eviction. */
#define MAX_TRIES 16

/* The most pieces one sliding tensor is copied in: a tensor that would
 * move by a sliver of its size is not worth millions of copies. */
#define MAX_PIECES 256

/* One block of the pool in address order, and the tensor it holds. */
struct slot {
	uint64_t offset, size;
	struct tmm_tensor_rec *t; /* movable tensor, or NULL */
	bool used;
};

struct walk {
	struct slot *s;
	size_t n, cap;
	bool nomem;
};

static void collect(void *arg, const struct tmm_pool_block *b, int used)
{
	struct walk *w = arg;

	if (w->nomem)
		return;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		void *p = tmm_realloc(w->s, sizeof(*w->s) * cap);

		if (!p) {
			w->nomem = true;
			return;
		}
		w->s = p;
		w->cap = cap;
	}
	w->s[w->n++] = (struct slot){ b->offset, b->size, NULL, used != 0 };
}

static int by_offset(const void *a, const void *b)
{
	const struct tmm_tensor_rec *x = *(struct tmm_tensor_rec *const *)a;
	const struct tmm_tensor_rec *y = *(struct tmm_tensor_rec *const *)b;

	return x->block->offset < y->block->offset ? -1
	       : x->block->offset > y->block->offset;
}

/* Marks the slots whose tensors may move: resident and unpinned, or
 * with placing_too pinned only by an op still placing them; with
 * landing_too, swap-ins still landing count as resident (they may move
 * once waited for: tmm_compact_landing_in_the_way). */
static int mark_movable(struct tmm_ctx *ctx, struct walk *w,
			bool placing_too, bool landing_too)
{
	struct tmm_tensor_rec **m = NULL;
	size_t n = 0, cap = 0, j = 0;

	for (struct tmm_list *l = ctx->device_lru.next; l != &ctx->device_lru;
	     l = l->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(l, struct tmm_tensor_rec, on_device);

		if ((t->state != TMM_TS_RESIDENT &&
		     !(landing_too && t->state == TMM_TS_SWAPPING_IN)) ||
		    !t->block || t->pins != (placing_too ? t->placing_pins : 0))
			continue;
		if (n == cap) {
			void *p;

			cap = cap ? 2 * cap : 256;
			p = tmm_realloc(m, sizeof(*m) * cap);
			if (!p) {
				free(m);
				return -ENOMEM;
			}
			m = p;
		}
		m[n++] = t;
	}
	if (n)
		qsort(m, n, sizeof(*m), by_offset);
	for (size_t i = 0; i < w->n && j < n; i++) {
		while (j < n && m[j]->block->offset < w->s[i].offset)
			j++;
		if (j < n && m[j]->block->offset == w->s[i].offset &&
		    w->s[i].used)
			w->s[i].t = m[j];
	}
	free(m);
	return 0;
}

/* A window [first, last] of slots and the movable bytes in it. */
struct window {
	size_t first, last;
	uint64_t moved;
};

static int by_moved(const void *a, const void *b)
{
	const struct window *x = a, *y = b;

	return x->moved < y->moved ? -1 : x->moved > y->moved;
}

/*
 * For each slot, the shortest window ending there of at least `size`
 * bytes over free and movable slots only; *n receives their number.
 * Sorted by the bytes they would move, fewest first.
 */
static struct window *windows(const struct walk *w, uint64_t size,
			      size_t *n)
{
	struct window *win = tmm_malloc(sizeof(*win) * (w->n + 1));
	uint64_t span = 0, moved = 0;
	size_t lo = 0;

	*n = 0;
	if (!win)
		return NULL;
	for (size_t hi = 0; hi < w->n; hi++) {
		const struct slot *s = &w->s[hi];

		if (s->used && !s->t) {
			/* A block that cannot move: start after it. */
			lo = hi + 1;
			span = moved = 0;
			continue;
		}
		span += s->size;
		moved += s->used ? s->size : 0;
		/* Shrink from the left while the window stays large. */
		while (lo < hi && span - w->s[lo].size >= size) {
			span -= w->s[lo].size;
			moved -= w->s[lo].used ? w->s[lo].size : 0;
			lo++;
		}
		if (span >= size)
			win[(*n)++] = (struct window){ lo, hi, moved };
	}
	qsort(win, *n, sizeof(*win), by_moved);
	return win;
}

static int descending(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x > y ? -1 : x < y;
}

/*
 * Can the tensors of window v all go to holes outside it?  Placed largest
 * first, each into the smallest outside hole that holds it, as the pool's
 * best fit will.  scratch[] holds 2 * w->n entries.
 */
static bool placeable(const struct walk *w, const struct window *v,
		      uint64_t *scratch)
{
	uint64_t *holes = scratch, *sizes = scratch + w->n;
	size_t n_holes = 0, n_sizes = 0;

	for (size_t i = 0; i < w->n; i++) {
		bool inside = i >= v->first && i <= v->last;

		if (!w->s[i].used && !inside)
			holes[n_holes++] = w->s[i].size;
		else if (w->s[i].t && inside)
			sizes[n_sizes++] = w->s[i].size;
	}
	qsort(sizes, n_sizes, sizeof(*sizes), descending);
	for (size_t k = 0; k < n_sizes; k++) {
		size_t at = SIZE_MAX;

		for (size_t h = 0; h < n_holes; h++)
			if (holes[h] >= sizes[k] &&
			    (at == SIZE_MAX || holes[h] < holes[at]))
				at = h;
		if (at == SIZE_MAX)
			return false;
		holes[at] -= sizes[k];
	}
	return true;
}

int tmm_compact_order(struct tmm_ctx *ctx, enum tmm_engine waiter,
		       enum tmm_engine waited)
{
	struct tmm_backend *be = &ctx->be;
	tmm_event ev;
	int rc = be->ops->event_record(be, waited, &ev);

	if (rc == 0) {
		rc = be->ops->engine_wait(be, waiter, &ev);
		be->ops->event_release(be, &ev);
	}
	return rc < 0 ? tmm_fail(ctx, rc, "ordering a compaction's moves "
				 "with the copy engines: %s", be->error)
		      : 0;
}

/*
 * Before the moves of slots [first, last]: a swap-out that a back-access
 * let go on (mover.c, SWAPPING_OUT) may still be reading a tensor's bytes
 * on the device-to-host engine, and the moves, on the compute engine,
 * must not overwrite them (a slide writes where tensors were; any move
 * frees the place for the next kernel).  Only such tensors, with a
 * read_by copy still running, cost a wait.
 */
static int order_before_moves(struct tmm_ctx *ctx, const struct walk *w,
			      size_t first, size_t last)
{
	for (size_t i = first; i <= last; i++) {
		int rc = w->s[i].t ? tmm_tensor_wait_readers(ctx, w->s[i].t)
				   : 0;

		if (rc < 0)
			return tmm_fail(ctx, rc, "ordering a compaction's "
					"moves after a copy: %s",
					ctx->be.error);
	}
	return 0;
}

/* After them: a swap-in handed a block moved out of writes it on the
 * host-to-device engine, after the moves have read it. */
static int order_after_moves(struct tmm_ctx *ctx)
{
	return tmm_compact_order(ctx, TMM_ENGINE_H2D, TMM_ENGINE_COMPUTE);
}

static void count_move(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t)
{
	ctx->c.compaction_moves++;
	ctx->c.compaction_bytes += t->bytes;
}

/* bytes in the pool's units. */
static uint64_t pool_size(size_t bytes)
{
	return (bytes + TMM_POOL_ALIGN - 1) / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
}

/*
 * For each slot, the shortest window ending there whose free bytes add
 * up to `size`, over free and movable slots only, in which no tensor
 * slides by less than 1/MAX_PIECES of its size; the one that moves the
 * fewest bytes, or false when there is none.
 */
static bool slide_window(const struct walk *w, uint64_t size,
			 struct window *best)
{
	uint64_t free_bytes = 0, moved = 0;
	bool found = false;
	size_t lo = 0;

	for (size_t hi = 0; hi < w->n; hi++) {
		const struct slot *s = &w->s[hi];

		if (s->used && !s->t) {
			lo = hi + 1;
			free_bytes = moved = 0;
			continue;
		}
		free_bytes += s->used ? 0 : s->size;
		moved += s->used ? s->size : 0;
		while (lo < hi && (w->s[lo].used ? free_bytes
						 : free_bytes - w->s[lo].size)
					  >= size) {
			free_bytes -= w->s[lo].used ? 0 : w->s[lo].size;
			moved -= w->s[lo].used ? w->s[lo].size : 0;
			lo++;
		}
		if (free_bytes < size || (found && moved >= best->moved))
			continue;
		/* Each tensor slides by the free bytes below it. */
		uint64_t below = 0;
		bool ok = true;

		for (size_t i = lo; i <= hi && ok; i++) {
			if (!w->s[i].used)
				below += w->s[i].size;
			else if (below && w->s[i].size / below >= MAX_PIECES)
				ok = false;
		}
		if (ok) {
			*best = (struct window){ lo, hi, moved };
			found = true;
		}
	}
	return found;
}

/* Copies a tensor `down` bytes lower, in pieces that never overlap. */
static int slide_copy(struct tmm_ctx *ctx, char *dst, const char *src,
		      size_t bytes, uint64_t down)
{
	for (size_t off = 0; off < bytes; off += down) {
		size_t len = bytes - off < down ? bytes - off : down;
		int rc = ctx->be.ops->copy_on_device(&ctx->be, dst + off,
						     src + off, len);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Slides tensor t down to `cursor`, below which, down to its block, all
 * is free: its block given back merges into one free block that holds
 * its new place.  Nothing else allocates meanwhile.  -ENOSPC (no move)
 * when pool=chunks cannot map the new place.
 */
static int slide_one(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     uint64_t cursor)
{
	uint64_t from = t->block->offset, down = from - cursor;
	struct tmm_pool_block *to;
	int rc;

	/* The bytes stay where they are until copied: the pool keeps
	 * offsets, never the device's bytes (and with pool=chunks it keeps
	 * the chunks mapped meanwhile: tmm_pool_keep_mapped). */
	tmm_pool_free(ctx->pool, t->block);
	if (tmm_pool_alloc_at(ctx->pool, cursor, t->bytes, &to) < 0) {
		struct tmm_pool_stats ps;

		tmm_pool_get_stats(ctx->pool, &ps);
		/* Its old chunks are still mapped (kept): it goes back. */
		tmm_pool_alloc_at(ctx->pool, from, t->bytes, &t->block);
		if (ps.map_failed)
			return -ENOSPC; /* pool=chunks: the device is full */
		return tmm_fail(ctx, -EFAULT,
				"compaction found no room below a tensor it "
				"freed (a libtensormm bug: please report it)");
	}
	rc = slide_copy(ctx, (char *)ctx->arena + cursor, t->dev, t->bytes,
			down);
	t->block = to;
	t->dev = (char *)ctx->arena + cursor;
	if (rc < 0)
		return tmm_fail(ctx, rc, "sliding a tensor on the device to "
				"make room: %s", ctx->be.error);
	count_move(ctx, t);
	return 0;
}

/* Slides the tensors of window v down onto its free bytes, lowest
 * first. */
static int slide(struct tmm_ctx *ctx, const struct walk *w,
		 const struct window *v)
{
	uint64_t cursor = w->s[v->first].offset;
	int rc = order_before_moves(ctx, w, v->first, v->last);

	if (rc < 0)
		return rc;

	for (size_t i = v->first; i <= v->last; i++) {
		struct tmm_tensor_rec *t = w->s[i].t;

		if (!t)
			continue;
		if (t->block->offset != cursor) {
			rc = slide_one(ctx, t, cursor);
			if (rc < 0)
				return rc;
		}
		cursor += t->block->size;
	}
	return order_after_moves(ctx);
}

/*
 * pool=chunks' last resort: slides every movable tensor down as far as
 * the blocks that cannot move let it, lowest first, so that the tensors
 * lie packed and share chunks.  A tensor that would move by less than
 * 1/MAX_PIECES of its size stays (it would free almost nothing).
 * Returns 0 when something moved, -ENOSPC when nothing could.
 */
static int pack(struct tmm_ctx *ctx, const struct walk *w)
{
	uint64_t cursor = 0;
	bool moved = false;
	int rc;

	if (w->n == 0)
		return -ENOSPC;
	rc = order_before_moves(ctx, w, 0, w->n - 1);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < w->n; i++) {
		const struct slot *s = &w->s[i];
		uint64_t down = s->offset - cursor;

		if (!s->used)
			continue;
		if (!s->t || down == 0 || s->size / down >= MAX_PIECES) {
			cursor = s->offset + s->size;
			continue;
		}
		rc = slide_one(ctx, s->t, cursor);
		if (rc == -ENOSPC)
			break; /* the device cannot map more: so far, then */
		if (rc < 0)
			return rc;
		cursor += s->t->block->size;
		moved = true;
	}
	if (!moved)
		return -ENOSPC;
	return order_after_moves(ctx);
}

/* tmm_compact_for with pool=chunks: the last resort packs; before it,
 * no move frees a chunk that eviction would not. */
static int compact_chunks(struct tmm_ctx *ctx, bool placing_too)
{
	struct walk w = { 0 };
	int rc = -ENOSPC;

	if (!placing_too)
		return -ENOSPC;
	tmm_pool_walk(ctx->pool, collect, &w);
	if (!w.nomem && mark_movable(ctx, &w, true, false) == 0) {
		tmm_pool_keep_mapped(ctx->pool, true);
		rc = pack(ctx, &w);
		tmm_pool_keep_mapped(ctx->pool, false);
	}
	free(w.s);
	return rc;
}

bool tmm_compact_has_bytes(const struct tmm_ctx *ctx, size_t bytes)
{
	struct tmm_pool_stats ps;
	uint64_t size = pool_size(bytes);

	tmm_pool_get_stats(ctx->pool, &ps);
	return ps.in_use <= ps.limit && ps.limit - ps.in_use >= size;
}

int tmm_compact_for(struct tmm_ctx *ctx, size_t bytes, bool placing_too)
{
	struct walk w = { 0 };
	struct tmm_pool_block **held = NULL;
	struct window *win = NULL;
	uint64_t *scratch = NULL;
	size_t first = 0, last = 0, n_held = 0, n_win = 0;
	bool found = false;
	uint64_t size = pool_size(bytes);
	int rc = -ENOSPC;

	if (!tmm_compact_has_bytes(ctx, bytes))
		return -ENOSPC; /* not enough free bytes: eviction's job */
	if (tmm_pool_is_mapped(ctx->pool))
		return compact_chunks(ctx, placing_too);
	tmm_pool_walk(ctx->pool, collect, &w);
	/* Short of host memory, compaction is skipped, not failed. */
	if (w.nomem || mark_movable(ctx, &w, placing_too, false) < 0)
		goto out;
	win = windows(&w, size, &n_win);
	scratch = tmm_malloc(sizeof(uint64_t) * 2 * (w.n + 1));
	if (!win || !scratch)
		goto out;
	/* The cheapest window whose tensors have somewhere to go; a few
	 * tries are enough, the rest would move more bytes anyway. */
	for (size_t k = 0; k < n_win && k < MAX_TRIES && !found; k++)
		if (placeable(&w, &win[k], scratch)) {
			first = win[k].first;
			last = win[k].last;
			found = true;
		}
	if (!found) {
		struct window v = { 0, 0, 0 };

		/* The last resort slides (see the top of this file). */
		if (placing_too && slide_window(&w, size, &v))
			rc = slide(ctx, &w, &v);
		goto out;
	}
	held = tmm_calloc(last - first + 1, sizeof(*held));
	if (!held)
		goto out;
	/* Hold the window's holes, so that no move lands in them (the
	 * blocks moved out of are held too, below: one per slot). */
	for (size_t i = first; i <= last; i++) {
		if (w.s[i].used)
			continue;
		if (tmm_pool_alloc_at(ctx->pool, w.s[i].offset, w.s[i].size,
				      &held[n_held]) < 0) {
			rc = -ENOSPC;
			goto release;
		}
		n_held++;
	}
	rc = order_before_moves(ctx, &w, first, last);
	if (rc < 0)
		goto release;
	rc = -ENOSPC;
	for (size_t i = first; i <= last; i++) {
		struct tmm_tensor_rec *t = w.s[i].t;
		struct tmm_pool_block *to;
		void *dst;

		if (!t)
			continue;
		if (tmm_pool_alloc(ctx->pool, t->bytes, &to) < 0) {
			rc = -ENOSPC; /* no hole elsewhere: eviction's job */
			goto release;
		}
		dst = (char *)ctx->arena + to->offset;
		rc = ctx->be.ops->copy_on_device(&ctx->be, dst, t->dev,
						 t->bytes);
		if (rc < 0) {
			tmm_pool_free(ctx->pool, to);
			rc = tmm_fail(ctx, rc, "moving a tensor on the device "
				      "to make room: %s", ctx->be.error);
			goto release;
		}
		/* Its old block stays held until every move is done: the
		 * next tensor's move must not land in it. */
		held[n_held++] = t->block;
		t->block = to;
		t->dev = dst;
		count_move(ctx, t);
	}
	rc = order_after_moves(ctx);
release:
	for (size_t i = 0; i < n_held; i++)
		tmm_pool_free(ctx->pool, held[i]);
out:
	free(win);
	free(scratch);
	free(held);
	free(w.s);
	return rc;
}

struct tmm_tensor_rec *tmm_compact_landing_in_the_way(struct tmm_ctx *ctx,
						      size_t bytes)
{
	struct walk w = { 0 };
	struct window *win = NULL;
	uint64_t *scratch = NULL;
	size_t n_win = 0;
	struct tmm_tensor_rec *wait = NULL;

	if (tmm_list_empty(&ctx->swapping_in) ||
	    tmm_pool_is_mapped(ctx->pool) || !tmm_compact_has_bytes(ctx, bytes))
		return NULL;
	tmm_pool_walk(ctx->pool, collect, &w);
	if (w.nomem || mark_movable(ctx, &w, false, true) < 0)
		goto out;
	win = windows(&w, pool_size(bytes), &n_win);
	scratch = tmm_malloc(sizeof(uint64_t) * 2 * (w.n + 1));
	if (!win || !scratch)
		goto out;
	for (size_t k = 0; k < n_win && k < MAX_TRIES; k++) {
		if (!placeable(&w, &win[k], scratch))
			continue;
		/* The earliest queued of its swap-ins: the copy engine
		 * lands them in order, so it costs the shortest wait. */
		for (struct tmm_list *l = ctx->swapping_in.next;
		     l != &ctx->swapping_in && !wait; l = l->next) {
			struct tmm_tensor_rec *t = tmm_container_of(
				l, struct tmm_tensor_rec, in_flight);

			for (size_t i = win[k].first; i <= win[k].last; i++)
				if (w.s[i].t == t)
					wait = t;
		}
		break;
	}
out:
	free(win);
	free(scratch);
	free(w.s);
	return wait;
}
