/* SPDX-License-Identifier: MIT */
/*
 * device_mem.c — a tensor's device memory: a block of the pool in swap
 * mode, its managed pages in uvm mode (mover_uvm.c), and the counters of
 * those pages that the driver keeps.
 *
 * Below the mover, which makes room before it takes memory, below
 * dropping (drop.c), which only gives memory back, and below the swap
 * engine, whose copy out in mode=uvm ends in a discard (uvm_path.h).
 */
#include <stdio.h>

#include "device_mem.h"
#include "lib/base/managed_page.h"
#include "lib/mem/pool.h"
#include "lib/mem/uvm_arena.h"
#include "lib/record/tracker.h"

int tmm_device_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_pool_block *b;
	int rc = tmm_pool_alloc(ctx->pool, t->bytes, &b);

	if (rc < 0)
		return rc;
	tmm_device_hold(ctx, t, b);
	return 0;
}

void tmm_device_hold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     struct tmm_pool_block *b)
{
	t->block = b;
	t->dev = (char *)ctx->arena + b->offset;
	tmm_list_add_tail(&ctx->device_lru, &t->on_device);
}

void tmm_device_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_pool_free(ctx->pool, t->block);
	t->block = NULL;
	t->dev = NULL;
	if (tmm_list_linked(&t->on_device))
		tmm_list_del(&t->on_device);
}

void tmm_device_free(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (ctx->mode == TMM_MODE_UVM)
		tmm_uvm_discard(ctx, t);
	else
		tmm_device_give_back(ctx, t);
}

/* ---- mode=uvm: a tensor's managed pages -------------------------- */

/*
 * Where the backend cannot say which managed pages are on the device
 * (CUDA's driver keeps that to itself), the library's own count of them,
 * uvm_held, is the device use it reports: what its tensors' states say
 * is there.  The driver may have moved pages the library does not know
 * of, so it is a count of intent, not a reading.
 */
static void mirror_held(struct tmm_ctx *ctx)
{
	if (ctx->be.info.managed_resident)
		return;
	ctx->c.uvm_resident = ctx->uvm_held;
	ctx->c.uvm_resident_peak = ctx->uvm_held_peak;
}

void tmm_uvm_sync_counters(struct tmm_ctx *ctx)
{
	struct tmm_managed_stats st;
	struct tmm_counters *c = &ctx->c;

	if (ctx->be.ops->managed_stats(&ctx->be, &st) < 0)
		return;
	c->uvm_fault_batches = st.fault_batches;
	c->uvm_faults = st.faults;
	c->uvm_fault_bytes = st.fault_bytes;
	c->uvm_prefetch_bytes = st.prefetch_bytes;
	c->uvm_evictions = st.evictions;
	c->uvm_eviction_bytes = st.eviction_bytes;
	c->uvm_remote_bytes = st.remote_bytes;
	c->uvm_discard_bytes = st.discard_bytes;
	c->uvm_fault_ns = st.stall_ns;
	c->uvm_kernel_copy_bytes = st.kernel_copy_bytes;
	c->uvm_resident = st.resident;
	/* The driver's peak is since open; after tmm_stats_reset_peak
	 * only one above the mark it left is new, and otherwise what is
	 * resident at each look is the best known (a peak between two
	 * looks, under the mark, goes unseen). */
	if (st.resident_peak > ctx->uvm_peak_mark)
		c->uvm_resident_peak = st.resident_peak;
	else if (st.resident > c->uvm_resident_peak)
		c->uvm_resident_peak = st.resident;
	mirror_held(ctx);
}

uint64_t tmm_uvm_driver_room(const struct tmm_ctx *ctx)
{
	if (ctx->cfg.uvm_cap != TMM_UVM_CAP_LIBRARY &&
	    !ctx->be.info.managed_limit_binds)
		return ctx->be.info.free_at_open;
	return ctx->budget;
}

bool tmm_uvm_room_to_keep(const struct tmm_ctx *ctx, uint64_t bytes)
{
	return ctx->cfg.uvm_keep && ctx->in_iteration &&
	       ctx->uvm_held + tmm_uvm_arena_kept(ctx->uvm_arena) + bytes <=
		       tmm_uvm_driver_room(ctx);
}

bool tmm_uvm_may_keep(const struct tmm_ctx *ctx,
		      const struct tmm_tensor_rec *t)
{
	return t->block && !t->uvm_host_touched &&
	       tmm_uvm_room_to_keep(ctx, t->block->size) &&
	       tmm_uvm_arena_on_device(ctx->uvm_arena, t->dev, t->bytes);
}

void tmm_uvm_copied_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_uvm_unhold(ctx, t);
	if (!t->uvm_advised && tmm_uvm_may_keep(ctx, t) &&
	    tmm_uvm_arena_keep(ctx->uvm_arena, t->block)) {
		t->dev = NULL;
		t->block = NULL;
		return;
	}
	tmm_uvm_discard(ctx, t);
}

void tmm_uvm_trim_kept(struct tmm_ctx *ctx, uint64_t coming)
{
	uint64_t room = tmm_uvm_driver_room(ctx);
	uint64_t taken = ctx->uvm_held + coming;
	bool failed = false;

	if (!tmm_uvm_arena_kept(ctx->uvm_arena))
		return;
	tmm_uvm_arena_trim(ctx->uvm_arena, room > taken ? room - taken : 0,
			   &failed);
	if (failed)
		tmm_log(ctx, TMM_LOG_WARN, "mode=uvm: a kept block's pages "
			"were not discarded (%s); they cost only room, which "
			"the driver may write back; TENSORMM_UVM_KEEP=off "
			"keeps no block", ctx->be.error);
}

static void held_add(struct tmm_ctx *ctx, uint64_t bytes)
{
	ctx->uvm_held += bytes;
	if (ctx->uvm_held > ctx->uvm_held_peak)
		ctx->uvm_held_peak = ctx->uvm_held;
	mirror_held(ctx);
	tmm_uvm_trim_kept(ctx, 0);
}

void tmm_uvm_hold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (tmm_list_linked(&t->on_device))
		return;
	held_add(ctx, tmm_managed_pages_bytes(t->bytes));
	/* The most recently used: it is about to be touched. */
	tmm_list_add_tail(&ctx->device_lru, &t->on_device);
}

void tmm_uvm_unhold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (!tmm_list_linked(&t->on_device))
		return;
	ctx->uvm_held -= tmm_managed_pages_bytes(t->bytes);
	tmm_list_del(&t->on_device);
	mirror_held(ctx);
}

void tmm_uvm_hold_scratch(struct tmm_ctx *ctx, uint64_t bytes, int sign)
{
	if (sign > 0) {
		held_add(ctx, bytes);
	} else {
		ctx->uvm_held -= bytes;
		mirror_held(ctx);
	}
}

void tmm_uvm_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	/* Its pages go: they no longer count, whatever the state the
	 * caller gives it next. */
	tmm_uvm_unhold(ctx, t);
	tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, false);
	/* A discard that fails only costs the write-back it would save:
	 * the range is still the tensor's, to be rewritten on use. */
	if (t->dev && ctx->be.ops->discard(&ctx->be, t->dev, t->bytes) < 0)
		tmm_log(ctx, TMM_LOG_WARN, "%s", ctx->be.error);
	tmm_uvm_sync_counters(ctx);
}

void tmm_uvm_arriving(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_IN);
	tmm_uvm_hold(ctx, t);
	tmm_list_add_tail(&ctx->swapping_in, &t->in_flight);
	tmm_tracker_event(ctx, TMM_EV_SWAP_IN, t);
	ctx->c.swap_in_count++;
	ctx->c.swap_in_bytes += t->bytes;
	tmm_uvm_sync_counters(ctx);
}

/*
 * mode=uvm with uvm_cap=library: nothing left to swap out, and `bytes`
 * for t (NULL: a recomputation buffer or the workspace) would take the
 * count of pages past the budget.  Says what holds the count, and the
 * knobs.
 */
int tmm_uvm_no_room(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		    size_t bytes)
{
	uint64_t pinned = 0, in_flight = 0, tensors = 0;
	char label[64], what[96], b1[32], b2[32], b3[32], b4[32], b5[32];
	struct tmm_list *n;

	for (n = ctx->device_lru.next; n != &ctx->device_lru; n = n->next) {
		const struct tmm_tensor_rec *r =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);
		uint64_t pages = tmm_managed_pages_bytes(r->bytes);

		tensors += pages;
		if (r->pins)
			pinned += pages;
		else if (r->state != TMM_TS_RESIDENT)
			in_flight += pages;
	}
	if (t)
		snprintf(what, sizeof(what), "tensor %s",
			 tmm_tensor_label(t, label, sizeof(label)));
	else
		snprintf(what, sizeof(what), "a scratch buffer");
	return tmm_fail(ctx, -ENOMEM,
			"op '%s': no room on the device for %s (%s) under the "
			"%s budget, which the library holds with "
			"uvm_cap=library: of its pages there, %s are tensors "
			"the running op or tmm_acquire pins, %s copies in "
			"flight and %s recomputation buffers or the "
			"workspace; raise TENSORMM_BUDGET, release acquired "
			"tensors, or set TENSORMM_UVM_CAP=both to leave the "
			"pages over it to the driver",
			ctx->current_op ? ctx->current_op : "(none)", what,
			tmm_fmt_bytes(bytes, b1, sizeof(b1)),
			tmm_fmt_bytes(ctx->budget, b2, sizeof(b2)),
			tmm_fmt_bytes(pinned, b3, sizeof(b3)),
			tmm_fmt_bytes(in_flight, b4, sizeof(b4)),
			tmm_fmt_bytes(ctx->uvm_held - tensors, b5,
				      sizeof(b5)));
}
