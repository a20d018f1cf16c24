/* SPDX-License-Identifier: MIT */
/*
 * drop.c — dropping a tensor to recompute it later (Capuchin §4.4): the
 * lineage that makes a drop safe, and the drop itself (see drop.h).
 *
 * The lineage of an iteration is three arrays that keep their capacity
 * from one iteration to the next: the pure ops that ran, the handles of
 * their tensors (inputs then outputs) with the version each input had, and
 * their names.  A tensor points at the op that made its bytes by index,
 * tagged with the iteration (producer_epoch), so forgetting the lineage at
 * the next iteration costs nothing per tensor.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_mem.h"
#include "drop.h"
#include "lib/base/grow.h"
#include "mover_uvm.h"
#include "lib/record/tracker.h"
#include "swap_engine.h"
#include "lib/base/xalloc.h"

int tmm_lineage_create(struct tmm_ctx *ctx)
{
	ctx->lineage = tmm_calloc(1, sizeof(*ctx->lineage));
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

struct lineage_op *tmm_lineage_producer(const struct tmm_ctx *ctx,
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
	op = tmm_lineage_producer(ctx, t);
	if (!op)
		return cannot_drop(ctx, t,
				   "its bytes were not made by an op flagged "
				   "TMM_OP_PURE in this iteration, so they "
				   "could not be recomputed", "");
	for (unsigned i = 0; i < op->n_inputs; i++) {
		const struct tmm_tensor_rec *in =
			tmm_tensor_find(ctx, lin->handles[op->first + i]);

		if (!in || in->version != lin->versions[op->first + i]) {
			char what[160], label[64];

			snprintf(what, sizeof(what), "input %u of op '%s' (%s)",
				 i, tmm_lineage_op_name(lin, op),
				 in ? tmm_tensor_label(in, label,
						       sizeof(label))
				    : "freed");
			return cannot_drop(ctx, t,
					   in ? "an input of its producer has "
						"changed since: "
					      : "an input of its producer is "
						"gone: ",
					   what);
		}
		/* Its bytes discarded dead (liveness=discard, dead.h):
		 * nothing to recompute from. */
		if (in->state == TMM_TS_EMPTY)
			return cannot_drop(ctx, t,
					   "an input of its producer op holds "
					   "no bytes: ",
					   tmm_lineage_op_name(lin, op));
	}
	return 0;
}

void tmm_lineage_count_readers(struct tmm_ctx *ctx,
			       const struct lineage_op *op, int delta)
{
	const struct tmm_lineage *lin = ctx->lineage;

	for (unsigned i = 0; i < op->n_inputs; i++) {
		struct tmm_tensor_rec *in =
			tmm_tensor_find(ctx, lin->handles[op->first + i]);

		if (in)
			in->dropped_dependents += (uint32_t)delta;
	}
}

void tmm_recompute_drop_uncounted(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t)
{
	if (ctx->mode == TMM_MODE_UVM) {
		/* A collective still on it ends before the range is
		 * reused (the other way defers the block instead). */
		(void)tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);
		tmm_uvm_drop(ctx, t);
	} else
		tmm_mover_device_give_back(ctx, t);
	tmm_tensor_set_state(t, TMM_TS_DROPPED);
	tmm_list_add_tail(&ctx->dropped, &t->dropped);
	tmm_lineage_count_readers(ctx, tmm_lineage_producer(ctx, t), +1);
	t->regenerated = false;
}

int tmm_recompute_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = tmm_recompute_check(ctx, t);

	if (rc < 0)
		return rc;
	tmm_recompute_drop_uncounted(ctx, t);
	ctx->c.drops++;
	ctx->c.drop_bytes += t->bytes;
	tmm_tracker_event(ctx, TMM_EV_DROP, t);
	return 0;
}

bool tmm_recompute_droppable(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
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
	const struct lineage_op *op = tmm_lineage_producer(ctx, t);

	if (t->state != TMM_TS_DROPPED)
		return;
	tmm_list_del(&t->dropped);
	if (op)
		tmm_lineage_count_readers(ctx, op, -1);
	t->producer_epoch = 0;
	/* Leaving DROPPED without bytes is not a life-cycle transition: the
	 * tensor is about to be overwritten or retired. */
	t->state = TMM_TS_EMPTY;
}

bool tmm_recompute_shed(struct tmm_ctx *ctx)
{
	for (struct tmm_list *n = ctx->device_lru.next; n != &ctx->device_lru;
	     n = n->next) {
		struct tmm_tensor_rec *t =
			tmm_container_of(n, struct tmm_tensor_rec, on_device);

		if (!t->regenerated || t->state != TMM_TS_RESIDENT || t->pins)
			continue;
		if (tmm_lineage_producer(ctx, t) &&
		    tmm_recompute_drop(ctx, t) == 0)
			return true;
		t->regenerated = false; /* not droppable after all */
	}
	return false;
}
