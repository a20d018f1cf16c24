/* SPDX-License-Identifier: MIT */
/*
 * uvm_access.c — mode=uvm: what the accesses of an op's kernels and of
 * the host do to a tensor's managed pages (see mover_uvm.h, whose
 * functions of accesses live here; mover_uvm.c has the ranges and the
 * plan's actions).
 *
 * Before an op's kernels run, the runtime lists the managed ranges they
 * touch for the backend (the simulated driver takes its faults there).
 * The host's reads and writes touch the pages, which moves them,
 * except a write that a copy on the compute stream can make (host_copy_ok).
 */
#include <errno.h>
#include <string.h>

#include "mover_uvm.h"
#include "swap_engine.h"
#include "lib/mem/uvm_arena.h"
#include "lib/base/xalloc.h"

void tmm_uvm_access_begin(struct tmm_ctx *ctx)
{
	ctx->uvm_n_ranges = 0;
	ctx->uvm_ranges_failed = false;
}

void tmm_uvm_access_add(struct tmm_ctx *ctx, void *ptr, size_t bytes,
			bool write)
{
	if (ctx->uvm_n_ranges == ctx->uvm_cap_ranges) {
		unsigned cap = ctx->uvm_cap_ranges ? 2 * ctx->uvm_cap_ranges
						   : 32;
		void *p = tmm_realloc(ctx->uvm_ranges,
				      cap * sizeof(*ctx->uvm_ranges));

		if (!p) {
			ctx->uvm_ranges_failed = true;
			return;
		}
		ctx->uvm_ranges = p;
		ctx->uvm_cap_ranges = cap;
	}
	ctx->uvm_ranges[ctx->uvm_n_ranges++] = (struct tmm_managed_range){
		.ptr = ptr, .bytes = bytes, .write = write, .by_host = false
	};
}

int tmm_uvm_access_commit(struct tmm_ctx *ctx)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t t0;
	int rc;

	if (ctx->uvm_ranges_failed)
		return tmm_fail(ctx, -ENOMEM, "out of host memory listing the "
				"managed ranges the op touches");
	t0 = be->ops->now_ns(be);
	rc = be->ops->managed_access(be, ctx->uvm_ranges, ctx->uvm_n_ranges);
	/* Faults stall the kernels: the time is lost like a swap-in's. */
	ctx->c.stall_ns += be->ops->now_ns(be) - t0;
	tmm_uvm_sync_counters(ctx);
	return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
}

void tmm_uvm_touched(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		     void *ptr, size_t bytes)
{
	/* The kernels' faults bring the pages to the device, unless advice
	 * keeps them elsewhere (a preferred location, read duplicates). */
	if (!t || (!t->uvm_advised && !t->uvm_host_preferred))
		tmm_uvm_arena_note(ctx->uvm_arena, ptr, bytes, true);
}

int tmm_uvm_touch_op(struct tmm_ctx *ctx, struct tmm_tensor_rec *const *recs,
		     unsigned n_inputs, unsigned n)
{
	int rc;

	tmm_uvm_access_begin(ctx);
	for (unsigned i = 0; i < n; i++) {
		tmm_uvm_access_add(ctx, recs[i]->dev, recs[i]->bytes,
				   i >= n_inputs);
		recs[i]->uvm_host_touched = false;
	}
	rc = tmm_uvm_access_commit(ctx);
	for (unsigned i = 0; i < n && rc == 0; i++)
		tmm_uvm_touched(ctx, recs[i], recs[i]->dev, recs[i]->bytes);
	return rc;
}

/* The host touches [offset, offset + bytes) of t. */
static int host_touch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		      size_t offset, size_t bytes, bool write)
{
	struct tmm_managed_range r = { .ptr = (char *)t->dev + offset,
				       .bytes = bytes, .write = write,
				       .by_host = true };
	int rc = ctx->be.ops->managed_access(&ctx->be, &r, 1);

	/* The host's access migrates (or maps) those pages to it. */
	tmm_uvm_arena_note(ctx->uvm_arena, r.ptr, bytes, false);
	t->uvm_host_touched = true;
	tmm_uvm_sync_counters(ctx);
	return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
}

/*
 * Whether the host's write to t may go by a copy on the compute stream,
 * as in swap mode, rather than by touching the managed pages: t's pages
 * are known on the device (tmm_uvm_known_on_device) and t is resident,
 * with no migration of its own under way.  A host touch would first wait for
 * every stream and then migrate the pages to the host, and the next
 * kernel would fault them back (issue #19: a 32 MiB input written every
 * step crossed the link twice by faults); a copy moves only the bytes
 * written and leaves the pages where the kernels want them.  Reads within
 * a step still touch: a read is most often a small result (the loss),
 * and a touch gives the first iteration the residency its peak
 * (budget=N%peak) was measured with (a read by copy kept pages on the
 * device, raised that peak and moved the budgets auto plans for:
 * test_auto_monotone); between steps they go by copy (tmm_uvm_read).
 */
static bool host_copy_ok(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t)
{
	return t->state == TMM_TS_RESIDENT && !t->host && !t->copy.valid &&
	       tmm_uvm_known_on_device(ctx, t);
}

/*
 * A fresh tensor written whole, into a range whose pages are known on
 * the device (the same tensor of the previous step, most often): by a
 * copy, as swap mode writes one, where uvm_cap leaves it room.  The
 * range's last tensor's readers and migrations were waited for by the
 * compute stream when it went (forget_range), and the copy runs there.
 * Returns 1 when done, 0 when the caller must touch the pages instead,
 * or a negative errno.
 */
static int write_fresh_by_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			       const void *src, size_t bytes)
{
	int rc;

	if (!src || bytes != t->bytes || !tmm_uvm_known_on_device(ctx, t) ||
	    !tmm_uvm_cap_fits(ctx, t->bytes))
		return 0;
	rc = ctx->be.ops->copy_sync(&ctx->be, t->dev, src, bytes, true);
	if (rc < 0)
		return tmm_mover_backend_error(ctx, rc);
	tmm_tensor_set_state(t, TMM_TS_RESIDENT);
	tmm_uvm_hold(ctx, t);
	return 1;
}

int tmm_uvm_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		  size_t offset, const void *src, size_t bytes)
{
	bool fresh = t->state == TMM_TS_EMPTY;
	/* Away by copy, it may hold no range: its bytes are the host's. */
	int rc = t->host ? 0 : tmm_uvm_materialize(ctx, t);

	if (rc == 0 && t->host)
		rc = tmm_mover_settle(ctx, t);
	if (rc < 0)
		return rc;
	if (t->host) {
		/* Away by copy: its bytes are the host buffer's. */
		if (src)
			memcpy((char *)t->host + offset, src, bytes);
		return 0;
	}
	if (fresh) {
		rc = write_fresh_by_copy(ctx, t, src, bytes);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	} else if (src && host_copy_ok(ctx, t)) {
		/* Not under a copy out that a back-access let go on, as
		 * swap mode writes a resident tensor. */
		rc = tmm_tensor_wait_readers(ctx, t);
		if (rc == 0)
			rc = ctx->be.ops->copy_sync(&ctx->be,
						    (char *)t->dev + offset,
						    src, bytes, true);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	}
	if (fresh && (offset != 0 || bytes != t->bytes)) {
		/* The rest of a fresh tensor reads as zeros, as in swap
		 * mode; managed memory promises nothing of the kind. */
		rc = host_touch(ctx, t, 0, t->bytes, true);
		if (rc < 0)
			return rc;
		if (src)
			memset(t->dev, 0, t->bytes);
	} else {
		rc = host_touch(ctx, t, offset, bytes, true);
		if (rc < 0)
			return rc;
	}
	if (src)
		memcpy((char *)t->dev + offset, src, bytes);
	if (!fresh)
		return 0;
	/*
	 * Its pages are on the host now.  It counts on the device only
	 * where uvm_cap leaves it room, as swap mode places a written
	 * tensor on the device only where it fits without evicting
	 * (writing weights must not push out other weights); else it
	 * waits on the host, with no advice, for its first use.
	 */
	if (tmm_uvm_cap_fits(ctx, t->bytes)) {
		tmm_tensor_set_state(t, TMM_TS_RESIDENT);
		tmm_uvm_hold(ctx, t);
	} else {
		tmm_tensor_set_state(t, TMM_TS_HOST);
	}
	return 0;
}

int tmm_uvm_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		 size_t offset, void *dst, size_t bytes)
{
	int rc;

	if (t->state == TMM_TS_EMPTY || (!t->dev && !t->host))
		return tmm_tensor_no_data(ctx, t, "tmm_tensor_read");
	rc = t->host ? tmm_mover_settle(ctx, t) : 0;
	if (rc < 0)
		return rc;
	if (t->host) {
		/* Away by copy: its bytes are the host buffer's. */
		memcpy(dst, (char *)t->host + offset, bytes);
		return 0;
	}
	if (!ctx->in_iteration && host_copy_ok(ctx, t)) {
		/* Between steps (the weights at the end, a checkpoint) a
		 * read of pages on the device goes by a copy from them, as
		 * a write does: no migration of the whole range to the
		 * host for the next step to fault back, and the bytes are
		 * read where the kernels wrote them, by the engine that
		 * reads them for every copy out, not by the host's
		 * migration of pages the way out discarded (the one wrong
		 * result of docs/gpu-h200.md was such a read).  Within a
		 * step a read still touches: the first step's residency
		 * is what budget=N%peak measured. */
		rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);
		if (rc == 0)
			rc = ctx->be.ops->copy_sync(&ctx->be, dst,
						    (char *)t->dev + offset,
						    bytes, false);
		return rc < 0 ? tmm_mover_backend_error(ctx, rc) : 0;
	}
	rc = host_touch(ctx, t, offset, bytes, false);
	if (rc < 0)
		return rc;
	memcpy(dst, (char *)t->dev + offset, bytes);
	return 0;
}
