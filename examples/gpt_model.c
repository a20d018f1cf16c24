/* SPDX-License-Identifier: MIT */
/*
 * gpt_model.c — the GPT of gpt_model.h: data, parameters, and the training
 * loop that runs the kernels of gpt_ops.c as libtensormm ops.
 *
 * Every step creates the same tensors and runs the same ops, in the same
 * order and with the same sizes, because libtensormm keys a step's tensors
 * by creation order.  The forward ops (and the loss) are pure and write
 * fresh outputs, so the library may drop those and recompute them; the
 * backward and optimizer ops are not pure.
 *
 * Each parameter is updated by AdamW as soon as its gradient is ready (as
 * frameworks do, so gradients die early).  That is safe with recomputation
 * because of the order: the backward visits the parameters last-used
 * first, so once a parameter has changed, no later op reads a tensor that
 * was computed from it.  For the same reason the loss is read right after
 * the loss op, not at the end of the step.
 *
 * The ops split (TSPLIT): every op but AdamW tells the runtime how to run
 * it as micro-ops over ranges of its rows (the tokens; the sequences for
 * the attention), with the kernels' *_rows twins (gpt_ops.h), so a plan
 * may split any of them and the results stay bit-identical.
 *
 * With gpt_config.after_grad (examples/gpt_dp.c) a step is micro-batch
 * after micro-batch, and the hook takes over the updates: it may hold
 * them back until a bucket of gradients is reduced, which keeps the
 * order above (a parameter changes only after the backward has used it
 * for the last time in the step).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_data.h"
#include "gpt_model.h"
#include "gpt_ops.h"
#include "gpt_params.h"
#include "row_split.h"
#include "train_steps.h"

/* ---- the model (its parameters' places: gpt_params.h) ----------------- */

static const char *const block_param_name[BLOCK_PARAMS] = {
	"ln1_g", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
	"ln2_g", "ln2_b", "fc_w", "fc_b", "fc2_w", "fc2_b",
};

#define NO_LAYER (~0u) /* a name without a layer number */

#define F32(count) (sizeof(float) * (count)) /* bytes of floats */

struct param {
	tmm_tensor w, m, v;	   /* persistent: weight, AdamW moments */
	const char *what;	   /* for the names of its tensors */
	unsigned layer;		   /* or NO_LAYER */
	struct gpt_adamw_dims upd; /* its optimizer op's user data */
};

struct model {
	const struct gpt_config *cfg;
	tmm_ctx *ctx;
	unsigned n_params;
	struct param *param;
	unsigned *order; /* with after_grad: gpt_param_layout's to ours */
	size_t n; /* tokens per micro-batch: batch × seq */
	/*
	 * The user data of every op.  The blocks share them (same shapes).
	 * They live, unchanged, as long as the model: the library may call
	 * a pure op again to recompute its outputs.
	 */
	struct gpt_embed_dims embed;
	struct gpt_ln_dims ln, ln_res;
	struct gpt_mm_dims qkv, proj, fc, fc2, head;
	struct gpt_attn_dims attn;
	struct gpt_ew_dims gelu, add;
	struct gpt_xent_dims xent;
	int32_t *in_host, *tgt_host; /* the data set: samples × seq each */
	unsigned samples;
};

/* Micro-batches per step, and data shards (gpt_config): 0 counts as 1. */
static unsigned micro_of(const struct gpt_config *c)
{
	return c->micro ? c->micro : 1;
}

static unsigned shards_of(const struct gpt_config *c)
{
	return c->shards ? c->shards : 1;
}

static int check_config(const struct gpt_config *c)
{
	const unsigned max = 1u << 20;
	double n = (double)c->batch * c->seq, d = c->d_model, big;

	if (!c->batch || !c->seq || c->vocab < 2 || !c->d_model ||
	    !c->heads || !c->layers || c->layers > 64 ||
	    c->d_model % c->heads || c->batch > max || c->seq > max ||
	    c->vocab > max || c->d_model > max || c->steps > INT32_MAX - 1 ||
	    c->micro > 1024 || c->shards > 1024 ||
	    c->shard >= (c->shards ? c->shards : 1) ||
	    (c->micro > 1 && !c->after_grad))
		return -EINVAL;
	if (!isfinite(c->lr) || c->lr < 0.0f || !(c->beta1 >= 0.0f) ||
	    !(c->beta1 < 1.0f) || !(c->beta2 >= 0.0f) ||
	    !(c->beta2 < 1.0f) || !isfinite(c->eps) || !(c->eps > 0.0f) ||
	    !isfinite(c->weight_decay) || c->weight_decay < 0.0f)
		return -EINVAL;
	/* The largest tensor (in floats) must stay far from overflowing. */
	big = fmax(fmax(n * 4.0 * d, n * c->vocab),
		   fmax((double)c->batch * c->heads * c->seq * c->seq,
			fmax(4.0 * d * d, (double)c->vocab * d)));
	return big > 0x1p36 ? -EINVAL : 0;
}

static void set_dims(struct model *m)
{
	const struct gpt_config *c = m->cfg;
	unsigned d = c->d_model;

	m->n = (size_t)c->batch * c->seq;
	m->embed = (struct gpt_embed_dims){ c->batch, c->seq, d, c->vocab };
	m->ln = (struct gpt_ln_dims){ m->n, d, 0 };
	m->ln_res = (struct gpt_ln_dims){ m->n, d, 1 };
	m->qkv = (struct gpt_mm_dims){ m->n, d, 3 * d, 1 };
	m->proj = (struct gpt_mm_dims){ m->n, d, d, 1 };
	m->fc = (struct gpt_mm_dims){ m->n, d, 4 * d, 1 };
	m->fc2 = (struct gpt_mm_dims){ m->n, 4 * d, d, 1 };
	m->head = (struct gpt_mm_dims){ m->n, d, c->vocab, 0 };
	m->attn = (struct gpt_attn_dims){ c->batch, c->seq, d, c->heads };
	m->gelu = (struct gpt_ew_dims){ m->n * 4 * d, m->n };
	m->add = (struct gpt_ew_dims){ m->n * d, m->n };
	m->xent = (struct gpt_xent_dims){ m->n, c->vocab };
}

/* Four steps of synthetic sequences (gpt_data.h). */
static int make_data(struct model *m, uint64_t *rng)
{
	const struct gpt_config *c = m->cfg;

	m->samples = 4 * c->batch * micro_of(c) * shards_of(c);
	return gpt_make_data(c->vocab, c->seq, m->samples, rng, &m->in_host,
			     &m->tgt_host);
}

/* Creates a parameter, fill + scale·U[-1, 1), and its zeroed moments. */
static int make_param(struct model *m, unsigned idx, size_t count,
		      const char *what, unsigned l, float fill, float scale,
		      int decay, uint64_t *rng)
{
	static const char *const prefix[3] = { "", "m.", "v." };
	const struct gpt_config *c = m->cfg;
	struct param *p = &m->param[idx];
	tmm_tensor *ts[3] = { &p->w, &p->m, &p->v };
	float *init = malloc(count * sizeof(float));
	int rc = 0;

	if (!init)
		return -ENOMEM;
	p->what = what;
	p->layer = l;
	/* No decay on gains and biases. */
	p->upd = (struct gpt_adamw_dims){ count, c->lr, c->beta1, c->beta2,
					  c->eps,
					  decay ? c->weight_decay : 0.0f };
	for (size_t k = 0; k < count; k++)
		init[k] = scale != 0.0f ? fill + scale * gpt_next_unit(rng)
					: fill;
	for (unsigned i = 0; i < 3 && rc == 0; i++) {
		char name[40];

		if (l == NO_LAYER)
			snprintf(name, sizeof(name), "%s%s", prefix[i], what);
		else
			snprintf(name, sizeof(name), "%s%s.%u", prefix[i],
				 what, l);
		if (i == 1)
			memset(init, 0, count * sizeof(float));
		rc = tmm_tensor_create(m->ctx, count * sizeof(float),
				       TMM_PERSISTENT, name, ts[i]);
		if (rc == 0)
			rc = tmm_tensor_write(m->ctx, *ts[i], 0, init,
					      count * sizeof(float));
	}
	free(init);
	return rc;
}

static int make_params(struct model *m, uint64_t *rng)
{
	const struct gpt_config *c = m->cfg;
	unsigned L = c->layers;
	size_t d = c->d_model;
	/*
	 * GPT-2's initialisation: std 0.02 (a uniform of half-width
	 * 0.02·√3), the projections into the residual stream scaled by
	 * 1/√(2L) so the stream's variance does not grow with depth.
	 */
	float a = 0.02f * sqrtf(3.0f), ares = a / sqrtf(2.0f * (float)L);
	const struct {
		float fill, scale;
		int decay;
	} blk[BLOCK_PARAMS] = {
		[LN1_G] = { 1.0f, 0.0f, 0 },
		[LN1_B] = { 0.0f, 0.0f, 0 },
		[QKV_W] = { 0.0f, a, 1 },
		[QKV_B] = { 0.0f, 0.0f, 0 },
		[PROJ_W] = { 0.0f, ares, 1 },
		[PROJ_B] = { 0.0f, 0.0f, 0 },
		[LN2_G] = { 1.0f, 0.0f, 0 },
		[LN2_B] = { 0.0f, 0.0f, 0 },
		[FC_W] = { 0.0f, a, 1 },
		[FC_B] = { 0.0f, 0.0f, 0 },
		[FC2_W] = { 0.0f, ares, 1 },
		[FC2_B] = { 0.0f, 0.0f, 0 },
	};
	int rc;

	m->n_params = N_PARAMS(L);
	m->param = calloc(m->n_params, sizeof(*m->param));
	if (!m->param)
		return -ENOMEM;
	if ((rc = make_param(m, P_WTE, c->vocab * d, "wte", NO_LAYER, 0.0f,
			     a, 1, rng)) ||
	    (rc = make_param(m, P_WPE, c->seq * d, "wpe", NO_LAYER, 0.0f, a,
			     1, rng)))
		return rc;
	for (unsigned l = 0; l < L; l++)
		for (unsigned k = 0; k < BLOCK_PARAMS; k++)
			if ((rc = make_param(m, P_BLOCK(l, k),
					     gpt_param_floats(c, P_BLOCK(l, k)),
					     block_param_name[k], l,
					     blk[k].fill, blk[k].scale,
					     blk[k].decay, rng)))
				return rc;
	if ((rc = make_param(m, P_LNF(L), d, "lnf_g", NO_LAYER, 1.0f, 0.0f, 0,
			     rng)) ||
	    (rc = make_param(m, P_LNF(L) + 1, d, "lnf_b", NO_LAYER, 0.0f,
			     0.0f, 0, rng)))
		return rc;
	return make_param(m, P_HEAD(L), d * c->vocab, "head_w", NO_LAYER,
			  0.0f, a, 1, rng);
}

/* ---- one step --------------------------------------------------------- */

/* A block's forward tensors, kept for its backward. */
struct block_acts {
	tmm_tensor x; /* the block's input: the residual stream */
	tmm_tensor h1, mean1, rstd1, qkv, atty, probs, proj, r;
	tmm_tensor h2, mean2, rstd2, u, gu, mlp;
};

/* Every tensor one step creates, destroyed at its end. */
struct step_tensors {
	struct model *m;
	tmm_tensor tok, tgt, t;	/* inputs, targets, AdamW's step count */
	unsigned micro;		/* the micro-batch being run */
	/* With after_grad: each parameter's gradients, gpt_param_layout's
	 * k of micro-batch j at k x micro + j. */
	tmm_tensor *grad;
	struct block_acts *blk;	/* layers + 1; blk[layers].x: the top */
	tmm_tensor hf, meanf, rstdf, logits, loss, dlogits;
	tmm_tensor *all;
	unsigned n_all, cap;
};

static int fresh(struct model *m, struct step_tensors *st, size_t bytes,
		 enum tmm_kind kind, const char *prefix, const char *what,
		 unsigned l, tmm_tensor *t)
{
	char name[40];
	int rc;

	if (st->n_all == st->cap)
		return -EINVAL;
	if (l == NO_LAYER)
		snprintf(name, sizeof(name), "%s%s", prefix, what);
	else
		snprintf(name, sizeof(name), "%s%s.%u", prefix, what, l);
	rc = tmm_tensor_create(m->ctx, bytes, kind, name, t);
	if (rc == 0)
		st->all[st->n_all++] = *t;
	return rc;
}

/* Runs an op; split (NULL for one that does not) says how it splits. */
static int run(struct model *m, const char *name, enum tmm_op_kind kind,
	       unsigned flags, tmm_run_fn fn, const struct row_split *split,
	       const void *user, const tmm_tensor *in, unsigned n_in,
	       const tmm_tensor *out, unsigned n_out, double flops,
	       double bytes)
{
	tmm_op op = {
		.name = name, .kind = kind, .flags = flags,
		.inputs = in, .n_inputs = n_in,
		.outputs = out, .n_outputs = n_out,
		.run = fn, .user = (void *)user,
		.cost = { flops, bytes },
	};
	int rc;

	row_split_describe(&op, split);
	if (m->cfg->before_op &&
	    (rc = m->cfg->before_op(m->ctx, &op, m->cfg->before_op_arg)))
		return rc;
	return tmm_run(m->ctx, &op);
}

/* Updates parameter idx in place with the gradient g. */
static int adamw_op(struct model *m, struct step_tensors *st, unsigned idx,
		    tmm_tensor g)
{
	const struct param *p = &m->param[idx];
	tmm_tensor in[5] = { p->w, p->m, p->v, g, st->t };
	tmm_tensor out[3] = { p->w, p->m, p->v };
	double count = (double)p->upd.count;

	return run(m, "adamw", TMM_OP_OPTIMIZER, TMM_OP_BACKWARD, gpt_adamw,
		   NULL, &p->upd, in, 5, out, 3, 12.0 * count, 28.0 * count);
}

/* gpt_grad.update: update_arg is the step's struct step_tensors. */
static int hook_update(tmm_ctx *ctx, unsigned k, tmm_tensor g, void *arg)
{
	struct step_tensors *st = arg;

	(void)ctx;
	return adamw_op(st->m, st, st->m->order[k], g);
}

/* Parameter idx's gradient g is ready: its update, or after_grad's. */
static int adamw(struct model *m, struct step_tensors *st, unsigned idx,
		 tmm_tensor g)
{
	const struct gpt_config *c = m->cfg;
	unsigned group, k, mb = micro_of(c);
	struct gpt_grad gg;

	if (!c->after_grad)
		return adamw_op(m, st, idx, g);
	k = gpt_param_rank(c, idx, &group);
	st->grad[k * mb + st->micro] = g;
	gg = (struct gpt_grad){ k, st->micro, m->param[idx].w,
				&st->grad[k * mb], hook_update, st };
	return c->after_grad(m->ctx, &gg, c->after_grad_arg);
}

/* y, mean, rstd = layer_norm(x) with the gain and bias from parameter pg */
static int ln_fwd(struct model *m, struct step_tensors *st, const char *op,
		  const char *what, unsigned l, tmm_tensor x, unsigned pg,
		  tmm_tensor *y, tmm_tensor *mean, tmm_tensor *rstd)
{
	size_t n = m->n, c = m->ln.c;
	tmm_tensor in[3] = { x, m->param[pg].w, m->param[pg + 1].w };
	tmm_tensor out[3];
	const struct row_split split = { gpt_ln_forward_rows, n,
					 gpt_ln_forward_sliced };
	int rc;

	if ((rc = fresh(m, st, F32(n * c), TMM_ACTIVATION, "", what, l, y)) ||
	    (rc = fresh(m, st, F32(n), TMM_ACTIVATION, "mean_", what, l,
			mean)) ||
	    (rc = fresh(m, st, F32(n), TMM_ACTIVATION, "rstd_", what, l, rstd)))
		return rc;
	out[0] = *y, out[1] = *mean, out[2] = *rstd;
	return run(m, op, TMM_OP_NORM, TMM_OP_PURE, gpt_ln_forward, &split,
		   &m->ln, in, 3, out, 3, 8.0 * n * c,
		   4.0 * (2 * n * c + 2 * c + 2 * n));
}

/* dx = layer_norm'(dy) (+ dres when not NULL); then updates the gain and
 * bias of parameter pg */
static int ln_bwd(struct model *m, struct step_tensors *st, const char *op,
		  const char *dxw, unsigned l, tmm_tensor x, unsigned pg,
		  tmm_tensor mean, tmm_tensor rstd, tmm_tensor dy,
		  const tmm_tensor *dres, tmm_tensor *dx)
{
	const struct param *p = &m->param[pg];
	const struct gpt_ln_dims *d = dres ? &m->ln_res : &m->ln;
	size_t n = m->n, c = m->ln.c;
	tmm_tensor in[6] = { x, p->w, mean, rstd, dy,
			     dres ? *dres : TMM_TENSOR_NULL };
	tmm_tensor out[3];
	const struct row_split split = { gpt_ln_backward_rows, n,
					 gpt_ln_backward_sliced(d) };
	int rc;

	if ((rc = fresh(m, st, F32(n * c), TMM_GRADIENT, "d", dxw, l, dx)) ||
	    (rc = fresh(m, st, F32(c), TMM_GRADIENT, "d", p->what, p->layer,
			&out[1])) ||
	    (rc = fresh(m, st, F32(c), TMM_GRADIENT, "d", p[1].what,
			p[1].layer, &out[2])))
		return rc;
	out[0] = *dx;
	if ((rc = run(m, op, TMM_OP_NORM, TMM_OP_BACKWARD, gpt_ln_backward,
		      &split, d, in, dres ? 6 : 5, out, 3,
		      14.0 * n * c, 4.0 * ((dres ? 4 : 3) * n * c + 4 * c))))
		return rc;
	if ((rc = adamw(m, st, pg, out[1])))
		return rc;
	return adamw(m, st, pg + 1, out[2]);
}

/* y = x·W (+ bias), W the parameter pw and the bias the next one */
static int mm_fwd(struct model *m, struct step_tensors *st, const char *op,
		  const struct gpt_mm_dims *d, unsigned l, tmm_tensor x,
		  unsigned pw, tmm_tensor *y)
{
	tmm_tensor in[3] = { x, m->param[pw].w,
			     d->has_bias ? m->param[pw + 1].w
					 : TMM_TENSOR_NULL };
	double n = (double)d->n;
	const struct row_split split = { gpt_mm_forward_rows, d->n,
					 gpt_mm_forward_sliced(d) };
	int rc;

	rc = fresh(m, st, F32(d->n * d->o), TMM_ACTIVATION, "", op, l, y);
	if (rc)
		return rc;
	return run(m, op, TMM_OP_MATMUL, TMM_OP_PURE, gpt_mm_forward, &split,
		   d, in, d->has_bias ? 3 : 2, y, 1, 2.0 * n * d->i * d->o,
		   4.0 * (n * d->i + (double)d->i * d->o + n * d->o + d->o));
}

/* dx = dy·Wᵀ; then updates W (and the bias) with Xᵀ·dy (and Σ dy) */
static int mm_bwd(struct model *m, struct step_tensors *st, const char *op,
		  const char *dxw, const struct gpt_mm_dims *d, unsigned l,
		  tmm_tensor x, unsigned pw, tmm_tensor dy, tmm_tensor *dx)
{
	const struct param *p = &m->param[pw];
	tmm_tensor in[3] = { x, p->w, dy };
	tmm_tensor out[3];
	double n = (double)d->n;
	const struct row_split split = { gpt_mm_backward_rows, d->n,
					 gpt_mm_backward_sliced };
	int rc;

	if ((rc = fresh(m, st, F32((size_t)d->i * d->o), TMM_GRADIENT, "d",
			p->what, p->layer, &out[0])) ||
	    (rc = fresh(m, st, F32(d->n * d->i), TMM_GRADIENT, "d", dxw, l,
			dx)) ||
	    (d->has_bias &&
	     (rc = fresh(m, st, F32((size_t)d->o), TMM_GRADIENT, "d",
			 p[1].what, p[1].layer, &out[2]))))
		return rc;
	out[1] = *dx;
	if ((rc = run(m, op, TMM_OP_MATMUL, TMM_OP_BACKWARD, gpt_mm_backward,
		      &split, d, in, 3, out, d->has_bias ? 3 : 2,
		      4.0 * n * d->i * d->o,
		      4.0 * (2 * n * d->i + 2.0 * d->i * d->o + n * d->o))))
		return rc;
	if ((rc = adamw(m, st, pw, out[0])))
		return rc;
	return d->has_bias ? adamw(m, st, pw + 1, out[2]) : 0;
}

/* y = a + b: a residual add */
static int add(struct model *m, struct step_tensors *st, const char *what,
	       unsigned l, tmm_tensor a, tmm_tensor b, tmm_tensor *y)
{
	tmm_tensor in[2] = { a, b };
	double count = (double)m->add.count;
	const struct row_split split = { gpt_add_forward_rows, m->add.rows,
					 NULL };
	int rc;

	rc = fresh(m, st, F32(m->add.count), TMM_ACTIVATION, "", what, l, y);
	if (rc)
		return rc;
	return run(m, "residual_add", TMM_OP_ELEMENTWISE, TMM_OP_PURE,
		   gpt_add_forward, &split, &m->add, in, 2, y, 1, count,
		   12.0 * count);
}

static int block_forward(struct model *m, struct step_tensors *st,
			 unsigned l)
{
	struct block_acts *a = &st->blk[l];
	const struct gpt_attn_dims *ad = &m->attn;
	double n = (double)m->n, c = ad->c, t = ad->t;
	double probs = (double)ad->b * ad->h * t * t;
	tmm_tensor out[2];
	const struct row_split attn = { gpt_attn_forward_rows, ad->b, NULL };
	const struct row_split gelu = { gpt_gelu_forward_rows, m->gelu.rows,
					NULL };
	int rc;

	if ((rc = ln_fwd(m, st, "ln1", "h1", l, a->x, P_BLOCK(l, LN1_G),
			 &a->h1, &a->mean1, &a->rstd1)) ||
	    (rc = mm_fwd(m, st, "qkv", &m->qkv, l, a->h1, P_BLOCK(l, QKV_W),
			 &a->qkv)) ||
	    (rc = fresh(m, st, F32(m->n * ad->c), TMM_ACTIVATION, "", "atty",
			l, &a->atty)) ||
	    (rc = fresh(m, st, F32((size_t)probs), TMM_ACTIVATION, "",
			"probs", l, &a->probs)))
		return rc;
	/* Causal: each query sees (t + 1) / 2 keys on average. */
	out[0] = a->atty, out[1] = a->probs;
	if ((rc = run(m, "attention", TMM_OP_MATMUL, TMM_OP_PURE,
		      gpt_attn_forward, &attn, ad, &a->qkv, 1, out, 2,
		      2.0 * n * (t + 1) * c + 3.0 * probs,
		      4.0 * (4 * n * c + probs))) ||
	    (rc = mm_fwd(m, st, "proj", &m->proj, l, a->atty,
			 P_BLOCK(l, PROJ_W), &a->proj)) ||
	    (rc = add(m, st, "r", l, a->x, a->proj, &a->r)) ||
	    (rc = ln_fwd(m, st, "ln2", "h2", l, a->r, P_BLOCK(l, LN2_G),
			 &a->h2, &a->mean2, &a->rstd2)) ||
	    (rc = mm_fwd(m, st, "fc", &m->fc, l, a->h2, P_BLOCK(l, FC_W),
			 &a->u)) ||
	    (rc = fresh(m, st, F32(m->gelu.count), TMM_ACTIVATION, "", "gelu",
			l, &a->gu)) ||
	    (rc = run(m, "gelu", TMM_OP_ACT, TMM_OP_PURE, gpt_gelu_forward,
		      &gelu, &m->gelu, &a->u, 1, &a->gu, 1,
		      20.0 * m->gelu.count,
		      8.0 * m->gelu.count)) ||
	    (rc = mm_fwd(m, st, "fc2", &m->fc2, l, a->gu, P_BLOCK(l, FC2_W),
			 &a->mlp)))
		return rc;
	return add(m, st, "x", l + 1, a->r, a->mlp, &st->blk[l + 1].x);
}

/* *dx enters as the gradient of the block's output, leaves as its input's */
static int block_backward(struct model *m, struct step_tensors *st,
			  unsigned l, tmm_tensor *dx)
{
	struct block_acts *a = &st->blk[l];
	const struct gpt_attn_dims *ad = &m->attn;
	double n = (double)m->n, c = ad->c, t = ad->t;
	double probs = (double)ad->b * ad->h * t * t;
	tmm_tensor dout = *dx, dgu, du, dh2, dr, datty, dh1;
	tmm_tensor in[3], out[2];
	const struct row_split gelu = { gpt_gelu_backward_rows, m->gelu.rows,
					NULL };
	const struct row_split attn = { gpt_attn_backward_rows, ad->b,
					gpt_attn_backward_sliced };
	int rc;

	if ((rc = mm_bwd(m, st, "fc2_backward", "gelu", &m->fc2, l, a->gu,
			 P_BLOCK(l, FC2_W), dout, &dgu)) ||
	    (rc = fresh(m, st, F32(m->gelu.count), TMM_GRADIENT, "d", "u", l,
			&du)))
		return rc;
	in[0] = a->u, in[1] = dgu;
	if ((rc = run(m, "gelu_backward", TMM_OP_ACT, TMM_OP_BACKWARD,
		      gpt_gelu_backward, &gelu, &m->gelu, in, 2, &du, 1,
		      30.0 * m->gelu.count, 12.0 * m->gelu.count)) ||
	    (rc = mm_bwd(m, st, "fc_backward", "h2", &m->fc, l, a->h2,
			 P_BLOCK(l, FC_W), du, &dh2)) ||
	    (rc = ln_bwd(m, st, "ln2_backward", "r", l, a->r,
			 P_BLOCK(l, LN2_G), a->mean2, a->rstd2, dh2, &dout,
			 &dr)) ||
	    (rc = mm_bwd(m, st, "proj_backward", "atty", &m->proj, l,
			 a->atty, P_BLOCK(l, PROJ_W), dr, &datty)) ||
	    (rc = fresh(m, st, F32(3 * m->n * ad->c), TMM_GRADIENT, "d",
			"qkv", l, &out[0])) ||
	    (rc = fresh(m, st, F32((size_t)ad->t), TMM_SCRATCH, "", "attn_dp",
			l, &out[1])))
		return rc;
	in[0] = a->qkv, in[1] = a->probs, in[2] = datty;
	if ((rc = run(m, "attention_backward", TMM_OP_MATMUL, TMM_OP_BACKWARD,
		      gpt_attn_backward, &attn, ad, in, 3, out, 2,
		      4.0 * n * (t + 1) * c + 4.0 * probs,
		      4.0 * (7 * n * c + probs))) ||
	    (rc = mm_bwd(m, st, "qkv_backward", "h1", &m->qkv, l, a->h1,
			 P_BLOCK(l, QKV_W), out[0], &dh1)))
		return rc;
	return ln_bwd(m, st, "ln1_backward", "x", l, a->x, P_BLOCK(l, LN1_G),
		      a->mean1, a->rstd1, dh1, &dr, dx);
}

/* Micro-batch k of a step: its forward, loss and backward, and each
 * parameter's update (or after_grad); its loss into *loss_out. */
static int one_pass(struct model *m, struct step_tensors *sp, unsigned step,
		    unsigned k, float *loss_out)
{
	const struct gpt_config *c = m->cfg;
	tmm_ctx *ctx = m->ctx;
	unsigned L = c->layers, mb = micro_of(c);
	size_t n = m->n, first = ((size_t)(step % 4) * mb * shards_of(c) +
				  (size_t)c->shard * mb + k) * n;
	size_t ids = sizeof(int32_t) * n; /* bytes of a pass's token ids */
	int32_t t = (int32_t)step + 1;
	double nc = (double)n * c->d_model, nv = (double)n * c->vocab;
	struct step_tensors st = *sp;
	tmm_tensor in[3], out[2], dx;
	const struct row_split embed = { gpt_embed_forward_rows, n,
					 gpt_embed_forward_sliced };
	const struct row_split embed_bwd = { gpt_embed_backward_rows, n,
					     gpt_embed_backward_sliced };
	const struct row_split xent = { gpt_xent_rows, n, gpt_xent_sliced };
	int rc;

	/* AdamW's step count: once a step, with the first pass's inputs. */
	if ((rc = fresh(m, &st, ids, TMM_ACTIVATION, "", "tokens", NO_LAYER,
			&st.tok)) ||
	    (rc = fresh(m, &st, ids, TMM_ACTIVATION, "", "targets", NO_LAYER,
			&st.tgt)) ||
	    (k == 0 &&
	     (rc = fresh(m, &st, sizeof(t), TMM_ACTIVATION, "", "adam_step",
			 NO_LAYER, &st.t))) ||
	    (rc = tmm_tensor_write(ctx, st.tok, 0, m->in_host + first, ids)) ||
	    (rc = tmm_tensor_write(ctx, st.tgt, 0, m->tgt_host + first, ids)) ||
	    (k == 0 && (rc = tmm_tensor_write(ctx, st.t, 0, &t, sizeof(t)))))
		goto out;

	/* Forward. */
	in[0] = st.tok, in[1] = m->param[P_WTE].w, in[2] = m->param[P_WPE].w;
	if ((rc = fresh(m, &st, F32(n * c->d_model), TMM_ACTIVATION, "", "x",
			0, &st.blk[0].x)) ||
	    (rc = run(m, "embedding", TMM_OP_OTHER, TMM_OP_PURE,
		      gpt_embed_forward, &embed, &m->embed, in, 3,
		      &st.blk[0].x, 1,
		      nc, 4.0 * (n + 3 * nc))))
		goto out;
	for (unsigned l = 0; l < L; l++)
		if ((rc = block_forward(m, &st, l)))
			goto out;
	if ((rc = ln_fwd(m, &st, "ln_f", "hf", NO_LAYER, st.blk[L].x,
			 P_LNF(L), &st.hf, &st.meanf, &st.rstdf)) ||
	    (rc = mm_fwd(m, &st, "head", &m->head, NO_LAYER, st.hf, P_HEAD(L),
			 &st.logits)))
		goto out;

	/* Loss, read now: the weights it came from are about to change. */
	in[0] = st.logits, in[1] = st.tgt;
	if ((rc = fresh(m, &st, sizeof(float), TMM_SCRATCH, "", "loss",
			NO_LAYER, &st.loss)) ||
	    (rc = fresh(m, &st, F32(n * c->vocab), TMM_GRADIENT, "", "dlogits",
			NO_LAYER, &st.dlogits)))
		goto out;
	out[0] = st.loss, out[1] = st.dlogits;
	if ((rc = run(m, "softmax_xent", TMM_OP_LOSS, TMM_OP_PURE, gpt_xent,
		      &xent, &m->xent, in, 2, out, 2, 5.0 * nv,
		      4.0 * (2 * nv + n))) ||
	    (rc = tmm_tensor_read(ctx, st.loss, 0, loss_out, sizeof(float))))
		goto out;

	/* Backward, each parameter updated as soon as its gradient is
	 * ready. */
	if ((rc = mm_bwd(m, &st, "head_backward", "hf", &m->head, NO_LAYER,
			 st.hf, P_HEAD(L), st.dlogits, &dx)) ||
	    (rc = ln_bwd(m, &st, "ln_f_backward", "x", L, st.blk[L].x,
			 P_LNF(L), st.meanf, st.rstdf, dx, NULL, &dx)))
		goto out;
	for (unsigned l = L; l-- > 0;)
		if ((rc = block_backward(m, &st, l, &dx)))
			goto out;
	in[0] = st.tok, in[1] = dx;
	if ((rc = fresh(m, &st, F32((size_t)c->vocab * c->d_model),
			TMM_GRADIENT, "d", "wte", NO_LAYER, &out[0])) ||
	    (rc = fresh(m, &st, F32((size_t)c->seq * c->d_model), TMM_GRADIENT,
			"d", "wpe", NO_LAYER, &out[1])) ||
	    (rc = run(m, "embedding_backward", TMM_OP_OTHER, TMM_OP_BACKWARD,
		      gpt_embed_backward, &embed_bwd, &m->embed, in, 2, out,
		      2, 2.0 * nc,
		      4.0 * (n + 3 * nc))) ||
	    (rc = adamw(m, &st, P_WTE, out[0])))
		goto out;
	rc = adamw(m, &st, P_WPE, out[1]);
out:
	sp->n_all = st.n_all;
	sp->t = st.t;
	return rc;
}

/* One step: every micro-batch's pass; the loss is micro-batch 0's.
 * (A train_step_fn: model is the struct model.) */
static int one_step(void *model, unsigned step, float *loss_out)
{
	struct model *m = model;
	const struct gpt_config *c = m->cfg;
	unsigned L = c->layers, mb = micro_of(c);
	struct step_tensors st = { .m = m, .cap = (36 * L + 32) * mb };
	float loss;
	int rc = -ENOMEM;

	st.blk = calloc(L + 1, sizeof(*st.blk));
	st.all = malloc(sizeof(tmm_tensor) * st.cap);
	st.grad = c->after_grad ? calloc((size_t)m->n_params * mb,
					 sizeof(tmm_tensor))
				: NULL;
	if (st.blk && st.all && (st.grad || !c->after_grad))
		rc = tmm_iteration_begin(m->ctx);
	for (unsigned k = 0; rc == 0 && k < mb; k++) {
		st.micro = k;
		rc = one_pass(m, &st, step, k, k == 0 ? loss_out : &loss);
	}
	for (unsigned k = 0; k < st.n_all; k++)
		tmm_tensor_destroy(m->ctx, st.all[k]);
	free(st.all);
	free(st.blk);
	free(st.grad);
	if (rc == 0)
		rc = tmm_iteration_end(m->ctx);
	return rc;
}

/* ---- training --------------------------------------------------------- */

static int collect_weights(struct model *m, uint8_t **weights,
			   size_t *weights_len)
{
	size_t total = 0, at = 0;
	uint8_t *buf;
	int rc = 0;

	for (unsigned k = 0; k < m->n_params; k++)
		total += m->param[k].upd.count * sizeof(float);
	buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	for (unsigned k = 0; k < m->n_params && rc == 0; k++) {
		size_t len = m->param[k].upd.count * sizeof(float);

		rc = tmm_tensor_read(m->ctx, m->param[k].w, 0, buf + at, len);
		at += len;
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*weights = buf;
	*weights_len = total;
	return 0;
}

static int model_init(struct model *m, tmm_ctx *ctx,
		      const struct gpt_config *cfg)
{
	uint64_t rng = cfg->seed;
	int rc = check_config(cfg);

	*m = (struct model){ .cfg = cfg, .ctx = ctx };
	if (rc)
		return rc;
	set_dims(m);
	rc = make_data(m, &rng);
	if (rc == 0)
		rc = make_params(m, &rng);
	if (rc == 0 && cfg->after_grad) {
		m->order = malloc(sizeof(*m->order) * m->n_params);
		if (!m->order)
			return -ENOMEM;
		for (unsigned idx = 0, g; idx < m->n_params; idx++)
			m->order[gpt_param_rank(cfg, idx, &g)] = idx;
	}
	return rc;
}

static void model_free(struct model *m)
{
	for (unsigned k = 0; m->param && k < m->n_params; k++) {
		/* A handle never created is all zero: skipped, since
		 * destroying it would replace the message of the failure
		 * that stopped the training with its own. */
		tmm_tensor ts[3] = { m->param[k].w, m->param[k].m,
				     m->param[k].v };

		for (unsigned j = 0; j < 3; j++)
			if (ts[j].id)
				tmm_tensor_destroy(m->ctx, ts[j]);
	}
	free(m->param);
	free(m->order);
	free(m->in_host);
	free(m->tgt_host);
}

void gpt_config_default(struct gpt_config *cfg)
{
	*cfg = (struct gpt_config){
		.batch = 8, .seq = 32, .vocab = 64, .d_model = 64, .heads = 4,
		.layers = 2, .steps = 12, .lr = 1e-2f, .beta1 = 0.9f,
		.beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .seed = 42,
	};
}

int gpt_train(tmm_ctx *ctx, const struct gpt_config *cfg, float *losses,
	      uint8_t **weights, size_t *weights_len, FILE *log)
{
	struct model m;
	int rc = model_init(&m, ctx, cfg);

	if (rc == 0)
		rc = train_steps(ctx, one_step, &m, cfg->steps, cfg->rehearse,
				 losses, log, cfg->after_step,
				 cfg->after_step_arg);
	if (rc == 0 && weights)
		rc = collect_weights(&m, weights, weights_len);
	model_free(&m);
	return rc;
}
