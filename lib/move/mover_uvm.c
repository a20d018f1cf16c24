/* SPDX-License-Identifier: MIT */
/*
 * mover_uvm.c — the mover in mode=uvm (see mover_uvm.h): tensors' ranges,
 * their fresh pages, and the plan's actions on them.  What kernels' and
 * the host's accesses do to the pages is uvm_access.c's; the copy way
 * out and back, uvm_path.c's.
 *
 * Every action here is a call on the tensor's managed range; the bytes
 * never move between buffers, so a tensor's data survives every state
 * change except a drop, which leaves the range undefined (discarded, or
 * stale where its pages are kept: tmm_uvm_drop) or hands it to the kept
 * blocks, until the recomputation writes it again (the simulator, whose
 * drops discard where they cannot hand on, poisons a discarded range to
 * prove that nothing reads it before).
 *
 * The ranges are blocks of the context's managed arena (uvm_arena.h),
 * which keeps its segments until the context goes: a tensor destroyed
 * hands its range to the next one with its pages where they are, so
 * before the block goes back, whatever this tensor did to the range that
 * the next one should not inherit is undone (forget_range).
 */
#include <errno.h>

#include "mover_uvm.h"
#include "clean_copy.h"
#include "swap_engine.h"
#include "uvm_compact.h"
#include "uvm_fresh.h"
#include "uvm_path.h"
#include "uvm_read_mostly.h"
#include "lib/base/managed_page.h"
#include "lib/base/xalloc.h"
#include "lib/io/plan.h"
#include "lib/mem/pool.h"
#include "lib/mem/uvm_arena.h"
#include "lib/record/tracker.h"

/* The NUMA node swapped-out tensors belong on. */
static int host_node(const struct tmm_ctx *ctx)
{
	return ctx->cfg.host_numa_node >= 0 ? ctx->cfg.host_numa_node
					    : ctx->be.info.numa_node;
}

/* ---- allocations ------------------------------------------------------ */

/* The op an allocation is for, for messages. */
static const char *op_name(const struct tmm_ctx *ctx)
{
	return ctx->current_op ? ctx->current_op : "(none)";
}

int tmm_uvm_materialize(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	char label[64], why[256];
	int rc;

	if (t->dev)
		return 0;
	/* Over kept pages, idle tensors moved out of their way, where that
	 * saves making most of its pages; else as the arena places it. */
	rc = tmm_uvm_compact_for(ctx, t->bytes, &t->block, &t->dev);
	if (rc == 0)
		rc = tmm_uvm_arena_alloc(ctx->uvm_arena, t->bytes, &t->block,
					 &t->dev, why, sizeof(why));
	else if (rc > 0)
		rc = 0;
	else
		return rc;
	if (rc < 0) {
		t->dev = NULL;
		t->block = NULL;
		return tmm_fail(ctx, rc,
				"op '%s': no managed memory for tensor %s (%zu "
				"bytes): %s", op_name(ctx),
				tmm_tensor_label(t, label, sizeof(label)),
				t->bytes, why);
	}
	/* Before its pages are made, whether they are a kept block's or
	 * new ones: the kept blocks left must fit beside them. */
	tmm_uvm_trim_kept(ctx, t->block->size);
	return 0;
}

/*
 * Whether t's pages die with it (a discard) rather than wait populated
 * for the next tensor placed in its range:
 *  - t is destroyed outside an iteration: nothing says a tensor will
 *    come to take its place, and its pages would hold device memory for
 *    no one (inside one, the program makes the same tensors again in the
 *    next iteration, as frameworks allocate fresh buffers every step);
 *  - t was swapped out by prefetch, or the host touched it last: its
 *    pages are on the host, and the next tensor's first write would
 *    fault dead bytes back (a swap-out by copy, t->host, discarded them
 *    already);
 *  - the arena has held more live bytes than the driver keeps on the
 *    device (its peak over driver_room): the
 *    program oversubscribes, the driver evicts, and dead pages left on
 *    the device would take the room of live ones and be written back
 *    when evicted, which costs more than the fault a discarded page
 *    costs its next tensor.
 * Otherwise everything has fitted so far, and the next tensor there (the
 * same tensor of the next iteration, most often) finds the pages
 * populated on the device and takes no fault.
 */
static bool pages_die(const struct tmm_ctx *ctx,
		      const struct tmm_tensor_rec *t)
{
	return !ctx->in_iteration || (t->state == TMM_TS_HOST && !t->host) ||
	       t->uvm_host_touched ||
	       tmm_uvm_arena_peak(ctx->uvm_arena) > tmm_uvm_driver_room(ctx);
}

/*
 * A drop (drop.c): t's bytes go, to be recomputed before their next use.
 * Its pages no longer count against the budget, whatever happens to
 * them:
 *  - where nothing presses (pages_die false), they stay in t's range:
 *    the driver had no cause to take them from the device, and the
 *    regeneration's kernel then writes them where they are, with no
 *    discard before and no fault or prefetch to make them again after
 *    (issue #19: on an H200 with uvm_cap=driver, whose driver is not
 *    held to the budget, every drop discarded its tensor and the re-run
 *    made the pages afresh);
 *  - under pressure, the range goes back to the arena as a kept block,
 *    with its pages, where there is room to keep it (tmm_uvm_may_keep),
 *    as swap mode's pool takes a dropped tensor's block back: the next
 *    tensor placed there, the regeneration itself or one before it,
 *    writes populated pages, and the kept blocks are trimmed only where
 *    the held pages need their room (issue #19: tensile on ResNet-50 at
 *    half its peak, simulated, discarded 1.2 GB a step by drops and made
 *    the pages afresh on the compute stream, 13 ms of a 63 ms step);
 *  - else they are discarded, as they would die with a destroyed tensor
 *    (the driver evicts, or the host holds them), and the range stays
 *    t's.
 */
static int forget_range(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* The pressed drop's way: t's range becomes a kept block, and t has none
 * until it is placed again.  False where it cannot (no room to keep, the
 * range's last work not ordered before the next tensor's): the caller
 * discards. */
static bool hand_on(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_uvm_unhold(ctx, t);
	if (t->state != TMM_TS_RESIDENT || !tmm_uvm_may_keep(ctx, t) ||
	    forget_range(ctx, t) < 0)
		return false;
	/* Its advice is gone with forget_range, whatever comes next. */
	t->uvm_host_preferred = false;
	t->uvm_advised = 0;
	if (!tmm_uvm_arena_keep(ctx->uvm_arena, t->block))
		return false;
	ctx->be.ops->event_release(&ctx->be, &t->copy);
	ctx->be.ops->event_release(&ctx->be, &t->read_by);
	t->dev = NULL;
	t->block = NULL;
	return true;
}

void tmm_uvm_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	bool die = pages_die(ctx, t);
	int rc = 0;

	/* The re-run's kernel writes the kept pages on the compute stream:
	 * it waits (on the GPU) for a copy out still reading them or a
	 * migration of them, as a discard would have (the backend orders a
	 * discard after every stream).  Where that fails, the discard. */
	if (!die && t->read_by.valid)
		rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, &t->read_by);
	if (!die && rc == 0 && t->copy.valid)
		rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, &t->copy);
	if (die && hand_on(ctx, t))
		return;
	if (die || rc < 0) {
		tmm_uvm_discard(ctx, t);
		return;
	}
	tmm_uvm_unhold(ctx, t);
}

/*
 * Before t's range goes back to the arena for another tensor: the next
 * kernel waits for a migration of it still under way (a swap-out's or a
 * prefetch's, t->copy, or a copy out's, t->read_by: the next tensor's
 * writes must not race with it) and for a collective still on it
 * (t->net_by), and the advice t was given goes (the next tensor starts
 * with none).  Failures only cost time, so they are logged; the caller
 * then neither keeps nor discards the pages.
 */
static int forget_range(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	/* A collective still on it, as a copy below. */
	int rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);

	if (rc == 0 && t->copy.valid)
		rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, &t->copy);
	/* A copy out that a back-access let go on may still read it. */
	if (rc == 0 && t->read_by.valid)
		rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, &t->read_by);
	if (rc == 0 && (t->uvm_host_preferred ||
			(t->uvm_advised & ADVISED_PREFERRED)))
		rc = be->ops->advise(be, t->dev, t->bytes,
				     TMM_ADVISE_UNSET_PREFERRED);
	if (rc == 0 && (t->uvm_advised & ADVISED_ACCESSED_BY))
		rc = be->ops->advise(be, t->dev, t->bytes,
				     TMM_ADVISE_UNSET_ACCESSED_BY);
	/* Lifted already where it is AWAY, or to be where PENDING: it
	 * goes off that list, and the advice now. */
	tmm_uvm_read_mostly_forget(ctx, t);
	if (rc == 0 && (t->uvm_advised & ADVISED_READ_MOSTLY))
		rc = be->ops->advise(be, t->dev, t->bytes,
				     TMM_ADVISE_UNSET_READ_MOSTLY);
	if (rc < 0)
		tmm_log(ctx, TMM_LOG_WARN, "%s", be->error);
	return rc;
}

/* t's range goes back to the arena: kept with its pages (may_keep), or
 * freed, its pages discarded first where they should die (pages_die). */
static void give_range_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	bool ordered = forget_range(ctx, t) == 0;

	tmm_uvm_unhold(ctx, t);
	if (ordered && t->state == TMM_TS_RESIDENT && tmm_uvm_may_keep(ctx, t) &&
	    tmm_uvm_arena_keep(ctx->uvm_arena, t->block))
		return;
	if (ordered && pages_die(ctx, t)) {
		tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, false);
		if (ctx->be.ops->discard(&ctx->be, t->dev, t->bytes) < 0)
			tmm_log(ctx, TMM_LOG_WARN, "%s", ctx->be.error);
	}
	tmm_uvm_arena_free(ctx->uvm_arena, t->block);
}

void tmm_uvm_release(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	/* A copy of the copy way (uvm_path.c) may still read or write the
	 * range or the host buffer: wait for it.  A backend error here
	 * leaves nothing better to do than to let go.  A copy out retired
	 * early (HOST) reads the range no more, and its host buffer waits
	 * for it on the deferred list (tmm_mover_host_give_back). */
	if (t->host && t->state != TMM_TS_HOST && tmm_mover_settle(ctx, t) < 0)
		tmm_mover_retire_failed_copy(ctx, t);
	if (t->state == TMM_TS_SWAPPING_IN)
		tmm_list_del(&t->in_flight);
	if (t->dev)
		give_range_back(ctx, t);
	tmm_uvm_unhold(ctx, t);
	if (t->host)
		tmm_mover_host_give_back(ctx, t, NULL);
	tmm_clean_drop(ctx, t);
	/* A swap-in's event, or a swap-out's (HOST, tmm_uvm_swap_out). */
	ctx->be.ops->event_release(&ctx->be, &t->copy);
	ctx->be.ops->event_release(&ctx->be, &t->read_by);
	t->dev = NULL;
	t->block = NULL;
	t->uvm_host_preferred = false;
	t->uvm_advised = 0;
	t->uvm_host_touched = false;
	t->uvm_migrated = false;
	/* Retiring the record is not a life-cycle transition. */
	t->state = TMM_TS_EMPTY;
	tmm_uvm_sync_counters(ctx);
}

/* Scratch is a block of the arena like a tensor's; only kernels on the
 * compute stream touch it, so it needs no forget_range. */
int tmm_uvm_alloc_scratch(struct tmm_ctx *ctx, size_t bytes,
			  struct tmm_pool_block **block, void **ptr)
{
	char why[256];
	int rc;

	/* A large workspace takes kept pages as a large tensor does. */
	rc = tmm_uvm_compact_for(ctx, bytes, block, ptr);
	if (rc > 0)
		rc = 0;
	else if (rc == 0)
		rc = tmm_uvm_arena_alloc(ctx->uvm_arena, bytes, block, ptr,
					 why, sizeof(why));
	else
		return rc;
	if (rc < 0)
		return tmm_fail(ctx, rc,
				"op '%s': no managed memory for a %zu-byte "
				"recomputation buffer: %s", op_name(ctx),
				bytes, why);
	tmm_uvm_hold_scratch(ctx, (*block)->size, +1);
	return 0;
}

/*
 * Scratch the kernels wrote is populated on the device.  Its pages wait
 * kept for the next tensor (tmm_uvm_arena_keep) where there is room for
 * them, and die with a discard otherwise: freed as they were, they would
 * stay on the device counted by no one, and a driver held to the budget
 * would evict the live pages of others for them, writing them back
 * (issue #19: with checkpoint on ResNet-50 at half its peak, the
 * simulated driver evicted 2.2 GB a step where the recomputation
 * buffers' pages were left so, 1.0 GB once they were not).  They are
 * not noted on the device: a workspace may not have touched them all, so
 * the next tensor there still has its fresh pages made where none are.
 */
void tmm_uvm_free_scratch(struct tmm_ctx *ctx, struct tmm_pool_block *block)
{
	void *ptr;

	if (!block)
		return;
	tmm_uvm_hold_scratch(ctx, block->size, -1);
	if (tmm_uvm_room_to_keep(ctx, block->size) &&
	    tmm_uvm_arena_keep(ctx->uvm_arena, block))
		return;
	ptr = tmm_uvm_arena_block_ptr(ctx->uvm_arena, block);
	tmm_uvm_arena_note(ctx->uvm_arena, ptr, block->size, false);
	if (ptr && ctx->be.ops->discard(&ctx->be, ptr, block->size) < 0)
		tmm_log(ctx, TMM_LOG_WARN, "%s", ctx->be.error);
	tmm_uvm_arena_free(ctx->uvm_arena, block);
}

/* ---- plan actions ----------------------------------------------------- */

/* Unsets the preferred location a swap-out gave t. */
static int unprefer_host(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	if (!t->uvm_host_preferred)
		return 0;
	rc = ctx->be.ops->advise(&ctx->be, t->dev, t->bytes,
				 TMM_ADVISE_UNSET_PREFERRED);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	t->uvm_host_preferred = false;
	return 0;
}

int tmm_uvm_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     bool migrate)
{
	struct tmm_backend *be = &ctx->be;
	enum tmm_engine engine = TMM_ENGINE_D2H;
	int rc;

	if (ctx->uvm_copy_out && migrate) {
		/* Beside the copies, not behind them, and the copies not
		 * behind it (backend.h). */
		engine = TMM_ENGINE_MIGRATE;
	} else if (ctx->uvm_copy_out) {
		rc = tmm_mover_copy_out(ctx, t, false);
		if (rc != -ENOMEM)
			return rc;
		/* No pinned buffer: the prefetch way needs none. */
		ctx->uvm_copy_out = false;
		tmm_log(ctx, TMM_LOG_WARN, "mode=uvm: no pinned host memory "
			"for evictions by copy, so they go by prefetch from "
			"now on (slower where a prefetch to the host is); "
			"raise pinned_pool or free host memory");
	}
	/* A collective still reducing it: the migration waits for it. */
	rc = tmm_tensor_wait_net(ctx, t, engine, false);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, false);
	rc = be->ops->advise(be, t->dev, t->bytes, TMM_ADVISE_PREFERRED_HOST);
	if (rc == 0)
		rc = be->ops->prefetch(be, engine, t->dev, t->bytes,
				       TMM_LOC_HOST, host_node(ctx));
	/* The migration's end, for a back-access that comes before it
	 * (after_swap_out). */
	if (rc == 0)
		rc = be->ops->event_record(be, engine, &t->copy);
	if (rc < 0) {
		be->ops->advise(be, t->dev, t->bytes,
				TMM_ADVISE_UNSET_PREFERRED);
		return tmm_mover_backend_error(ctx, rc);
	}
	t->uvm_host_preferred = true;
	t->uvm_migrated = engine == TMM_ENGINE_MIGRATE;
	if (t->uvm_migrated)
		ctx->c.uvm_migrate_out_bytes += t->bytes;
	/* The migration is the driver's business: bookkeeping moves on at
	 * once, and a back-access before it ends simply waits for it. */
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_OUT);
	tmm_tensor_set_state(t, TMM_TS_HOST);
	tmm_uvm_unhold(ctx, t);
	if (tmm_uvm_read_mostly_clean(ctx, t)) {
		/* Read-mostly and not written: the host's copy is whole
		 * and the prefetch moves nothing.  A clean eviction. */
		tmm_tracker_event_clean(ctx, t);
		ctx->c.clean_evictions++;
		ctx->c.clean_eviction_bytes += t->bytes;
	} else {
		tmm_tracker_event(ctx, TMM_EV_SWAP_OUT, t);
		ctx->c.swap_out_count++;
		ctx->c.swap_out_bytes += t->bytes;
		ctx->c.uvm_prefetch_out_bytes += t->bytes;
	}
	/* A prefetch leaves a read-mostly range's device copy: lifting the
	 * advice once it has run frees it (uvm_read_mostly.h). */
	tmm_uvm_read_mostly_leave(ctx, t);
	tmm_uvm_sync_counters(ctx);
	return 0;
}

/*
 * t's swap-out may still be migrating it to the host (t->copy, on the
 * D2H engine): the next compute waits for that, so that no kernel writes
 * the bytes while they move (they would fault straight back, and the
 * swap-out would have freed nothing), and the event goes.
 */
static int after_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = 0;

	if (!t->copy.valid)
		return 0;
	rc = ctx->be.ops->engine_wait(&ctx->be, TMM_ENGINE_COMPUTE, &t->copy);
	ctx->be.ops->event_release(&ctx->be, &t->copy);
	return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
}

/* HOST -> RESIDENT, as bookkeeping: its pages count from now on. */
static void back_on_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	t->uvm_migrated = false;
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_IN);
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
	tmm_uvm_hold(ctx, t);
}

/* t, away by copy, comes back by copy, into a range of its own again
 * where its block went back to the arena (tmm_uvm_copied_out). */
static int copy_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = t->dev ? 0 : tmm_uvm_materialize(ctx, t);

	return rc < 0 ? rc : tmm_uvm_copy_in(ctx, t);
}

/*
 * t's prefetch to the device is queued on the H2D stream: in flight until
 * the event recorded after it completes, as a swap-in is.  The mover
 * retires it (tmm_mover_progress), an access before then makes compute
 * wait for it, and the plan's feedback sees it late.  Returns 0 or the
 * backend's error, t then still HOST.
 */
static int prefetch_queued(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			   enum tmm_engine engine)
{
	int rc = ctx->be.ops->event_record(&ctx->be, engine, &t->copy);

	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	t->uvm_migrated = false;
	tmm_uvm_arriving(ctx, t);
	return 0;
}

/* ---- prefetches gathered ---------------------------------------------- */

/*
 * The guide fires an op's actions in a run after the op, and a plan
 * prefetches the tensors of a layer together: one by one, each prefetch
 * costs the host an ordering after the other streams (an event recorded
 * and waited for) and a driver call; gathered, the run costs one of each
 * (tmm_backend_prefetch_many: CUDA 13's batched prefetch), and then an
 * event per tensor, which the retirement of swap-ins needs.  Each event
 * follows the whole batch, so the guide gathers only prefetches for one
 * op, which needs them all.  A gathered tensor is held (its pages count
 * against the budget at once) but stays HOST, off the swapping-in list,
 * until the batch goes: nothing may retire a swap-in whose prefetch is
 * not queued yet.
 */

/* Whether t's prefetch is gathered and not yet queued. */
static bool gathered(const struct tmm_ctx *ctx, const struct tmm_tensor_rec *t)
{
	for (unsigned i = 0; i < ctx->uvm_batch.n; i++)
		if (ctx->uvm_batch.tensors[i] == t)
			return true;
	return false;
}

/* Adds t to the batch.  -ENOMEM where it cannot grow: t then goes at
 * once, as without a batch. */
static int gather(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_uvm_batch *b = &ctx->uvm_batch;

	if (b->n == b->cap) {
		unsigned cap = b->cap ? 2 * b->cap : 16;
		void *p = tmm_realloc(b->tensors, cap * sizeof(*b->tensors));

		if (!p)
			return -ENOMEM;
		b->tensors = p;
		p = tmm_realloc(b->ranges, cap * sizeof(*b->ranges));
		if (!p)
			return -ENOMEM;
		b->ranges = p;
		b->cap = cap;
	}
	b->tensors[b->n] = t;
	b->ranges[b->n++] = (struct tmm_managed_range){ .ptr = t->dev,
							.bytes = t->bytes };
	return 0;
}

int tmm_uvm_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	enum tmm_engine engine = TMM_ENGINE_H2D;
	char label[64];
	int rc;

	if (t->state != TMM_TS_HOST)
		return tmm_fail(ctx, -EINVAL,
				"cannot prefetch tensor %s: it is %s",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_tstate_name(t->state));
	if (t->host) { /* it left by copy: it comes back by copy */
		/* Its copy is queued now: the gathered prefetches first,
		 * so that the two ways keep the plan's order. */
		rc = tmm_uvm_batch_flush(ctx);
		return rc < 0 ? rc : copy_back(ctx, t);
	}
	if (gathered(ctx, t))
		return tmm_fail(ctx, -EINVAL, "cannot prefetch tensor %s: its "
				"prefetch is gathered already",
				tmm_tensor_label(t, label, sizeof(label)));
	rc = unprefer_host(ctx, t);
	if (rc < 0)
		return rc;
	tmm_uvm_read_mostly_back(ctx, t);
	tmm_uvm_trim_kept(ctx, tmm_managed_pages_bytes(t->bytes));
	/* The backend orders the prefetch after the swap-out's migration;
	 * t->copy becomes the prefetch's own. */
	be->ops->event_release(be, &t->copy);
	/* Away by migration, it comes back on the migrate engine, after
	 * its own way out and beside the copies: not gathered with the
	 * prefetches for the H2D engine. */
	if (t->uvm_migrated)
		engine = TMM_ENGINE_MIGRATE;
	/* Held now, so that the next prefetch's room counts it. */
	else if (ctx->uvm_batch.open && gather(ctx, t) == 0) {
		tmm_uvm_hold(ctx, t);
		return 0;
	}
	rc = be->ops->prefetch(be, engine, t->dev, t->bytes, TMM_LOC_DEVICE,
			       -1);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	if (engine == TMM_ENGINE_MIGRATE)
		ctx->c.uvm_migrate_in_bytes += t->bytes;
	return prefetch_queued(ctx, t, engine);
}

/* The batch opened, flushed and closed (mover_uvm.h). */
void tmm_uvm_batch_open(struct tmm_ctx *ctx)
{
	ctx->uvm_batch.open = ctx->mode == TMM_MODE_UVM;
}

int tmm_uvm_batch_flush(struct tmm_ctx *ctx)
{
	struct tmm_uvm_batch *b = &ctx->uvm_batch;
	unsigned n = b->n, i = 0;
	int rc;

	if (n == 0)
		return 0;
	b->n = 0;
	rc = tmm_backend_prefetch_many(&ctx->be, TMM_ENGINE_H2D, b->ranges, n,
				       TMM_LOC_DEVICE, -1);
	if (rc < 0)
		rc = tmm_mover_backend_error(ctx, rc);
	while (rc == 0 && i < n &&
	       (rc = prefetch_queued(ctx, b->tensors[i], TMM_ENGINE_H2D)) == 0)
		i++;
	if (n > 1)
		ctx->c.prefetches_gathered += i;
	/* Not queued, or no event to say when it lands: HOST, as a
	 * prefetch that failed leaves it, and its pages count no more. */
	for (; i < n; i++)
		tmm_uvm_unhold(ctx, b->tensors[i]);
	return rc;
}

int tmm_uvm_batch_close(struct tmm_ctx *ctx)
{
	int rc = tmm_uvm_batch_flush(ctx);

	ctx->uvm_batch.open = false;
	return rc;
}

/*
 * t, whose pages left by prefetch to the host, is needed now by the next
 * kernel: its pages come back by a prefetch on the compute stream, just
 * before the kernel, rather than by the kernel's faults (issue #19: on
 * the measured H100 a prefetch to the device moved 49 GB/s, and the
 * simulator charges faults at half the pinned rate plus their batches;
 * a recomputation's inputs that the plan swapped out came back so).
 * The backend orders it after the swap-out's migration.  Counted as an
 * on-demand swap-in, as in swap mode.
 */
static int prefetch_on_demand(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	ctx->c.on_demand_swap_ins++;
	/* The plan's advice may keep the pages elsewhere (a remote
	 * mapping, read duplicates): the kernel's accesses go by it. */
	if (t->uvm_advised)
		return 0;
	rc = ctx->be.ops->prefetch(&ctx->be, TMM_ENGINE_COMPUTE, t->dev,
				   t->bytes, TMM_LOC_DEVICE, -1);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, true);
	return 0;
}

int tmm_uvm_bring_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool need_data)
{
	int rc;

	/* Its pages are made or brought before they count (held). */
	tmm_uvm_trim_kept(ctx, tmm_managed_pages_bytes(t->bytes));
	if (t->host) {
		/* It left by copy: its range went back to the arena, or
		 * stayed its own with its pages discarded. */
		if (!need_data) {
			/* The op overwrites it, as a fresh output. */
			rc = t->dev ? 0 : tmm_uvm_materialize(ctx, t);
			if (rc == 0)
				rc = tmm_uvm_prefetch_fresh(ctx, t);
			if (rc < 0)
				return rc;
			tmm_mover_host_give_back(ctx, t, NULL);
			back_on_device(ctx, t);
			return 0;
		}
		rc = copy_back(ctx, t);
		if (rc < 0)
			return rc;
		ctx->c.on_demand_swap_ins++;
		rc = tmm_mover_compute_wait(ctx, &t->copy);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	}
	rc = unprefer_host(ctx, t);

	if (rc == 0) {
		tmm_uvm_read_mostly_back(ctx, t);
		rc = after_swap_out(ctx, t);
	}
	if (rc < 0)
		return rc;
	if (!need_data) {
		/* The op overwrites it: faulting its old pages in would be
		 * waste.  Its new ones are made as a fresh output's are. */
		tmm_uvm_discard(ctx, t);
		rc = tmm_uvm_prefetch_fresh(ctx, t);
	} else {
		rc = prefetch_on_demand(ctx, t);
	}
	if (rc < 0)
		return rc;
	back_on_device(ctx, t);
	return 0;
}

int tmm_uvm_advise(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		   uint32_t advice)
{
	static const enum tmm_advice map[TMM_PLAN_ADVICE_COUNT] = {
		[TMM_PLAN_ADVICE_PREFER_HOST] = TMM_ADVISE_PREFERRED_HOST,
		[TMM_PLAN_ADVICE_PREFER_DEVICE] = TMM_ADVISE_PREFERRED_DEVICE,
		[TMM_PLAN_ADVICE_UNSET_PREFERRED] = TMM_ADVISE_UNSET_PREFERRED,
		[TMM_PLAN_ADVICE_READ_MOSTLY] = TMM_ADVISE_READ_MOSTLY,
		[TMM_PLAN_ADVICE_UNSET_READ_MOSTLY] =
			TMM_ADVISE_UNSET_READ_MOSTLY,
		[TMM_PLAN_ADVICE_ACCESSED_BY_DEVICE] =
			TMM_ADVISE_ACCESSED_BY_DEVICE,
	};
	char label[64];
	int rc;

	if (advice >= TMM_PLAN_ADVICE_COUNT)
		return tmm_fail(ctx, -EINVAL, "unknown plan advice %u",
				advice);
	if (!t->dev)
		return tmm_fail(ctx, -EINVAL,
				"cannot advise on tensor %s: it holds no "
				"managed memory (not yet, or away by copy)",
				tmm_tensor_label(t, label, sizeof(label)));
	/*
	 * Read-mostly duplicates pages on every reader; a write then
	 * collapses the copies at a fault each, slower than no advice.  A
	 * tensor the iteration writes (weights the optimizer updates) is
	 * refused; the guide counts the action as skipped.
	 */
	if (advice == TMM_PLAN_ADVICE_READ_MOSTLY &&
	    tmm_tracker_written(ctx, t))
		return tmm_fail(ctx, -EINVAL,
				"read-mostly advice refused for tensor %s: "
				"the iteration writes it",
				tmm_tensor_label(t, label, sizeof(label)));
	/* Each iteration's plan advises it again: held already, or given
	 * back with the tensor (uvm_read_mostly.h), it costs no call. */
	if (advice == TMM_PLAN_ADVICE_READ_MOSTLY &&
	    (t->uvm_advised & (ADVISED_READ_MOSTLY | ADVISED_READ_MOSTLY_AWAY |
			       ADVISED_READ_MOSTLY_PENDING)))
		return 0;
	/* Advice may keep the pages off the device (remote mappings, read
	 * duplicates): what the arena knew of them no longer holds. */
	tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, false);
	rc = ctx->be.ops->advise(&ctx->be, t->dev, t->bytes, map[advice]);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	switch (advice) {
	case TMM_PLAN_ADVICE_PREFER_HOST:
	case TMM_PLAN_ADVICE_PREFER_DEVICE:
		/* The plan now owns the preferred location. */
		t->uvm_host_preferred = false;
		t->uvm_advised |= ADVISED_PREFERRED;
		break;
	case TMM_PLAN_ADVICE_UNSET_PREFERRED:
		t->uvm_host_preferred = false;
		t->uvm_advised &= (uint8_t)~ADVISED_PREFERRED;
		break;
	case TMM_PLAN_ADVICE_READ_MOSTLY:
		t->uvm_advised |= ADVISED_READ_MOSTLY;
		break;
	case TMM_PLAN_ADVICE_UNSET_READ_MOSTLY:
		tmm_uvm_read_mostly_forget(ctx, t);
		t->uvm_advised &= (uint8_t)~(ADVISED_READ_MOSTLY |
					     ADVISED_READ_MOSTLY_AWAY |
					     ADVISED_READ_MOSTLY_HOSTED);
		break;
	case TMM_PLAN_ADVICE_ACCESSED_BY_DEVICE:
		t->uvm_advised |= ADVISED_ACCESSED_BY;
		break;
	default:
		break;
	}
	return 0;
}
