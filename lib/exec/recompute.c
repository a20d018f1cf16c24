/* SPDX-License-Identifier: MIT */
/*
 * recompute.c — recomputation (see recompute.h): re-running a dropped
 * tensor's producer, the ghosts kept for it, and the readers settled
 * before a source changes.
 *
 * It reads the lineage that lib/move/drop.c records; it sits above the
 * mover because it runs ops, whose inputs the mover makes resident.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/guard.h"
#include "lib/record/guide_state.h"
#include "placing.h"
#include "recompute.h"
#include "lib/move/drop.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "lib/record/tracker.h"
#include "lib/base/xalloc.h"

/* Regenerating a tensor may first regenerate its inputs; a chain deeper
 * than this is a lineage no real model has, and would exhaust the stack. */
#define MAX_DEPTH 4096
#define STACK_TENSORS 16

/* ---- regenerating ----------------------------------------------------- */

/* What regenerate() does with each output of the producer op. */
struct slot {
	struct tmm_tensor_rec *target;	/* regenerated: DROPPED, made by
					 * this op; else NULL */
	struct tmm_pool_block *scratch; /* else: a throwaway buffer */
};

/* The re-run's tensors are placed: their addresses go to its callback,
 * so they may no longer move (placing.h). */
static void end_placing(struct tmm_ctx *ctx, struct tmm_tensor_rec **in,
			unsigned pinned, const struct slot *out,
			unsigned placed, bool *placing)
{
	if (!*placing)
		return;
	for (unsigned i = 0; i < pinned; i++)
		tmm_placing_done(in[i]);
	for (unsigned i = 0; i < placed; i++)
		if (out[i].target)
			tmm_placing_done(out[i].target);
	tmm_placing_end(ctx);
	*placing = false;
}

static int regenerate(struct tmm_ctx *ctx, struct tmm_tensor_rec *want)
{
	struct tmm_lineage *lin = ctx->lineage;
	struct tmm_backend *be = &ctx->be;
	struct lineage_op *op = tmm_lineage_producer(ctx, want);
	uint32_t op_index = want->producer;
	struct tmm_tensor_rec *stack_in[STACK_TENSORS], **in = stack_in;
	struct slot stack_out[STACK_TENSORS], *out = stack_out;
	void *stack_ptrs[STACK_TENSORS], **ptrs = stack_ptrs;
	unsigned n, ni, i, pinned = 0, placed = 0;
	const char *saved_op = ctx->current_op;
	char label[64];
	uint64_t ns = 0;
	bool placing = false; /* placing.h */
	bool outermost = false; /* the first recomputation for the op */
	int rc = 0;

	if (!op)
		return tmm_fail(ctx, -EIO,
				"tensor %s is DROPPED but its producer is "
				"unknown (a libtensormm bug: please report it)",
				tmm_tensor_label(want, label, sizeof(label)));
	if (lin->depth >= MAX_DEPTH)
		return tmm_fail(ctx, -ELOOP,
				"recomputing tensor %s needs a chain of more "
				"than %d dropped tensors",
				tmm_tensor_label(want, label, sizeof(label)),
				MAX_DEPTH);
	ni = op->n_inputs;
	n = ni + op->n_outputs;
	if (n > STACK_TENSORS) {
		in = tmm_malloc(sizeof(*in) * n);
		out = tmm_malloc(sizeof(*out) * n);
		ptrs = tmm_malloc(sizeof(*ptrs) * n);
		if (!in || !out || !ptrs) {
			rc = tmm_fail(ctx, -ENOMEM, "out of host memory for "
				      "the %u tensors of op '%s', recomputing "
				      "tensor %s", n,
				      tmm_lineage_op_name(lin, op),
				      tmm_tensor_label(want, label,
						       sizeof(label)));
			goto done;
		}
	}
	lin->depth++;
	/* The inputs, exactly as the op first read them. */
	for (i = 0; i < ni; i++) {
		in[i] = tmm_tensor_find(ctx, lin->handles[op->first + i]);
		if (!in[i] || in[i]->version != lin->versions[op->first + i]) {
			rc = tmm_fail(ctx, -EIO,
				      "cannot recompute tensor %s: input %u of "
				      "op '%s' changed after the op ran (a "
				      "libtensormm bug: please report it)",
				      tmm_tensor_label(want, label,
						       sizeof(label)),
				      i, tmm_lineage_op_name(lin, op));
			goto unpin;
		}
	}
	/* Pinned while placing, as tmm_run's are: compaction may move them
	 * until the pointers are read, below. */
	tmm_placing_begin(ctx);
	placing = true;
	for (; pinned < ni; pinned++)
		tmm_placing_pin(ctx, in[pinned]);
	/* Messages name the op re-run and, once, the op it is for
	 * (tmm_fail). */
	if (!ctx->recompute_for) {
		ctx->recompute_for = saved_op ? saved_op : "(none)";
		outermost = true;
	}
	ctx->current_op = tmm_lineage_op_name(lin, op);
	for (i = 0; i < ni; i++) {
		bool was_dropped = in[i]->state == TMM_TS_DROPPED;

		rc = tmm_recompute_make_resident(ctx, in[i], true);
		if (rc < 0)
			goto unpin;
		/* Kept by the plan (TMM_ACT_KEEP): not the first to go. */
		if (was_dropped)
			in[i]->regenerated = !in[i]->keep_regenerated;
	}
	/* A deeper recomputation short of room may have swapped out an
	 * input placed before it (placing.h): back it comes. */
	for (i = 0; i < ni; i++) {
		if (in[i]->state == TMM_TS_RESIDENT)
			continue;
		rc = tmm_recompute_make_resident(ctx, in[i], true);
		if (rc < 0)
			goto unpin;
	}
	/* The outputs: the dropped ones this op made come back; any other
	 * (live, or changed since) gets a throwaway buffer, so re-running the
	 * op cannot overwrite bytes that are not its to write. */
	for (; placed < op->n_outputs; placed++) {
		struct slot *s = &out[placed];
		struct tmm_tensor_rec *o =
			tmm_tensor_find(ctx, lin->handles[op->first + ni +
							  placed]);

		s->target = NULL;
		s->scratch = NULL;
		if (o && o->state == TMM_TS_DROPPED &&
		    tmm_lineage_producer(ctx, o) == op) {
			tmm_placing_pin(ctx, o);
			s->target = o;
			rc = tmm_mover_alloc_device(ctx, o);
		} else {
			rc = tmm_mover_alloc_scratch(
				ctx, lin->versions[op->first + ni + placed],
				&s->scratch, &ptrs[ni + placed]);
		}
		if (rc < 0) {
			placed++;
			goto unplace;
		}
	}
	/* Read only now: placing a later tensor may have moved an earlier
	 * one. */
	end_placing(ctx, in, pinned, out, placed, &placing);
	for (i = 0; i < ni; i++)
		ptrs[i] = in[i]->dev;
	for (i = 0; i < placed; i++)
		if (out[i].target)
			ptrs[ni + i] = out[i].target->dev;

	/* A collective may still be reducing an input (run.c waits the
	 * same way before an op). */
	for (i = 0; i < ni && rc == 0; i++) {
		rc = tmm_tensor_wait_net(ctx, in[i], TMM_ENGINE_COMPUTE, false);
		if (rc < 0)
			rc = tmm_fail(ctx, rc, "%s", be->error);
	}
	if (rc < 0)
		goto unplace;

	/*
	 * mode=uvm: the outputs' pages died with the drop (a discard), or
	 * are a scratch block's: made on the device by a prefetch, as a
	 * fresh output's are (run.c), not by the re-run kernel's faults
	 * (issue #19).  Then the kernels touch the ranges as the op's did.
	 */
	if (ctx->mode == TMM_MODE_UVM) {
		for (i = ni; i < n && rc == 0; i++)
			rc = tmm_uvm_prefetch_fresh_range(
				ctx, ptrs[i], lin->versions[op->first + i]);
		if (rc < 0)
			goto unplace;
		tmm_uvm_access_begin(ctx);
		for (i = 0; i < n; i++) {
			size_t bytes = i < ni ? in[i]->bytes
					      : lin->versions[op->first + i];

			tmm_uvm_access_add(ctx, ptrs[i], bytes, i >= ni);
		}
		rc = tmm_uvm_access_commit(ctx);
		if (rc < 0)
			goto unplace;
		for (i = 0; i < n; i++)
			tmm_uvm_touched(ctx, i < ni ? in[i] : out[i - ni].target,
					ptrs[i], i < ni ? in[i]->bytes
						: lin->versions[op->first + i]);
	}
	rc = be->ops->kernel_begin(be, &op->cost);
	if (rc == 0) {
		/* A phantom device keeps no bytes: an op without a
		 * callback costs its time and computes nothing. */
		struct tmm_callback_frame cb;
		int urc;

		/* The user's callback again: it may call in as it did
		 * when the op first ran, and is held to the same rules. */
		tmm_callback_begin(ctx, ctx->current_op,
				   lin->handles + op->first + ni,
				   op->n_outputs, &cb);
		urc = op->run ? op->run(ptrs, ptrs + ni, op->user,
					be->ops->compute_stream(be))
			      : 0;
		tmm_callback_end(ctx);
		rc = be->ops->kernel_end(be, &op->cost, &ns);
		if (urc != 0)
			rc = tmm_fail_callback(
				ctx, urc < 0 ? urc : -EIO, &cb,
				"op '%s' failed: its run callback "
				"returned %d (%s)",
				tmm_lineage_op_name(lin, op), urc,
				tmm_strerror(urc));
		else if (rc < 0)
			rc = tmm_fail(ctx, rc, "%s", be->error);
	} else {
		rc = tmm_fail(ctx, rc, "%s", be->error);
	}
	if (rc == 0) {
		ctx->c.recomputations++;
		ctx->c.recompute_ns += ns;
	}

unplace:
	end_placing(ctx, in, pinned, out, placed, &placing);
	for (i = 0; i < placed; i++) {
		struct tmm_tensor_rec *o = out[i].target;

		tmm_mover_free_scratch(ctx, out[i].scratch);
		if (!o)
			continue;
		o->pins--;
		if (rc < 0) {
			/* Still DROPPED, still recoverable. */
			if (o->block)
				tmm_device_free(ctx, o);
			continue;
		}
		tmm_list_del(&o->dropped);
		tmm_lineage_count_readers(ctx, op, -1);
		tmm_tensor_set_state(o, TMM_TS_RESIDENT);
		o->producer = op_index;
		o->regenerated = o != want && !o->keep_regenerated;
		ctx->ghosts_back |= o->ghost;
		ctx->c.recomputed_bytes += o->bytes;
		tmm_tracker_event(ctx, TMM_EV_RECOMPUTE, o);
	}
unpin:
	end_placing(ctx, in, pinned, out, placed, &placing);
	for (i = 0; i < pinned; i++)
		in[i]->pins--;
	lin->depth--;
	ctx->current_op = saved_op;
	if (outermost)
		ctx->recompute_for = NULL;
done:
	if (in != stack_in) {
		free(in);
		free(out);
		free(ptrs);
	}
	return rc;
}

int tmm_recompute_make_resident(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
				bool need_data)
{
	if (t->state == TMM_TS_DROPPED && need_data)
		return tmm_recompute_regenerate(ctx, t);
	return tmm_mover_make_resident(ctx, t, need_data);
}

int tmm_recompute_regenerate(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->state != TMM_TS_DROPPED)
		return 0;
	/* The ghosts it brings back stay until the op that needed them has
	 * run (tmm_recompute_reap from tmm_run): dropping one again before
	 * that op overwrites one of its sources would leave it stale. */
	return regenerate(ctx, t);
}

bool tmm_recompute_ghost(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	/* Needed: by a dropped tensor now, or by a drop the plan will make
	 * (a ghost for every freed tensor would have to be recomputed
	 * whenever a weight it came from is updated). */
	if (!ctx->lineage->epoch ||
	    (!t->dropped_dependents && !tmm_guide_keeps(ctx, t)))
		return false;
	if (t->state == TMM_TS_RESIDENT) {
		if (!tmm_recompute_droppable(ctx, t))
			return false;
		/* Not a drop the plan asked for: not counted as one. */
		tmm_recompute_drop_uncounted(ctx, t);
	} else if (t->state != TMM_TS_DROPPED) {
		return false;
	}
	t->ghost = true;
	tmm_list_add_tail(&ctx->ghosts, &t->ghosts);
	return true;
}

void tmm_recompute_reap(struct tmm_ctx *ctx, bool all)
{
	bool freed = true;

	/* After each op: only when a ghost came back is there anything to
	 * do, and the list may be long. */
	if (!all && !ctx->ghosts_back)
		return;
	ctx->ghosts_back = false;

	/* Freeing a ghost that is still dropped releases its own sources,
	 * which may be ghosts too: until nothing changes. */
	while (freed) {
		freed = false;
		for (struct tmm_list *n = ctx->ghosts.next; n != &ctx->ghosts;) {
			struct tmm_tensor_rec *g = tmm_container_of(
				n, struct tmm_tensor_rec, ghosts);

			n = n->next;
			if (g->pins)
				continue;
			if (!all && g->state == TMM_TS_RESIDENT &&
			    tmm_recompute_droppable(ctx, g)) {
				/* Brought back for a recomputation: its
				 * memory goes again, its lineage stays (a
				 * dropped reader can bring it back). */
				tmm_recompute_drop_uncounted(ctx, g);
				continue;
			}
			if (g->dropped_dependents ||
			    (!all && g->state == TMM_TS_DROPPED &&
			     tmm_guide_keeps(ctx, g)))
				continue; /* kept, for drops to come */
			tmm_tensor_retire(ctx, g);
			freed = true;
		}
	}
}
/* Does op read t? */
static bool reads(const struct tmm_ctx *ctx, const struct lineage_op *op,
		  tmm_tensor h)
{
	const struct tmm_lineage *lin = ctx->lineage;

	for (unsigned i = 0; i < op->n_inputs; i++)
		if (lin->handles[op->first + i].id == h.id)
			return true;
	return false;
}

int tmm_recompute_settle_readers(struct tmm_ctx *ctx,
				 struct tmm_tensor_rec *t)
{
	tmm_tensor h = tmm_tensor_handle(ctx, t);

	while (t->dropped_dependents) {
		struct tmm_tensor_rec *reader = NULL;
		int rc;

		for (struct tmm_list *n = ctx->dropped.next;
		     n != &ctx->dropped; n = n->next) {
			struct tmm_tensor_rec *d = tmm_container_of(
				n, struct tmm_tensor_rec, dropped);
			const struct lineage_op *op =
				tmm_lineage_producer(ctx, d);

			if (op && reads(ctx, op, h)) {
				reader = d;
				break;
			}
		}
		if (!reader) {
			/* The count and the list disagree: trust the list. */
			t->dropped_dependents = 0;
			break;
		}
		if (reader->ghost && !reader->dropped_dependents &&
		    !reader->pins) {
			/* Kept only for drops to come, which now cannot
			 * recompute it: freed, not recomputed. */
			tmm_tensor_retire(ctx, reader);
			continue;
		}
		reader->pins++;
		rc = regenerate(ctx, reader);
		reader->pins--;
		if (rc < 0)
			return rc;
	}
	/* No reaping here: the readers brought back read t, which is about
	 * to change, so none may be dropped again before it has (a later
	 * reap finds them no longer droppable, and frees the ghosts). */
	return 0;
}

int tmm_lineage_iteration_begin(struct tmm_ctx *ctx)
{
	struct tmm_lineage *lin = ctx->lineage;

	for (;;) {
		struct tmm_tensor_rec *d = NULL;
		int rc;

		/* Ghosts come back only as the sources of others: one that
		 * nothing needs is freed below, not recomputed. */
		for (struct tmm_list *n = ctx->dropped.next;
		     n != &ctx->dropped && !d; n = n->next) {
			struct tmm_tensor_rec *c = tmm_container_of(
				n, struct tmm_tensor_rec, dropped);

			if (!c->ghost)
				d = c;
		}
		if (!d)
			break;
		d->pins++;
		rc = regenerate(ctx, d);
		d->pins--;
		if (rc < 0)
			return rc;
	}
	tmm_recompute_reap(ctx, true);
	lin->epoch = ctx->c.iterations + 1;
	lin->n_ops = lin->n_refs = lin->names_len = 0;
	return 0;
}

