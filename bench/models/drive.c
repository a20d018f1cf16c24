/* SPDX-License-Identifier: MIT */
/*
 * drive.c — running a zoo graph through the real runtime (drive.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "drive.h"
#include "lib/base/managed_page.h"
#include "lib/base/pool_align.h"

struct run {
	const struct zgraph *g;
	tmm_ctx *ctx;
	tmm_tensor *h;	 /* handle of each graph tensor, or TMM_TENSOR_NULL */
	tmm_tensor *io;	 /* one op's inputs then outputs */
	struct drive_result *r;
	bool weight_bytes; /* drive_opts.weight_bytes */
	bool keep_all;	   /* drive_opts.keep_all, or g->destroy_at_end */
	enum drive_ws ws;  /* resolved: never DRIVE_WS_BY_POLICY */
	struct drive_iteration *it; /* the one running */
};

/* The value of the last "policy=" in a tunables string, into out. */
static bool policy_in(const char *conf, char *out, size_t len)
{
	const char *p = NULL, *q;
	size_t n;

	for (q = conf; q && (q = strstr(q, "policy=")) != NULL; q++)
		if (q == conf || q[-1] == ',' || q[-1] == ' ')
			p = q + strlen("policy=");
	if (!p)
		return false;
	n = strcspn(p, ", ");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* DRIVE_WS_BY_POLICY resolved as the library resolves the policy: the
 * environment (TENSORMM_POLICY) over the program's config string. */
static enum drive_ws resolve_ws(const struct drive_opts *o)
{
	const char *env = getenv("TENSORMM_POLICY");
	char policy[32] = "";

	if (o->ws != DRIVE_WS_BY_POLICY)
		return o->ws;
	if (env && *env)
		snprintf(policy, sizeof(policy), "%s", env);
	else
		policy_in(o->config, policy, sizeof(policy));
	return strcmp(policy, "superneurons") == 0 ? DRIVE_WS_DYNAMIC
						   : DRIVE_WS_FALLBACK;
}

/* With weight_bytes the device is backed, where an op needs a callback:
 * these touch nothing, so the only bytes that matter, the persistent
 * tensors', stay as written (the optimizer steps update them in place). */
static int touch_nothing(void *const *in, void *const *out, void *user,
			 void *stream)
{
	(void)in, (void)out, (void)user, (void)stream;
	return 0;
}

static int touch_no_slice(void *const *in, void *const *out, size_t begin,
			  size_t end, void *user, void *stream)
{
	(void)in, (void)out, (void)begin, (void)end, (void)user, (void)stream;
	return 0;
}

static int fail(struct run *x, int rc, const char *what)
{
	x->r->rc = rc;
	snprintf(x->r->error, sizeof(x->r->error), "%s: %s", what,
		 tmm_last_error(x->ctx));
	return rc;
}

static int create(struct run *x, zg_t id)
{
	const struct zg_tensor *t = &x->g->t[id];
	int rc;

	if (x->h[id].id)
		return 0;
	rc = tmm_tensor_create(x->ctx, t->bytes, t->kind, t->name, &x->h[id]);
	return rc < 0 ? fail(x, rc, "tmm_tensor_create") : 0;
}

/* The seeded byte i of persistent tensor id (weight_bytes). */
static uint8_t seed_byte(zg_t id, size_t i)
{
	return (uint8_t)(id * 131u + i * 7u + (i >> 8));
}

static int write_seeded(struct run *x, zg_t id)
{
	size_t n = x->g->t[id].bytes;
	uint8_t *buf = malloc(n ? n : 1);
	int rc;

	if (!buf)
		return fail(x, -ENOMEM, "zoo_drive: out of memory seeding the "
			    "weights");
	for (size_t i = 0; i < n; i++)
		buf[i] = seed_byte(id, i);
	rc = tmm_tensor_write(x->ctx, x->h[id], 0, buf, n);
	free(buf);
	return rc < 0 ? fail(x, rc, "tmm_tensor_write of a weight") : 0;
}

/* Every persistent tensor's bytes, in tensor order, into r->weights. */
static int read_weights(struct run *x)
{
	size_t total = 0, at = 0;
	int rc = 0;

	for (zg_t id = 0; id < x->g->nt; id++)
		if (x->g->t[id].kind == TMM_PERSISTENT)
			total += x->g->t[id].bytes;
	x->r->weights = malloc(total ? total : 1);
	if (!x->r->weights)
		return fail(x, -ENOMEM, "zoo_drive: out of memory reading the "
			    "weights");
	for (zg_t id = 0; id < x->g->nt && rc == 0; id++) {
		if (x->g->t[id].kind != TMM_PERSISTENT)
			continue;
		rc = tmm_tensor_read(x->ctx, x->h[id], 0, x->r->weights + at,
				     x->g->t[id].bytes);
		at += x->g->t[id].bytes;
	}
	if (rc < 0) {
		free(x->r->weights);
		x->r->weights = NULL;
		return fail(x, rc, "tmm_tensor_read of a weight");
	}
	x->r->weights_len = total;
	return 0;
}

/* Weights and optimizer state: created once; a no-input op gives each its
 * first bytes, since a phantom device refuses tmm_tensor_write (with
 * weight_bytes, seeded bytes are written instead). */
static int make_persistent(struct run *x)
{
	for (zg_t id = 0; id < x->g->nt; id++) {
		const struct zg_tensor *t = &x->g->t[id];
		tmm_op init = { .name = "init", .kind = TMM_OP_OTHER,
				.outputs = &x->h[id], .n_outputs = 1,
				.cost = { 0, (double)t->bytes } };
		int rc;

		if (t->kind != TMM_PERSISTENT)
			continue;
		rc = create(x, id);
		if (rc < 0)
			return rc;
		x->r->persistent_bytes += t->bytes;
		if (x->weight_bytes) {
			rc = write_seeded(x, id);
			if (rc < 0)
				return rc;
			continue;
		}
		rc = tmm_run(x->ctx, &init);
		if (rc < 0)
			return fail(x, rc, "initialising the weights");
	}
	return 0;
}

static uint64_t rounded(uint64_t bytes, uint64_t unit)
{
	return (bytes + unit - 1) / unit * unit;
}

/*
 * Picks op i's convolution algorithm (x->ws) and creates its workspace
 * tensor of that algorithm's size; returns the algorithm's index, or a
 * negative errno.
 */
static int take_ws(struct run *x, uint32_t i)
{
	const struct zg_op *op = &x->g->op[i];
	const zg_t *in = zg_inputs(x->g, i), *out = zg_outputs(x->g, i);
	struct tmm_stats s = { .version = TMM_STATS_VERSION };
	uint64_t room, used, need = 0, whole, unit, ws;
	unsigned a = 0, last = op->n_algo - 1;
	int rc;

	tmm_stats_get(x->ctx, &s);
	/* mode=uvm: the pages the library holds; those it keeps populated
	 * for the next tensor (uvm_kept, in device_in_use on the
	 * simulator) are room a workspace takes over. */
	used = strcmp(s.mode, "uvm") == 0 ? s.uvm_held : s.device_in_use;
	room = s.budget > used ? s.budget - used : 0;
	if (strcmp(s.mode, "swap") == 0 && s.pool_largest_free < room)
		room = s.pool_largest_free;
	/* the op's other outputs are placed before it runs */
	for (uint32_t k = 0; k < op->n_out; k++)
		if (out[k] != op->ws && !x->h[out[k]].id)
			need += x->g->t[out[k]].bytes;
	room = room > need ? room - need : 0;
	/* And the op must fit the budget whole, its inputs brought back
	 * too: what is free now may be free only because they are away,
	 * and tmm_run refuses an op whose tensors pass the budget.  Each
	 * tensor counts as the library rounds it (mode=uvm: whole managed
	 * pages), and the workspace's own rounding is left room for. */
	unit = strcmp(s.mode, "uvm") == 0 ? TMM_MANAGED_PAGE : TMM_POOL_ALIGN;
	whole = unit;
	for (uint32_t k = 0; k < op->n_in; k++)
		whole += rounded(x->g->t[in[k]].bytes, unit);
	for (uint32_t k = 0; k < op->n_out; k++)
		if (out[k] != op->ws)
			whole += rounded(x->g->t[out[k]].bytes, unit);
	whole = s.budget > whole ? s.budget - whole : 0;
	if (whole < room)
		room = whole;
	switch (x->ws) {
	case DRIVE_WS_FALLBACK:
		/* At every launch, as TensorFlow's: the autotuned
		 * fastest when its scratch can be allocated, else the
		 * one that needs none.  (Keeping the first iteration's
		 * choice instead takes room a plan's prefetches were
		 * counting on: Inception-V4 under tensile at a quarter of
		 * its peak then met 1101 guided passive evictions.) */
		a = op->algo[0].ws <= room ? 0 : last;
		break;
	case DRIVE_WS_DYNAMIC:
		while (a < last && op->algo[a].ws > room)
			a++;
		break;
	case DRIVE_WS_NONE:
		a = last;
		break;
	default: /* DRIVE_WS_FASTEST */
		break;
	}
	ws = op->algo[a].ws > ZG_WS_MIN ? op->algo[a].ws : ZG_WS_MIN;
	rc = tmm_tensor_create(x->ctx, ws, TMM_SCRATCH, x->g->t[op->ws].name,
			       &x->h[op->ws]);
	if (rc < 0)
		return fail(x, rc, "tmm_tensor_create of a workspace");
	x->it->ws_bytes += op->algo[a].ws;
	x->it->ws_fastest_bytes += op->algo[0].ws;
	if (op->algo[a].ws > x->it->ws_largest)
		x->it->ws_largest = op->algo[a].ws;
	x->it->ws_slower_ops += a > 0;
	return (int)a;
}

static int run_op(struct run *x, uint32_t i)
{
	const struct zg_op *op = &x->g->op[i];
	const zg_t *in = zg_inputs(x->g, i), *out = zg_outputs(x->g, i);
	tmm_op o = { .name = op->name, .kind = op->kind, .flags = op->flags,
		     .inputs = x->io, .n_inputs = op->n_in,
		     .outputs = x->io + op->n_in, .n_outputs = op->n_out,
		     .cost = { .flops = op->flops, .bytes = op->bytes,
			       .net_bytes = op->net_bytes },
		     /* cost-only: the runtime splits it with no callback */
		     .slice_extent = op->slice_extent,
		     .sliced = x->g->sliced + op->in_at };
	int rc;

	if (x->weight_bytes) {
		o.run = touch_nothing;
		if (op->slice_extent)
			o.run_slice = touch_no_slice;
	}

	if (op->ws != ZG_NONE && op->n_algo) {
		rc = take_ws(x, i);
		if (rc < 0)
			return rc;
		/* the algorithm's time: the hint is the time of the one
		 * that needs no workspace (graph.h: zg_algo) */
		o.cost.flops *= op->algo[rc].time /
				op->algo[op->n_algo - 1].time;
	}
	for (uint32_t k = 0; k < op->n_out; k++) {
		rc = create(x, out[k]);
		if (rc < 0)
			return rc;
	}
	for (uint32_t k = 0; k < op->n_in; k++)
		x->io[k] = x->h[in[k]];
	for (uint32_t k = 0; k < op->n_out; k++)
		x->io[op->n_in + k] = x->h[out[k]];
	rc = tmm_run(x->ctx, &o);
	if (rc < 0) {
		char what[96];

		snprintf(what, sizeof(what), "op %u (%s)", i, op->name);
		return fail(x, rc, what);
	}
	return 0;
}

/* Destroys op i's tensors whose last use it was (with keep_all, its
 * workspace only, and every one of the iteration's after its last op). */
static int retire(struct run *x, uint32_t i)
{
	const struct zg_op *op = &x->g->op[i];
	const zg_t *ids = x->g->ids + op->in_at;

	if (x->keep_all) {
		if (op->ws != ZG_NONE && x->h[op->ws].id) {
			int rc = tmm_tensor_destroy(x->ctx, x->h[op->ws]);

			if (rc < 0)
				return fail(x, rc, "tmm_tensor_destroy");
			x->h[op->ws] = TMM_TENSOR_NULL;
		}
		if (i + 1 < x->g->nop)
			return 0;
		for (zg_t id = 0; id < x->g->nt; id++) {
			int rc;

			if (x->g->t[id].kind == TMM_PERSISTENT ||
			    !x->h[id].id)
				continue;
			rc = tmm_tensor_destroy(x->ctx, x->h[id]);
			if (rc < 0)
				return fail(x, rc, "tmm_tensor_destroy");
			x->h[id] = TMM_TENSOR_NULL;
		}
		return 0;
	}

	/* inputs and outputs are back to back in g->ids */
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		const struct zg_tensor *t = &x->g->t[ids[k]];
		int rc;

		if (t->kind == TMM_PERSISTENT || t->last_use != i ||
		    !x->h[ids[k]].id)
			continue;
		rc = tmm_tensor_destroy(x->ctx, x->h[ids[k]]);
		if (rc < 0)
			return fail(x, rc, "tmm_tensor_destroy");
		x->h[ids[k]] = TMM_TENSOR_NULL;
	}
	return 0;
}

/* -ENOSPC when o->stop says this run has already failed its question. */
static int stopped(struct run *x, const struct drive_opts *o,
		   const struct tmm_stats *s)
{
	if (o->stop == DRIVE_STOP_ON_EVICTION && s->passive_evictions) {
		x->r->rc = -ENOSPC;
		snprintf(x->r->error, sizeof(x->r->error),
			 "stopped at the first passive eviction");
		return -ENOSPC;
	}
	if (o->stop == DRIVE_STOP_ON_GUIDED_EVICTION &&
	    s->guided_passive_evictions) {
		x->r->rc = -ENOSPC;
		snprintf(x->r->error, sizeof(x->r->error),
			 "stopped at the first passive eviction of a guided "
			 "iteration");
		return -ENOSPC;
	}
	return 0;
}

static int iteration(struct run *x, const struct drive_opts *o, unsigned n)
{
	struct drive_iteration *it = &x->r->it[n - 1];
	struct tmm_stats a = { .version = TMM_STATS_VERSION }, b = a;
	int rc = tmm_iteration_begin(x->ctx);

	if (rc < 0)
		return fail(x, rc, "tmm_iteration_begin");
	double t0 = bench_now_s();

	x->it = it;
	tmm_stats_get(x->ctx, &a);
	for (uint32_t i = 0; i < x->g->nop && rc == 0; i++) {
		rc = run_op(x, i);
		if (rc == 0 && !o->no_peak) {
			tmm_stats_get(x->ctx, &b);
			if (b.device_in_use > it->peak) {
				it->peak = b.device_in_use;
				it->peak_fragmentation = b.pool_fragmentation;
			}
			if (o->sample && o->sample_iteration == n)
				o->sample(o->sample_arg, i, b.device_in_use);
			rc = stopped(x, o, &b);
		}
		if (rc == 0)
			rc = retire(x, i);
	}
	if (rc < 0) {
		tmm_iteration_end(x->ctx);
		return rc;
	}
	rc = tmm_iteration_end(x->ctx);
	if (rc < 0)
		return fail(x, rc, "tmm_iteration_end");
	it->host_ns = (uint64_t)((bench_now_s() - t0) * 1e9);
	tmm_stats_get(x->ctx, &b);
	it->accesses = b.accesses - a.accesses;
	it->ns = b.last_iteration_ns;
	it->passive_evictions = b.passive_evictions - a.passive_evictions;
	it->swap_out_bytes = b.swap_out_bytes - a.swap_out_bytes;
	it->uvm_prefetch_out_bytes =
		b.uvm_prefetch_out_bytes - a.uvm_prefetch_out_bytes;
	it->swap_in_bytes = b.swap_in_bytes - a.swap_in_bytes;
	it->recomputations = b.recomputations - a.recomputations;
	return 0;
}

/* drive_opts.rehearse: the iteration's very calls inside a rehearsal,
 * with no statistics read and no stop (nothing is on the device). */
static int rehearse(struct run *x)
{
	struct drive_opts quiet = { .no_peak = true };
	int rc = tmm_rehearsal_begin(x->ctx);

	if (rc < 0)
		return fail(x, rc, "tmm_rehearsal_begin");
	rc = iteration(x, &quiet, 1);
	memset(&x->r->it[0], 0, sizeof(x->r->it[0]));
	if (rc < 0) {
		tmm_rehearsal_end(x->ctx);
		return rc;
	}
	rc = tmm_rehearsal_end(x->ctx);
	return rc < 0 ? fail(x, rc, "tmm_rehearsal_end") : 0;
}

int zoo_drive(const struct zgraph *g, const struct drive_opts *o,
	      struct drive_result *r)
{
	struct run x = { .g = g, .r = r, .weight_bytes = o->weight_bytes,
			 .keep_all = o->keep_all || g->destroy_at_end,
			 .ws = resolve_ws(o) };
	uint32_t most = 0;
	double t0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->st.version = TMM_STATS_VERSION;
	if (!g->finished || !o->iterations ||
	    o->iterations > DRIVE_MAX_ITERATIONS) {
		r->rc = -EINVAL;
		snprintf(r->error, sizeof(r->error),
			 "zoo_drive: %s", !g->finished
			 ? "the graph is not finished (zg_finish)"
			 : "iterations must be 1 to DRIVE_MAX_ITERATIONS");
		return r->rc;
	}
	rc = tmm_ctx_create(&x.ctx, o->config);
	if (rc < 0) {
		r->rc = rc;
		snprintf(r->error, sizeof(r->error), "tmm_ctx_create(\"%s\"): "
			 "%s", o->config ? o->config : "",
			 tmm_last_error(NULL));
		return rc;
	}
	for (uint32_t i = 0; i < g->nop; i++)
		if (g->op[i].n_in + g->op[i].n_out > most)
			most = g->op[i].n_in + g->op[i].n_out;
	x.h = calloc(g->nt ? g->nt : 1, sizeof(*x.h));
	x.io = calloc(most ? most : 1, sizeof(*x.io));
	if (!x.h || !x.io) {
		rc = r->rc = -ENOMEM;
		snprintf(r->error, sizeof(r->error), "zoo_drive: out of "
			 "memory for %u handles", g->nt);
		goto out;
	}
	rc = make_persistent(&x);
	if (rc == 0 && o->rehearse)
		rc = rehearse(&x);
	t0 = bench_now_s();
	for (unsigned n = 1; rc == 0 && n <= o->iterations; n++) {
		rc = iteration(&x, o, n);
		if (rc == 0)
			r->done = n;
		if (rc == 0 && o->after_iteration) {
			rc = o->after_iteration(o->after_arg, x.ctx, n);
			if (rc < 0) {
				r->rc = rc;
				snprintf(r->error, sizeof(r->error),
					 "stopped by after_iteration");
			}
		}
	}
	r->host_s = bench_now_s() - t0;
	if (rc == 0 && o->weight_bytes)
		rc = read_weights(&x);
	tmm_stats_get(x.ctx, &r->st);
out:
	free(x.h);
	free(x.io);
	r->destroy_rc = tmm_ctx_destroy(x.ctx);
	return rc;
}
