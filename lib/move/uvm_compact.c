/* SPDX-License-Identifier: MIT */
/*
 * uvm_compact.c — compaction in mode=uvm (see uvm_compact.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "uvm_compact.h"
#include "device_mem.h"
#include "uvm_fresh.h"
#include "swap_engine.h"
#include "lib/base/managed_page.h"
#include "lib/mem/compact.h"
#include "lib/mem/uvm_arena.h"
#include "lib/mem/uvm_window.h"
#include "lib/record/guide_state.h"

/* Below this a tensor's fresh pages cost less than the search (a walk of
 * every block of the arena), made a few hundred times a step. */
#define COMPACT_MIN ((uint64_t)8 << 20)

/*
 * A byte moved against a byte made afresh: its copy reads and writes it
 * at the memory's rate (3.35 TB/s on an H100 SXM5, against 90 GB/s for a
 * fresh page: about 0.05), doubled for the host's bookkeeping.  Where the
 * kept blocks outside the window cannot take the moved bytes, their
 * destinations' pages count as made afresh too (uvm_window.c).
 */
#define MOVE_COST 0.1

/* The idle tensors on the device, by the address each had when the
 * search began (a move changes it). */
struct idle_at_addr {
	const char *dev;
	struct tmm_tensor_rec *t;
};

struct idle {
	struct idle_at_addr *at;
	size_t n;
};

/* Whether ev, where valid, has passed: a move then waits for nothing. */
static bool passed(struct tmm_ctx *ctx, const tmm_event *ev)
{
	return !ev->valid || ctx->be.ops->event_query(&ctx->be, ev) == 1;
}

static bool is_idle(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t)
{
	return t->state == TMM_TS_RESIDENT && t->block && t->dev &&
	       passed(ctx, &t->read_by) && passed(ctx, &t->net_by) &&
	       t->pins == t->placing_pins && !t->acquires && !t->uvm_advised &&
	       !t->uvm_host_preferred && !t->uvm_host_touched &&
	       !t->view_parent && !t->n_views;
}

static int by_dev(const void *x, const void *y)
{
	const char *p = ((const struct idle_at_addr *)x)->dev;
	const char *q = ((const struct idle_at_addr *)y)->dev;

	return p < q ? -1 : p > q;
}

static int collect_idle(struct tmm_ctx *ctx, struct idle *idle)
{
	size_t n = 0;

	for (struct tmm_list *l = ctx->device_lru.next; l != &ctx->device_lru;
	     l = l->next)
		n++;
	idle->n = 0;
	idle->at = malloc(sizeof(*idle->at) * (n ? n : 1));
	if (!idle->at)
		return -ENOMEM;
	for (struct tmm_list *l = ctx->device_lru.next; l != &ctx->device_lru;
	     l = l->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(l, struct tmm_tensor_rec, on_device);

		if (is_idle(ctx, t))
			idle->at[idle->n++] = (struct idle_at_addr){ t->dev, t };
	}
	qsort(idle->at, idle->n, sizeof(*idle->at), by_dev);
	return 0;
}

/* The idle tensor whose range starts at ptr, or NULL. */
static struct tmm_tensor_rec *idle_at(const struct idle *idle, const void *ptr)
{
	size_t lo = 0, hi = idle->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *d = idle->at[mid].dev;

		if (d == (const char *)ptr)
			return idle->at[mid].t;
		if (d < (const char *)ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool movable(void *arg, const void *ptr)
{
	return idle_at(arg, ptr) != NULL;
}

/* A destination given up: its pages die (they may be half made) and
 * its block goes back. */
static void drop_dest(struct tmm_ctx *ctx, struct tmm_pool_block *to,
		      void *dst)
{
	tmm_uvm_arena_note(ctx->uvm_arena, dst, to->size, false);
	ctx->be.ops->discard(&ctx->be, dst, to->size);
	tmm_uvm_arena_free(ctx->uvm_arena, to);
}

/*
 * Moves t out of window w: a block of its size elsewhere (a kept one
 * where one fits, which the arena tries first), its pages made there if
 * need be, its bytes copied on the compute stream, after every kernel
 * that wrote them and before every later one.  *held: the populated
 * bytes w holds, which count neither as held nor kept, so that the
 * destination's pages make room beside them.  Returns 0, 1 where no
 * block could be had (nothing changed), or the backend's error.
 */
static int move_out(struct tmm_ctx *ctx, struct tmm_uvm_window *w,
		    struct tmm_tensor_rec *t, uint64_t *held)
{
	struct tmm_uvm_arena *a = ctx->uvm_arena;
	struct tmm_pool_block *to, *from = t->block;
	char why[256], label[64];
	void *dst;
	int rc;

	/* A swap-out a back-access let go on, or a collective, has read
	 * its bytes (is_idle): the events go. */
	rc = tmm_tensor_wait_readers(ctx, t);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	if (tmm_uvm_arena_alloc(a, t->bytes, &to, &dst, why, sizeof(why)) < 0)
		return 1;
	if (!tmm_uvm_arena_on_device(a, dst, t->bytes)) {
		tmm_uvm_trim_kept(ctx, *held + to->size);
		rc = tmm_uvm_prefetch_fresh_range(ctx, dst, t->bytes);
	}
	if (rc == 0)
		rc = ctx->be.ops->copy_on_device(&ctx->be, dst, t->dev,
						 t->bytes);
	if (rc < 0) {
		drop_dest(ctx, to, dst);
		return tmm_fail(ctx, rc, "mode=uvm: moving tensor %s on the "
				"device to place a large tensor over kept "
				"pages: %s; uvm_compact=off moves none",
				tmm_tensor_label(t, label, sizeof(label)),
				ctx->be.error);
	}
	tmm_uvm_arena_note(a, dst, t->bytes, true);
	t->block = to;
	t->dev = dst;
	/* Room for it was made when w was held. */
	tmm_uvm_window_vacated(a, w, from);
	*held += from->size;
	ctx->c.compaction_moves++;
	ctx->c.compaction_bytes += t->bytes;
	return 0;
}

int tmm_uvm_compact_for(struct tmm_ctx *ctx, size_t bytes,
			struct tmm_pool_block **block, void **ptr)
{
	struct tmm_uvm_arena *a = ctx->uvm_arena;
	uint64_t want = tmm_managed_pages_bytes(bytes), held = 0;
	struct tmm_uvm_window w;
	struct idle idle = { 0 };
	int rc;

	if (!ctx->cfg.uvm_compact ||
	    tmm_guide_state(ctx) == TMM_PLAN_MEASURING ||
	    want < COMPACT_MIN ||
	    !(ctx->be.info.uvm_fresh_gbps > 0) ||
	    tmm_uvm_arena_kept_largest(a) >= want)
		return 0;
	if (collect_idle(ctx, &idle) < 0)
		return 0;
	rc = tmm_uvm_window_find(a, want, MOVE_COST, movable, &idle, &w);
	if (rc <= 0 || tmm_uvm_window_hold(a, &w) < 0) {
		tmm_uvm_window_release(a, &w);
		free(idle.at);
		return 0;
	}
	for (uint32_t i = 0; i < w.n_held; i++)
		held += w.held[i].populated ? w.held[i].block->size : 0;
	for (uint32_t i = 0; rc >= 0 && i < w.n_moves; i++) {
		struct tmm_tensor_rec *t = idle_at(&idle, w.moves[i].ptr);

		rc = t ? move_out(ctx, &w, t, &held) : 1;
		if (rc > 0)
			break;
	}
	free(idle.at);
	if (rc != 0) {
		tmm_uvm_window_release(a, &w);
		return rc < 0 ? rc : 0;
	}
	/* A copy back into the window, on the host-to-device engine, comes
	 * after the moves that read it. */
	rc = tmm_compact_order(ctx, TMM_ENGINE_H2D, TMM_ENGINE_COMPUTE);
	if (rc < 0) {
		tmm_uvm_window_release(a, &w);
		return rc;
	}
	return tmm_uvm_window_take(a, &w, block, ptr) == 0;
}
