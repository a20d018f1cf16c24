/* SPDX-License-Identifier: MIT */
/*
 * dp_graph.c — one rank's data-parallel graph (see dp_graph.h): buckets
 * of gradients reduced by collective ops, and ZeRO-1's sharded optimizer.
 *
 * Its allocations are the library's (xalloc.h), so that a test can fail
 * each of them with the fault site host_alloc; the rewrite is built
 * beside the graph and only swapped in once it is whole, so that a
 * failure leaves the graph as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_graph.h"
#include "lib/base/xalloc.h"
#include "tensormm.h"

static bool reads(const struct zgraph *g, uint32_t i, zg_t t)
{
	const zg_t *in = zg_inputs(g, i);

	for (uint32_t k = 0; k < g->op[i].n_in; k++)
		if (in[k] == t)
			return true;
	return false;
}

/* Appends ids[0..n) twice (inputs, then the same as outputs) to g->ids. */
static int append_ids(struct zgraph *g, const zg_t *ids, uint32_t n,
		      uint64_t *at)
{
	uint64_t need = g->nids + 2 * (uint64_t)n;

	if (need > g->cids) {
		zg_t *p = tmm_realloc(g->ids, need * sizeof(*p));

		if (!p)
			return -ENOMEM;
		g->ids = p;
		g->cids = need;
	}
	if (need > g->csliced) {
		unsigned char *q = tmm_realloc(g->sliced, need);

		if (!q)
			return -ENOMEM;
		memset(q + g->csliced, 0, need - g->csliced);
		g->sliced = q;
		g->csliced = need;
	}
	*at = g->nids;
	memcpy(g->ids + g->nids, ids, n * sizeof(*ids));
	memcpy(g->ids + g->nids + n, ids, n * sizeof(*ids));
	memset(g->sliced + g->nids, 0, 2 * (size_t)n);
	g->nids = need;
	return 0;
}

/* Tensors waiting for one collective. */
struct pending {
	zg_t *t;
	uint32_t n;
	uint64_t bytes;
};

struct rewrite {
	struct zgraph *g;
	unsigned ranks;
	bool zero1;
	struct pending grads;	/* gradients not yet reduced */
	struct pending weights; /* ZeRO-1: weights updated, not gathered */
	unsigned lag;		/* buckets a step is held back */
	uint32_t *deferred;	/* optimizer steps held back (old indices) */
	uint32_t *held_at;	/* ... and the buckets closed before each */
	uint32_t n_deferred;
	uint32_t closed;	/* gradient buckets closed so far */
	const bool *weight_grad;
	struct zg_op *ops;	/* the new op list */
	uint32_t nops;
	uint32_t *new_index;	/* old op -> new op */
	struct dp_graph_info *info;
};

static bool has(const struct pending *p, zg_t t)
{
	for (uint32_t j = 0; j < p->n; j++)
		if (p->t[j] == t)
			return true;
	return false;
}

static void add(struct pending *p, const struct zgraph *g, zg_t t)
{
	if (has(p, t))
		return;
	p->t[p->n++] = t;
	p->bytes += g->t[t].bytes;
}

/*
 * Emits one collective over p's tensors, in place: `name`, the ring's
 * `net_share` x their bytes on the network, and `touch` x their bytes of
 * device memory traffic for its arithmetic.
 */
static int emit(struct rewrite *w, struct pending *p, const char *name,
		double net_share, double touch, double flops_per_byte)
{
	struct zg_op *op = &w->ops[w->nops];
	uint64_t at;
	int rc;

	if (!p->n)
		return 0;
	rc = append_ids(w->g, p->t, p->n, &at);
	if (rc < 0)
		return rc;
	memset(op, 0, sizeof(*op));
	snprintf(op->name, sizeof(op->name), "%s%u", name,
		 w->info->collectives);
	op->kind = TMM_OP_COLLECTIVE;
	op->flags = TMM_OP_BACKWARD;
	op->in_at = at;
	op->out_at = at + p->n;
	op->n_in = op->n_out = p->n;
	op->bytes = touch * (double)p->bytes;
	op->flops = flops_per_byte * (double)p->bytes;
	op->net_bytes = net_share * (double)p->bytes;
	op->ws = ZG_NONE;
	w->nops++;
	w->info->collectives++;
	p->n = 0;
	p->bytes = 0;
	return 0;
}

/* The gradients' collective: an all-reduce (read the bucket, add, write:
 * a ring's 2(N-1)/N), or ZeRO-1's reduce-scatter (half of it). */
static int flush_grads(struct rewrite *w)
{
	double n = w->ranks;

	if (!w->grads.n)
		return 0;
	w->info->last_bucket = w->grads.bytes;
	return w->zero1 ? emit(w, &w->grads, "reducescatter", (n - 1) / n,
			       3.0 / n, 0.25 / n)
			: emit(w, &w->grads, "allreduce", 2.0 * (n - 1) / n,
			       3.0, 0.25);
}

/* ZeRO-1: the updated weights' all-gather, a copy of (N-1)/N of them. */
static int flush_weights(struct rewrite *w)
{
	double n = w->ranks;

	return emit(w, &w->weights, "allgather", (n - 1) / n, (n - 1) / n,
		    0);
}

/*
 * ZeRO-1 on an optimizer step: this rank's 1/N of its state tensors (its
 * inputs from the third on: the weight and its gradient come first).
 * Each state tensor belongs to one step, so it shrinks once.  Run when
 * the rewrite is whole (the step's arithmetic shrank in emit_step), so
 * that a failure leaves the tensors as they were.
 */
static void shard_state(struct zgraph *g, const struct zg_op *op,
			unsigned ranks)
{
	const zg_t *in = g->ids + op->in_at;

	for (uint32_t k = 2; k < op->n_in; k++)
		g->t[in[k]].bytes = (g->t[in[k]].bytes + ranks - 1) / ranks;
}

/* A weight gradient: what an optimizer step reads, bar the weight and
 * its state (persistent). */
static bool *weight_gradients(const struct zgraph *g)
{
	bool *is = tmm_calloc(g->nt ? g->nt : 1, sizeof(bool));

	if (!is)
		return NULL;
	for (uint32_t i = 0; i < g->nop; i++) {
		const zg_t *in = zg_inputs(g, i);

		if (g->op[i].kind != TMM_OP_OPTIMIZER)
			continue;
		for (uint32_t k = 0; k < g->op[i].n_in; k++)
			if (g->t[in[k]].kind == TMM_GRADIENT)
				is[in[k]] = true;
	}
	return is;
}

/* Emits optimizer step i (an old index): with ZeRO-1 its 1/N of the
 * arithmetic (of the state: shard_state), and its weight into the next
 * all-gather. */
static int emit_step(struct rewrite *w, uint64_t bucket_bytes, uint32_t i)
{
	struct zgraph *g = w->g;
	struct zg_op *op = &w->ops[w->nops];

	w->new_index[i] = w->nops;
	*op = g->op[i];
	w->nops++;
	if (!w->zero1)
		return 0;
	op->flops /= w->ranks;
	op->bytes /= w->ranks;
	add(&w->weights, g, zg_inputs(g, i)[0]);
	return w->weights.bytes >= bucket_bytes ? flush_weights(w) : 0;
}

/* Emits the first n held-back optimizer steps, in their order. */
static int release(struct rewrite *w, uint64_t bucket_bytes, uint32_t n)
{
	int rc = 0;

	for (uint32_t k = 0; k < n && rc == 0; k++)
		rc = emit_step(w, bucket_bytes, w->deferred[k]);
	memmove(w->deferred, w->deferred + n,
		(w->n_deferred - n) * sizeof(*w->deferred));
	memmove(w->held_at, w->held_at + n,
		(w->n_deferred - n) * sizeof(*w->held_at));
	w->n_deferred -= n;
	return rc;
}

/* Closes the gradients' bucket, then lets the steps held back `lag`
 * buckets run: their reductions have had those buckets' backward to
 * hide behind. */
static int close_bucket(struct rewrite *w, uint64_t bucket_bytes)
{
	uint32_t due = 0;
	int rc = flush_grads(w);

	w->closed++;
	while (due < w->n_deferred && w->closed - w->held_at[due] >= w->lag)
		due++;
	return rc < 0 ? rc : release(w, bucket_bytes, due);
}

/* Whether op i touches a tensor that a held-back step writes. */
static bool touches_deferred(const struct rewrite *w, uint32_t i)
{
	const struct zgraph *g = w->g;
	const zg_t *in = zg_inputs(g, i), *out = zg_outputs(g, i);

	for (uint32_t d = 0; d < w->n_deferred; d++) {
		const zg_t *dout = zg_outputs(g, w->deferred[d]);

		for (uint32_t j = 0; j < g->op[w->deferred[d]].n_out; j++) {
			for (uint32_t k = 0; k < g->op[i].n_in; k++)
				if (in[k] == dout[j])
					return true;
			for (uint32_t k = 0; k < g->op[i].n_out; k++)
				if (out[k] == dout[j])
					return true;
		}
	}
	return false;
}

/* Copies op i of g into the new list, with the collectives it needs
 * before it and after it. */
static int rewrite_op(struct rewrite *w, uint64_t bucket_bytes, uint32_t i)
{
	struct zgraph *g = w->g;
	const struct zg_op *op = &g->op[i];
	const zg_t *out = zg_outputs(g, i);
	int rc = 0;

	if (op->kind == TMM_OP_OPTIMIZER) {
		/* A step waits for its gradients' reduction, and is held
		 * back until `lag` more buckets close. */
		for (uint32_t k = 0; k < w->grads.n && rc == 0; k++)
			if (reads(g, i, w->grads.t[k]))
				rc = close_bucket(w, bucket_bytes);
		if (rc < 0 || !w->lag)
			return rc < 0 ? rc : emit_step(w, bucket_bytes, i);
		w->held_at[w->n_deferred] = w->closed;
		w->deferred[w->n_deferred++] = i;
		return 0;
	}
	if (w->n_deferred && touches_deferred(w, i))
		rc = release(w, bucket_bytes, w->n_deferred);
	if (rc < 0)
		return rc;
	w->new_index[i] = w->nops;
	w->ops[w->nops++] = *op;
	if (!(op->flags & TMM_OP_BACKWARD))
		return 0;
	for (uint32_t k = 0; k < op->n_out; k++)
		if (w->weight_grad[out[k]]) {
			if (!has(&w->grads, out[k]))
				w->info->grad_bytes += g->t[out[k]].bytes;
			add(&w->grads, g, out[k]);
		}
	return w->grads.bytes >= bucket_bytes ? close_bucket(w, bucket_bytes)
					      : 0;
}

int dp_graph_make(struct zgraph *g, unsigned ranks, uint64_t bucket_bytes,
		  bool zero1, unsigned lag, struct dp_graph_info *info)
{
	struct rewrite w = { .g = g, .ranks = ranks, .zero1 = zero1,
			     .lag = lag, .info = info };
	/* The collectives' id lists go after the graph's own: cut back to
	 * here on a failure (the lists' capacity may stay grown). */
	uint64_t nids = g->nids;
	bool *weight_grad;
	int rc = 0;

	memset(info, 0, sizeof(*info));
	if (ranks <= 1)
		return 0;
	weight_grad = weight_gradients(g);
	w.weight_grad = weight_grad;
	w.deferred = tmm_calloc(g->nop + 1, sizeof(uint32_t));
	w.held_at = tmm_calloc(g->nop + 1, sizeof(uint32_t));
	w.grads.t = tmm_calloc(g->nt ? g->nt : 1, sizeof(zg_t));
	w.weights.t = tmm_calloc(g->nt ? g->nt : 1, sizeof(zg_t));
	/* at most a collective before each op and one after it, and the
	 * two last ones */
	w.ops = tmm_calloc(3 * (size_t)g->nop + 2, sizeof(*w.ops));
	w.new_index = tmm_calloc(g->nop + 1, sizeof(uint32_t));
	if (!weight_grad || !w.deferred || !w.held_at || !w.grads.t || !w.weights.t ||
	    !w.ops || !w.new_index) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < g->nop && rc == 0; i++)
		rc = rewrite_op(&w, bucket_bytes, i);
	if (rc == 0)
		rc = flush_grads(&w);
	if (rc == 0)
		rc = release(&w, bucket_bytes, w.n_deferred);
	if (rc == 0)
		rc = flush_weights(&w);
	if (rc < 0) {
		g->nids = nids;
		memset(info, 0, sizeof(*info));
		goto out;
	}
	if (zero1)
		for (uint32_t i = 0; i < w.nops; i++)
			if (w.ops[i].kind == TMM_OP_OPTIMIZER)
				shard_state(g, &w.ops[i], ranks);
	/* Tensors name ops by index: renumber. */
	for (zg_t t = 0; t < g->nt; t++) {
		if (g->t[t].producer != UINT32_MAX)
			g->t[t].producer = w.new_index[g->t[t].producer];
		if (g->t[t].last_use != UINT32_MAX)
			g->t[t].last_use = w.new_index[g->t[t].last_use];
	}
	g->n_forward = g->n_forward < g->nop ? w.new_index[g->n_forward]
					     : w.nops;
	free(g->op);
	g->op = w.ops;
	g->nop = g->cop = w.nops;
	w.ops = NULL;
out:
	free(weight_grad);
	free(w.deferred);
	free(w.held_at);
	free(w.grads.t);
	free(w.weights.t);
	free(w.ops);
	free(w.new_index);
	return rc;
}
