/* SPDX-License-Identifier: MIT */
/*
 * view.h — keeping views and their parents coherent (view.c).
 *
 * Every call of the API that uses a tensor's bytes asks here first, when
 * the context has views (ctx->live_views): tmm_run through tmm_view_run,
 * the others through the hooks below; host reads and writes compose a
 * parent's bytes and its views' in tensor.c.  A context without views
 * never enters this file.
 */
#ifndef TMM_EXEC_VIEW_H
#define TMM_EXEC_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/core/context.h"

/* tmm_run on a context with views: the op's parents gather their views'
 * newer bytes, its views catch up with their parents, then the op runs
 * (tmm_run_op) and what it wrote is marked. */
int tmm_view_run(struct tmm_ctx *ctx, const tmm_op *op);

/*
 * Before the library's own op or an acquire uses t whole: a parent first
 * gathers the bytes its views hold newer than it; a view whose parent is
 * newer catches up (when `reads`: its old bytes are needed).  -EBUSY for
 * a view of a parent that is acquired (its bytes may be changing under
 * the program's hands).  Returns 0 or the copy op's error.
 */
int tmm_view_before_use(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			bool reads, const char *caller);

/* After t was written whole or in part on the device (an op's output, a
 * fill, an acquire for writing): a parent's views fall behind it, a view
 * is ahead of its parent. */
void tmm_view_after_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Before tmm_tensor_destroy: -EBUSY for a parent with live views. */
int tmm_view_before_destroy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* A view destroyed leaves its parent (its bytes handed back first, by
 * tensor.c: through the host, so that a parent larger than the budget
 * needs no room on the device for it). */
void tmm_view_leave_parent(struct tmm_ctx *ctx, struct tmm_tensor_rec *v);

/* The part [*from, *to) of the parent's range [offset, offset + bytes)
 * that view v covers: false when they do not overlap. */
static inline bool tmm_view_overlap(const struct tmm_tensor_rec *v,
				    size_t offset, size_t bytes, size_t *from,
				    size_t *to)
{
	size_t lo = v->view_offset, hi = v->view_offset + v->bytes;

	*from = offset > lo ? offset : lo;
	*to = offset + bytes < hi ? offset + bytes : hi;
	return *from < *to;
}

#endif /* TMM_EXEC_VIEW_H */
