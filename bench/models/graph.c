/* SPDX-License-Identifier: MIT */
/*
 * graph.c — the model zoo's graph IR: tensors, ops, the backward pass and
 * the optimizer steps (graph.h); the layer helpers are in layers.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

#define F32 4u /* bytes of an fp32 element */

struct zg_tape_entry {
	uint32_t fwd_op; /* the forward op (for its name and kind) */
	zg_t in[ZG_MAX_IO], param[ZG_MAX_IO], out[ZG_MAX_IO];
	unsigned n_in, n_param, n_out;
	unsigned save_in, save_out;
	double bwd_flops;
	bool passthrough, seed;
	struct zg_algo bwd_algo[ZG_MAX_ALGOS];
	unsigned n_bwd_algo;
};

void zg_fail(struct zgraph *g, int err, const char *fmt, ...)
{
	va_list ap;

	if (g->err)
		return;
	g->err = err;
	va_start(ap, fmt);
	vsnprintf(g->errmsg, sizeof(g->errmsg), fmt, ap);
	va_end(ap);
}

/* Grows *arr (of *cap elements of `size`) to hold `need`. */
static bool grow(struct zgraph *g, void **arr, uint64_t *cap, uint64_t need,
		 size_t size)
{
	uint64_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p) {
		zg_fail(g, -ENOMEM, "out of memory growing the graph");
		return false;
	}
	*arr = p;
	*cap = n;
	return true;
}

static bool grow32(struct zgraph *g, void **arr, uint32_t *cap,
		   uint64_t need, size_t size)
{
	uint64_t c = *cap;
	bool ok = grow(g, arr, &c, need, size);

	*cap = (uint32_t)c;
	return ok;
}

void zg_init(struct zgraph *g, enum zg_optimizer opt)
{
	memset(g, 0, sizeof(*g));
	g->optimizer = opt;
}

void zg_free(struct zgraph *g)
{
	free(g->t);
	free(g->op);
	free(g->ids);
	free(g->sliced);
	free(g->tape);
	memset(g, 0, sizeof(*g));
}

static zg_t new_tensor(struct zgraph *g, uint64_t bytes, enum tmm_kind kind,
		       uint64_t rows, const char *name, const char *suffix)
{
	struct zg_tensor *t;

	if (g->err)
		return ZG_NONE;
	if (!bytes) {
		zg_fail(g, -EINVAL, "tensor %s%s has no bytes", name, suffix);
		return ZG_NONE;
	}
	if (!grow32(g, (void **)&g->t, &g->ct, (uint64_t)g->nt + 1,
		    sizeof(*g->t)))
		return ZG_NONE;
	t = &g->t[g->nt];
	memset(t, 0, sizeof(*t));
	t->bytes = bytes;
	t->kind = kind;
	t->producer = UINT32_MAX;
	t->grad = ZG_NONE;
	t->rows = rows;
	snprintf(t->name, sizeof(t->name), "%s%s", name, suffix);
	return g->nt++;
}

/*
 * The rows an op over these tensors splits into (TSPLIT): the fewest that
 * any of them has, when every tensor with rows has a whole multiple of
 * them (attention scores have a row per sequence, the tokens around them
 * a row per token: a micro-op takes whole sequences); else, or with fewer
 * than 2, 0.
 */
static uint64_t slice_extent(const struct zgraph *g, const zg_t *ids,
			     uint64_t n)
{
	uint64_t e = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = g->t[ids[i]].rows;

		if (r && (!e || r < e))
			e = r;
	}
	for (uint64_t i = 0; i < n && e; i++)
		if (g->t[ids[i]].rows % e)
			return 0;
	return e >= 2 ? e : 0;
}

/* Appends an op; returns its index or UINT32_MAX. */
static uint32_t emit(struct zgraph *g, const char *name, const char *suffix,
		     enum tmm_op_kind kind, unsigned flags, const zg_t *in,
		     unsigned n_in, const zg_t *out, unsigned n_out,
		     double flops)
{
	struct zg_op *op;
	double bytes = 0;

	if (g->err)
		return UINT32_MAX;
	if (!grow32(g, (void **)&g->op, &g->cop, (uint64_t)g->nop + 1,
		    sizeof(*g->op)) ||
	    !grow(g, (void **)&g->ids, &g->cids, g->nids + n_in + n_out,
		  sizeof(*g->ids)) ||
	    !grow(g, (void **)&g->sliced, &g->csliced,
		  g->nids + n_in + n_out, sizeof(*g->sliced)))
		return UINT32_MAX;
	op = &g->op[g->nop];
	memset(op, 0, sizeof(*op));
	snprintf(op->name, sizeof(op->name), "%s%s", name, suffix);
	op->kind = kind;
	op->flags = flags;
	op->in_at = g->nids;
	op->n_in = n_in;
	for (unsigned i = 0; i < n_in; i++) {
		g->ids[g->nids++] = in[i];
		bytes += (double)g->t[in[i]].bytes;
	}
	op->out_at = g->nids;
	op->n_out = n_out;
	for (unsigned i = 0; i < n_out; i++) {
		g->ids[g->nids++] = out[i];
		bytes += (double)g->t[out[i]].bytes;
	}
	op->flops = flops;
	op->bytes = bytes;
	op->ws = ZG_NONE;
	op->slice_extent = slice_extent(g, g->ids + op->in_at, n_in + n_out);
	for (uint64_t k = op->in_at; k < g->nids; k++)
		g->sliced[k] = op->slice_extent && g->t[g->ids[k]].rows;
	return g->nop++;
}

/*
 * Gives op `i`, the last emitted, its workspace: a SCRATCH output of the
 * fastest algorithm's need, after its other outputs.  Its bytes are left
 * out of the op's cost hint: the algorithm's time says what it costs.
 */
static void attach_ws(struct zgraph *g, uint32_t i, const struct zg_algo *a,
		      unsigned n)
{
	struct zg_op *op;
	char name[sizeof(g->op->name)];
	zg_t ws;

	if (g->err || !n || i == UINT32_MAX)
		return;
	if (n > ZG_MAX_ALGOS) {
		zg_fail(g, -EINVAL, "op %s: %u algorithms, at most %u",
			g->op[i].name, n, ZG_MAX_ALGOS);
		return;
	}
	/* a copy: new_tensor may move g->t, not g->op */
	snprintf(name, sizeof(name), "%s", g->op[i].name);
	ws = new_tensor(g, a[0].ws > ZG_WS_MIN ? a[0].ws : ZG_WS_MIN,
			TMM_SCRATCH, 0, name, ".ws");
	if (ws == ZG_NONE ||
	    !grow(g, (void **)&g->ids, &g->cids, g->nids + 1,
		  sizeof(*g->ids)) ||
	    !grow(g, (void **)&g->sliced, &g->csliced, g->nids + 1,
		  sizeof(*g->sliced)))
		return;
	op = &g->op[i];
	g->ids[g->nids] = ws;
	g->sliced[g->nids++] = 0; /* not cut: each micro-op has it whole */
	op->n_out++;
	op->ws = ws;
	for (unsigned k = 0; k < n; k++)
		op->algo[k] = a[k];
	op->n_algo = n;
}

zg_t zg_param(struct zgraph *g, const char *name, uint64_t elems)
{
	zg_t p = new_tensor(g, elems * F32, TMM_PERSISTENT, 0, name, "");

	if (p != ZG_NONE) {
		g->t[p].param = true;
		g->t[p].needs_grad = true;
	}
	return p;
}

zg_t zg_input(struct zgraph *g, const char *name, uint64_t bytes,
	      uint64_t rows)
{
	zg_t t = new_tensor(g, bytes, TMM_ACTIVATION, rows, name, "");

	/* A loader: not pure, since its bytes come from outside. */
	emit(g, "load_", name, TMM_OP_OTHER, 0, NULL, 0, &t, 1, 0);
	return g->err ? ZG_NONE : t;
}

zg_t zg_layer(struct zgraph *g, struct zg_layer *l)
{
	zg_t in[2 * ZG_MAX_IO];
	bool grad = l->n_param > 0;
	uint32_t op;

	if (g->err)
		return ZG_NONE;
	if (g->finished || l->n_in > ZG_MAX_IO || l->n_param > ZG_MAX_IO ||
	    !l->n_out || l->n_out > ZG_MAX_IO) {
		zg_fail(g, -EINVAL, "layer %s: bad shape (%u in, %u params, "
			"%u out; at most %u each, one out at least, before "
			"zg_finish)", l->name, l->n_in, l->n_param, l->n_out,
			ZG_MAX_IO);
		return ZG_NONE;
	}
	for (unsigned i = 0; i < l->n_in; i++) {
		if (l->in[i] == ZG_NONE || l->in[i] >= g->nt) {
			zg_fail(g, -EINVAL, "layer %s: input %u is not a "
				"tensor", l->name, i);
			return ZG_NONE;
		}
		grad |= g->t[l->in[i]].needs_grad;
		in[i] = l->in[i];
	}
	for (unsigned i = 0; i < l->n_param; i++)
		in[l->n_in + i] = l->param[i];
	for (unsigned i = 0; i < l->n_out; i++) {
		char sfx[8];
		uint64_t rows = (l->unbatched_out >> i) & 1 ? 0 : l->rows;

		snprintf(sfx, sizeof(sfx), i ? ".%u" : "", i);
		l->out[i] = new_tensor(g, l->out_bytes[i], TMM_ACTIVATION,
				       rows, l->name, sfx);
		if (l->out[i] == ZG_NONE)
			return ZG_NONE;
		g->t[l->out[i]].needs_grad = grad;
	}
	op = emit(g, l->name, "", l->kind, l->impure ? 0 : TMM_OP_PURE, in,
		  l->n_in + l->n_param, l->out, l->n_out, l->flops);
	if (op == UINT32_MAX)
		return ZG_NONE;
	attach_ws(g, op, l->algo, l->n_algo);
	if (g->err)
		return ZG_NONE;
	if (grad || l->seed) {
		struct zg_tape_entry *e;

		if (!grow32(g, (void **)&g->tape, &g->ctape,
			    (uint64_t)g->ntape + 1, sizeof(*g->tape)))
			return ZG_NONE;
		e = &g->tape[g->ntape++];
		memset(e, 0, sizeof(*e));
		e->fwd_op = op;
		memcpy(e->in, l->in, sizeof(e->in));
		memcpy(e->param, l->param, sizeof(e->param));
		memcpy(e->out, l->out, sizeof(e->out));
		e->n_in = l->n_in;
		e->n_param = l->n_param;
		e->n_out = l->n_out;
		e->save_in = l->save_in;
		e->save_out = l->save_out;
		e->bwd_flops = l->bwd_flops > 0 ? l->bwd_flops : l->flops;
		e->passthrough = l->passthrough;
		e->seed = l->seed;
		memcpy(e->bwd_algo, l->bwd_algo, sizeof(e->bwd_algo));
		e->n_bwd_algo = l->n_bwd_algo <= ZG_MAX_ALGOS
					? l->n_bwd_algo : ZG_MAX_ALGOS;
	}
	return l->out[0];
}

/* ---- finishing ----------------------------------------------------------- */

/* Adds gradient d to x's: the first is kept, later ones summed by an op. */
static void accumulate(struct zgraph *g, zg_t x, zg_t d)
{
	char name[sizeof(g->t->name)];
	zg_t in[2], s;

	if (g->t[x].grad == ZG_NONE) {
		g->t[x].grad = d;
		return;
	}
	in[0] = g->t[x].grad;
	in[1] = d;
	/* a copy: new_tensor may move g->t */
	snprintf(name, sizeof(name), "%s", g->t[x].name);
	s = new_tensor(g, g->t[x].bytes, TMM_GRADIENT, g->t[x].rows, "d",
		       name);
	if (s == ZG_NONE)
		return;
	emit(g, "grad_add.", name, TMM_OP_ELEMENTWISE,
	     TMM_OP_PURE | TMM_OP_BACKWARD, in, 2, &s, 1,
	     (double)(g->t[x].bytes / F32));
	g->t[x].grad = s;
}

/* A new gradient tensor the size of x, named after it. */
static zg_t grad_tensor(struct zgraph *g, zg_t x)
{
	char name[sizeof(g->t->name)];

	/* a copy: new_tensor may move g->t */
	snprintf(name, sizeof(name), "%s", g->t[x].name);
	/* a gradient is shaped as its tensor: rows and all */
	return new_tensor(g, g->t[x].bytes, TMM_GRADIENT, g->t[x].rows, "d",
			  name);
}

static void backward_of(struct zgraph *g, const struct zg_tape_entry *e)
{
	char name[sizeof(g->op->name)];
	zg_t in[4 * ZG_MAX_IO], out[2 * ZG_MAX_IO], dx[ZG_MAX_IO];
	unsigned n_in = 0, n_out = 0;
	bool any = e->seed;

	for (unsigned i = 0; i < e->n_out && !e->seed; i++) {
		zg_t d = g->t[e->out[i]].grad;

		if (d != ZG_NONE) {
			in[n_in++] = d;
			any = true;
		}
	}
	if (!any)
		return; /* nothing downstream wants this layer's gradient */
	if (e->passthrough) {
		for (unsigned i = 0; i < e->n_in; i++)
			if (g->t[e->in[i]].needs_grad)
				accumulate(g, e->in[i], in[0]);
		return;
	}
	for (unsigned i = 0; i < e->n_in; i++)
		if (e->save_in & (1u << i))
			in[n_in++] = e->in[i];
	for (unsigned i = 0; i < e->n_out; i++)
		if (e->save_out & (1u << i))
			in[n_in++] = e->out[i];
	for (unsigned i = 0; i < e->n_param; i++)
		in[n_in++] = e->param[i];
	for (unsigned i = 0; i < e->n_in; i++) {
		dx[i] = ZG_NONE;
		if (!g->t[e->in[i]].needs_grad)
			continue;
		dx[i] = grad_tensor(g, e->in[i]);
		out[n_out++] = dx[i];
	}
	for (unsigned i = 0; i < e->n_param; i++)
		out[n_out++] = grad_tensor(g, e->param[i]);
	if (g->err || !n_out)
		return;
	/* a copy: emit may move g->op */
	snprintf(name, sizeof(name), "%s", g->op[e->fwd_op].name);
	attach_ws(g, emit(g, name, "_bwd", g->op[e->fwd_op].kind,
			  TMM_OP_PURE | TMM_OP_BACKWARD, in, n_in, out, n_out,
			  e->bwd_flops),
		  e->bwd_algo, e->n_bwd_algo);
	n_out = 0;
	for (unsigned i = 0; i < e->n_in; i++)
		if (dx[i] != ZG_NONE)
			accumulate(g, e->in[i], out[n_out++]);
	for (unsigned i = 0; i < e->n_param; i++)
		accumulate(g, e->param[i], out[n_out++]);
}

/* The optimizer step of weight p: an in-place update, so not pure. */
static void optimizer_step(struct zgraph *g, zg_t p)
{
	unsigned states = g->optimizer == ZG_ADAM ? 2 : 1;
	char name[sizeof(g->t->name)];
	zg_t in[4], out[3];
	double n = (double)(g->t[p].bytes / F32);

	if (!g->t[p].param || g->t[p].grad == ZG_NONE || g->t[p].stepped)
		return;
	g->t[p].stepped = true;
	/* a copy: new_tensor may move g->t */
	snprintf(name, sizeof(name), "%s", g->t[p].name);
	in[0] = out[0] = p;
	in[1] = g->t[p].grad;
	for (unsigned s = 0; s < states; s++) {
		zg_t st = new_tensor(g, g->t[p].bytes, TMM_PERSISTENT, 0, name,
				     s ? ".adam_v" : states == 2
					     ? ".adam_m" : ".momentum");

		in[2 + s] = out[1 + s] = st;
	}
	/* SGD: v = mu v + g; w -= lr v.  Adam: two moments, bias
	 * correction, a square root and a division. */
	emit(g, g->optimizer == ZG_ADAM ? "adam." : "sgd.", name,
	     TMM_OP_OPTIMIZER, 0, in, 2 + states, out, 1 + states,
	     (states == 2 ? 12.0 : 4.0) * n);
}

/* Every weight's step not emitted yet, in weight order. */
static void optimizer_steps(struct zgraph *g)
{
	uint32_t nt = g->nt;

	for (zg_t p = 0; p < nt && !g->err; p++)
		optimizer_step(g, p);
}

/*
 * With update_early: the steps of the weights whose last gradient tape
 * entry i just gave.  The tape is walked backwards, so a weight's last
 * gradient comes from the first entry that uses it.
 */
static void early_steps(struct zgraph *g, uint32_t i)
{
	const struct zg_tape_entry *e = &g->tape[i];

	for (unsigned k = 0; k < e->n_param && !g->err; k++) {
		bool used_before = false;

		for (uint32_t j = 0; j < i && !used_before; j++)
			for (unsigned q = 0; q < g->tape[j].n_param; q++)
				used_before |= g->tape[j].param[q] ==
					       e->param[k];
		if (!used_before)
			optimizer_step(g, e->param[k]);
	}
}

int zg_finish(struct zgraph *g)
{
	if (g->err)
		return g->err;
	if (g->finished) {
		zg_fail(g, -EINVAL, "zg_finish called twice");
		return g->err;
	}
	g->n_forward = g->nop;
	for (uint32_t i = g->ntape; i-- > 0 && !g->err;) {
		backward_of(g, &g->tape[i]);
		if (g->update_early)
			early_steps(g, i);
	}
	optimizer_steps(g);
	if (g->err)
		return g->err;
	for (uint32_t i = 0; i < g->nop; i++) {
		const zg_t *in = zg_inputs(g, i), *out = zg_outputs(g, i);

		for (uint32_t k = 0; k < g->op[i].n_in; k++)
			g->t[in[k]].last_use = i;
		for (uint32_t k = 0; k < g->op[i].n_out; k++) {
			if (g->t[out[k]].producer == UINT32_MAX)
				g->t[out[k]].producer = i;
			g->t[out[k]].last_use = i;
		}
	}
	g->finished = true;
	return 0;
}

uint64_t zg_params(const struct zgraph *g)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < g->nt; i++)
		if (g->t[i].param)
			n += g->t[i].bytes / F32;
	return n;
}

int zg_check(const struct zgraph *g, char *msg, size_t len)
{
	if (!g->finished) {
		snprintf(msg, len, "graph not finished (call zg_finish)");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < g->nop; i++) {
		const zg_t *in = zg_inputs(g, i);

		for (uint32_t k = 0; k < g->op[i].n_in; k++) {
			const struct zg_tensor *t = &g->t[in[k]];

			if (t->kind == TMM_PERSISTENT || t->producer < i)
				continue;
			snprintf(msg, len, "op %u (%s) reads %s before any op "
				 "produces it", i, g->op[i].name, t->name);
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; i < g->nt; i++) {
		const struct zg_tensor *t = &g->t[i];

		if (t->kind != TMM_ACTIVATION || t->producer >= g->n_forward ||
		    g->op[t->producer].kind == TMM_OP_LOSS)
			continue;
		if (t->last_use > t->producer)
			continue;
		snprintf(msg, len, "activation %s made by op %u (%s) is never "
			 "read", t->name, t->producer,
			 g->op[t->producer].name);
		return -EINVAL;
	}
	return 0;
}
