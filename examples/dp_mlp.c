/* SPDX-License-Identifier: MIT */
/*
 * dp_mlp.c — the MLP's parameters, optimizer and hook for dp_grads.h
 * (dp_mlp.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "dp_mlp.h"

struct dp_mlp {
	struct dp_model model;
	const struct mlp_config *mc;
	const struct mlp_kernels *k;
	unsigned n_layers;
	size_t *floats;		 /* the model's arrays, 2 per layer */
	unsigned *group;
	tmm_tensor *v;		 /* plain: momentum, 2 per layer (W, b) */
	struct mlp_dims *v_dims; /* plain: sgd_momentum's shape of each */
	struct dp_trainer *t;
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

/* Parameter p of the dp_model's numbering: layer n-1-p/2, W or b; its
 * momentum is v[2 x layer + (p odd)]. */
static unsigned momentum_of(const struct dp_mlp *d, unsigned p)
{
	return 2 * (d->n_layers - 1 - p / 2) + p % 2;
}

/* The plain update (dp_model.update): sgd_momentum on w with its
 * momentum and the reduced gradient g. */
static int update(tmm_ctx *ctx, unsigned p, tmm_tensor w, tmm_tensor g,
		  void *arg)
{
	struct dp_mlp *d = arg;
	unsigned v = momentum_of(d, p);
	tmm_tensor in[3] = { w, d->v[v], g };
	double bytes = 20.0 * d->floats[p];
	tmm_op op = {
		.name = "sgd", .kind = TMM_OP_OPTIMIZER,
		.flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 3, .outputs = in, .n_outputs = 2,
		.run = d->k->sgd_momentum, .user = &d->v_dims[v],
		.cost = { .flops = bytes / 4.0, .bytes = bytes },
	};

	return tmm_run(ctx, &op);
}

/*
 * ZeRO's update of this rank's part [lo, hi) of bucket b
 * (dp_model.update_shard): the model's own sgd_momentum on each
 * parameter's piece of it, so that the arithmetic is the plain update's,
 * element for element.
 */
static int update_shard(void *const *in, void *const *out, void *user,
			void *stream)
{
	const struct dp_bucket *b = user;
	const struct dp_mlp *d = dp_trainer_model_arg(b->t);
	unsigned np = b->n_params;
	float *v = out[np];

	for (unsigned p = 0; p < np; p++) {
		const struct dp_param *pp = &b->param[p];
		size_t lo = pp->off > b->lo ? pp->off : b->lo;
		size_t hi = pp->off + pp->count < b->hi ?
			    pp->off + pp->count : b->hi;
		struct mlp_dims dims = { 1, 1, 0, d->mc->lr, d->mc->momentum,
					 0 };
		void *pin[3], *pout[2];
		int rc;

		if (lo >= hi)
			continue;
		dims.o = (unsigned)(hi - lo);
		pin[0] = NULL;
		pin[1] = NULL;
		pin[2] = (float *)in[np + p] + (lo - pp->off);
		pout[0] = (float *)out[p] + (lo - pp->off);
		pout[1] = v + (lo - b->lo);
		rc = d->k->sgd_momentum(pin, pout, &dims, stream);
		if (rc)
			return rc;
	}
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

/* The plain optimizer's state: the momentum of every parameter. */
static int make_momentum(tmm_ctx *ctx, struct dp_mlp *d)
{
	const struct mlp_config *c = d->mc;
	unsigned n = d->n_layers;
	char name[32];
	int rc = 0;

	d->v = calloc(2 * (size_t)n, sizeof(*d->v));
	d->v_dims = calloc(2 * (size_t)n, sizeof(*d->v_dims));
	if (!d->v || !d->v_dims)
		return -ENOMEM;
	for (unsigned l = 0; rc == 0 && l < n; l++) {
		size_t w = (size_t)layer_in(c, l) * layer_out(c, l, n);
		size_t o = layer_out(c, l, n);

		d->v_dims[2 * l] = (struct mlp_dims){ 1, 1, (unsigned)w,
			c->lr, c->momentum, 0 };
		d->v_dims[2 * l + 1] = (struct mlp_dims){ 1, 1, (unsigned)o,
			c->lr, c->momentum, 0 };
		snprintf(name, sizeof(name), "vW%u", l);
		rc = zeros(ctx, w, name, &d->v[2 * l]);
		snprintf(name, sizeof(name), "vb%u", l);
		if (rc == 0)
			rc = zeros(ctx, o, name, &d->v[2 * l + 1]);
	}
	return rc;
}

int dp_mlp_open(tmm_ctx *ctx, const struct mlp_config *mc, bool zero,
		struct dp_mlp **out)
{
	struct dp_mlp *d = calloc(1, sizeof(*d));
	unsigned n = mc->layers + 1;
	int rc = 0;

	if (!d)
		return -ENOMEM;
	d->mc = mc;
	d->k = mc->kernels ? mc->kernels : mlp_cpu_kernels();
	d->n_layers = n;
	d->floats = calloc(2 * (size_t)n, sizeof(*d->floats));
	d->group = calloc(2 * (size_t)n, sizeof(*d->group));
	if (!d->floats || !d->group) {
		dp_mlp_close(ctx, d);
		return -ENOMEM;
	}
	/* Last layer first, W then b: the order the backward ends them. */
	for (unsigned p = 0; p < 2 * n; p++) {
		unsigned l = n - 1 - p / 2;

		d->floats[p] = p % 2 ? layer_out(mc, l, n)
				     : (size_t)layer_in(mc, l) *
					       layer_out(mc, l, n);
		d->group[p] = p / 2;
	}
	d->model = (struct dp_model){
		.n_params = 2 * n, .floats = d->floats, .group = d->group,
		.update = update, .update_shard = update_shard,
		.shard_state = 1, .arg = d,
	};
	if (!zero)
		rc = make_momentum(ctx, d);
	if (rc) {
		dp_mlp_close(ctx, d);
		return rc;
	}
	*out = d;
	return 0;
}

void dp_mlp_close(tmm_ctx *ctx, struct dp_mlp *d)
{
	if (!d)
		return;
	for (unsigned k = 0; d->v && k < 2 * d->n_layers; k++)
		if (d->v[k].id)
			tmm_tensor_destroy(ctx, d->v[k]);
	free(d->v);
	free(d->v_dims);
	free(d->floats);
	free(d->group);
	free(d);
}

const struct dp_model *dp_mlp_model(struct dp_mlp *d)
{
	return &d->model;
}

void dp_mlp_attach(struct dp_mlp *d, struct dp_trainer *t)
{
	d->t = t;
}

int dp_mlp_after_backward(tmm_ctx *ctx, const struct mlp_layer_grads *g,
			  void *arg)
{
	struct dp_mlp *d = arg;
	unsigned p;
	int rc;

	if (g->layer >= d->n_layers || !d->t)
		return -EINVAL;
	p = 2 * (d->n_layers - 1 - g->layer);
	rc = dp_grad_ready(ctx, d->t, p, g->micro, g->w, g->dw);
	return rc ? rc : dp_grad_ready(ctx, d->t, p + 1, g->micro, g->b,
				       g->db);
}
