/* SPDX-License-Identifier: MIT */
/*
 * mover.c — residency: making room (passive mode, compaction, shedding),
 * bringing tensors back, host access.  The copies are swap_engine.c's.
 *
 * Every byte movement between device and host goes through the mover
 * (this file and swap_engine.c), so the invariants of tensor_state.h are
 * kept in one place:
 *  - a tensor's bytes always exist somewhere: the host copy is complete
 *    before the device copy is released, and the other way round;
 *  - device memory of a SWAPPING_OUT tensor is reused only after its copy
 *    event completes (retired in tmm_mover_progress);
 *  - a host buffer that a copy reads or writes is reused only after that
 *    copy completes (the deferred list);
 *  - a pinned tensor is never chosen for eviction.
 *
 * Compute never waits for a swap-out (Capuchin §5.3): only an allocation
 * that does not fit waits, for the earliest pending swap-out, before it
 * falls back to passive eviction.
 *
 * In mode=uvm with uvm_cap=library, making room is the same loop with
 * the same victims, where "fits" means the library's count of the pages
 * it keeps on the device (device_mem.h) stays within the budget, and
 * the pool's own ways (compaction, blocks freed under a copy) do not
 * apply.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/managed_page.h"
#include "lib/mem/compact.h"
#include "lib/record/guide_state.h"
#include "mover.h"
#include "mover_uvm.h"
#include "lib/mem/hostmem.h"
#include "lib/mem/pool.h"
#include "clean_copy.h"
#include "drop.h"
#include "lib/record/tracker.h"

/* ---- making room ------------------------------------------------------ */

/* The least recently used tensor that passive mode may evict, or NULL. */
static struct tmm_tensor_rec *passive_victim(struct tmm_ctx *ctx)
{
	struct tmm_list *n;

	for (n = ctx->device_lru.next; n != &ctx->device_lru; n = n->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);

		if (t->state == TMM_TS_RESIDENT && !t->pins)
			return t;
	}
	return NULL;
}

/*
 * The least recently used tensor that only placings outer than the one
 * under way pin (lib/exec/placing.h), or NULL: a recomputation, placed
 * inside the placing of the op that needs it, may swap it out, and the
 * outer placing brings it back before it reads its address.
 */
static struct tmm_tensor_rec *outer_placing_victim(struct tmm_ctx *ctx)
{
	struct tmm_list *n;

	for (n = ctx->device_lru.next; n != &ctx->device_lru; n = n->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);

		if (t->state == TMM_TS_RESIDENT && t->pins &&
		    t->pins == t->placing_pins &&
		    t->placing_level < ctx->placing_depth)
			return t;
	}
	return NULL;
}

static int no_room(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t)
{
	struct tmm_pool_stats ps;
	uint64_t pinned = 0, in_flight = 0;
	char label[64], b1[32], b2[32], b3[32], b4[32], b5[32];
	struct tmm_list *n;

	for (n = ctx->device_lru.next; n != &ctx->device_lru; n = n->next) {
		const struct tmm_tensor_rec *r =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);

		if (r->pins)
			pinned += r->bytes;
		else if (r->state != TMM_TS_RESIDENT)
			in_flight += r->bytes;
	}
	tmm_pool_get_stats(ctx->pool, &ps);
	if (ps.map_failed)
		return tmm_fail(ctx, -ENOMEM,
				"op '%s': no room on the device for tensor %s "
				"(%s): the device refused to map memory under "
				"the pool (pool=chunks): %s; set "
				"TENSORMM_POOL=arena, or free device memory",
				ctx->current_op ? ctx->current_op : "(none)",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_fmt_bytes(t->bytes, b1, sizeof(b1)),
				ctx->be.error);
	return tmm_fail(ctx, -ENOMEM,
			"op '%s': no room on the device for tensor %s (%s): "
			"%s of the %s budget is held by tensors the running "
			"op or tmm_acquire pins, %s by copies in flight, and "
			"the largest free block is %s; raise "
			"TENSORMM_BUDGET or release acquired tensors",
			ctx->current_op ? ctx->current_op : "(none)",
			tmm_tensor_label(t, label, sizeof(label)),
			tmm_fmt_bytes(t->bytes, b1, sizeof(b1)),
			tmm_fmt_bytes(pinned, b2, sizeof(b2)),
			tmm_fmt_bytes(ctx->budget, b3, sizeof(b3)),
			tmm_fmt_bytes(in_flight, b4, sizeof(b4)),
			tmm_fmt_bytes(ps.largest_free, b5, sizeof(b5)));
}

/*
 * Compaction (lib/mem/compact.c) for `bytes`, when the pool has them free
 * but in no one hole: tensors whose swap-in has landed are retired first,
 * so that they may move too.  With placing_too, the running op's own
 * tensors may move as well.
 */
static int compact_for(struct tmm_ctx *ctx, size_t bytes, bool placing_too)
{
	if (!tmm_compact_has_bytes(ctx, bytes))
		return -ENOSPC;
	tmm_mover_progress(ctx);
	return tmm_compact_for(ctx, bytes, placing_too);
}

/*
 * Whether `bytes` fit now: in swap mode a block of the pool, taken into
 * *block; in mode=uvm room under the cap (tmm_uvm_cap_fits), taken by the
 * caller.
 */
static bool room_now(struct tmm_ctx *ctx, size_t bytes,
		     struct tmm_pool_block **block)
{
	if (tmm_mover_uvm(ctx))
		return tmm_uvm_cap_fits(ctx, bytes);
	return tmm_pool_alloc(ctx->pool, bytes, block) == 0;
}

/*
 * uvm_cap=both: pages that pass the driver's room are the driver's to
 * make room for, by its own evictions, but the library evicts ahead of
 * it, as with uvm_cap=library, while it has victims: its way out
 * (a pinned copy on the simulator's profiles, 55 GB/s on the H100 of
 * docs/gpu-h100.md) is faster than the driver's write-back (8.7 GB/s
 * there), which then has nothing to evict (issue #19: ResNet-50 at half
 * its peak under checkpoint, simulated, 242.9 ms a step with the driver
 * evicting, 39.0 ms so).  What it cannot evict (the running op's own
 * tensors, tensors tmm_acquire pins) the driver takes, so an op that fits
 * the budget but not beside them still runs, as with uvm_cap=driver.  A
 * plan's prefetch (no eviction) that would pass the room is skipped, as
 * with uvm_cap=library (let through, the driver evicted live pages for
 * it: VGG-16 under auto at half its peak, simulated, 134.2 ms a step
 * against 107.3).
 */
static bool uvm_driver_takes(const struct tmm_ctx *ctx)
{
	return ctx->cfg.uvm_cap == TMM_UVM_CAP_BOTH;
}

/* A passive eviction (Capuchin §4.2) of victim, synchronous for the
 * device, and for the host where it may not retire the copy early. */
static int evict_passive(struct tmm_ctx *ctx, struct tmm_tensor_rec *victim)
{
	int rc = tmm_mover_swap_out(ctx, victim, false);

	if (rc == 0)
		rc = tmm_mover_may_retire_early(ctx, victim)
			     ? tmm_mover_retire_early(ctx, victim)
			     : tmm_mover_settle(ctx, victim);
	if (rc < 0)
		return rc;
	ctx->c.passive_evictions++;
	ctx->c.passive_eviction_bytes += victim->bytes;
	tmm_tracker_event(ctx, TMM_EV_PASSIVE_EVICT, victim);
	return 0;
}

/*
 * mode=uvm, the copy way: a copy out still in flight holds its pages
 * until the host sees it end, which with the host ahead of its GPU is
 * many ops after the GPU ended it.  Where `bytes` more pages would take
 * the library's count past what the driver keeps on the device
 * (tmm_uvm_driver_room), the earliest are retired now, the compute engine
 * waiting for their copies, as swap mode retires an eviction whose memory
 * is needed: their pages go to the next tensors, not to the driver's own
 * evictions (simulated, sim_host=ahead: 10-15x the unconstrained step on
 * the MLPs of issue #19 at 40%, against 1.2-1.9x in lockstep).
 */
static int uvm_retire_for(struct tmm_ctx *ctx, size_t bytes)
{
	uint64_t room = tmm_uvm_driver_room(ctx);

	while (!tmm_list_empty(&ctx->swapping_out) &&
	       ctx->uvm_held + tmm_mover_footprint(ctx, bytes) > room) {
		int rc = tmm_mover_retire_early(
			ctx, IN_FLIGHT_FIRST(&ctx->swapping_out));

		if (rc < 0)
			return rc;
		ctx->c.swap_out_waits++;
	}
	return 0;
}

/*
 * Takes `bytes` of device memory for t (NULL: scratch), making room as
 * tmm_mover_alloc_device describes; with !may_evict it only waits for
 * pending swap-outs and returns -ENOSPC (no message) when that is not
 * enough.  In mode=uvm it only makes the room (block is not used).
 */
static int make_room_for(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			 size_t bytes, bool may_evict,
			 struct tmm_pool_block **block)
{
	struct tmm_tensor_rec *victim, *landing;
	/* Compaction, the pool's way out, has no place in mode=uvm. */
	bool uvm = tmm_mover_uvm(ctx);
	bool compacted = false; /* and nothing else freed since */
	bool moved_placing = false;
	int rc = uvm ? uvm_retire_for(ctx, bytes) : 0;

	if (rc < 0)
		return rc;
	for (;;) {
		if (room_now(ctx, bytes, block))
			return 0;
		/* Decoupled swapping: a pending swap-out will free its
		 * memory soon, so wait for the earliest one first. */
		if (!tmm_list_empty(&ctx->swapping_out)) {
			victim = IN_FLIGHT_FIRST(&ctx->swapping_out);
			if (tmm_mover_may_retire_early(ctx, victim)) {
				rc = tmm_mover_retire_early(ctx, victim);
				if (rc < 0)
					return rc;
			} else {
				rc = tmm_mover_host_wait(ctx, &victim->copy);
				if (rc < 0)
					return tmm_mover_backend_error(ctx,
								       rc);
			}
			ctx->c.swap_out_waits++;
			tmm_mover_progress(ctx);
			compacted = false;
			continue;
		}
		/* So will a block freed under a copy still reading it. */
		if (tmm_mover_wait_deferred_block(ctx)) {
			compacted = false;
			continue;
		}
		/* Enough free bytes but no hole: move, don't evict.  A
		 * compaction that did not make the hole is not tried again
		 * until something else has freed memory. */
		rc = compacted || uvm ? -ENOSPC
				      : compact_for(ctx, bytes, false);
		if (rc == 0) {
			compacted = true;
			continue;
		}
		if (rc != -ENOSPC)
			return rc;
		/* Following a plan, enough free bytes but no hole even so:
		 * move the running op's own tensors too, rather than evict.
		 * The plan's curve counts bytes, and a plan that fits on it
		 * should not leave passive mode the work of a hole; passive
		 * mode alone keeps its order (moves last).  With pool=chunks
		 * a hole costs no memory: nothing to do here. */
		if (may_evict && !moved_placing && !uvm &&
		    !tmm_pool_is_mapped(ctx->pool) &&
		    tmm_guide_following(ctx)) {
			rc = compact_for(ctx, bytes, true);
			if (rc == 0) {
				moved_placing = true;
				continue;
			}
			if (rc != -ENOSPC)
				return rc;
		}
		compacted = false;
		if (!may_evict)
			return -ENOSPC;
		/* Collective recomputation (Capuchin §5.3): what was
		 * regenerated on the way stays only while memory allows. */
		if (tmm_recompute_shed(ctx))
			continue;
		/* Enough free bytes, but compaction's only windows pass
		 * swap-ins still landing, which cannot move yet: wait for
		 * them and compact, rather than evict.  A host ahead of its
		 * device sees many (issue #19: tensile on ResNet-50 at half
		 * its peak, simulated, wanted 98 MB with 358 MB free beside
		 * 99 swap-ins; it evicted 270 tensors a step, each back on
		 * demand: 59-65 ms a step, 33 ms in lockstep). */
		landing = uvm ? NULL : tmm_compact_landing_in_the_way(ctx,
								      bytes);
		rc = landing ? tmm_mover_wait_landed(ctx, landing) : 0;
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		/* Passive mode (Capuchin §4.2): evict on demand, least
		 * recently used first, synchronously. */
		victim = passive_victim(ctx);
		/* A swap-in still landing holds its memory, and can be
		 * evicted once it has: wait for the earliest, then look
		 * again, before calling the device full. */
		if (!victim && !tmm_list_empty(&ctx->swapping_in)) {
			rc = tmm_mover_wait_landed(
				ctx, IN_FLIGHT_FIRST(&ctx->swapping_in));
			if (rc < 0)
				return rc;
			continue;
		}
		/* Nothing left to evict: the last way out moves the
		 * running op's own tensors, which it is still placing, so
		 * that an op whose tensors fit the budget finds a hole.
		 * Prefetches (!may_evict) never get here: they must not
		 * take the op's room. */
		if (!victim && !moved_placing && !uvm) {
			rc = compact_for(ctx, bytes, true);
			if (rc == 0) {
				moved_placing = true;
				continue;
			}
			if (rc != -ENOSPC)
				return rc;
		}
		/* Still short, inside a recomputation: fall back to a swap
		 * of what only the ops outside it are placing. */
		if (!victim) {
			victim = outer_placing_victim(ctx);
			moved_placing = false; /* it frees room to move in */
		}
		if (!victim && uvm && uvm_driver_takes(ctx))
			return 0;
		if (!victim && uvm)
			return tmm_uvm_no_room(ctx, t, bytes);
		if (!victim)
			return t ? no_room(ctx, t)
				 : tmm_fail(ctx, -ENOMEM,
					    "op '%s': no room on the device "
					    "for a %zu-byte recomputation "
					    "buffer; raise TENSORMM_BUDGET",
					    ctx->current_op ? ctx->current_op
							    : "(none)",
					    bytes);
		rc = evict_passive(ctx, victim);
		if (rc < 0)
			return rc;
		if (tmm_guide_following(ctx))
			ctx->c.guided_passive_evictions++;
		tmm_log(ctx, TMM_LOG_DEBUG, "passive eviction of %zu bytes "
			"for %zu in op '%s'%s%s%s", victim->bytes, bytes,
			ctx->current_op ? ctx->current_op : "(none)",
			ctx->recompute_for ? " (recomputing for '" : "",
			ctx->recompute_for ? ctx->recompute_for : "",
			ctx->recompute_for ? "')" : "");
	}
}

uint64_t tmm_mover_held(const struct tmm_ctx *ctx)
{
	return tmm_mover_uvm(ctx) ? ctx->uvm_held : tmm_pool_in_use(ctx->pool);
}

/*
 * The same ways out as make_room_for, in the same order, until the pool
 * (in mode=uvm, the count of pages) holds no more than `limit` bytes: a
 * swap-out copies the bytes to the host before their block is freed, so
 * nothing is lost.
 */
int tmm_mover_shrink_to(struct tmm_ctx *ctx, uint64_t limit)
{
	struct tmm_tensor_rec *victim;
	int rc;

	while (tmm_mover_held(ctx) > limit) {
		if (!tmm_list_empty(&ctx->swapping_out)) {
			victim = IN_FLIGHT_FIRST(&ctx->swapping_out);
			rc = tmm_mover_host_wait(ctx, &victim->copy);
			if (rc < 0)
				return tmm_mover_backend_error(ctx, rc);
			tmm_mover_progress(ctx);
			continue;
		}
		if (tmm_mover_wait_deferred_block(ctx))
			continue;
		if (tmm_recompute_shed(ctx))
			continue;
		victim = passive_victim(ctx);
		if (!victim)
			return -EBUSY; /* pinned: try again later */
		rc = evict_passive(ctx, victim);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tmm_mover_set_limit(struct tmm_ctx *ctx, uint64_t limit)
{
	int rc;

	if (tmm_mover_uvm(ctx) && ctx->cfg.uvm_cap != TMM_UVM_CAP_LIBRARY) {
		rc = ctx->be.ops->managed_limit(&ctx->be, limit);
		if (rc < 0)
			return tmm_mover_backend_error(ctx, rc);
		/* both: the library swaps out to a limit that binds the
		 * driver (CUDA's room is the device's, whatever the
		 * budget), and what it cannot now (pinned) the driver
		 * evicts. */
		if (ctx->cfg.uvm_cap == TMM_UVM_CAP_DRIVER ||
		    !ctx->be.info.managed_limit_binds)
			return 0;
		rc = tmm_mover_shrink_to(ctx, limit);
		return rc == -EBUSY ? 0 : rc;
	}
	if (!tmm_mover_uvm(ctx))
		tmm_pool_set_limit(ctx->pool, limit);
	return tmm_mover_shrink_to(ctx, limit);
}

static int alloc_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			bool may_evict)
{
	struct tmm_pool_block *b;
	int rc;

	assert(t->state == TMM_TS_EMPTY || t->state == TMM_TS_HOST ||
	       t->state == TMM_TS_DROPPED);
	rc = make_room_for(ctx, t, t->bytes, may_evict, &b);
	if (rc < 0)
		return rc;
	tmm_device_hold(ctx, t, b);
	return 0;
}

int tmm_mover_place_at(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       uint64_t offset, uint64_t bytes)
{
	struct tmm_pool_block *b;
	int rc;

	if (tmm_mover_uvm(ctx) || t->state != TMM_TS_EMPTY)
		return -EINVAL;
	rc = tmm_pool_alloc_at(ctx->pool, offset, bytes, &b);
	if (rc < 0)
		return rc;
	tmm_device_hold(ctx, t, b);
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
	return 0;
}

uint64_t tmm_mover_footprint(const struct tmm_ctx *ctx, uint64_t bytes)
{
	uint64_t unit = tmm_mover_uvm(ctx) ? TMM_MANAGED_PAGE : TMM_POOL_ALIGN;

	return (bytes + unit - 1) / unit * unit;
}

/* mode=uvm: room under the cap, then t's block of the managed arena
 * (kept when it has one), whose pages count from now on. */
static int uvm_alloc_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = make_room_for(ctx, t, t->bytes, true, NULL);

	if (rc == 0)
		rc = tmm_uvm_materialize(ctx, t);
	if (rc == 0)
		tmm_uvm_hold(ctx, t);
	return rc;
}

int tmm_mover_alloc_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (tmm_mover_uvm(ctx))
		return uvm_alloc_device(ctx, t);
	return alloc_device(ctx, t, true);
}

int tmm_mover_alloc_scratch(struct tmm_ctx *ctx, size_t bytes,
			    struct tmm_pool_block **block, void **ptr)
{
	int rc = make_room_for(ctx, NULL, bytes, true, block);

	if (rc < 0)
		return rc;
	if (tmm_mover_uvm(ctx))
		return tmm_uvm_alloc_scratch(ctx, bytes, block, ptr);
	*ptr = (char *)ctx->arena + (*block)->offset;
	return 0;
}

void tmm_mover_free_scratch(struct tmm_ctx *ctx, struct tmm_pool_block *block)
{
	if (tmm_mover_uvm(ctx))
		tmm_uvm_free_scratch(ctx, block);
	else if (block)
		tmm_pool_free(ctx->pool, block);
}

/* ---- bringing tensors back ------------------------------------------- */

static int swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		   bool may_evict)
{
	char label[64];
	int rc;

	if (t->state != TMM_TS_HOST)
		return tmm_fail(ctx, -EINVAL,
				"cannot swap in tensor %s: it is %s",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_tstate_name(t->state));
	rc = alloc_device(ctx, t, may_evict);
	if (rc < 0)
		return rc;
	return tmm_mover_swap_in_copy(ctx, t);
}

int tmm_mover_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool sync)
{
	char label[64];
	int rc;

	/* Placing pins allow it: no one holds the address yet. */
	if (t->state != TMM_TS_RESIDENT || t->pins != t->placing_pins)
		return tmm_fail(ctx, -EINVAL,
				"cannot evict tensor %s: it is %s%s",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_tstate_name(t->state),
				t->pins != t->placing_pins
					? " and pinned by a running op or "
					  "tmm_acquire"
					: "");
	if (!tmm_mover_uvm(ctx))
		return tmm_mover_copy_out(ctx, t, sync);
	rc = tmm_uvm_swap_out(ctx, t, false);
	/* By copy (uvm_path.h), it is in flight like a swap-out's copy. */
	if (rc == 0 && sync && t->state == TMM_TS_SWAPPING_OUT)
		return tmm_mover_settle(ctx, t);
	return rc;
}

int tmm_mover_migrate_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (!tmm_mover_uvm(ctx) || t->state != TMM_TS_RESIDENT ||
	    t->pins != t->placing_pins)
		return tmm_mover_swap_out(ctx, t, false);
	return tmm_uvm_swap_out(ctx, t, true);
}

int tmm_mover_swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	return swap_in(ctx, t, true);
}

int tmm_mover_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = 0;

	if (!tmm_mover_uvm(ctx))
		return swap_in(ctx, t, false);
	/* Under uvm_cap=library, only into room the cap has (or will
	 * have, once a pending swap-out ends): a prefetch never evicts. */
	if (t->state == TMM_TS_HOST)
		rc = make_room_for(ctx, t, t->bytes, false, NULL);
	return rc < 0 ? rc : tmm_uvm_prefetch(ctx, t);
}

int tmm_mover_advise(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     uint32_t advice)
{
	return tmm_mover_uvm(ctx) ? tmm_uvm_advise(ctx, t, advice) : 0;
}

int tmm_mover_make_resident(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			    bool need_data)
{
	char label[64];
	int rc;

	switch (t->state) {
	case TMM_TS_RESIDENT:
		return 0;
	case TMM_TS_EMPTY:
		if (need_data) {
			char call[96];

			snprintf(call, sizeof(call), "op '%.80s'",
				 ctx->current_op ? ctx->current_op : "(none)");
			return tmm_tensor_no_data(ctx, t, call);
		}
		rc = tmm_mover_alloc_device(ctx, t);
		if (rc < 0)
			return rc;
		tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		return 0;
	case TMM_TS_SWAPPING_OUT:
		/* Back-access before the copy ended: the device bytes are
		 * still valid, so keep them and let the host copy go.  It
		 * still reads them: read_by says until when. */
		if (t->read_by.valid)
			ctx->be.ops->event_release(&ctx->be, &t->read_by);
		rc = ctx->be.ops->event_record(&ctx->be, TMM_ENGINE_D2H,
					       &t->read_by);
		if (rc < 0)
			return tmm_mover_backend_error(ctx, rc);
		tmm_list_del(&t->in_flight);
		tmm_mover_host_give_back(ctx, t, &t->copy);
		tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		return 0;
	case TMM_TS_HOST:
		if (tmm_mover_uvm(ctx)) {
			rc = make_room_for(ctx, t, t->bytes, true, NULL);
			return rc < 0 ? rc
				      : tmm_uvm_bring_back(ctx, t, need_data);
		}
		if (!need_data) {
			/* The op overwrites it: its old bytes are dead. */
			tmm_mover_host_give_back(ctx, t, NULL);
			t->state = TMM_TS_EMPTY;
			return tmm_mover_make_resident(ctx, t, false);
		}
		rc = tmm_mover_swap_in(ctx, t);
		if (rc < 0)
			return rc;
		ctx->c.on_demand_swap_ins++;
		/* Compute waits for the copy, as for any swap-in. */
		__attribute__((fallthrough));
	case TMM_TS_SWAPPING_IN:
		rc = tmm_mover_compute_wait(ctx, &t->copy);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	case TMM_TS_DROPPED:
		if (!need_data) {
			/* The op overwrites it: no need to recompute. */
			tmm_recompute_forget(ctx, t);
			return tmm_mover_make_resident(ctx, t, false);
		}
		/* Its bytes come back by recomputation, which runs an op:
		 * tmm_recompute_make_resident, above the mover, does it. */
		return tmm_fail(ctx, -EINVAL,
				"tensor %s is dropped: it is recomputed "
				"above the mover (tmm_recompute_make_"
				"resident)",
				tmm_tensor_label(t, label, sizeof(label)));
	default:
		return tmm_fail(ctx, -EINVAL, "tensor %s is in no known state",
				tmm_tensor_label(t, label, sizeof(label)));
	}
}

void tmm_mover_release(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_recompute_forget(ctx, t);
	if (tmm_mover_uvm(ctx)) {
		tmm_uvm_release(ctx, t);
		return;
	}
	/* A copy may still read or write the memory: the compute engine
	 * waits for it where it may (swap_engine.h), else the host.  A
	 * backend error here leaves nothing better to do than to free. */
	if (tmm_mover_abandon_copy(ctx, t) < 0 &&
	    tmm_mover_settle(ctx, t) < 0)
		tmm_mover_retire_failed_copy(ctx, t);
	if (t->block)
		tmm_mover_device_give_back(ctx, t);
	if (t->host)
		tmm_mover_host_give_back(ctx, t, NULL);
	tmm_clean_drop(ctx, t);
	/* Retiring the record is not a life-cycle transition. */
	t->state = TMM_TS_EMPTY;
}

void tmm_tensor_retire(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->ghost) {
		tmm_list_del(&t->ghosts);
		t->ghost = false;
	}
	tmm_mover_release(ctx, t);
	tmm_tensor_free(ctx, t);
}

void tmm_tensor_table_clear(struct tmm_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->n_slots; i++) {
		struct tmm_tensor_rec *t = tmm_tensor_at(ctx, i);

		if (t->live)
			tmm_tensor_retire(ctx, t);
	}
}

/* ---- host access for tmm_tensor_read / tmm_tensor_write --------------- */

int tmm_mover_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		    size_t offset, const void *src, size_t bytes)
{
	struct tmm_backend *be = &ctx->be;
	int rc = tmm_mover_settle(ctx, t);

	if (rc < 0)
		return rc;
	/* A collective still reducing it: the host waits for its end
	 * before its bytes change under it. */
	rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, true);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_lineage_host_write(ctx, t);
	if (tmm_mover_uvm(ctx))
		return tmm_uvm_write(ctx, t, offset, src, bytes);
	switch (t->state) {
	case TMM_TS_EMPTY:
		rc = tmm_mover_host_take(ctx, t);
		if (rc < 0)
			return rc;
		if (src && (offset != 0 || bytes != t->bytes))
			memset(t->host, 0, t->bytes);
		if (src)
			memcpy((char *)t->host + offset, src, bytes);
		/* Place it on the device only if that costs no eviction:
		 * writing weights must not push out other weights. */
		if (tmm_device_take(ctx, t) == 0) {
			rc = be->ops->copy_sync(be, t->dev, t->host, t->bytes,
						true);
			if (rc < 0) {
				tmm_device_give_back(ctx, t);
				tmm_tensor_set_state(t, TMM_TS_HOST);
				return tmm_mover_backend_error(ctx, rc);
			}
			tmm_mover_host_give_back(ctx, t, NULL);
			tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		} else {
			tmm_tensor_set_state(t, TMM_TS_HOST);
		}
		return 0;
	case TMM_TS_RESIDENT:
		/* Not under a swap-out that a back-access let go on. */
		rc = tmm_tensor_wait_readers(ctx, t);
		if (rc == 0)
			rc = be->ops->copy_sync(be, (char *)t->dev + offset,
						src, bytes, true);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	case TMM_TS_HOST:
		if (src)
			memcpy((char *)t->host + offset, src, bytes);
		return 0;
	default:
		return tmm_fail(ctx, -ENOTSUP, "cannot write a %s tensor",
				tmm_tstate_name(t->state));
	}
}

int tmm_mover_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		   size_t offset, void *dst, size_t bytes)
{
	struct tmm_backend *be = &ctx->be;
	int rc = tmm_mover_settle(ctx, t);

	if (rc < 0)
		return rc;
	/* A collective still reducing it: the host waits for its end. */
	rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, true);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	if (tmm_mover_uvm(ctx))
		return tmm_uvm_read(ctx, t, offset, dst, bytes);
	switch (t->state) {
	case TMM_TS_EMPTY:
		return tmm_tensor_no_data(ctx, t, "tmm_tensor_read");
	case TMM_TS_RESIDENT:
		rc = be->ops->copy_sync(be, dst, (char *)t->dev + offset, bytes,
					false);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	case TMM_TS_HOST:
		memcpy(dst, (char *)t->host + offset, bytes);
		return 0;
	default:
		return tmm_fail(ctx, -ENOTSUP, "cannot read a %s tensor",
				tmm_tstate_name(t->state));
	}
}
