/* SPDX-License-Identifier: MIT */
/*
 * tensor.c — the tensor calls of the API: create, destroy, host read and
 * write (of views and their parents too); and retiring a record with
 * everything it holds.
 *
 * The records themselves are lib/core/tensor_table.c's; here a tensor is
 * also what the tracker records, what the mover holds memory for, and
 * what a dropped tensor's lineage may still need.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/move/mover.h"
#include "recompute.h"
#include "rehearse.h"
#include "tensor.h"
#include "view.h"
#include "lib/record/tracker.h"
#include "lib/base/xalloc.h"

static int tensor_create(struct tmm_ctx *ctx, size_t bytes,
			 enum tmm_kind kind, const char *name,
			 tmm_tensor *out)
{
	struct tmm_tensor_rec *t = NULL;
	int rc;

	if (!out)
		return tmm_fail(ctx, -EINVAL, "tmm_tensor_create: out is NULL");
	*out = TMM_TENSOR_NULL;
	if (bytes == 0)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_create: tensor '%s' has 0 bytes",
				name ? name : "");
	if ((unsigned)kind >= TMM_KIND_COUNT)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_create: kind %d is not a tmm_kind "
				"(PERSISTENT, ACTIVATION, GRADIENT, SCRATCH)",
				(int)kind);
	/* A tensor larger than the budget is made all the same: as the
	 * parent of views it may never need the device whole, and an op
	 * or an acquire that does need it says so (run.c, calls.c). */
	rc = tmm_tensor_new(ctx, bytes, kind, name, &t);
	if (rc < 0)
		return rc;
	*out = tmm_tensor_handle(ctx, t);
	tmm_tracker_tensor_made(ctx, t);
	return 0;
}

/* The most bytes fold_back stages on the host at once. */
#define FOLD_CHUNK (4u << 20)

/*
 * A view about to be destroyed hands the bytes it holds newer than its
 * parent back to it, so that nothing is lost.  Through the host, in
 * chunks: a copy on the device would need the whole parent there, and a
 * parent may be larger than the budget.
 */
static int fold_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *v)
{
	size_t chunk = v->bytes < FOLD_CHUNK ? v->bytes : FOLD_CHUNK;
	void *buf;
	int rc = 0;

	if (!v->view_ahead || v->state == TMM_TS_EMPTY)
		return 0;
	buf = tmm_malloc(chunk);
	if (!buf)
		return tmm_fail(ctx, -ENOMEM, "tmm_tensor_destroy: out of host "
				"memory handing a view's bytes back to its "
				"parent");
	for (size_t off = 0; off < v->bytes && rc == 0; off += chunk) {
		size_t n = v->bytes - off < chunk ? v->bytes - off : chunk;

		rc = tmm_tensor_host_read(ctx, v, off, buf, n);
		if (rc == 0)
			rc = tmm_tensor_host_write(ctx, v->view_parent,
						   v->view_offset + off, buf,
						   n);
	}
	free(buf);
	return rc;
}

static int tensor_destroy(struct tmm_ctx *ctx, tmm_tensor h)
{
	struct tmm_tensor_rec *t;
	char label[64];

	t = tmm_tensor_lookup(ctx, h, "tmm_tensor_destroy");
	if (!t)
		return -EBADF;
	if (t->acquires)
		return tmm_fail(ctx, -EBUSY,
				"tmm_tensor_destroy: tensor %s is acquired "
				"%u time(s); tmm_release it first",
				tmm_tensor_label(t, label, sizeof(label)),
				t->acquires);
	if (t->n_views) {
		int rc = tmm_view_before_destroy(ctx, t);

		if (rc < 0)
			return rc;
	}
	if (t->view_parent) {
		int rc = fold_back(ctx, t);

		if (rc < 0)
			return rc;
	}
	/* A dropped tensor may need this one's bytes to be recomputed, now
	 * or later in the iteration: the tensor stays, out of reach and
	 * without device memory, while that lineage may need it
	 * (tmm_recompute_ghost); one that cannot be recomputed itself
	 * brings its dropped readers back first. */
	if (!tmm_recompute_ghost(ctx, t) && t->dropped_dependents) {
		int rc = tmm_recompute_settle_readers(ctx, t);

		if (rc < 0)
			return rc;
	}
	if (t->view_parent)
		tmm_view_leave_parent(ctx, t);
	tmm_tracker_tensor_gone(ctx, t);
	if (!t->ghost)
		tmm_tensor_retire(ctx, t);
	return 0;
}

/* Brings a DROPPED tensor back for host access. */
static int undrop_for_host(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc;

	if (t->state != TMM_TS_DROPPED)
		return 0;
	t->pins++;
	rc = tmm_recompute_regenerate(ctx, t);
	t->pins--;
	return rc;
}

int tmm_tensor_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			  size_t offset, const void *src, size_t bytes)
{
	int rc = tmm_recompute_settle_readers(ctx, t);

	if (rc == 0 && t->state == TMM_TS_DROPPED) {
		if (offset == 0 && bytes == t->bytes)
			tmm_recompute_forget(ctx, t); /* all overwritten */
		else
			rc = undrop_for_host(ctx, t);
	}
	if (rc < 0)
		return rc;
	return tmm_mover_write(ctx, t, offset, src, bytes);
}

int tmm_tensor_host_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			 size_t offset, void *dst, size_t bytes)
{
	int rc = undrop_for_host(ctx, t);

	if (rc < 0)
		return rc;
	return tmm_mover_read(ctx, t, offset, dst, bytes);
}

/*
 * Host access to a parent or a view (view.c): the program sees the newest
 * bytes of each range, wherever they are, with no copy on the device.
 */
static int view_host_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			  size_t offset, void *dst, size_t bytes)
{
	bool any_ahead = false;
	size_t from, to;
	int rc;

	/* A view behind its parent reads the parent's newer bytes. */
	if (t->view_parent && t->view_behind)
		return tmm_tensor_host_read(ctx, t->view_parent,
					    t->view_offset + offset, dst,
					    bytes);
	if (!t->n_views)
		return tmm_tensor_host_read(ctx, t, offset, dst, bytes);
	for (struct tmm_list *n = t->views.next; n != &t->views;
	     n = n->next) {
		struct tmm_tensor_rec *v =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);

		if (v->view_ahead &&
		    tmm_view_overlap(v, offset, bytes, &from, &to))
			any_ahead = true;
	}
	/* A parent that never held bytes reads as zeros around views that
	 * were written; with no such view it was never written at all. */
	if (t->state == TMM_TS_EMPTY && any_ahead)
		memset(dst, 0, bytes);
	else if ((rc = tmm_tensor_host_read(ctx, t, offset, dst, bytes)) < 0)
		return rc;
	for (struct tmm_list *n = t->views.next; n != &t->views;
	     n = n->next) {
		struct tmm_tensor_rec *v =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);

		if (!v->view_ahead ||
		    !tmm_view_overlap(v, offset, bytes, &from, &to))
			continue;
		rc = tmm_tensor_host_read(ctx, v, from - v->view_offset,
					  (char *)dst + (from - offset),
					  to - from);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int view_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			   size_t offset, const void *src, size_t bytes)
{
	size_t from, to;
	int rc;

	if (t->view_parent) {
		/* Written in part, a view behind its parent first takes the
		 * parent's bytes for the rest. */
		if (t->view_behind && bytes < t->bytes) {
			rc = tmm_view_before_use(ctx, t, true,
						 "tmm_tensor_write");
			if (rc < 0)
				return rc;
		}
		rc = tmm_tensor_host_write(ctx, t, offset, src, bytes);
		if (rc == 0)
			tmm_view_after_write(ctx, t);
		return rc;
	}
	rc = tmm_tensor_host_write(ctx, t, offset, src, bytes);
	if (rc < 0)
		return rc;
	/* The write reaches each view it covers: a view level with the
	 * parent or ahead of it is written too, and keeps its standing; a
	 * view already behind, or one that never held bytes, is behind. */
	for (struct tmm_list *n = t->views.next; n != &t->views;
	     n = n->next) {
		struct tmm_tensor_rec *v =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);

		if (!tmm_view_overlap(v, offset, bytes, &from, &to))
			continue;
		if (v->view_behind || v->state == TMM_TS_EMPTY) {
			v->view_behind = true;
			continue;
		}
		rc = tmm_tensor_host_write(ctx, v, from - v->view_offset,
					   (const char *)src + (from - offset),
					   to - from);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Checks a host access range; returns the record or NULL (error set). */
static struct tmm_tensor_rec *io_check(struct tmm_ctx *ctx, tmm_tensor h,
				       size_t offset, const void *buf,
				       size_t bytes, const char *caller,
				       int *rc)
{
	struct tmm_tensor_rec *t = tmm_tensor_lookup(ctx, h, caller);
	char label[64];

	*rc = -EBADF;
	if (!t)
		return NULL;
	*rc = -EINVAL;
	if (!buf) {
		tmm_fail(ctx, -EINVAL, "%s: buffer is NULL", caller);
		return NULL;
	}
	if (offset > t->bytes || bytes > t->bytes - offset) {
		tmm_fail(ctx, -EINVAL,
			 "%s: range [%zu, %zu + %zu) is outside tensor %s of "
			 "%zu bytes", caller, offset, offset, bytes,
			 tmm_tensor_label(t, label, sizeof(label)), t->bytes);
		return NULL;
	}
	if (ctx->be.info.phantom) {
		*rc = -ENOTSUP;
		tmm_fail(ctx, -ENOTSUP,
			 "%s: the simulated device is in phantom mode (sizes "
			 "only, no bytes); use TENSORMM_SIM_MEMORY=backed",
			 caller);
		return NULL;
	}
	*rc = 0;
	return t;
}

static int tensor_write(struct tmm_ctx *ctx, tmm_tensor h, size_t offset,
			const void *src, size_t bytes)
{
	struct tmm_tensor_rec *t;
	int rc;

	t = io_check(ctx, h, offset, src, bytes, "tmm_tensor_write", &rc);
	if (!t)
		return rc;
	/* A rehearsal moves no bytes; host writes are not accesses of the
	 * trace, so there is nothing more to record. */
	if (ctx->rehearsal)
		return 0;
	if (t->n_views || t->view_parent)
		return view_host_write(ctx, t, offset, src, bytes);
	return tmm_tensor_host_write(ctx, t, offset, src, bytes);
}

static int tensor_read(struct tmm_ctx *ctx, tmm_tensor h, size_t offset,
		       void *dst, size_t bytes)
{
	struct tmm_tensor_rec *t;
	int rc;

	t = io_check(ctx, h, offset, dst, bytes, "tmm_tensor_read", &rc);
	if (!t)
		return rc;
	if (ctx->callback) {
		rc = tmm_guard_read_in_callback(ctx, h, t);
		if (rc < 0)
			return rc;
	}
	/* liveness=discard keeps what the host reads after its last op. */
	tmm_tracker_host_read(ctx, t);
	if (ctx->rehearsal)
		return tmm_rehearse_read(ctx, t, dst, bytes);
	if (t->n_views || t->view_parent)
		return view_host_read(ctx, t, offset, dst, bytes);
	return tmm_tensor_host_read(ctx, t, offset, dst, bytes);
}

/*
 * The public calls of this file, each let into the context by the guard
 * (guard.h): a second thread is refused, and so is, inside a callback,
 * everything but reading a tensor's bytes or size.
 */
int tmm_tensor_create(tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		      const char *name, tmm_tensor *out)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_CREATE);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_create(ctx, bytes, kind, name, out);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_tensor_destroy(tmm_ctx *ctx, tmm_tensor h)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_DESTROY);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_destroy(ctx, h);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_tensor_write(tmm_ctx *ctx, tmm_tensor h, size_t offset,
		     const void *src, size_t bytes)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_WRITE);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_write(ctx, h, offset, src, bytes);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_tensor_read(tmm_ctx *ctx, tmm_tensor h, size_t offset, void *dst,
		    size_t bytes)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_READ);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_read(ctx, h, offset, dst, bytes);
	tmm_guard_leave(ctx, entered);
	return rc;
}

size_t tmm_tensor_bytes(const tmm_ctx *cctx, tmm_tensor h)
{
	/* The guard writes the owner word of a context that is not const
	 * (every context is allocated by tmm_ctx_create). */
	struct tmm_ctx *ctx = (struct tmm_ctx *)cctx;
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_BYTES);
	struct tmm_tensor_rec *t;
	size_t bytes;

	if (entered < 0)
		return 0;
	t = tmm_tensor_find(ctx, h);
	bytes = t && !t->ghost ? t->bytes : 0;
	tmm_guard_leave(ctx, entered);
	return bytes;
}
