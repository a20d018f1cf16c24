/*
 * mover.c — the swap engine and passive mode.
 *
 * Every byte movement between device and host goes through here, so the
 * invariants of tensor_state.h are kept in one place:
 *  - a tensor's bytes always exist somewhere: the host copy is complete
 *    before the device copy is released, and the other way round;
 *  - device memory of a SWAPPING_OUT tensor is reused only after its copy
 *    event completes (retired in tmm_mover_progress);
 *  - a host buffer that a copy reads or writes is reused only after that
 *    copy completes (the deferred list);
 *  - a pinned tensor is never chosen for eviction.
 *
 * Copies are queued after the compute work issued so far (Capuchin §5.4:
 * an action triggered by an access takes effect when the device reaches
 * that access), and compute never waits for a swap-out (§5.3): only an
 * allocation that does not fit waits, for the earliest pending swap-out,
 * before it falls back to passive eviction.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem/compact.h"
#include "lib/record/guide_state.h"
#include "mover.h"
#include "mover_uvm.h"
#include "lib/mem/hostmem.h"
#include "lib/mem/pool.h"
#include "drop.h"
#include "lib/record/tracker.h"

/* mode=uvm: the entry points below hand over to mover_uvm.c. */
static bool uvm(const struct tmm_ctx *ctx)
{
	return ctx->mode == TMM_MODE_UVM;
}

/* ---- waiting, with the time lost counted as stall -------------------- */

static int host_wait(struct tmm_ctx *ctx, const tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t t0 = be->ops->now_ns(be);
	int rc = be->ops->event_sync(be, ev);

	ctx->c.stall_ns += be->ops->now_ns(be) - t0;
	return rc;
}

static int compute_wait(struct tmm_ctx *ctx, const tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t t0 = be->ops->now_ns(be);
	int rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, ev);

	ctx->c.stall_ns += be->ops->now_ns(be) - t0;
	return rc;
}

static int backend_error(struct tmm_ctx *ctx, int rc)
{
	return tmm_fail(ctx, rc, "%s", ctx->be.error);
}

/*
 * Queues a copy on a copy engine, ordered after the compute work issued so
 * far: the source may still be being written, or the destination still
 * being read, by kernels already queued.
 */
static int copy_after_compute(struct tmm_ctx *ctx, enum tmm_engine engine,
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
	return rc < 0 ? backend_error(ctx, rc) : 0;
}

/* ---- device memory --------------------------------------------------- */

/* ---- host memory ----------------------------------------------------- */

static int host_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = tmm_hostmem_get(ctx->hostmem, t->bytes, &t->host);

	if (rc < 0)
		return tmm_fail(ctx, rc,
				"no pinned host memory for tensor of %zu "
				"bytes: %s",
				t->bytes, ctx->be.error);
	ctx->c.host_in_use += t->bytes;
	return 0;
}

/*
 * The tensor lets go of its host buffer.  When `ev` is a copy that may
 * still be using the buffer, the buffer waits on the deferred list; the
 * event's ownership moves there with it.
 */
static void host_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			   tmm_event *ev)
{
	struct tmm_backend *be = &ctx->be;

	ctx->c.host_in_use -= t->bytes;
	if (ev && ev->valid && be->ops->event_query(be, ev) == 0) {
		if (ctx->n_deferred == ctx->cap_deferred) {
			size_t cap = ctx->cap_deferred ? 2 * ctx->cap_deferred
						       : 16;
			void *p = realloc(ctx->deferred,
					  cap * sizeof(*ctx->deferred));

			if (!p) {
				/* Out of memory for bookkeeping: wait for
				 * the copy instead; nothing is lost. */
				host_wait(ctx, ev);
				goto put_now;
			}
			ctx->deferred = p;
			ctx->cap_deferred = cap;
		}
		ctx->deferred[ctx->n_deferred++] = (struct tmm_deferred_host){
			.host = t->host, .bytes = t->bytes, .ev = *ev
		};
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

static void complete_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_list_del(&t->in_flight);
	ctx->be.ops->event_release(&ctx->be, &t->copy);
	tmm_device_give_back(ctx, t);
	tmm_tensor_set_state(t, TMM_TS_HOST);
}

static void complete_swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_list_del(&t->in_flight);
	if (uvm(ctx)) /* a prefetch: no host buffer to give back */
		ctx->be.ops->event_release(&ctx->be, &t->copy);
	else
		host_give_back(ctx, t, &t->copy);
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
}

#define IN_FLIGHT_FIRST(list) \
	tmm_container_of((list)->next, struct tmm_tensor_rec, in_flight)

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

/* A deferred host buffer's copy has completed: reuse it. */
static void release_deferred(struct tmm_ctx *ctx, struct tmm_deferred_host *d)
{
	ctx->be.ops->event_release(&ctx->be, &d->ev);
	tmm_hostmem_put(ctx->hostmem, d->host, d->bytes);
}

void tmm_mover_progress(struct tmm_ctx *ctx)
{
	struct tmm_backend *be = &ctx->be;
	size_t i, kept;

	retire_completed(ctx, &ctx->swapping_out, complete_swap_out);
	retire_completed(ctx, &ctx->swapping_in, complete_swap_in);
	for (i = kept = 0; i < ctx->n_deferred; i++) {
		struct tmm_deferred_host *d = &ctx->deferred[i];

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

	if (t->state != TMM_TS_SWAPPING_OUT && t->state != TMM_TS_SWAPPING_IN)
		return 0;
	rc = host_wait(ctx, &t->copy);
	if (rc < 0)
		return backend_error(ctx, rc);
	if (t->state == TMM_TS_SWAPPING_OUT)
		complete_swap_out(ctx, t);
	else
		complete_swap_in(ctx, t);
	return 0;
}

/*
 * The device could not say whether t's copy finished (a backend error).
 * Complete the transition anyway, so the tensor leaves its in-flight list;
 * used only where the tensor or the context is going away.
 */
static void retire_failed_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->state == TMM_TS_SWAPPING_OUT)
		complete_swap_out(ctx, t);
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
		retire_failed_copy(ctx, t);
	}
	return first_error;
}

int tmm_mover_drain(struct tmm_ctx *ctx)
{
	int rc_out = settle_all(ctx, &ctx->swapping_out);
	int rc_in = settle_all(ctx, &ctx->swapping_in);

	for (size_t i = 0; i < ctx->n_deferred; i++) {
		host_wait(ctx, &ctx->deferred[i].ev);
		release_deferred(ctx, &ctx->deferred[i]);
	}
	ctx->n_deferred = 0;
	return rc_out ? rc_out : rc_in;
}

/* ---- eviction -------------------------------------------------------- */

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

int tmm_mover_swap_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool sync)
{
	char label[64];
	int rc;

	if (t->state != TMM_TS_RESIDENT || t->pins)
		return tmm_fail(ctx, -EINVAL,
				"cannot evict tensor %s: it is %s%s",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_tstate_name(t->state),
				t->pins ? " and pinned by a running op or "
					  "tmm_acquire" : "");
	if (uvm(ctx))
		return tmm_uvm_swap_out(ctx, t);
	rc = host_take(ctx, t);
	if (rc < 0)
		return rc;
	rc = copy_after_compute(ctx, TMM_ENGINE_D2H, t->host, t->dev,
				t->bytes, &t->copy);
	if (rc < 0) {
		host_give_back(ctx, t, NULL);
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
	if (uvm(ctx) || t->state != TMM_TS_RESIDENT || t->host)
		return -EINVAL;
	return host_take(ctx, t);
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
	rc = copy_after_compute(ctx, TMM_ENGINE_D2H, (char *)t->host + offset,
				(const char *)t->dev + offset, (size_t)bytes,
				&done);
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
		rc = host_wait(ctx, last);
		if (rc < 0)
			rc = backend_error(ctx, rc);
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
		host_give_back(ctx, t, NULL); /* its copies were waited for */
}

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
 * so that they may move too.
 */
static int compact_for(struct tmm_ctx *ctx, size_t bytes)
{
	if (!tmm_compact_has_bytes(ctx, bytes))
		return -ENOSPC;
	tmm_mover_progress(ctx);
	return tmm_compact_for(ctx, bytes);
}

/*
 * Takes `bytes` of device memory for t (NULL: scratch), making room as
 * tmm_mover_alloc_device describes; with !may_evict it only waits for
 * pending swap-outs and returns -ENOSPC (no message) when that is not
 * enough.
 */
static int make_room_for(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			 size_t bytes, bool may_evict,
			 struct tmm_pool_block **block)
{
	struct tmm_tensor_rec *victim;
	bool compacted = false; /* and nothing else freed since */
	int rc;

	for (;;) {
		if (tmm_pool_alloc(ctx->pool, bytes, block) == 0)
			return 0;
		/* Decoupled swapping: a pending swap-out will free its
		 * memory soon, so wait for the earliest one first. */
		if (!tmm_list_empty(&ctx->swapping_out)) {
			victim = IN_FLIGHT_FIRST(&ctx->swapping_out);
			rc = host_wait(ctx, &victim->copy);
			if (rc < 0)
				return backend_error(ctx, rc);
			ctx->c.swap_out_waits++;
			tmm_mover_progress(ctx);
			compacted = false;
			continue;
		}
		/* Enough free bytes but no hole: move, don't evict.  A
		 * compaction that did not make the hole is not tried again
		 * until something else has freed memory. */
		rc = compacted ? -ENOSPC : compact_for(ctx, bytes);
		if (rc == 0) {
			compacted = true;
			continue;
		}
		if (rc != -ENOSPC)
			return rc;
		compacted = false;
		if (!may_evict)
			return -ENOSPC;
		/* Collective recomputation (Capuchin §5.3): what was
		 * regenerated on the way stays only while memory allows. */
		if (tmm_recompute_shed(ctx))
			continue;
		/* Passive mode (Capuchin §4.2): evict on demand, least
		 * recently used first, synchronously. */
		victim = passive_victim(ctx);
		if (!victim)
			return t ? no_room(ctx, t)
				 : tmm_fail(ctx, -ENOMEM,
					    "op '%s': no room on the device "
					    "for a %zu-byte recomputation "
					    "buffer; raise TENSORMM_BUDGET",
					    ctx->current_op ? ctx->current_op
							    : "(none)",
					    bytes);
		rc = tmm_mover_swap_out(ctx, victim, true);
		if (rc < 0)
			return rc;
		ctx->c.passive_evictions++;
		ctx->c.passive_eviction_bytes += victim->bytes;
		if (tmm_guide_following(ctx))
			ctx->c.guided_passive_evictions++;
		tmm_tracker_event(ctx, TMM_EV_PASSIVE_EVICT, victim);
		tmm_log(ctx, TMM_LOG_DEBUG, "passive eviction of %zu bytes",
			victim->bytes);
	}
}

/*
 * The same ways out as make_room_for, in the same order, until the pool
 * holds no more than `limit` bytes: a swap-out copies the bytes to the
 * host before their block is freed, so nothing is lost.
 */
int tmm_mover_shrink_to(struct tmm_ctx *ctx, uint64_t limit)
{
	struct tmm_tensor_rec *victim;
	int rc;

	while (tmm_pool_in_use(ctx->pool) > limit) {
		if (!tmm_list_empty(&ctx->swapping_out)) {
			victim = IN_FLIGHT_FIRST(&ctx->swapping_out);
			rc = host_wait(ctx, &victim->copy);
			if (rc < 0)
				return backend_error(ctx, rc);
			tmm_mover_progress(ctx);
			continue;
		}
		if (tmm_recompute_shed(ctx))
			continue;
		victim = passive_victim(ctx);
		if (!victim)
			return -EBUSY; /* pinned: try again later */
		rc = tmm_mover_swap_out(ctx, victim, true);
		if (rc < 0)
			return rc;
		ctx->c.passive_evictions++;
		ctx->c.passive_eviction_bytes += victim->bytes;
		tmm_tracker_event(ctx, TMM_EV_PASSIVE_EVICT, victim);
	}
	return 0;
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
	t->block = b;
	t->dev = (char *)ctx->arena + b->offset;
	tmm_list_add_tail(&ctx->device_lru, &t->on_device);
	return 0;
}

int tmm_mover_place_at(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       uint64_t offset, uint64_t bytes)
{
	struct tmm_pool_block *b;
	int rc;

	if (uvm(ctx) || t->state != TMM_TS_EMPTY)
		return -EINVAL;
	rc = tmm_pool_alloc_at(ctx->pool, offset, bytes, &b);
	if (rc < 0)
		return rc;
	t->block = b;
	t->dev = (char *)ctx->arena + offset;
	tmm_list_add_tail(&ctx->device_lru, &t->on_device);
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
	return 0;
}

int tmm_mover_alloc_device(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (uvm(ctx))
		return tmm_uvm_materialize(ctx, t);
	return alloc_device(ctx, t, true);
}

int tmm_mover_alloc_scratch(struct tmm_ctx *ctx, size_t bytes,
			    struct tmm_pool_block **block, void **ptr)
{
	int rc;

	if (uvm(ctx))
		return tmm_uvm_alloc_scratch(ctx, bytes, block, ptr);
	rc = make_room_for(ctx, NULL, bytes, true, block);

	if (rc < 0)
		return rc;
	*ptr = (char *)ctx->arena + (*block)->offset;
	return 0;
}

void tmm_mover_free_scratch(struct tmm_ctx *ctx, struct tmm_pool_block *block)
{
	if (uvm(ctx))
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
	rc = copy_after_compute(ctx, TMM_ENGINE_H2D, t->dev, t->host,
				t->bytes, &t->copy);
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

int tmm_mover_swap_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	return swap_in(ctx, t, true);
}

int tmm_mover_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (uvm(ctx))
		return tmm_uvm_prefetch(ctx, t);
	return swap_in(ctx, t, false);
}

int tmm_mover_advise(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     uint32_t advice)
{
	return uvm(ctx) ? tmm_uvm_advise(ctx, t, advice) : 0;
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
		if (need_data)
			return tmm_fail(ctx, -ENODATA,
					"op '%s': tensor %s is read but was "
					"never written",
					ctx->current_op ? ctx->current_op
							: "(none)",
					tmm_tensor_label(t, label,
							 sizeof(label)));
		rc = tmm_mover_alloc_device(ctx, t);
		if (rc < 0)
			return rc;
		tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		return 0;
	case TMM_TS_SWAPPING_OUT:
		/* Back-access before the copy ended: the device bytes are
		 * still valid, so keep them and let the host copy go. */
		tmm_list_del(&t->in_flight);
		host_give_back(ctx, t, &t->copy);
		tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		return 0;
	case TMM_TS_HOST:
		if (uvm(ctx))
			return tmm_uvm_bring_back(ctx, t, need_data);
		if (!need_data) {
			/* The op overwrites it: its old bytes are dead. */
			host_give_back(ctx, t, NULL);
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
		rc = compute_wait(ctx, &t->copy);
		return rc < 0 ? backend_error(ctx, rc) : 0;
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
	if (uvm(ctx)) {
		tmm_uvm_release(ctx, t);
		return;
	}
	/* A copy may still read or write the memory: wait for it.  A backend
	 * error here leaves nothing better to do than to free. */
	if (tmm_mover_settle(ctx, t) < 0)
		retire_failed_copy(ctx, t);
	if (t->block)
		tmm_device_give_back(ctx, t);
	if (t->host)
		host_give_back(ctx, t, NULL);
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
	tmm_lineage_host_write(ctx, t);
	if (uvm(ctx))
		return tmm_uvm_write(ctx, t, offset, src, bytes);
	switch (t->state) {
	case TMM_TS_EMPTY:
		rc = host_take(ctx, t);
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
				return backend_error(ctx, rc);
			}
			host_give_back(ctx, t, NULL);
			tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		} else {
			tmm_tensor_set_state(t, TMM_TS_HOST);
		}
		return 0;
	case TMM_TS_RESIDENT:
		rc = be->ops->copy_sync(be, (char *)t->dev + offset, src, bytes,
					true);
		return rc < 0 ? backend_error(ctx, rc) : 0;
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
	char label[64];
	int rc = tmm_mover_settle(ctx, t);

	if (rc < 0)
		return rc;
	if (uvm(ctx))
		return tmm_uvm_read(ctx, t, offset, dst, bytes);
	switch (t->state) {
	case TMM_TS_EMPTY:
		return tmm_fail(ctx, -ENODATA,
				"tmm_tensor_read: tensor %s was never written",
				tmm_tensor_label(t, label, sizeof(label)));
	case TMM_TS_RESIDENT:
		rc = be->ops->copy_sync(be, dst, (char *)t->dev + offset, bytes,
					false);
		return rc < 0 ? backend_error(ctx, rc) : 0;
	case TMM_TS_HOST:
		memcpy(dst, (char *)t->host + offset, bytes);
		return 0;
	default:
		return tmm_fail(ctx, -ENOTSUP, "cannot read a %s tensor",
				tmm_tstate_name(t->state));
	}
}
