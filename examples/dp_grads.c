/* SPDX-License-Identifier: MIT */
/*
 * dp_grads.c — buckets, their collectives and the hand-over to the
 * model's update (dp_grads.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_grads.h"

struct dp_trainer {
	struct dp_setup s;
	const struct dp_model *m;
	unsigned micro;
	struct dp_bucket *bucket;
	unsigned n_buckets;
	unsigned *bucket_of;	   /* per parameter */
	struct dp_param *params;   /* every bucket's, in bucket order */
	/* What the backward left, per parameter: valid until the step
	 * ends. */
	tmm_tensor *w;
	const tmm_tensor **g;
	double net_bytes;	   /* declared, every step's */
	/* The bucket reduced last, whose update waits for the next
	 * bucket's reduction to be issued (reduce_and_update), or NULL. */
	struct dp_bucket *held;
	char failed[128];	   /* dp_trainer_failed's */
};

static bool alone(const struct dp_model *m, unsigned p)
{
	return m->alone && m->alone[m->group[p]];
}

/* Closes bucket b: its ZeRO part of the flat layout. */
static void close_bucket(struct dp_trainer *t, struct dp_bucket *b)
{
	size_t size = (size_t)t->s.comm->size;

	b->shard = (b->floats + size - 1) / size;
	b->lo = b->shard * (size_t)t->s.comm->rank;
	if (b->lo > b->floats)
		b->lo = b->floats;
	b->hi = b->lo + b->shard;
	if (b->hi > b->floats)
		b->hi = b->floats;
}

/*
 * Groups the parameters, in the model's order, into buckets of about
 * bucket_bytes: a bucket closes at the end of a group once it holds that
 * many bytes, at the end of a group that wants a bucket of its own, and
 * before one.
 */
static int plan_buckets(struct dp_trainer *t)
{
	const struct dp_model *m = t->m;
	unsigned n = m->n_params, nb = 0;
	size_t bytes = 0;

	t->bucket = calloc(n ? n : 1, sizeof(*t->bucket));
	t->params = calloc(n ? n : 1, sizeof(*t->params));
	t->bucket_of = calloc(n ? n : 1, sizeof(*t->bucket_of));
	if (!t->bucket || !t->params || !t->bucket_of)
		return -ENOMEM;
	for (unsigned p = 0; p < n; p++) {
		struct dp_bucket *b = &t->bucket[nb];
		bool group_ends = p + 1 == n || m->group[p + 1] != m->group[p];

		if (p + 1 < n && m->group[p + 1] < m->group[p])
			return -EINVAL;
		if (!b->n_params) {
			b->t = t;
			b->first = p;
			b->param = &t->params[p];
		}
		b->param[b->n_params++] =
			(struct dp_param){ b->floats, m->floats[p] };
		b->floats += m->floats[p];
		t->bucket_of[p] = nb;
		bytes += m->floats[p] * sizeof(float);
		if (group_ends &&
		    (bytes >= t->s.bucket_bytes || p + 1 == n ||
		     alone(m, p) || alone(m, p + 1))) {
			close_bucket(t, b);
			nb++;
			bytes = 0;
		}
	}
	t->n_buckets = nb;
	return 0;
}

/* ZeRO: each bucket's part of the optimizer state, a persistent tensor
 * of zeros. */
static int make_state(tmm_ctx *ctx, struct dp_trainer *t)
{
	int rc = 0;

	for (unsigned k = 0; rc == 0 && k < t->n_buckets; k++) {
		struct dp_bucket *b = &t->bucket[k];
		/* An empty part (more ranks than elements) still gets a
		 * tensor, of one element, never touched. */
		size_t floats = (b->shard ? b->shard : 1) * t->m->shard_state;
		char name[32];

		snprintf(name, sizeof(name), "v_shard%u", k);
		rc = tmm_tensor_create(ctx, floats * sizeof(float),
				       TMM_PERSISTENT, name, &b->state);
		if (rc == 0)
			rc = tmm_tensor_fill(ctx, b->state, 0);
	}
	return rc;
}

int dp_trainer_open(tmm_ctx *ctx, const struct dp_setup *s,
		    struct dp_trainer **out)
{
	struct dp_trainer *t;
	unsigned n = s->model->n_params;
	int rc;

	if (s->zero && (!s->model->update_shard || !s->model->shard_state))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->s = *s;
	t->m = s->model;
	t->micro = s->micro ? s->micro : 1;
	t->w = calloc(n ? n : 1, sizeof(*t->w));
	t->g = calloc(n ? n : 1, sizeof(*t->g));
	if (!t->w || !t->g) {
		dp_trainer_close(ctx, t);
		return -ENOMEM;
	}
	rc = plan_buckets(t);
	if (rc == 0 && s->zero)
		rc = make_state(ctx, t);
	if (rc) {
		dp_trainer_close(ctx, t);
		return rc;
	}
	*out = t;
	return 0;
}

void dp_trainer_close(tmm_ctx *ctx, struct dp_trainer *t)
{
	if (!t)
		return;
	for (unsigned k = 0; t->bucket && k < t->n_buckets; k++)
		if (t->bucket[k].state.id)
			tmm_tensor_destroy(ctx, t->bucket[k].state);
	free(t->bucket);
	free(t->params);
	free(t->bucket_of);
	free(t->w);
	free(t->g);
	free(t);
}

/* Says which op of which bucket failed (dp_trainer_failed); passes rc. */
static int failed(struct dp_trainer *t, int rc, const struct dp_bucket *b,
		  const char *what)
{
	snprintf(t->failed, sizeof(t->failed), "%s of bucket %u of %u",
		 what, (unsigned)(b - t->bucket), t->n_buckets);
	return rc;
}

static int run_op(tmm_ctx *ctx, const char *name, enum tmm_op_kind kind,
		  tmm_run_fn fn, void *user, const tmm_tensor *in,
		  unsigned n_in, const tmm_tensor *out, unsigned n_out,
		  double bytes, double net_bytes)
{
	tmm_op op = {
		.name = name, .kind = kind, .flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = n_in,
		.outputs = out, .n_outputs = n_out,
		.run = fn, .user = user,
		.cost = { .flops = bytes / 4.0, .bytes = bytes,
			  .net_bytes = net_bytes },
	};

	return tmm_run(ctx, &op);
}

/* ZeRO-1: reduce-scatter bucket b's gradients (the collective's in and
 * out as for the all-reduce), update this rank's part, all-gather. */
static int reduce_update_shard(tmm_ctx *ctx, struct dp_trainer *t,
			       struct dp_bucket *b, tmm_tensor *in,
			       tmm_tensor *out)
{
	unsigned np = b->n_params, mb = t->micro;
	double n = t->s.comm->size, bytes = 4.0 * (double)b->floats;
	double net = (n - 1.0) / n * bytes * mb;
	int rc;

	rc = run_op(ctx, "reduce_scatter", TMM_OP_COLLECTIVE,
		    t->s.transport->reduce_scatter, b, in, np * mb, out, np,
		    bytes * mb * 2.0, net);
	if (rc)
		return failed(t, rc, b, "the reduce-scatter");
	t->net_bytes += net;
	for (unsigned p = 0; p < np; p++) {
		in[p] = t->w[b->first + p];
		in[np + p] = t->g[b->first + p][0];
		out[p] = in[p];
	}
	in[2 * np] = b->state;
	out[np] = b->state;
	rc = run_op(ctx, "sgd_shard", TMM_OP_OPTIMIZER, t->m->update_shard,
		    b, in, 2 * np + 1, out, np + 1,
		    20.0 * (double)b->shard, 0.0);
	if (rc)
		return failed(t, rc, b, "the update (sgd_shard)");
	net = (n - 1.0) / n * bytes;
	rc = run_op(ctx, "allgather", TMM_OP_COLLECTIVE,
		    t->s.transport->allgather, b, in, np, out, np, bytes * 2.0,
		    net);
	if (rc)
		return failed(t, rc, b, "the all-gather");
	t->net_bytes += net;
	return 0;
}

/* Runs the model's update on each of bucket b's parameters; `when`
 * says for a failure's message why it ran then. */
static int update_bucket(tmm_ctx *ctx, struct dp_trainer *t,
			 const struct dp_bucket *b, const char *when)
{
	char what[64];
	int rc = 0;

	for (unsigned p = 0; p < b->n_params; p++) {
		unsigned q = b->first + p;

		rc = t->m->update(ctx, q, t->w[q], t->g[q][0], t->m->arg);
		if (rc) {
			snprintf(what, sizeof(what),
				 "the update of parameter %u (%s)", q, when);
			return failed(t, rc, b, what);
		}
	}
	return 0;
}

/*
 * Reduces bucket b's gradients and updates its parameters.  Without
 * ZeRO the update of a bucket runs one bucket late, once the next
 * bucket's all-reduce is issued (the step's last bucket's at once): an
 * update reads its reduced gradients, so run at once it would wait for
 * the all-reduce with nothing to hide it behind, where one bucket later
 * the all-reduce has had that bucket's backward to run beside (as DDP's
 * all-reduce runs beside the backward; bench/dp_graph.h's lag).  The
 * backward of the groups below reads none of a bucket's parameters, and
 * the gradients stay valid until the step ends, so the bits are the
 * same.  With ZeRO the all-gather after the update is the parameters'
 * own, and the update runs at once.
 *
 * A failure ends the step there, with no bucket held: the buckets before
 * have been updated, the failed one and those after not (nor the held
 * one, when its update had not run yet), and the caller is to stop
 * training (dp_trainer_failed says which op failed).
 */
static int reduce_and_update(tmm_ctx *ctx, struct dp_trainer *t,
			     struct dp_bucket *b)
{
	unsigned np = b->n_params, mb = t->micro;
	double n = t->s.comm->size, bytes = 4.0 * (double)b->floats;
	tmm_tensor *in = calloc((size_t)np * mb + np + 1, sizeof(*in));
	tmm_tensor *out = calloc(2 * (size_t)np + 1, sizeof(*out));
	double net;
	int rc = 0;

	t->failed[0] = '\0';
	/* Buckets are reduced in order: one held at or after b is left by
	 * a step that failed before its last bucket (and said so).  Its
	 * gradients are that step's, gone: it is dropped, not updated. */
	if (t->held && t->held >= b)
		t->held = NULL;
	if (!in || !out) {
		free(in);
		free(out);
		t->held = NULL;
		return failed(t, -ENOMEM, b, "out of host memory for the ops");
	}
	for (unsigned p = 0; p < np; p++) {
		for (unsigned k = 0; k < mb; k++)
			in[p * mb + k] = t->g[b->first + p][k];
		out[p] = t->g[b->first + p][0];
	}
	if (t->s.zero) {
		rc = reduce_update_shard(ctx, t, b, in, out);
	} else {
		/* A ring all-reduce of the bucket (every micro-batch's). */
		net = 2.0 * (n - 1.0) / n * bytes * mb;
		rc = run_op(ctx, "allreduce", TMM_OP_COLLECTIVE,
			    t->s.transport->allreduce, b, in, np * mb, out,
			    np, bytes * mb * (n + 1.0), net);
		if (rc)
			failed(t, rc, b, "the all-reduce");
		else
			t->net_bytes += net;
		if (rc == 0 && t->held)
			rc = update_bucket(ctx, t, t->held,
					   "held for the next all-reduce");
		t->held = b;
		if (rc == 0 && b == &t->bucket[t->n_buckets - 1]) {
			rc = update_bucket(ctx, t, b, "the step's last bucket");
			t->held = NULL;
		}
		if (rc)
			t->held = NULL;
	}
	free(in);
	free(out);
	return rc;
}

int dp_grad_ready(tmm_ctx *ctx, struct dp_trainer *t, unsigned p,
		  unsigned micro, tmm_tensor w, const tmm_tensor *g)
{
	struct dp_bucket *b;

	if (p >= t->m->n_params || micro >= t->micro)
		return -EINVAL;
	t->w[p] = w;
	t->g[p] = g;
	b = &t->bucket[t->bucket_of[p]];
	/* A bucket is reduced once per step: after its last parameter's
	 * backward in the last micro-batch. */
	if (micro + 1 != t->micro || p + 1 != b->first + b->n_params)
		return 0;
	return reduce_and_update(ctx, t, b);
}

unsigned dp_trainer_buckets(const struct dp_trainer *t)
{
	return t->n_buckets;
}

double dp_trainer_net_bytes(const struct dp_trainer *t)
{
	return t->net_bytes;
}

const char *dp_trainer_failed(const struct dp_trainer *t)
{
	return t && t->failed[0] ? t->failed : NULL;
}

const struct dp_comm *dp_trainer_comm(const struct dp_trainer *t)
{
	return t->s.comm;
}

unsigned dp_trainer_micro(const struct dp_trainer *t)
{
	return t->micro;
}

void *dp_trainer_transport_arg(const struct dp_trainer *t)
{
	return t->s.transport_arg;
}

void *dp_trainer_model_arg(const struct dp_trainer *t)
{
	return t->m->arg;
}
