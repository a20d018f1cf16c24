/*
 * recompute.c — lineage, dropping and recomputation (see recompute.h).
 *
 * The lineage of an iteration is three arrays that keep their capacity
 * from one iteration to the next: the pure ops that ran, the handles of
 * their tensors (inputs then outputs) with the version each input had, and
 * their names.  A tensor points at the op that made its bytes by index,
 * tagged with the iteration (producer_epoch), so forgetting the lineage at
 * the next iteration costs nothing per tensor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"
#include "guide.h"
#include "recompute.h"
#include "lib/base/grow.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "tracker.h"

/* Regenerating a tensor may first regenerate its inputs; a chain deeper
 * than this is a lineage no real model has, and would exhaust the stack. */
#define MAX_DEPTH 4096
#define STACK_TENSORS 16

struct lineage_op {
	tmm_run_fn run;
	void *user;
	struct tmm_cost cost;
	uint32_t name;	   /* offset in names */
	uint32_t first;	   /* in handles / versions */
	uint16_t n_inputs, n_outputs;
};

struct tmm_lineage {
	uint64_t epoch;	   /* the iteration whose ops these are */
	struct lineage_op *ops;
	uint32_t n_ops, cap_ops;
	tmm_tensor *handles;
	uint64_t *versions; /* inputs: their version when the op ran;
			     * outputs: their size, for a throwaway buffer
			     * once the output itself is gone */
	uint32_t n_refs, cap_refs, cap_versions;
	char *names;
	uint32_t names_len, cap_names;
	unsigned depth;	    /* regenerations under way, nested */
};

int tmm_lineage_create(struct tmm_ctx *ctx)
{
	ctx->lineage = calloc(1, sizeof(*ctx->lineage));
	return ctx->lineage ? 0 : -ENOMEM;
}

void tmm_lineage_destroy(struct tmm_ctx *ctx)
{
	struct tmm_lineage *lin = ctx->lineage;

	if (!lin)
		return;
	free(lin->ops);
	free(lin->handles);
	free(lin->versions);
	free(lin->names);
	free(lin);
	ctx->lineage = NULL;
}

static const char *op_name(const struct tmm_lineage *lin,
			   const struct lineage_op *op)
{
	return lin->names + op->name;
}

/* The lineage op that made t's bytes, or NULL. */
static struct lineage_op *producer_of(const struct tmm_ctx *ctx,
				      const struct tmm_tensor_rec *t)
{
	const struct tmm_lineage *lin = ctx->lineage;

	if (!lin->epoch || t->producer_epoch != lin->epoch ||
	    t->producer >= lin->n_ops)
		return NULL;
	return &lin->ops[t->producer];
}

/* ---- recording -------------------------------------------------------- */

void tmm_lineage_record(struct tmm_ctx *ctx, const tmm_op *op,
			struct tmm_tensor_rec *const *recs,
			const uint8_t *flags, unsigned n)
{
	struct tmm_lineage *lin = ctx->lineage;
	const char *name = op->name ? op->name : "(unnamed)";
	bool pure = (op->flags & TMM_OP_PURE) && lin->epoch &&
		    tmm_tracker_recording(ctx) &&
		    (op->run || ctx->be.info.phantom);
	size_t name_len = pure ? strlen(name) + 1 : 0;
	struct lineage_op *l;
	uint32_t index = 0;

	if (pure &&
	    (!tmm_grow((void **)&lin->ops, &lin->cap_ops, lin->n_ops + 1ull,
		       sizeof(*lin->ops)) ||
	     !tmm_grow((void **)&lin->handles, &lin->cap_refs,
		       (uint64_t)lin->n_refs + n, sizeof(*lin->handles)) ||
	     !tmm_grow((void **)&lin->versions, &lin->cap_versions,
		       (uint64_t)lin->n_refs + n, sizeof(*lin->versions)) ||
	     !tmm_grow((void **)&lin->names, &lin->cap_names,
		       (uint64_t)lin->names_len + name_len, 1)))
		pure = false; /* out of memory: its outputs stay undroppable */
	if (pure) {
		index = lin->n_ops++;
		l = &lin->ops[index];
		*l = (struct lineage_op){
			.run = op->run, .user = op->user, .cost = op->cost,
			.name = lin->names_len, .first = lin->n_refs,
			.n_inputs = (uint16_t)op->n_inputs,
			.n_outputs = (uint16_t)op->n_outputs,
		};
		memcpy(lin->names + lin->names_len, name, name_len);
		lin->names_len += (uint32_t)name_len;
		for (unsigned i = 0; i < n; i++) {
			lin->handles[lin->n_refs] =
				tmm_tensor_handle(ctx, recs[i]);
			lin->versions[lin->n_refs++] = i < op->n_inputs
				? recs[i]->version : recs[i]->bytes;
		}
	}
	for (unsigned i = op->n_inputs; i < n; i++) {
		struct tmm_tensor_rec *t = recs[i];

		t->version++;
		if (pure && !(flags[i] & TMM_TRACK_REPEAT)) {
			t->producer = index;
			t->producer_epoch = lin->epoch;
		} else {
			t->producer_epoch = 0;
		}
	}
	/* An output also listed as an input was updated in place: the op
	 * cannot be re-run to recover it, whatever came first in the list. */
	for (unsigned i = op->n_inputs; i < n; i++)
		if (flags[i] & TMM_TRACK_REPEAT)
			for (unsigned k = 0; k < i; k++)
				if (recs[k] == recs[i])
					recs[k]->producer_epoch = 0;
}

void tmm_lineage_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	(void)ctx;
	t->version++;
	t->producer_epoch = 0;
}

/* ---- dropping --------------------------------------------------------- */

static int cannot_drop(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		       const char *why, const char *what)
{
	char label[64];

	return tmm_fail(ctx, -EINVAL, "cannot drop tensor %s: %s%s",
			tmm_tensor_label(t, label, sizeof(label)), why, what);
}

int tmm_recompute_check(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_lineage *lin = ctx->lineage;
	const struct lineage_op *op;

	if (t->state != TMM_TS_RESIDENT)
		return cannot_drop(ctx, t, "it is ", tmm_tstate_name(t->state));
	if (t->pins)
		return cannot_drop(ctx, t, "it is pinned by a running op or "
				   "tmm_acquire", "");
	op = producer_of(ctx, t);
	if (!op)
		return cannot_drop(ctx, t,
				   "its bytes were not made by an op flagged "
				   "TMM_OP_PURE in this iteration, so they "
				   "could not be recomputed", "");
	for (unsigned i = 0; i < op->n_inputs; i++) {
		const struct tmm_tensor_rec *in =
			tmm_tensor_find(ctx, lin->handles[op->first + i]);

		if (!in || in->version != lin->versions[op->first + i])
			return cannot_drop(ctx, t,
					   "an input of its producer op has "
					   "changed or is gone: ",
					   op_name(lin, op));
	}
	return 0;
}

/* Adds `delta` to the dropped_dependents of each input of op. */
static void count_readers(struct tmm_ctx *ctx, const struct lineage_op *op,
			  int delta)
{
	const struct tmm_lineage *lin = ctx->lineage;

	for (unsigned i = 0; i < op->n_inputs; i++) {
		struct tmm_tensor_rec *in =
			tmm_tensor_find(ctx, lin->handles[op->first + i]);

		if (in)
			in->dropped_dependents += (uint32_t)delta;
	}
}

/* Frees t's device memory, to be recomputed (after the check). */
static void drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_mover_free_device(ctx, t);
	tmm_mover_set_state(t, TMM_TS_DROPPED);
	tmm_list_add_tail(&ctx->dropped, &t->dropped);
	count_readers(ctx, producer_of(ctx, t), +1);
	t->regenerated = false;
}

int tmm_recompute_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = tmm_recompute_check(ctx, t);

	if (rc < 0)
		return rc;
	drop(ctx, t);
	ctx->c.drops++;
	ctx->c.drop_bytes += t->bytes;
	tmm_tracker_event(ctx, TMM_EV_DROP, t);
	return 0;
}

/* Can t be dropped, as a question: the program's last message stays. */
static bool droppable(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	char saved[sizeof(ctx->error)];
	bool ok;

	memcpy(saved, ctx->error, sizeof(saved));
	ok = tmm_recompute_check(ctx, t) == 0;
	memcpy(ctx->error, saved, sizeof(saved));
	return ok;
}

void tmm_recompute_forget(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	const struct lineage_op *op = producer_of(ctx, t);

	if (t->state != TMM_TS_DROPPED)
		return;
	tmm_list_del(&t->dropped);
	if (op)
		count_readers(ctx, op, -1);
	t->producer_epoch = 0;
	/* Leaving DROPPED without bytes is not a life-cycle transition: the
	 * tensor is about to be overwritten or retired. */
	t->state = TMM_TS_EMPTY;
}

/* ---- regenerating ----------------------------------------------------- */

/* What regenerate() does with each output of the producer op. */
struct slot {
	struct tmm_tensor_rec *target;	/* regenerated: DROPPED, made by
					 * this op; else NULL */
	struct tmm_pool_block *scratch; /* else: a throwaway buffer */
};

static int regenerate(struct tmm_ctx *ctx, struct tmm_tensor_rec *want)
{
	struct tmm_lineage *lin = ctx->lineage;
	struct tmm_backend *be = &ctx->be;
	struct lineage_op *op = producer_of(ctx, want);
	uint32_t op_index = want->producer;
	struct tmm_tensor_rec *stack_in[STACK_TENSORS], **in = stack_in;
	struct slot stack_out[STACK_TENSORS], *out = stack_out;
	void *stack_ptrs[STACK_TENSORS], **ptrs = stack_ptrs;
	unsigned n, ni, i, pinned = 0, placed = 0;
	const char *saved_op = ctx->current_op;
	char label[64];
	uint64_t ns = 0;
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
		in = malloc(sizeof(*in) * n);
		out = malloc(sizeof(*out) * n);
		ptrs = malloc(sizeof(*ptrs) * n);
		if (!in || !out || !ptrs) {
			rc = tmm_fail(ctx, -ENOMEM, "out of memory");
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
				      i, op_name(lin, op));
			goto unpin;
		}
	}
	for (; pinned < ni; pinned++)
		in[pinned]->pins++;
	ctx->current_op = op_name(lin, op);
	for (i = 0; i < ni; i++) {
		bool was_dropped = in[i]->state == TMM_TS_DROPPED;

		rc = tmm_mover_make_resident(ctx, in[i], true);
		if (rc < 0)
			goto unpin;
		if (was_dropped)
			in[i]->regenerated = true;
		ptrs[i] = in[i]->dev;
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
		    producer_of(ctx, o) == op) {
			o->pins++;
			s->target = o;
			rc = tmm_mover_alloc_device(ctx, o);
			if (rc == 0)
				ptrs[ni + placed] = o->dev;
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

	/* mode=uvm: the re-run's kernels fault like the op's did. */
	if (ctx->mode == TMM_MODE_UVM) {
		tmm_uvm_access_begin(ctx);
		for (i = 0; i < n; i++) {
			size_t bytes = i < ni ? in[i]->bytes
					      : lin->versions[op->first + i];

			tmm_uvm_access_add(ctx, ptrs[i], bytes, i >= ni);
		}
		rc = tmm_uvm_access_commit(ctx);
		if (rc < 0)
			goto unplace;
	}
	rc = be->ops->kernel_begin(be, &op->cost);
	if (rc == 0) {
		/* A phantom device keeps no bytes: an op without a
		 * callback costs its time and computes nothing. */
		int urc = op->run ? op->run(ptrs, ptrs + ni, op->user,
					    be->ops->compute_stream(be))
				  : 0;

		rc = be->ops->kernel_end(be, &op->cost, &ns);
		if (urc != 0)
			rc = tmm_fail(ctx, urc < 0 ? urc : -EIO,
				      "recomputing with op '%s' failed: its "
				      "run callback returned %d (%s)",
				      op_name(lin, op), urc, tmm_strerror(urc));
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
	for (i = 0; i < placed; i++) {
		struct tmm_tensor_rec *o = out[i].target;

		tmm_mover_free_scratch(ctx, out[i].scratch);
		if (!o)
			continue;
		o->pins--;
		if (rc < 0) {
			/* Still DROPPED, still recoverable. */
			if (o->block)
				tmm_mover_free_device(ctx, o);
			continue;
		}
		tmm_list_del(&o->dropped);
		count_readers(ctx, op, -1);
		tmm_mover_set_state(o, TMM_TS_RESIDENT);
		o->producer = op_index;
		o->regenerated = o != want;
		ctx->ghosts_back |= o->ghost;
		ctx->c.recomputed_bytes += o->bytes;
		tmm_tracker_event(ctx, TMM_EV_RECOMPUTE, o);
	}
unpin:
	for (i = 0; i < pinned; i++)
		in[i]->pins--;
	lin->depth--;
	ctx->current_op = saved_op;
done:
	if (in != stack_in) {
		free(in);
		free(out);
		free(ptrs);
	}
	return rc;
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
		if (!droppable(ctx, t))
			return false;
		/* Not a drop the plan asked for: not counted as one. */
		drop(ctx, t);
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
			    droppable(ctx, g)) {
				/* Brought back for a recomputation: its
				 * memory goes again, its lineage stays (a
				 * dropped reader can bring it back). */
				drop(ctx, g);
				continue;
			}
			if (g->dropped_dependents ||
			    (!all && g->state == TMM_TS_DROPPED))
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
			const struct lineage_op *op = producer_of(ctx, d);

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

bool tmm_recompute_shed(struct tmm_ctx *ctx)
{
	for (struct tmm_list *n = ctx->device_lru.next; n != &ctx->device_lru;
	     n = n->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);

		if (!t->regenerated || t->state != TMM_TS_RESIDENT || t->pins)
			continue;
		if (producer_of(ctx, t) && tmm_recompute_drop(ctx, t) == 0)
			return true;
		t->regenerated = false; /* not droppable after all */
	}
	return false;
}
