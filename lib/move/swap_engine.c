/* SPDX-License-Identifier: MIT */
/*
 * swap_engine.c — the swap engine: copies between device and host, queued
 * after the compute work issued so far, and retired when their events
 * complete (see swap_engine.h; mover.c is the other half of the mover).
 *
 * Copies are queued after the compute work issued so far (Capuchin §5.4:
 * an action triggered by an access takes effect when the device reaches
 * that access), and compute never waits for a swap-out (§5.3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clean_copy.h"
#include "device_mem.h"
#include "lib/mem/hostmem.h"
#include "lib/mem/pool.h"
#include "lib/record/tracker.h"
#include "swap_engine.h"
#include "uvm_read_mostly.h"
#include "lib/base/xalloc.h"

/* ---- waiting, with the time lost counted as stall -------------------- */

int tmm_mover_host_wait(struct tmm_ctx *ctx, const tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t t0 = be->ops->now_ns(be);
	int rc = be->ops->event_sync(be, ev);

	ctx->c.stall_ns += be->ops->now_ns(be) - t0;
	return rc;
}

int tmm_mover_wait_landed(struct tmm_ctx *ctx, struct tmm_tensor_rec *in)
{
	while (in->state == TMM_TS_SWAPPING_IN) {
		struct tmm_tensor_rec *first =
			IN_FLIGHT_FIRST(&ctx->swapping_in);
		int rc = tmm_mover_host_wait(ctx, &first->copy);

		if (rc < 0)
			return tmm_mover_backend_error(ctx, rc);
		tmm_mover_progress(ctx);
		if (first->state == TMM_TS_SWAPPING_IN)
			return 0;
	}
	return 1;
}

int tmm_mover_compute_wait(struct tmm_ctx *ctx, const tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t t0 = be->ops->now_ns(be);
	int rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, ev);

	ctx->c.stall_ns += be->ops->now_ns(be) - t0;
	return rc;
}

int tmm_mover_backend_error(struct tmm_ctx *ctx, int rc)
{
	return tmm_fail(ctx, rc, "%s", ctx->be.error);
}

/*
 * Queues a copy on a copy engine, ordered after the compute work issued so
 * far: the source may still be being written, or the destination still
 * being read, by kernels already queued.
 */
int tmm_mover_copy_after_compute(struct tmm_ctx *ctx, enum tmm_engine engine,
				 void *dst, const void *src, size_t bytes,
				 tmm_event *done)
{
	struct tmm_backend *be = &ctx->be;
	tmm_event after = { 0 };
	int rc;

	rc = be->ops->event_record(be, TMM_ENGINE_COMPUTE, &after);
	if (rc == 0)
		rc = be->ops->engine_wait(be, engine, &after);
	be->ops->event_release(be, &after);
	if (rc == 0)
		rc = be->ops->copy_async(be, engine, dst, src, bytes);
	if (rc == 0)
		rc = be->ops->event_record(be, engine, done);
	return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
}

/* ---- host memory ----------------------------------------------------- */

int tmm_mover_host_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	/* Its clean copy's buffer, stale or not, is the right size and
	 * counted already. */
	if (tmm_clean_reuse(t))
		return 0;
	rc = tmm_hostmem_get(ctx->hostmem, t->bytes, &t->host);
	/* Pinned memory ran short: the clean copies are a cache of it. */
	if (rc == -ENOMEM && tmm_clean_reclaim(ctx))
		rc = tmm_hostmem_get(ctx->hostmem, t->bytes, &t->host);
	if (rc < 0)
		return tmm_fail(ctx, rc,
				"no pinned host memory for tensor of %zu "
				"bytes: %s",
				t->bytes, ctx->be.error);
	ctx->c.host_in_use += t->bytes;
	/* The backend had its buffers another way than asked: say so,
	 * once per context. */
	if (ctx->be.info.host_pinning[0] && !ctx->host_pinning_noted) {
		ctx->host_pinning_noted = true;
		tmm_log(ctx, TMM_LOG_WARN, "%s", ctx->be.info.host_pinning);
	}
	return 0;
}

/*
 * The tensor lets go of its host buffer.  When `ev` is a copy that may
 * still be using the buffer, the buffer waits on the deferred list; the
 * event's ownership moves there with it.
 */
/* Puts d on the deferred list; false when there is no memory for the
 * list (the caller then waits for the copy instead: nothing is lost). */
static bool defer(struct tmm_ctx *ctx, struct tmm_deferred d)
{
	if (ctx->n_deferred == ctx->cap_deferred) {
		size_t cap = ctx->cap_deferred ? 2 * ctx->cap_deferred : 16;
		void *p = tmm_realloc(ctx->deferred, cap * sizeof(*ctx->deferred));

		if (!p)
			return false;
		ctx->deferred = p;
		ctx->cap_deferred = cap;
	}
	ctx->deferred[ctx->n_deferred++] = d;
	return true;
}

void tmm_mover_host_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			      tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;

	/* Retired early (tmm_mover_retire_early), its copy may still be
	 * filling the buffer. */
	if (!ev && t->state == TMM_TS_HOST && t->copy.valid)
		ev = &t->copy;
	ctx->c.host_in_use -= t->bytes;
	if (ev && ev->valid && be->ops->event_query(be, ev) == 0) {
		if (!defer(ctx, (struct tmm_deferred){ .host = t->host,
						       .bytes = t->bytes,
						       .ev = *ev })) {
			tmm_mover_host_wait(ctx, ev);
			goto put_now;
		}
		*ev = (tmm_event){ 0 };
		t->host = NULL;
		return;
	}
put_now:
	if (ev)
		be->ops->event_release(be, ev);
	tmm_hostmem_put(ctx->hostmem, t->host, t->bytes);
	t->host = NULL;
}

/* ---- completing copies ----------------------------------------------- */

/*
 * t's copy out no longer reads its device memory (`ended`: known to have
 * ended, or ordered before all later compute): the memory goes.  In
 * mode=uvm (the copy way, uvm_path.c) the bytes are on the host, so the
 * pages go without a write-back: kept for the next tensor of t's size,
 * or discarded.  A copy the device could not report on may still read
 * them: no next tensor takes them.
 */
static void free_after_copy_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
				bool ended)
{
	if (tmm_mover_uvm(ctx) && ended)
		tmm_uvm_copied_out(ctx, t);
	else
		tmm_device_free(ctx, t);
}

/* t's swap-out is over; `ended` says its copy is known to have ended. */
static void swap_out_over(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			  bool ended)
{
	tmm_list_del(&t->in_flight);
	ctx->be.ops->event_release(&ctx->be, &t->copy);
	free_after_copy_out(ctx, t, ended);
	tmm_tensor_set_state(t, TMM_TS_HOST);
}

static void complete_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	swap_out_over(ctx, t, true);
}

static void complete_swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_list_del(&t->in_flight);
	if (!t->host) { /* a uvm prefetch: no host buffer to give back */
		ctx->be.ops->event_release(&ctx->be, &t->copy);
	} else if (tmm_clean_keep(t)) {
		/* The copy has read it: the buffer is t's clean copy. */
		ctx->be.ops->event_release(&ctx->be, &t->copy);
	} else {
		tmm_mover_host_give_back(ctx, t, &t->copy);
	}
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
}

/* Retires the copies of one engine's list that have completed.  Each
 * engine runs in order, so the first copy still running ends the scan. */
static void retire_completed(struct tmm_ctx *ctx, struct tmm_list *list,
			     void (*complete)(struct tmm_ctx *,
					      struct tmm_tensor_rec *))
{
	struct tmm_backend *be = &ctx->be;

	while (!tmm_list_empty(list)) {
		struct tmm_tensor_rec *t = IN_FLIGHT_FIRST(list);

		if (be->ops->event_query(be, &t->copy) == 0)
			break;
		complete(ctx, t);
	}
}

/*
 * The tensor lets go of its device block.  When a swap-out that a
 * back-access let go on may still read it (t->read_by), the block waits
 * on the deferred list, so that no kernel of the block's next tensor
 * writes it under the copy; the event's ownership moves there with it.
 */
void tmm_mover_device_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;

	/* A collective still on it holds the block as a copy would: with
	 * no copy, its event is the one to defer on; with both, the
	 * compute engine waits for the collective first. */
	if (t->net_by.valid && !t->read_by.valid) {
		t->read_by = t->net_by;
		t->net_by = (tmm_event){ 0 };
	} else if (t->net_by.valid) {
		/* A backend error leaves nothing better to do than free. */
		(void)tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);
	}

	if (t->read_by.valid && be->ops->event_query(be, &t->read_by) == 0) {
		if (defer(ctx, (struct tmm_deferred){ .block = t->block,
						      .ev = t->read_by })) {
			t->read_by = (tmm_event){ 0 };
			t->block = NULL;
			tmm_device_give_back(ctx, t);
			return;
		}
		tmm_mover_host_wait(ctx, &t->read_by);
	}
	tmm_device_give_back(ctx, t);
}

/* A deferred buffer's copy has completed: reuse it. */
static void release_deferred(struct tmm_ctx *ctx, struct tmm_deferred *d)
{
	ctx->be.ops->event_release(&ctx->be, &d->ev);
	if (d->host)
		tmm_hostmem_put(ctx->hostmem, d->host, d->bytes);
	if (d->block)
		tmm_pool_free(ctx->pool, d->block);
}

bool tmm_mover_wait_deferred_block(struct tmm_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_deferred; i++) {
		if (!ctx->deferred[i].block)
			continue;
		tmm_mover_host_wait(ctx, &ctx->deferred[i].ev);
		tmm_mover_progress(ctx);
		return true;
	}
	return false;
}

void tmm_mover_progress(struct tmm_ctx *ctx)
{
	struct tmm_backend *be = &ctx->be;
	size_t i, kept;

	retire_completed(ctx, &ctx->swapping_out, complete_swap_out);
	retire_completed(ctx, &ctx->swapping_in, complete_swap_in);
	if (ctx->uvm_leaving.n)
		tmm_uvm_read_mostly_progress(ctx);
	for (i = kept = 0; i < ctx->n_deferred; i++) {
		struct tmm_deferred *d = &ctx->deferred[i];

		if (be->ops->event_query(be, &d->ev) == 0)
			ctx->deferred[kept++] = *d;
		else
			release_deferred(ctx, d);
	}
	ctx->n_deferred = kept;
}

int tmm_mover_settle(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	/*
	 * A resident tensor's read_by copy is not waited for here: its
	 * block, when freed, waits on the deferred list instead
	 * (tmm_mover_device_give_back), and a host write orders itself
	 * (tmm_mover_write).  Ordering the compute engine after the copy
	 * here would cost vdnn-all a quarter of its throughput (ResNet-50
	 * at half its peak, simulated: 78.5 against 57.3 samples/s).
	 */
	if (t->state == TMM_TS_HOST && t->copy.valid) {
		/* Retired early: the host buffer is being filled. */
		rc = tmm_mover_host_wait(ctx, &t->copy);
		ctx->be.ops->event_release(&ctx->be, &t->copy);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	}
	if (t->state != TMM_TS_SWAPPING_OUT && t->state != TMM_TS_SWAPPING_IN)
		return 0;
	rc = tmm_mover_host_wait(ctx, &t->copy);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	if (t->state == TMM_TS_SWAPPING_OUT)
		complete_swap_out(ctx, t);
	else
		complete_swap_in(ctx, t);
	return 0;
}

bool tmm_mover_may_retire_early(const struct tmm_ctx *ctx,
				const struct tmm_tensor_rec *t)
{
	return t->state == TMM_TS_SWAPPING_OUT &&
	       (tmm_mover_uvm(ctx) || !tmm_pool_is_mapped(ctx->pool));
}

int tmm_mover_retire_early(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = tmm_mover_compute_wait(ctx, &t->copy);

	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_list_del(&t->in_flight);
	/* The kernels that take its memory come after the copy. */
	free_after_copy_out(ctx, t, true);
	tmm_tensor_set_state(t, TMM_TS_HOST);
	ctx->c.swap_out_early++;
	return 0;
}

int tmm_mover_retire_in_early(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	if (t->state != TMM_TS_SWAPPING_IN)
		return 0;
	rc = tmm_mover_compute_wait(ctx, &t->copy);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	complete_swap_in(ctx, t);
	return 0;
}

int tmm_mover_abandon_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	bool in_flight = t->state == TMM_TS_SWAPPING_OUT ||
			 t->state == TMM_TS_SWAPPING_IN;
	int rc;

	if (!t->copy.valid)
		return in_flight ? -EAGAIN : 0;
	if (tmm_mover_uvm(ctx) || tmm_pool_is_mapped(ctx->pool) ||
	    !(in_flight || t->state == TMM_TS_HOST))
		return -EAGAIN;
	/* Retired early, t's block was ordered after its copy then. */
	rc = in_flight ? tmm_mover_compute_wait(ctx, &t->copy) : 0;
	if (rc < 0)
		return rc;
	if (in_flight)
		tmm_list_del(&t->in_flight);
	if (t->host)
		tmm_mover_host_give_back(ctx, t, &t->copy);
	else
		ctx->be.ops->event_release(&ctx->be, &t->copy);
	ctx->c.swap_out_early++;
	return 0;
}

/*
 * The device could not say whether t's copy finished (a backend error).
 * Complete the transition anyway, so the tensor leaves its in-flight list;
 * used only where the tensor or the context is going away.
 */
void tmm_mover_retire_failed_copy(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t)
{
	/* Its device bytes are not known to be the host's. */
	tmm_clean_stale(t);
	if (t->state == TMM_TS_SWAPPING_OUT)
		swap_out_over(ctx, t, false);
	else if (t->state == TMM_TS_SWAPPING_IN)
		complete_swap_in(ctx, t);
}

/* Waits for every copy on a list; returns the first error.  A copy the
 * device cannot report on is retired all the same, or teardown would wait
 * for it forever. */
static int settle_all(struct tmm_ctx *ctx, struct tmm_list *list)
{
	int rc, first_error = 0;

	while (!tmm_list_empty(list)) {
		struct tmm_tensor_rec *t = IN_FLIGHT_FIRST(list);

		rc = tmm_mover_settle(ctx, t);
		if (rc == 0)
			continue;
		if (!first_error)
			first_error = rc;
		tmm_mover_retire_failed_copy(ctx, t);
	}
	return first_error;
}

int tmm_mover_drain(struct tmm_ctx *ctx)
{
	int rc_out = settle_all(ctx, &ctx->swapping_out);
	int rc_in = settle_all(ctx, &ctx->swapping_in);

	for (size_t i = 0; i < ctx->n_deferred; i++) {
		tmm_mover_host_wait(ctx, &ctx->deferred[i].ev);
		release_deferred(ctx, &ctx->deferred[i]);
	}
	ctx->n_deferred = 0;
	return rc_out ? rc_out : rc_in;
}

/* ---- swapping out -------------------------------------------------------- */

/* t's copy to the host is queued, its event in t->copy: t is in flight,
 * retired to HOST when the copy completes, and counted as a swap-out. */
static void swap_out_queued(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_OUT);
	tmm_list_add_tail(&ctx->swapping_out, &t->in_flight);
	tmm_tracker_event(ctx, TMM_EV_SWAP_OUT, t);
	ctx->c.swap_out_count++;
	ctx->c.swap_out_bytes += t->bytes;
}

/*
 * t leaves the device with no copy: its clean copy holds its bytes.  Its
 * block goes as a dropped tensor's does, after whatever may still read
 * it (tmm_mover_device_give_back).  In mode=uvm (the copy way) its range
 * goes as after a copy out that has ended: kept for the next tensor or
 * discarded (tmm_uvm_copied_out); the next kernels on the range wait for
 * a collective or a copy still reading it, and a discard comes after
 * every stream.  A backend error there leaves the copy to make.
 */
static int evict_clean(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;

	if (tmm_mover_uvm(ctx)) {
		int rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);

		if (rc == 0 && t->read_by.valid)
			rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE,
						  &t->read_by);
		if (rc < 0)
			return rc;
		be->ops->event_release(be, &t->read_by);
		tmm_clean_reuse(t);
		tmm_uvm_copied_out(ctx, t);
		tmm_uvm_sync_counters(ctx);
	} else {
		tmm_clean_reuse(t);
		tmm_mover_device_give_back(ctx, t);
	}
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_OUT);
	tmm_tensor_set_state(t, TMM_TS_HOST);
	tmm_tracker_event_clean(ctx, t);
	ctx->c.clean_evictions++;
	ctx->c.clean_eviction_bytes += t->bytes;
	return 0;
}

int tmm_mover_copy_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool sync)
{
	int rc;

	if (tmm_clean_holds(t) && evict_clean(ctx, t) == 0)
		return 0;
	rc = tmm_mover_host_take(ctx, t);
	if (rc < 0)
		return rc;
	/* A collective still reducing it: the copy waits, not compute. */
	rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_D2H, false);
	if (rc < 0) {
		tmm_mover_host_give_back(ctx, t, NULL);
		return tmm_mover_backend_error(ctx, rc);
	}
	rc = tmm_mover_copy_after_compute(ctx, TMM_ENGINE_D2H, t->host,
					  t->dev, t->bytes, &t->copy);
	if (rc < 0) {
		tmm_mover_host_give_back(ctx, t, NULL);
		return rc;
	}
	swap_out_queued(ctx, t);
	if (sync)
		return tmm_mover_settle(ctx, t);
	return 0;
}

/* A swap-out in pieces (split.c, split_stream.c): the op that reads or
 * writes the tensor copies its rows to the host part by part. */
int tmm_mover_swap_out_begin(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (tmm_mover_uvm(ctx) || t->state != TMM_TS_RESIDENT || t->host)
		return -EINVAL;
	return tmm_mover_host_take(ctx, t);
}

bool tmm_mover_swap_out_take_host(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t)
{
	char saved[sizeof(ctx->error)];
	bool ok;

	/* Where it cannot, the plan's swap happens after the op, whole,
	 * and says why if it fails too; the program's last message
	 * stays. */
	memcpy(saved, ctx->error, sizeof(saved));
	ok = tmm_mover_swap_out_begin(ctx, t) == 0;
	memcpy(ctx->error, saved, sizeof(saved));
	return ok;
}

int tmm_mover_swap_out_piece_async(struct tmm_ctx *ctx,
				   struct tmm_tensor_rec *t, uint64_t offset,
				   uint64_t bytes, tmm_event *last)
{
	tmm_event done = { 0 };
	int rc;

	if (bytes == 0)
		return 0;
	rc = tmm_mover_copy_after_compute(ctx, TMM_ENGINE_D2H,
					  (char *)t->host + offset,
					  (const char *)t->dev + offset,
					  (size_t)bytes, &done);
	if (rc < 0) {
		ctx->be.ops->event_release(&ctx->be, &done);
		return rc;
	}
	/* The engine runs its copies in order: the newest one's event
	 * stands for all of them. */
	ctx->be.ops->event_release(&ctx->be, last);
	*last = done;
	return 0;
}

int tmm_mover_swap_out_wait(struct tmm_ctx *ctx, tmm_event *last)
{
	int rc = 0;

	if (last->valid) {
		rc = tmm_mover_host_wait(ctx, last);
		if (rc < 0)
			rc = tmm_mover_backend_error(ctx, rc);
	}
	ctx->be.ops->event_release(&ctx->be, last);
	*last = (tmm_event){ 0 };
	return rc;
}

int tmm_mover_swap_out_piece(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			     uint64_t offset, uint64_t bytes)
{
	tmm_event last = { 0 };
	int rc = tmm_mover_swap_out_piece_async(ctx, t, offset, bytes, &last);

	/* The host waits, not only compute: the caller gives the rows
	 * back to the pool next, and the host buffer may be read as soon
	 * as the tensor is HOST.  A failed issue leaves nothing to wait
	 * for. */
	if (rc == 0)
		rc = tmm_mover_swap_out_wait(ctx, &last);
	return rc;
}

void tmm_mover_swap_out_end(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_device_give_back(ctx, t);
	/* The copy is over: the same two steps as a swap-out retired. */
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_OUT);
	tmm_tensor_set_state(t, TMM_TS_HOST);
	tmm_tracker_event(ctx, TMM_EV_SWAP_OUT, t);
	ctx->c.swap_out_count++;
	ctx->c.swap_out_bytes += t->bytes;
}

void tmm_mover_swap_out_end_async(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t, tmm_event *last)
{
	if (!last->valid) {
		tmm_mover_swap_out_end(ctx, t);
		return;
	}
	/* From here on an ordinary swap-out in flight: retired, its device
	 * memory given back, once the newest copy has completed. */
	t->copy = *last;
	*last = (tmm_event){ 0 };
	swap_out_queued(ctx, t);
}

void tmm_mover_swap_out_cancel(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->host)
		/* its copies were waited for */
		tmm_mover_host_give_back(ctx, t, NULL);
}

/* ---- swapping in ----------------------------------------------------- */

int tmm_mover_swap_in_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	/* Retired early, its swap-out may still be filling the host
	 * buffer: the copy back is queued after compute, which waits for
	 * it (tmm_mover_retire_early), so its event is no longer needed. */
	if (t->copy.valid)
		ctx->be.ops->event_release(&ctx->be, &t->copy);
	rc = tmm_mover_copy_after_compute(ctx, TMM_ENGINE_H2D, t->dev,
					  t->host, t->bytes, &t->copy);
	if (rc == 0)
		tmm_clean_note_swap_in(t);

	if (rc < 0) {
		tmm_device_give_back(ctx, t);
		return rc;
	}
	tmm_tensor_set_state(t, TMM_TS_SWAPPING_IN);
	tmm_list_add_tail(&ctx->swapping_in, &t->in_flight);
	tmm_tracker_event(ctx, TMM_EV_SWAP_IN, t);
	ctx->c.swap_in_count++;
	ctx->c.swap_in_bytes += t->bytes;
	return 0;
}
