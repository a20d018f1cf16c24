/* SPDX-License-Identifier: MIT */
/*
 * view.c — tensor views: a tensor naming a byte range of another
 * (tmm_tensor_view in tensormm.h), and the coherence of the two.
 *
 * A view is a tensor of its own: its bytes have a place of their own, and
 * it is placed, moved, evicted, dropped and recomputed like any other.  So
 * a trainer that keeps every layer's activations in one buffer still lets
 * the planners move each layer's separately, which one buffer moved whole
 * could not: it would have to fit the budget at once.
 *
 * What ties a view to its parent is that the program sees one set of
 * bytes.  Each view knows which side is newer (context.h: view_ahead,
 * view_behind) and the two are brought together only where the program
 * could tell the difference, lazily:
 *
 *  - a parent used whole (an op, an acquire) first gathers the ranges of
 *    its views that are ahead of it; a parent written whole leaves every
 *    view behind it;
 *  - a view used with its old bytes needed, while behind, first catches up
 *    from its parent; a view written is ahead;
 *  - host reads and writes compose the two without copies on the device.
 *
 * The copies on the device are ops of the library's own (tmm_view_gather,
 * tmm_view_catch_up), run, recorded and planned like any other, so every
 * planner sees the memory and time they need.  Like a fill, they are not
 * pure: a tensor they wrote is swapped, never dropped.
 *
 * Views of one parent do not overlap, so each byte of the parent has at
 * most one view that may be newer; and one op may not list a parent and
 * one of its views, whose bytes would be two different copies inside it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/record/tracker.h"
#include "run.h"
#include "view.h"

/* ---- the copies between a view and its parent --------------------------- */

struct view_copy {
	struct tmm_ctx *ctx;
	size_t offset; /* the view's offset in its parent */
	size_t bytes;
	bool to_parent;
	size_t zero_first; /* to_parent: the parent never held bytes, so
			    * its `zero_first` bytes are zeroed first */
};

static int view_copy_run(void *const *in, void *const *out, void *user,
			 void *stream)
{
	const struct view_copy *c = user;
	struct tmm_backend *be = &c->ctx->be;

	int rc;

	(void)stream; /* the backend's own compute stream is the same */
	if (c->zero_first &&
	    (rc = be->ops->fill(be, out[0], 0, c->zero_first)) < 0)
		return rc;
	if (c->to_parent)
		return be->ops->copy_on_device(be, (char *)out[0] + c->offset,
					       in[0], c->bytes);
	return be->ops->copy_on_device(be, out[0],
				       (const char *)in[0] + c->offset,
				       c->bytes);
}

/*
 * Copies view v's bytes into its parent's range (to_parent), or the
 * parent's range into v, as an op.  A failure says which view and which
 * of the program's calls it was for, after the copy op's own message.
 */
static int copy_op(struct tmm_ctx *ctx, struct tmm_tensor_rec *v,
		   bool to_parent, const char *caller)
{
	/* The parent's bytes outside the view's range stay: it is read and
	 * written, as an accumulated output is. */
	static const unsigned char keep_rest[1] = { 1 };
	struct tmm_tensor_rec *p = v->view_parent;
	tmm_tensor vh = tmm_tensor_handle(ctx, v);
	tmm_tensor ph = tmm_tensor_handle(ctx, p);
	/* A parent that never held bytes reads as zeros where no view
	 * covers it, as a tensor written in part does (tmm_tensor_write):
	 * the copy zeroes it first, and overwrites it whole. */
	bool fresh = to_parent && p->state == TMM_TS_EMPTY;
	struct view_copy c = { ctx, v->view_offset, v->bytes, to_parent,
			       fresh ? p->bytes : 0 };
	tmm_op op = {
		.name = to_parent ? "tmm_view_gather" : "tmm_view_catch_up",
		.kind = TMM_OP_ELEMENTWISE,
		.inputs = to_parent ? &vh : &ph,
		.n_inputs = 1,
		.outputs = to_parent ? &ph : &vh,
		.n_outputs = 1,
		.run = view_copy_run,
		.user = &c,
		/* a read and a write of the view's bytes */
		.cost = { .flops = 0,
			  .bytes = 2.0 * (double)v->bytes +
				   (double)c.zero_first },
		.accumulate = to_parent && !fresh ? keep_rest : NULL,
	};
	char label[64];
	size_t len;
	int rc;

	rc = tmm_run_op(ctx, &op);
	if (rc == 0)
		return 0;
	len = strlen(ctx->error);
	snprintf(ctx->error + len, sizeof(ctx->error) - len,
		 " (copying view %s %s its parent, for %s)",
		 tmm_tensor_label(v, label, sizeof(label)),
		 to_parent ? "into" : "from", caller);
	return rc;
}

/* ---- the coherence rules ------------------------------------------------- */

/* Brings a parent up to date with every view that is ahead of it. */
static int gather(struct tmm_ctx *ctx, struct tmm_tensor_rec *p,
		  const char *caller)
{
	for (struct tmm_list *n = p->views.next; n != &p->views;
	     n = n->next) {
		struct tmm_tensor_rec *v =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);
		int rc;

		if (!v->view_ahead)
			continue;
		rc = copy_op(ctx, v, true, caller);
		if (rc < 0)
			return rc;
		/* A rehearsal copies nothing: the real bytes stay apart. */
		if (!ctx->rehearsal)
			v->view_ahead = false;
	}
	return 0;
}

static int catch_up(struct tmm_ctx *ctx, struct tmm_tensor_rec *v,
		    const char *caller)
{
	int rc = copy_op(ctx, v, false, caller);

	if (rc == 0 && !ctx->rehearsal)
		v->view_behind = false;
	return rc;
}

int tmm_view_before_use(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			bool reads, const char *caller)
{
	char label[64], plabel[64];

	if (t->n_views)
		return reads ? gather(ctx, t, caller) : 0;
	if (!t->view_parent)
		return 0;
	if (t->view_parent->acquires)
		return tmm_fail(ctx, -EBUSY,
				"%s: tensor %s is a view of %s, which is "
				"acquired; tmm_release the parent first",
				caller, tmm_tensor_label(t, label, sizeof(label)),
				tmm_tensor_label(t->view_parent, plabel,
						 sizeof(plabel)));
	if (t->view_behind && reads)
		return catch_up(ctx, t, caller);
	return 0;
}

void tmm_view_after_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (ctx->rehearsal)
		return;
	if (t->view_parent) {
		t->view_ahead = true;
		t->view_behind = false;
	}
	for (struct tmm_list *n = t->views.next; n != &t->views;
	     n = n->next) {
		struct tmm_tensor_rec *v =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);

		v->view_ahead = false;
		v->view_behind = true;
	}
}

/* ---- ops ----------------------------------------------------------------- */

/* An op may list a parent or its views, not both: fails with -EINVAL. */
static int check_parent_and_view(struct tmm_ctx *ctx, const tmm_op *op)
{
	unsigned n = op->n_inputs + op->n_outputs;
	uint64_t stamp = ++ctx->view_stamp;
	char label[64], plabel[64];

	for (unsigned i = 0; i < n; i++) {
		struct tmm_tensor_rec *t = tmm_tensor_find(
			ctx, i < op->n_inputs ? op->inputs[i]
					      : op->outputs[i - op->n_inputs]);

		if (t && t->n_views)
			t->view_mark = stamp;
	}
	for (unsigned i = 0; i < n; i++) {
		struct tmm_tensor_rec *t = tmm_tensor_find(
			ctx, i < op->n_inputs ? op->inputs[i]
					      : op->outputs[i - op->n_inputs]);

		if (t && t->view_parent &&
		    t->view_parent->view_mark == stamp)
			return tmm_fail(ctx, -EINVAL,
					"tmm_run: op '%s' lists tensor %s and "
					"its view %s; inside one op they would "
					"be two copies of the same bytes: list "
					"the parent alone, or views alone",
					ctx->current_op,
					tmm_tensor_label(t->view_parent, plabel,
							 sizeof(plabel)),
					tmm_tensor_label(t, label,
							 sizeof(label)));
	}
	return 0;
}

/* Whether the op needs output j's old bytes (as run.c's NEEDS_DATA): it
 * is an input too, or declared accumulated. */
static bool output_reads(const tmm_op *op, unsigned j)
{
	if (op->accumulate && op->accumulate[j])
		return true;
	for (unsigned i = 0; i < op->n_inputs; i++)
		if (op->inputs[i].id == op->outputs[j].id)
			return true;
	return false;
}

int tmm_view_run(struct tmm_ctx *ctx, const tmm_op *op)
{
	unsigned n;
	int rc;

	ctx->current_op = op && op->name ? op->name : "(unnamed)";
	/* A malformed op is tmm_run_op's to refuse, with its message. */
	if (!op || (op->n_inputs && !op->inputs) ||
	    (op->n_outputs && !op->outputs) ||
	    op->n_inputs > TMM_OP_MAX_TENSORS ||
	    op->n_outputs > TMM_OP_MAX_TENSORS)
		return tmm_run_op(ctx, op);
	rc = check_parent_and_view(ctx, op);
	if (rc < 0)
		return rc;
	n = op->n_inputs + op->n_outputs;
	for (unsigned i = 0; i < n; i++) {
		bool input = i < op->n_inputs;
		const char *name = op->name ? op->name : "(unnamed)";
		struct tmm_tensor_rec *t = tmm_tensor_find(
			ctx, input ? op->inputs[i]
				   : op->outputs[i - op->n_inputs]);

		/* A bad handle is tmm_run_op's to name; a tensor that is
		 * neither a view nor a parent has nothing to bring up to
		 * date (and output_reads' scan is spared). */
		if (!t || (!t->n_views && !t->view_parent))
			continue;
		rc = tmm_view_before_use(
			ctx, t, input || output_reads(op, i - op->n_inputs),
			name);
		if (rc < 0)
			return rc;
	}
	rc = tmm_run_op(ctx, op);
	if (rc < 0)
		return rc;
	for (unsigned j = 0; j < op->n_outputs; j++)
		tmm_view_after_write(ctx, tmm_tensor_find(ctx, op->outputs[j]));
	return 0;
}

/* ---- making and destroying views ----------------------------------------- */

int tmm_view_before_destroy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	char label[64];

	if (t->n_views)
		return tmm_fail(ctx, -EBUSY,
				"tmm_tensor_destroy: tensor %s has %u live "
				"view(s); destroy them first",
				tmm_tensor_label(t, label, sizeof(label)),
				t->n_views);
	return 0;
}

void tmm_view_leave_parent(struct tmm_ctx *ctx, struct tmm_tensor_rec *v)
{
	tmm_list_del(&v->view_link);
	v->view_parent->n_views--;
	v->view_parent = NULL;
	v->view_ahead = v->view_behind = false;
	ctx->live_views--;
}

static int tensor_view(struct tmm_ctx *ctx, tmm_tensor ph, size_t offset,
		       size_t bytes, const char *name, tmm_tensor *out)
{
	struct tmm_tensor_rec *p, *v;
	char label[64], vlabel[64];
	int rc;

	if (!out)
		return tmm_fail(ctx, -EINVAL, "tmm_tensor_view: out is NULL");
	*out = TMM_TENSOR_NULL;
	p = tmm_tensor_lookup(ctx, ph, "tmm_tensor_view");
	if (!p)
		return -EBADF;
	tmm_tensor_label(p, label, sizeof(label));
	if (p->view_parent)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_view: tensor %s is itself a view "
				"(at offset %zu of %s); make the view of that "
				"parent, at offset %zu + yours",
				label, p->view_offset,
				tmm_tensor_label(p->view_parent, vlabel,
						 sizeof(vlabel)),
				p->view_offset);
	if (bytes == 0 || offset > p->bytes || bytes > p->bytes - offset)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_view: range [%zu, %zu + %zu) is "
				"empty or outside tensor %s of %zu bytes",
				offset, offset, bytes, label, p->bytes);
	for (struct tmm_list *n = p->views.next; n != &p->views;
	     n = n->next) {
		struct tmm_tensor_rec *o =
			tmm_container_of(n, struct tmm_tensor_rec, view_link);
		size_t from, to;

		if (tmm_view_overlap(o, offset, bytes, &from, &to))
			return tmm_fail(ctx, -EINVAL,
					"tmm_tensor_view: range [%zu, %zu) of "
					"%s overlaps its view %s at [%zu, "
					"%zu); views of one tensor may not "
					"overlap", offset, offset + bytes,
					label,
					tmm_tensor_label(o, vlabel,
							 sizeof(vlabel)),
					o->view_offset,
					o->view_offset + o->bytes);
	}
	rc = tmm_tensor_new(ctx, bytes, p->kind, name, &v);
	if (rc < 0)
		return rc;
	v->view_parent = p;
	v->view_offset = offset;
	/* The parent's bytes, if it has any, are the view's until it is
	 * written: it catches up when first read. */
	v->view_behind = p->state != TMM_TS_EMPTY;
	tmm_list_add_tail(&p->views, &v->view_link);
	p->n_views++;
	ctx->live_views++;
	*out = tmm_tensor_handle(ctx, v);
	tmm_tracker_tensor_made(ctx, v);
	return 0;
}

int tmm_tensor_view(tmm_ctx *ctx, tmm_tensor parent, size_t offset,
		    size_t bytes, const char *name, tmm_tensor *out)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_VIEW);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_view(ctx, parent, offset, bytes, name, out);
	tmm_guard_leave(ctx, entered);
	return rc;
}
