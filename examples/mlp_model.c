/* SPDX-License-Identifier: MIT */
/*
 * mlp_model.c — the MLP of mlp_model.h: data, ops, and the training loop.
 *
 * Every op is a plain loop in a fixed order, so the arithmetic is the same
 * whatever libtensormm does with the memory: any difference in the results
 * under memory pressure is a bug in the memory manager.
 *
 * The ops split (TSPLIT): every op with a batch dimension (the layers,
 * the activations, the loss and the layers' backward) gives the runtime a
 * run_slice over a range of the batch's rows, so a plan may run it as
 * micro-ops; only the optimizer's ops run whole.  See row_split.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_model.h"
#include "row_split.h"
#include "train_steps.h"

/* ---- deterministic pseudo-random numbers ------------------------------ */

static uint64_t next_u64(uint64_t *s)
{
	/* splitmix64: small, and good enough for synthetic data */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float next_unit(uint64_t *s)
{
	return (float)((double)(next_u64(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* ---- op callbacks ----------------------------------------------------- */

/*
 * Each op but the optimizer's is written for the rows [begin, end) of the
 * batch (a TSPLIT micro-op, see row_split.h), and the whole op runs it
 * over every row, so a split run does the same arithmetic in the same
 * order.
 */

/* Z[b×o] = X[b×i] · W[i×o] + bias[o] */
static int fc_forward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream)
{
	const struct mlp_dims *d = user;
	const float *x = in[0], *w = in[1], *bias = in[2];
	float *z = out[0];

	(void)stream;
	for (size_t r = begin; r < end; r++) {
		float *zr = z + r * d->o;

		for (unsigned c = 0; c < d->o; c++)
			zr[c] = bias[c];
		for (unsigned k = 0; k < d->i; k++) {
			float xv = x[r * d->i + k];
			const float *wk = w + (size_t)k * d->o;

			for (unsigned c = 0; c < d->o; c++)
				zr[c] += xv * wk[c];
		}
	}
	return 0;
}

static int fc_forward(void *const *in, void *const *out, void *user,
		      void *stream)
{
	const struct mlp_dims *d = user;

	return fc_forward_rows(in, out, 0, d->b, user, stream);
}

/* A = max(Z, 0) */
static int relu_forward_rows(void *const *in, void *const *out,
			     size_t begin, size_t end, void *user,
			     void *stream)
{
	const struct mlp_dims *d = user;
	const float *z = in[0];
	float *a = out[0];

	(void)stream;
	for (size_t k = begin * d->o; k < end * d->o; k++)
		a[k] = z[k] > 0.0f ? z[k] : 0.0f;
	return 0;
}

static int relu_forward(void *const *in, void *const *out, void *user,
			void *stream)
{
	const struct mlp_dims *d = user;

	return relu_forward_rows(in, out, 0, d->b, user, stream);
}

/* dZ = dA where Z > 0, else 0 */
static int relu_backward_rows(void *const *in, void *const *out,
			      size_t begin, size_t end, void *user,
			      void *stream)
{
	const struct mlp_dims *d = user;
	const float *z = in[0], *da = in[1];
	float *dz = out[0];

	(void)stream;
	for (size_t k = begin * d->o; k < end * d->o; k++)
		dz[k] = z[k] > 0.0f ? da[k] : 0.0f;
	return 0;
}

static int relu_backward(void *const *in, void *const *out, void *user,
			 void *stream)
{
	const struct mlp_dims *d = user;

	return relu_backward_rows(in, out, 0, d->b, user, stream);
}

/*
 * Mean softmax cross-entropy: loss[1] and dLogits = (softmax - 1hot) / b.
 * The loss is summed in the float it is kept in, row by row, and divided
 * by the last row's micro-op: a sum carried between micro-ops in any
 * wider type would be lost, so the whole op sums the same way.
 */
static int softmax_xent_rows(void *const *in, void *const *out, size_t begin,
			     size_t end, void *user, void *stream)
{
	const struct mlp_dims *d = user;
	const float *logits = in[0];
	const int32_t *labels = in[1];
	float *loss = out[0], *dlogits = out[1];

	(void)stream;
	row_split_start_sum(loss, sizeof(float), begin);
	for (size_t r = begin; r < end; r++) {
		const float *l = logits + r * d->o;
		float *g = dlogits + r * d->o;
		float max = l[0], sum = 0.0f;

		for (unsigned c = 1; c < d->o; c++)
			if (l[c] > max)
				max = l[c];
		for (unsigned c = 0; c < d->o; c++) {
			g[c] = expf(l[c] - max);
			sum += g[c];
		}
		for (unsigned c = 0; c < d->o; c++) {
			g[c] /= sum;
			if ((int32_t)c == labels[r])
				loss[0] -= (float)log((double)g[c] + 1e-12);
			g[c] = (g[c] - ((int32_t)c == labels[r])) / d->b;
		}
	}
	if (end == d->b)
		loss[0] /= (float)d->b;
	return 0;
}

static int softmax_xent(void *const *in, void *const *out, void *user,
			void *stream)
{
	const struct mlp_dims *d = user;

	return softmax_xent_rows(in, out, 0, d->b, user, stream);
}

/* dW = Xᵀ·dZ, dbias = Σ dZ (both summed row by row, in order), and (when
 * d->has_dx: the first layer needs no dX) dX = dZ·Wᵀ */
static int fc_backward_rows(void *const *in, void *const *out, size_t begin,
			    size_t end, void *user, void *stream)
{
	const struct mlp_dims *d = user;
	const float *x = in[0], *w = in[1], *dz = in[2];
	float *dw = out[0], *db = out[1], *dx = d->has_dx ? out[2] : NULL;

	(void)stream;
	row_split_start_sum(dw, sizeof(float) * d->i * d->o, begin);
	row_split_start_sum(db, sizeof(float) * d->o, begin);
	for (size_t r = begin; r < end; r++) {
		const float *dzr = dz + r * d->o;

		for (unsigned c = 0; c < d->o; c++)
			db[c] += dzr[c];
		for (unsigned k = 0; k < d->i; k++) {
			float xv = x[r * d->i + k];
			float *dwk = dw + (size_t)k * d->o;

			for (unsigned c = 0; c < d->o; c++)
				dwk[c] += xv * dzr[c];
		}
	}
	if (!dx)
		return 0;
	for (size_t r = begin; r < end; r++) {
		const float *dzr = dz + r * d->o;

		for (unsigned k = 0; k < d->i; k++) {
			const float *wk = w + (size_t)k * d->o;
			float s = 0.0f;

			for (unsigned c = 0; c < d->o; c++)
				s += dzr[c] * wk[c];
			dx[r * d->i + k] = s;
		}
	}
	return 0;
}

static int fc_backward(void *const *in, void *const *out, void *user,
		       void *stream)
{
	const struct mlp_dims *d = user;

	return fc_backward_rows(in, out, 0, d->b, user, stream);
}

/* SGD with momentum, in place: V = μV + dW; W -= lr·V (o elements).  It
 * has no run_slice: its elements are the weights', not a batch's rows. */
static int sgd_momentum(void *const *in, void *const *out, void *user,
			void *stream)
{
	const struct mlp_dims *d = user;
	const float *grad = in[2];
	float *w = out[0], *v = out[1];

	(void)stream;
	for (size_t k = 0; k < d->o; k++) {
		v[k] = d->momentum * v[k] + grad[k];
		w[k] -= d->lr * v[k];
	}
	return 0;
}

/* Which tensors the split ops cut into rows: inputs, then outputs. */
static const unsigned char fc_forward_sliced[] = { 1, 0, 0, 1 };
static const unsigned char softmax_xent_sliced[] = { 1, 1, 0, 1 };
/* dW and dbias are summed over the rows; dX (when there) comes last. */
static const unsigned char fc_backward_sliced[] = { 1, 0, 1, 0, 0, 1 };

static const struct mlp_kernels cpu_kernels = {
	.fc_forward = fc_forward,
	.relu_forward = relu_forward,
	.relu_backward = relu_backward,
	.softmax_xent = softmax_xent,
	.fc_backward = fc_backward,
	.sgd_momentum = sgd_momentum,
};

const struct mlp_kernels *mlp_cpu_kernels(void)
{
	return &cpu_kernels;
}

/* ---- the model -------------------------------------------------------- */

struct layer {
	unsigned in, out;
	tmm_tensor w, b, vw, vb;     /* persistent */
	struct mlp_dims fc, act, upd_w, upd_b;
};

struct model {
	const struct mlp_config *cfg;
	const struct mlp_kernels *k; /* the op callbacks */
	tmm_ctx *ctx;
	unsigned n;		     /* layers, the last one is the classifier */
	struct layer *layer;
	struct mlp_dims loss_dims;
	/* How the CPU ops split (TSPLIT); the rows are the batch's. */
	struct row_split fc_fwd_split, relu_split, relu_bwd_split;
	struct row_split xent_split, fc_bwd_split;
	float *x_host;		     /* the whole synthetic data set */
	int32_t *y_host;
	unsigned samples;
};

/* Micro-batches per step, and data shards (mlp_config): 0 counts as 1. */
static unsigned micro_of(const struct mlp_config *c)
{
	return c->micro ? c->micro : 1;
}

static unsigned shards_of(const struct mlp_config *c)
{
	return c->shards ? c->shards : 1;
}

/* Four steps of synthetic data, labelled by a random linear teacher. */
static int make_data(struct model *m, uint64_t *rng)
{
	const struct mlp_config *c = m->cfg;
	float *teacher;

	m->samples = 4 * c->batch * micro_of(c) * shards_of(c);
	m->x_host = malloc(sizeof(float) * m->samples * c->inputs);
	m->y_host = malloc(sizeof(int32_t) * m->samples);
	teacher = malloc(sizeof(float) * c->inputs * c->classes);
	if (!m->x_host || !m->y_host || !teacher) {
		free(teacher);
		return -ENOMEM;
	}
	for (size_t k = 0; k < (size_t)c->inputs * c->classes; k++)
		teacher[k] = next_unit(rng);
	for (unsigned s = 0; s < m->samples; s++) {
		float *x = m->x_host + (size_t)s * c->inputs;
		float best = -INFINITY;

		for (unsigned k = 0; k < c->inputs; k++)
			x[k] = next_unit(rng);
		for (unsigned cl = 0; cl < c->classes; cl++) {
			float score = 0.0f;

			for (unsigned k = 0; k < c->inputs; k++)
				score += x[k] * teacher[k * c->classes + cl];
			if (score > best) {
				best = score;
				m->y_host[s] = (int32_t)cl;
			}
		}
	}
	free(teacher);
	return 0;
}

static int make_param(struct model *m, size_t count, const char *what,
		      unsigned l, float scale, uint64_t *rng, tmm_tensor *t)
{
	char name[32];
	float *init = calloc(count, sizeof(float));
	int rc;

	if (!init)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%s%u", what, l);
	for (size_t k = 0; scale != 0.0f && k < count; k++)
		init[k] = scale * next_unit(rng);
	rc = tmm_tensor_create(m->ctx, count * sizeof(float), TMM_PERSISTENT,
			       name, t);
	if (rc == 0)
		rc = tmm_tensor_write(m->ctx, *t, 0, init,
				      count * sizeof(float));
	free(init);
	return rc;
}

static int make_layers(struct model *m, uint64_t *rng)
{
	const struct mlp_config *c = m->cfg;
	int rc;

	m->n = c->layers + 1;
	m->layer = calloc(m->n, sizeof(*m->layer));
	if (!m->layer)
		return -ENOMEM;
	for (unsigned l = 0; l < m->n; l++) {
		struct layer *ly = &m->layer[l];
		/* He initialisation keeps ReLU activations in range. */
		float scale;

		ly->in = l == 0 ? c->inputs : c->width;
		ly->out = l == m->n - 1 ? c->classes : c->width;
		scale = sqrtf(6.0f / (float)ly->in);
		ly->fc = (struct mlp_dims){ c->batch, ly->in, ly->out, 0, 0,
					l > 0 };
		ly->act = ly->fc;
		ly->upd_w = (struct mlp_dims){ 1, 1, ly->in * ly->out, c->lr,
					   c->momentum, 0 };
		ly->upd_b = (struct mlp_dims){ 1, 1, ly->out, c->lr, c->momentum,
					   0 };
		if ((rc = make_param(m, (size_t)ly->in * ly->out, "W", l,
				     scale, rng, &ly->w)) ||
		    (rc = make_param(m, ly->out, "b", l, 0.0f, rng, &ly->b)))
			return rc;
		/* An outside optimizer (after_backward) keeps its own state. */
		if (c->after_backward)
			continue;
		if ((rc = make_param(m, (size_t)ly->in * ly->out, "vW", l,
				     0.0f, rng, &ly->vw)) ||
		    (rc = make_param(m, ly->out, "vb", l, 0.0f, rng, &ly->vb)))
			return rc;
	}
	m->loss_dims = (struct mlp_dims){ c->batch, c->classes, c->classes, 0, 0,
				      0 };
	return 0;
}

static void make_splits(struct model *m)
{
	size_t rows = m->cfg->batch;

	m->fc_fwd_split = (struct row_split){ fc_forward_rows, rows,
					      fc_forward_sliced };
	m->relu_split = (struct row_split){ relu_forward_rows, rows, NULL };
	m->relu_bwd_split = (struct row_split){ relu_backward_rows, rows,
						NULL };
	m->xent_split = (struct row_split){ softmax_xent_rows, rows,
					    softmax_xent_sliced };
	m->fc_bwd_split = (struct row_split){ fc_backward_rows, rows,
					      fc_backward_sliced };
}

/* s, when the ops are the CPU loops that it splits; else NULL: another
 * device's kernels (the GPU example's) run whole. */
static const struct row_split *split_of(const struct model *m,
					const struct row_split *s)
{
	return m->k == &cpu_kernels ? s : NULL;
}

static double fc_flops(const struct mlp_dims *d)
{
	return 2.0 * d->b * d->i * d->o;
}

static double fc_bytes(const struct mlp_dims *d)
{
	return 4.0 * ((double)d->b * d->i + (double)d->i * d->o +
		      (double)d->b * d->o);
}

static int run(struct model *m, const char *name, enum tmm_op_kind kind,
	       unsigned flags, tmm_run_fn fn, const struct row_split *split,
	       const struct mlp_dims *d, const tmm_tensor *in, unsigned n_in,
	       const tmm_tensor *out, unsigned n_out, double flops,
	       double bytes)
{
	tmm_op op = {
		.name = name, .kind = kind, .flags = flags,
		.inputs = in, .n_inputs = n_in,
		.outputs = out, .n_outputs = n_out,
		.run = fn, .user = (void *)d,
		.cost = { flops, bytes },
	};
	int rc;

	row_split_describe(&op, split_of(m, split));
	if (m->cfg->before_op &&
	    (rc = m->cfg->before_op(m->ctx, &op, m->cfg->before_op_arg)))
		return rc;
	return tmm_run(m->ctx, &op);
}

/* Every tensor one step creates, destroyed at its end.  dw and db hold
 * each layer's gradients of every micro-batch: layer l's of micro-batch k
 * at l x micro + k. */
struct step_tensors {
	tmm_tensor x, y, loss, dlogits;
	tmm_tensor *z, *a, *dz, *da, *dw, *db;
	tmm_tensor *all;
	unsigned n_all;
};

static int fresh(struct model *m, struct step_tensors *st, size_t bytes,
		 enum tmm_kind kind, const char *what, unsigned l,
		 tmm_tensor *t)
{
	char name[32];
	int rc;

	snprintf(name, sizeof(name), "%s%u", what, l);
	rc = tmm_tensor_create(m->ctx, bytes, kind, name, t);
	if (rc == 0)
		st->all[st->n_all++] = *t;
	return rc;
}

/* Micro-batch k of a step: its forward, loss and backward (and, without
 * after_backward, each layer's update); its loss into *loss_out. */
static int one_pass(struct model *m, struct step_tensors *sp, unsigned step,
		    unsigned k, float *loss_out)
{
	const struct mlp_config *c = m->cfg;
	tmm_ctx *ctx = m->ctx;
	unsigned n = m->n, mb = micro_of(c);
	unsigned first = (step % 4) * c->batch * mb * shards_of(c) +
			 (c->shard * mb + k) * c->batch;
	size_t act_bytes;
	struct step_tensors st = *sp;
	int rc;

	if ((rc = fresh(m, &st, sizeof(float) * c->batch * c->inputs,
			TMM_ACTIVATION, "x", 0, &st.x)) ||
	    (rc = fresh(m, &st, sizeof(int32_t) * c->batch, TMM_ACTIVATION,
			"y", 0, &st.y)) ||
	    (rc = tmm_tensor_write(ctx, st.x, 0,
				   m->x_host + (size_t)first * c->inputs,
				   sizeof(float) * c->batch * c->inputs)) ||
	    (rc = tmm_tensor_write(ctx, st.y, 0, m->y_host + first,
				   sizeof(int32_t) * c->batch)))
		goto out;

	/* Forward. */
	for (unsigned l = 0; l < n; l++) {
		struct layer *ly = &m->layer[l];
		tmm_tensor prev = l == 0 ? st.x : st.a[l - 1];
		tmm_tensor fin[3] = { prev, ly->w, ly->b };

		act_bytes = sizeof(float) * c->batch * ly->out;
		if ((rc = fresh(m, &st, act_bytes, TMM_ACTIVATION, "z", l,
				&st.z[l])) ||
		    (rc = run(m, "fc_forward", TMM_OP_MATMUL, TMM_OP_PURE,
			      m->k->fc_forward, &m->fc_fwd_split, &ly->fc,
			      fin, 3, &st.z[l], 1,
			      fc_flops(&ly->fc), fc_bytes(&ly->fc))))
			goto out;
		if (l == n - 1)
			break;
		if ((rc = fresh(m, &st, act_bytes, TMM_ACTIVATION, "a", l,
				&st.a[l])) ||
		    (rc = run(m, "relu", TMM_OP_ACT, TMM_OP_PURE,
			      m->k->relu_forward, &m->relu_split, &ly->act,
			      &st.z[l], 1,
			      &st.a[l], 1,
			      (double)c->batch * ly->out, 2.0 * act_bytes)))
			goto out;
	}

	/* Loss. */
	{
		tmm_tensor lin[2] = { st.z[n - 1], st.y };
		tmm_tensor lout[2];

		if ((rc = fresh(m, &st, sizeof(float), TMM_SCRATCH, "loss", 0,
				&st.loss)) ||
		    (rc = fresh(m, &st, sizeof(float) * c->batch * c->classes,
				TMM_GRADIENT, "dlogits", 0, &st.dlogits)))
			goto out;
		lout[0] = st.loss;
		lout[1] = st.dlogits;
		if ((rc = run(m, "softmax_xent", TMM_OP_LOSS, TMM_OP_PURE,
			      m->k->softmax_xent, &m->xent_split,
			      &m->loss_dims, lin, 2, lout, 2,
			      5.0 * c->batch * c->classes,
			      8.0 * c->batch * c->classes)))
			goto out;
	}

	/* Backward, then the update of each layer as soon as its gradient
	 * is ready (as frameworks do, so gradients die early). */
	for (unsigned l = n; l-- > 0;) {
		struct layer *ly = &m->layer[l];
		unsigned g = l * mb + k; /* this layer's gradients here */
		tmm_tensor dz = l == n - 1 ? st.dlogits : st.dz[l];
		tmm_tensor bin[3] = { l == 0 ? st.x : st.a[l - 1], ly->w, dz };
		tmm_tensor bout[3];
		tmm_tensor uw_in[3], uw_out[2], ub_in[3], ub_out[2];

		if ((rc = fresh(m, &st, sizeof(float) * ly->in * ly->out,
				TMM_GRADIENT, "dW", l, &st.dw[g])) ||
		    (rc = fresh(m, &st, sizeof(float) * ly->out, TMM_GRADIENT,
				"db", l, &st.db[g])))
			goto out;
		bout[0] = st.dw[g];
		bout[1] = st.db[g];
		if (l > 0 &&
		    (rc = fresh(m, &st, sizeof(float) * c->batch * ly->in,
				TMM_GRADIENT, "da", l - 1, &st.da[l - 1])))
			goto out;
		if (l > 0)
			bout[2] = st.da[l - 1];
		if ((rc = run(m, "fc_backward", TMM_OP_MATMUL,
			      TMM_OP_BACKWARD, m->k->fc_backward,
			      &m->fc_bwd_split, &ly->fc,
			      bin, 3, bout, l > 0 ? 3 : 2,
			      2.0 * fc_flops(&ly->fc),
			      2.0 * fc_bytes(&ly->fc))))
			goto out;

		if (c->after_backward) {
			/* The hook reduces and updates (mlp_dp.c). */
			struct mlp_layer_grads lg = {
				.layer = l, .micro = k, .w = ly->w, .b = ly->b,
				.dw = &st.dw[l * mb], .db = &st.db[l * mb],
			};

			rc = c->after_backward(ctx, &lg, c->after_backward_arg);
			if (rc)
				goto out;
		} else {
			uw_in[0] = ly->w, uw_in[1] = ly->vw;
			uw_in[2] = st.dw[g];
			uw_out[0] = ly->w, uw_out[1] = ly->vw;
			ub_in[0] = ly->b, ub_in[1] = ly->vb;
			ub_in[2] = st.db[g];
			ub_out[0] = ly->b, ub_out[1] = ly->vb;
			if ((rc = run(m, "sgd_w", TMM_OP_OPTIMIZER,
				      TMM_OP_BACKWARD, m->k->sgd_momentum, NULL,
				      &ly->upd_w, uw_in, 3, uw_out, 2,
				      3.0 * ly->in * ly->out,
				      20.0 * ly->in * ly->out)) ||
			    (rc = run(m, "sgd_b", TMM_OP_OPTIMIZER,
				      TMM_OP_BACKWARD, m->k->sgd_momentum, NULL,
				      &ly->upd_b, ub_in, 3, ub_out, 2,
				      3.0 * ly->out, 20.0 * ly->out)))
				goto out;
		}

		if (l == 0)
			break;
		act_bytes = sizeof(float) * c->batch * ly->in;
		{
			tmm_tensor rin[2] = { st.z[l - 1], st.da[l - 1] };

			if ((rc = fresh(m, &st, act_bytes, TMM_GRADIENT, "dz",
					l - 1, &st.dz[l - 1])) ||
			    (rc = run(m, "relu_backward", TMM_OP_ACT,
				      TMM_OP_BACKWARD, m->k->relu_backward,
				      &m->relu_bwd_split,
				      &m->layer[l - 1].act, rin, 2,
				      &st.dz[l - 1], 1,
				      (double)c->batch * ly->in,
				      3.0 * act_bytes)))
				goto out;
		}
	}
	rc = tmm_tensor_read(ctx, st.loss, 0, loss_out, sizeof(float));
out:
	sp->n_all = st.n_all;
	return rc;
}

/* One step: every micro-batch's pass; the loss is micro-batch 0's.
 * (A train_step_fn: model is the struct model.) */
static int one_step(void *model, unsigned step, float *loss_out)
{
	struct model *m = model;
	tmm_ctx *ctx = m->ctx;
	unsigned n = m->n, mb = micro_of(m->cfg);
	struct step_tensors st = { 0 };
	tmm_tensor buf[4 * 64];
	float loss;
	int rc;

	if (n > 64)
		return -EINVAL;
	st.z = buf, st.a = st.z + n, st.dz = st.a + n, st.da = st.dz + n;
	st.all = malloc(sizeof(tmm_tensor) * (6 * n + 4) * mb);
	st.dw = calloc((size_t)2 * n * mb, sizeof(tmm_tensor));
	if (!st.all || !st.dw) {
		free(st.all);
		free(st.dw);
		return -ENOMEM;
	}
	st.db = st.dw + n * mb;

	rc = tmm_iteration_begin(ctx);
	for (unsigned k = 0; rc == 0 && k < mb; k++)
		rc = one_pass(m, &st, step, k, k == 0 ? loss_out : &loss);
	for (unsigned k = 0; k < st.n_all; k++)
		tmm_tensor_destroy(ctx, st.all[k]);
	free(st.all);
	free(st.dw);
	if (rc == 0)
		rc = tmm_iteration_end(ctx);
	return rc;
}

static int collect_weights(struct model *m, uint8_t **weights,
			   size_t *weights_len)
{
	size_t total = 0, at = 0;
	uint8_t *buf;
	int rc = 0;

	for (unsigned l = 0; l < m->n; l++)
		total += tmm_tensor_bytes(m->ctx, m->layer[l].w) +
			 tmm_tensor_bytes(m->ctx, m->layer[l].b);
	buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	for (unsigned l = 0; l < m->n && rc == 0; l++) {
		tmm_tensor ts[2] = { m->layer[l].w, m->layer[l].b };

		for (unsigned k = 0; k < 2 && rc == 0; k++) {
			size_t len = tmm_tensor_bytes(m->ctx, ts[k]);

			rc = tmm_tensor_read(m->ctx, ts[k], 0, buf + at, len);
			at += len;
		}
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*weights = buf;
	*weights_len = total;
	return 0;
}

void mlp_config_default(struct mlp_config *cfg)
{
	*cfg = (struct mlp_config){
		.batch = 128, .inputs = 256, .width = 256, .layers = 6,
		.classes = 10, .steps = 12, .lr = 0.02f, .momentum = 0.9f,
		.seed = 42,
	};
}

int mlp_train(tmm_ctx *ctx, const struct mlp_config *cfg, float *losses,
	      uint8_t **weights, size_t *weights_len, FILE *log)
{
	struct model m = { .cfg = cfg, .ctx = ctx,
			   .k = cfg->kernels ? cfg->kernels : &cpu_kernels };
	uint64_t rng = cfg->seed;
	int rc;

	if (cfg->layers < 1 || cfg->layers > 63 || cfg->classes < 2 ||
	    !cfg->batch || !cfg->inputs || !cfg->width)
		return -EINVAL;
	make_splits(&m);
	rc = make_data(&m, &rng);
	if (rc == 0)
		rc = make_layers(&m, &rng);
	if (rc == 0)
		rc = train_steps(ctx, one_step, &m, cfg->steps, cfg->rehearse,
				 losses, log, cfg->after_step,
				 cfg->after_step_arg);
	if (rc == 0 && weights)
		rc = collect_weights(&m, weights, weights_len);
	/* Only the tensors made: destroying a null handle would replace the
	 * message of the failure that stopped the training with its own. */
	for (unsigned l = 0; m.layer && l < m.n; l++) {
		tmm_tensor ts[4] = { m.layer[l].w, m.layer[l].b,
				     m.layer[l].vw, m.layer[l].vb };

		for (unsigned k = 0; k < 4; k++)
			if (ts[k].id)
				tmm_tensor_destroy(ctx, ts[k]);
	}
	free(m.layer);
	free(m.x_host);
	free(m.y_host);
	return rc;
}
