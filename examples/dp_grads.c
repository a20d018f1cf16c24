/* SPDX-License-Identifier: MIT */
/*
 * dp_grads.c — buckets, their collectives and the update (dp_grads.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dp_grads.h"

struct dp_trainer {
	struct dp_setup s;
	unsigned n_layers, micro;
	struct dp_bucket *bucket;
	unsigned n_buckets;
	unsigned *bucket_of;	   /* per layer */
	struct dp_param *params;   /* every bucket's, in bucket order */
	tmm_tensor *v;		   /* plain: momentum, 2 per layer (W, b) */
	struct mlp_dims *v_dims;   /* plain: sgd_momentum's shape of each */
	/* What the backward left, per layer: valid until the step ends. */
	tmm_tensor *w, *b;
	const tmm_tensor **dw, **db;
	double net_bytes;	   /* declared, per step */
};

static unsigned layer_in(const struct mlp_config *c, unsigned l)
{
	return l == 0 ? c->inputs : c->width;
}

static unsigned layer_out(const struct mlp_config *c, unsigned l,
			  unsigned n)
{
	return l == n - 1 ? c->classes : c->width;
}

/* Groups the layers, last first, into buckets of about bucket_bytes. */
static int plan_buckets(struct dp_trainer *t)
{
	const struct mlp_config *c = t->s.model;
	unsigned n = t->n_layers, nb = 0, np = 0;
	size_t bytes = 0;
	int size = t->s.comm->size;

	t->bucket = calloc(n, sizeof(*t->bucket));
	t->params = calloc(2 * (size_t)n, sizeof(*t->params));
	t->bucket_of = calloc(n, sizeof(*t->bucket_of));
	if (!t->bucket || !t->params || !t->bucket_of)
		return -ENOMEM;
	for (unsigned l = n; l-- > 0;) {
		struct dp_bucket *b = &t->bucket[nb];
		size_t w = (size_t)layer_in(c, l) * layer_out(c, l, n);
		size_t o = layer_out(c, l, n);

		if (!b->n_params) {
			b->t = t;
			b->high = l;
			b->param = &t->params[np];
		}
		b->low = l;
		b->param[b->n_params++] = (struct dp_param){ b->floats, w };
		b->floats += w;
		b->param[b->n_params++] = (struct dp_param){ b->floats, o };
		b->floats += o;
		np += 2;
		t->bucket_of[l] = nb;
		bytes += (w + o) * sizeof(float);
		if (bytes >= t->s.bucket_bytes || l == 0) {
			b->shard = (b->floats + (size_t)size - 1) / (size_t)size;
			b->lo = b->shard * (size_t)t->s.comm->rank;
			if (b->lo > b->floats)
				b->lo = b->floats;
			b->hi = b->lo + b->shard;
			if (b->hi > b->floats)
				b->hi = b->floats;
			nb++;
			bytes = 0;
		}
	}
	t->n_buckets = nb;
	return 0;
}

/* A persistent tensor of `floats` zeros. */
static int zeros(tmm_ctx *ctx, size_t floats, const char *name,
		 tmm_tensor *out)
{
	int rc = tmm_tensor_create(ctx, floats * sizeof(float),
				   TMM_PERSISTENT, name, out);

	if (rc == 0)
		rc = tmm_tensor_fill(ctx, *out, 0);
	return rc;
}

/* The optimizer state: whole momentum per parameter, or (ZeRO) one
 * part of each bucket's. */
static int make_state(tmm_ctx *ctx, struct dp_trainer *t)
{
	const struct mlp_config *c = t->s.model;
	unsigned n = t->n_layers;
	char name[32];
	int rc = 0;

	if (t->s.zero) {
		for (unsigned k = 0; rc == 0 && k < t->n_buckets; k++) {
			struct dp_bucket *b = &t->bucket[k];

			snprintf(name, sizeof(name), "v_shard%u", k);
			/* An empty part (more ranks than elements) still
			 * gets a tensor, of one float, never touched. */
			rc = zeros(ctx, b->shard ? b->shard : 1, name,
				   &b->v_shard);
		}
		return rc;
	}
	t->v = calloc(2 * (size_t)n, sizeof(*t->v));
	t->v_dims = calloc(2 * (size_t)n, sizeof(*t->v_dims));
	if (!t->v || !t->v_dims)
		return -ENOMEM;
	for (unsigned l = 0; rc == 0 && l < n; l++) {
		size_t w = (size_t)layer_in(c, l) * layer_out(c, l, n);
		size_t o = layer_out(c, l, n);

		t->v_dims[2 * l] = (struct mlp_dims){ 1, 1, (unsigned)w,
			c->lr, c->momentum, 0 };
		t->v_dims[2 * l + 1] = (struct mlp_dims){ 1, 1, (unsigned)o,
			c->lr, c->momentum, 0 };
		snprintf(name, sizeof(name), "vW%u", l);
		rc = zeros(ctx, w, name, &t->v[2 * l]);
		snprintf(name, sizeof(name), "vb%u", l);
		if (rc == 0)
			rc = zeros(ctx, o, name, &t->v[2 * l + 1]);
	}
	return rc;
}

int dp_trainer_open(tmm_ctx *ctx, const struct dp_setup *s,
		    struct dp_trainer **out)
{
	struct dp_trainer *t = calloc(1, sizeof(*t));
	unsigned n = s->model->layers + 1;
	int rc;

	if (!t)
		return -ENOMEM;
	t->s = *s;
	t->n_layers = n;
	t->micro = s->model->micro ? s->model->micro : 1;
	t->w = calloc(2 * (size_t)n, sizeof(*t->w));
	t->dw = calloc(2 * (size_t)n, sizeof(*t->dw));
	if (!t->w || !t->dw) {
		dp_trainer_close(ctx, t);
		return -ENOMEM;
	}
	t->b = t->w + n;
	t->db = t->dw + n;
	rc = plan_buckets(t);
	if (rc == 0)
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
	for (unsigned k = 0; t->v && k < 2 * t->n_layers; k++)
		if (t->v[k].id)
			tmm_tensor_destroy(ctx, t->v[k]);
	for (unsigned k = 0; t->bucket && k < t->n_buckets; k++)
		if (t->bucket[k].v_shard.id)
			tmm_tensor_destroy(ctx, t->bucket[k].v_shard);
	free(t->bucket);
	free(t->params);
	free(t->bucket_of);
	free(t->v);
	free(t->v_dims);
	free(t->w);
	free(t->dw);
	free(t);
}

/* Parameter p of bucket b (W and b of each layer, high layer first): its
 * tensor, and its gradient of micro-batch k. */
static tmm_tensor param_tensor(const struct dp_trainer *t,
			       const struct dp_bucket *b, unsigned p)
{
	unsigned l = b->high - p / 2;

	return p % 2 ? t->b[l] : t->w[l];
}

static tmm_tensor grad_tensor(const struct dp_trainer *t,
			      const struct dp_bucket *b, unsigned p,
			      unsigned k)
{
	unsigned l = b->high - p / 2;

	return p % 2 ? t->db[l][k] : t->dw[l][k];
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

/*
 * ZeRO's update of this rank's part [lo, hi) of bucket b: the model's
 * own sgd_momentum on each parameter's piece of it, so that the
 * arithmetic is the plain update's, element for element.
 * in: the P parameters, their P gradients, the momentum part; out: the
 * P parameters, the momentum part.
 */
static int sgd_shard(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const struct dp_bucket *b = user;
	const struct dp_trainer *t = b->t;
	unsigned np = b->n_params;
	float *v = out[np];

	for (unsigned p = 0; p < np; p++) {
		const struct dp_param *pp = &b->param[p];
		size_t lo = pp->off > b->lo ? pp->off : b->lo;
		size_t hi = pp->off + pp->count < b->hi ?
			    pp->off + pp->count : b->hi;
		struct mlp_dims d = { 1, 1, 0, t->s.model->lr,
				      t->s.model->momentum, 0 };
		void *pin[3], *pout[2];
		int rc;

		if (lo >= hi)
			continue;
		d.o = (unsigned)(hi - lo);
		pin[0] = NULL;
		pin[1] = NULL;
		pin[2] = (float *)in[np + p] + (lo - pp->off);
		pout[0] = (float *)out[p] + (lo - pp->off);
		pout[1] = v + (lo - b->lo);
		rc = t->s.kernels->sgd_momentum(pin, pout, &d, stream);
		if (rc)
			return rc;
	}
	return 0;
}

/* Reduces bucket b's gradients and updates its parameters. */
static int reduce_and_update(tmm_ctx *ctx, struct dp_trainer *t,
			     struct dp_bucket *b)
{
	unsigned np = b->n_params, mb = t->micro;
	double n = t->s.comm->size, bytes = 4.0 * (double)b->floats;
	tmm_tensor *in = calloc((size_t)np * mb + np + 1, sizeof(*in));
	tmm_tensor *out = calloc(2 * (size_t)np + 1, sizeof(*out));
	double net;
	int rc = 0;

	if (!in || !out) {
		free(in);
		free(out);
		return -ENOMEM;
	}
	for (unsigned p = 0; p < np; p++) {
		for (unsigned k = 0; k < mb; k++)
			in[p * mb + k] = grad_tensor(t, b, p, k);
		out[p] = grad_tensor(t, b, p, 0);
	}
	if (!t->s.zero) {
		/* A ring all-reduce of the bucket (every micro-batch's). */
		net = 2.0 * (n - 1.0) / n * bytes * mb;
		t->net_bytes += net;
		rc = run_op(ctx, "allreduce", TMM_OP_COLLECTIVE,
			    t->s.transport->allreduce, b, in, np * mb, out,
			    np, bytes * mb * (n + 1.0), net);
		for (unsigned p = 0; rc == 0 && p < np; p++) {
			unsigned v = 2 * (b->high - p / 2) + p % 2;
			tmm_tensor uin[3] = { param_tensor(t, b, p), t->v[v],
					      grad_tensor(t, b, p, 0) };

			rc = run_op(ctx, "sgd", TMM_OP_OPTIMIZER,
				    t->s.kernels->sgd_momentum,
				    &t->v_dims[v], uin, 3, uin, 2,
				    20.0 * b->param[p].count, 0.0);
		}
		goto done;
	}
	/* ZeRO-1: reduce-scatter, update this rank's part, all-gather. */
	net = (n - 1.0) / n * bytes * mb;
	t->net_bytes += net;
	rc = run_op(ctx, "reduce_scatter", TMM_OP_COLLECTIVE,
		    t->s.transport->reduce_scatter, b, in, np * mb, out, np,
		    bytes * mb * 2.0, net);
	if (rc)
		goto done;
	for (unsigned p = 0; p < np; p++) {
		in[p] = param_tensor(t, b, p);
		in[np + p] = grad_tensor(t, b, p, 0);
		out[p] = in[p];
	}
	in[2 * np] = b->v_shard;
	out[np] = b->v_shard;
	rc = run_op(ctx, "sgd_shard", TMM_OP_OPTIMIZER, sgd_shard, b, in,
		    2 * np + 1, out, np + 1, 20.0 * (double)b->shard, 0.0);
	if (rc)
		goto done;
	net = (n - 1.0) / n * bytes;
	t->net_bytes += net;
	rc = run_op(ctx, "allgather", TMM_OP_COLLECTIVE,
		    t->s.transport->allgather, b, in, np, out, np,
		    bytes * 2.0, net);
done:
	free(in);
	free(out);
	return rc;
}

int dp_after_backward(tmm_ctx *ctx, const struct mlp_layer_grads *g,
		      void *arg)
{
	struct dp_trainer *t = arg;
	unsigned l = g->layer;
	struct dp_bucket *b;

	if (l >= t->n_layers)
		return -EINVAL;
	t->w[l] = g->w;
	t->b[l] = g->b;
	t->dw[l] = g->dw;
	t->db[l] = g->db;
	b = &t->bucket[t->bucket_of[l]];
	/* A bucket is reduced once per step: after its lowest layer's
	 * backward in the last micro-batch. */
	if (g->micro + 1 != t->micro || l != b->low)
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
