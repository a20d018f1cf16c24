/* SPDX-License-Identifier: MIT */
/*
 * layers.c — the layer helpers of the model zoo's graph IR (graph.h).
 *
 * What each helper saves for its backward follows what the common
 * frameworks keep (PyTorch's autograd, TensorFlow's gradient registry): a
 * convolution or a linear layer keeps its input, ReLU its output, batch
 * and layer norm their input and the per-channel statistics, max pooling
 * its input and output, softmax its output; sums, average pooling and
 * concatenation keep nothing.  That is a framework that fuses each layer
 * (graph.h: ZG_FW_FUSED), with no dropout; ZG_FW_TF1 adds the buffers
 * TensorFlow 1.x held running BERT's code op by op, each helper saying
 * which.  A convolution carries cuDNN's algorithms and their workspaces
 * (conv_algo.c).
 */
#include <errno.h>
#include <stdio.h>

#include "graph.h"

#define F32 4u /* bytes of an fp32 element */

/* ---- CNN helpers --------------------------------------------------------- */

static uint64_t out_extent(uint64_t x, unsigned k, unsigned s,
			   enum zg_pad pad)
{
	if (pad == ZG_SAME)
		return (x + s - 1) / s;
	return x >= k ? (x - k) / s + 1 : 0;
}

static uint64_t fm_elems(struct zg_fm x)
{
	return x.n * x.c * x.h * x.w;
}

struct zg_fm zg_conv(struct zgraph *g, const char *name, struct zg_fm x,
		     uint64_t cout, unsigned kh, unsigned kw, unsigned s,
		     enum zg_pad pad, bool bias)
{
	char pn[48];
	struct zg_fm y = { ZG_NONE, x.n, cout, out_extent(x.h, kh, s, pad),
			   out_extent(x.w, kw, s, pad) };
	struct zg_layer l = { .name = name, .kind = TMM_OP_CONV,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .save_in = 1, .rows = x.n };
	double macs;

	snprintf(pn, sizeof(pn), "%s.w", name);
	l.param[l.n_param++] = zg_param(g, pn, cout * x.c * kh * kw);
	if (bias) {
		snprintf(pn, sizeof(pn), "%s.b", name);
		l.param[l.n_param++] = zg_param(g, pn, cout);
	}
	l.out_bytes[0] = fm_elems(y) * F32;
	{
		struct zg_conv_shape cs = { x.n, x.c, x.h, x.w, cout, y.h,
					    y.w, kh, kw, s };

		l.n_algo = zg_conv_algos(&cs, l.algo);
		l.n_bwd_algo = zg_conv_algos(&cs, l.bwd_algo);
	}
	macs = (double)fm_elems(y) * (double)x.c * kh * kw;
	l.flops = 2 * macs;
	/* dgrad and wgrad; the first conv of a net has no dgrad */
	l.bwd_flops = (x.t != ZG_NONE && x.t < g->nt && g->t[x.t].needs_grad)
			      ? 4 * macs : 2 * macs;
	y.t = zg_layer(g, &l);
	return y;
}

struct zg_fm zg_bn(struct zgraph *g, const char *name, struct zg_fm x)
{
	char pn[48];
	struct zg_layer l = { .name = name, .kind = TMM_OP_NORM,
			      .in = { x.t }, .n_in = 1, .n_out = 2,
			      .out_bytes = { fm_elems(x) * F32, 2 * x.c * F32 },
			      .save_in = 1, .save_out = 2,
			      /* the statistics are per channel */
			      .rows = x.n, .unbatched_out = 2,
			      .flops = 8.0 * (double)fm_elems(x),
			      .bwd_flops = 12.0 * (double)fm_elems(x) };

	snprintf(pn, sizeof(pn), "%s.gb", name);
	l.param[l.n_param++] = zg_param(g, pn, 2 * x.c);
	x.t = zg_layer(g, &l);
	return x;
}

struct zg_fm zg_relu(struct zgraph *g, const char *name, struct zg_fm x)
{
	struct zg_layer l = { .name = name, .kind = TMM_OP_ACT,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { fm_elems(x) * F32 },
			      .save_out = 1, .rows = x.n,
			      .flops = (double)fm_elems(x) };

	x.t = zg_layer(g, &l);
	return x;
}

struct zg_fm zg_conv_bn_relu(struct zgraph *g, const char *name,
			     struct zg_fm x, uint64_t cout, unsigned kh,
			     unsigned kw, unsigned s, enum zg_pad pad)
{
	char n[48];

	snprintf(n, sizeof(n), "%s.conv", name);
	x = zg_conv(g, n, x, cout, kh, kw, s, pad, false);
	snprintf(n, sizeof(n), "%s.bn", name);
	x = zg_bn(g, n, x);
	snprintf(n, sizeof(n), "%s.relu", name);
	return zg_relu(g, n, x);
}

static struct zg_fm pool(struct zgraph *g, const char *name, struct zg_fm x,
			 unsigned k, unsigned s, enum zg_pad pad, bool max)
{
	struct zg_fm y = { ZG_NONE, x.n, x.c, out_extent(x.h, k, s, pad),
			   out_extent(x.w, k, s, pad) };
	struct zg_layer l = { .name = name, .kind = TMM_OP_POOL,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { fm_elems(y) * F32 },
			      /* max pooling routes the gradient to the
			       * argmax, so it keeps both maps */
			      .save_in = max ? 1 : 0, .save_out = max ? 1 : 0,
			      .rows = x.n,
			      .flops = (double)fm_elems(y) * k * k };

	y.t = zg_layer(g, &l);
	return y;
}

struct zg_fm zg_maxpool(struct zgraph *g, const char *name, struct zg_fm x,
			unsigned k, unsigned s, enum zg_pad pad)
{
	return pool(g, name, x, k, s, pad, true);
}

struct zg_fm zg_avgpool(struct zgraph *g, const char *name, struct zg_fm x,
			unsigned k, unsigned s, enum zg_pad pad)
{
	return pool(g, name, x, k, s, pad, false);
}

struct zg_fm zg_gap(struct zgraph *g, const char *name, struct zg_fm x)
{
	struct zg_fm y = { ZG_NONE, x.n, x.c, 1, 1 };
	struct zg_layer l = { .name = name, .kind = TMM_OP_POOL,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { x.n * x.c * F32 }, .rows = x.n,
			      .flops = (double)fm_elems(x) };

	y.t = zg_layer(g, &l);
	return y;
}

struct zg_fm zg_add(struct zgraph *g, const char *name, struct zg_fm a,
		    struct zg_fm b)
{
	struct zg_layer l = { .name = name, .kind = TMM_OP_ELEMENTWISE,
			      .in = { a.t, b.t }, .n_in = 2, .n_out = 1,
			      .out_bytes = { fm_elems(a) * F32 }, .rows = a.n,
			      .flops = (double)fm_elems(a),
			      .passthrough = true };

	if (fm_elems(a) != fm_elems(b))
		zg_fail(g, -EINVAL, "%s: adding maps of %llu and %llu "
			"elements", name, (unsigned long long)fm_elems(a),
			(unsigned long long)fm_elems(b));
	a.t = zg_layer(g, &l);
	return a;
}

struct zg_fm zg_concat(struct zgraph *g, const char *name,
		       const struct zg_fm *parts, unsigned n)
{
	struct zg_fm y = parts[0];
	struct zg_layer l = { .name = name, .kind = TMM_OP_OTHER,
			      .n_in = n, .n_out = 1, .rows = parts[0].n };

	y.c = 0;
	for (unsigned i = 0; i < n && i < ZG_MAX_IO; i++) {
		if (parts[i].h != y.h || parts[i].w != y.w)
			zg_fail(g, -EINVAL, "%s: part %u is %llux%llu, not "
				"%llux%llu", name, i,
				(unsigned long long)parts[i].h,
				(unsigned long long)parts[i].w,
				(unsigned long long)y.h,
				(unsigned long long)y.w);
		l.in[i] = parts[i].t;
		y.c += parts[i].c;
	}
	l.out_bytes[0] = fm_elems(y) * F32;
	y.t = zg_layer(g, &l);
	return y;
}

struct zg_fm zg_image(struct zgraph *g, uint64_t n, uint64_t c, uint64_t h,
		      uint64_t w)
{
	struct zg_fm x = { ZG_NONE, n, c, h, w };

	x.t = zg_input(g, "image", fm_elems(x) * F32, n);
	return x;
}

/* ---- dense helpers ------------------------------------------------------- */

struct zg_mat zg_linear(struct zgraph *g, const char *name, struct zg_mat x,
			uint64_t out, bool bias)
{
	char pn[48];
	struct zg_mat y = { ZG_NONE, x.rows, out };
	double macs = (double)x.rows * (double)x.cols * (double)out;
	struct zg_layer l = { .name = name, .kind = TMM_OP_MATMUL,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { x.rows * out * F32 },
			      .save_in = 1, .rows = x.rows, .flops = 2 * macs,
			      .bwd_flops = 4 * macs };

	snprintf(pn, sizeof(pn), "%s.w", name);
	l.param[l.n_param++] = zg_param(g, pn, x.cols * out);
	if (bias) {
		snprintf(pn, sizeof(pn), "%s.b", name);
		l.param[l.n_param++] = zg_param(g, pn, out);
	}
	y.t = zg_layer(g, &l);
	return y;
}

struct zg_mat zg_layernorm(struct zgraph *g, const char *name,
			   struct zg_mat x)
{
	char pn[48];
	double n = (double)x.rows * (double)x.cols;
	struct zg_layer l = { .name = name, .kind = TMM_OP_NORM,
			      .in = { x.t }, .n_in = 1, .n_out = 2,
			      .out_bytes = { x.rows * x.cols * F32,
					     2 * x.rows * F32 },
			      .save_in = 1, .save_out = 2, .rows = x.rows,
			      .flops = 8 * n, .bwd_flops = 12 * n };

	/* TF1: tf.contrib.layers.layer_norm is nn.moments and
	 * nn.batch_normalization, op by op: `inv = rsqrt(var + eps) *
	 * gamma` broadcasts the per-row scale to rows × cols, and the
	 * gradients of `x * inv` and `mean * inv` keep it to the
	 * backward, with x and the row statistics. */
	if (g->framework == ZG_FW_TF1) {
		l.out_bytes[l.n_out++] = x.rows * x.cols * F32;
		l.save_out |= 4;
	}
	snprintf(pn, sizeof(pn), "%s.gb", name);
	l.param[l.n_param++] = zg_param(g, pn, 2 * x.cols);
	x.t = zg_layer(g, &l);
	return x;
}

static struct zg_mat mat_act(struct zgraph *g, const char *name,
			     struct zg_mat x, bool gelu)
{
	double n = (double)x.rows * (double)x.cols;
	/* GELU's derivative needs its input; ReLU's needs only the sign of
	 * its output. */
	struct zg_layer l = { .name = name, .kind = TMM_OP_ACT,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { x.rows * x.cols * F32 },
			      .save_in = gelu ? 1 : 0, .save_out = gelu ? 0 : 1,
			      .rows = x.rows, .flops = gelu ? 10 * n : n };

	/* TF1: BERT's gelu is `cdf = 0.5 * (1.0 + tf.erf(x /
	 * tf.sqrt(2.0))); return x * cdf` (modeling.py as released, for
	 * TensorFlow 1.11).  Erf's gradient keeps its input x/√2, the
	 * product's keeps x and cdf; the sum and the halving run in place
	 * (TensorFlow forwards a buffer no one else reads). */
	if (gelu && g->framework == ZG_FW_TF1) {
		l.out_bytes[l.n_out++] = x.rows * x.cols * F32; /* x/√2 */
		l.out_bytes[l.n_out++] = x.rows * x.cols * F32; /* cdf */
		l.save_out = 6;
	}
	x.t = zg_layer(g, &l);
	return x;
}

struct zg_mat zg_gelu(struct zgraph *g, const char *name, struct zg_mat x)
{
	return mat_act(g, name, x, true);
}

struct zg_mat zg_mrelu(struct zgraph *g, const char *name, struct zg_mat x)
{
	return mat_act(g, name, x, false);
}

struct zg_mat zg_madd(struct zgraph *g, const char *name, struct zg_mat a,
		      struct zg_mat b)
{
	/* rows as samples, so that the sum splits into them */
	struct zg_fm fa = { a.t, a.rows, 1, 1, a.cols };
	struct zg_fm fb = { b.t, b.rows, 1, 1, b.cols };

	a.t = zg_add(g, name, fa, fb).t;
	return a;
}

struct zg_mat zg_flatten(struct zg_fm x)
{
	struct zg_mat m = { x.t, x.n, x.c * x.h * x.w };

	return m;
}

struct zg_mat zg_dropout(struct zgraph *g, const char *name, struct zg_mat x)
{
	uint64_t n = x.rows * x.cols;
	/* TF1's nn.dropout: `floor(keep + uniform)` is the mask (the sum
	 * and the floor run in place on the uniform draw), `x / keep *
	 * mask` the output (in place on the quotient); Mul's gradient
	 * keeps the mask.  The quotient's own gradient is never asked
	 * for, so x is not kept for it. */
	struct zg_layer l = { .name = name, .kind = TMM_OP_ELEMENTWISE,
			      .in = { x.t }, .n_in = 1, .n_out = 2,
			      .out_bytes = { n * F32,
					     n * g->dropout_mask_bytes },
			      .save_out = 2, .rows = x.rows,
			      .flops = 4.0 * (double)n,
			      .bwd_flops = (double)n };

	if (!g->dropout_mask_bytes)
		return x;
	x.t = zg_layer(g, &l);
	return x;
}

/* TF1: a copy of x with its heads moved (transpose_for_scores, and back
 * for the context); x is not kept for it. */
static struct zg_mat heads_copy(struct zgraph *g, const char *name,
				struct zg_mat x)
{
	struct zg_layer l = { .name = name, .kind = TMM_OP_OTHER,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { x.rows * x.cols * F32 },
			      .rows = x.rows,
			      .flops = (double)(x.rows * x.cols) };

	if (g->framework != ZG_FW_TF1)
		return x;
	x.t = zg_layer(g, &l);
	return x;
}

/*
 * With TF1 (BERT's attention_layer in modeling.py): the query, key and
 * value projections are transposed into [batch, heads, seq, width/heads]
 * copies that the two batched products keep; the scaling and the mask
 * add run in place on the scores; the softmax's output is kept for its
 * gradient, dropout keeps its mask and its output (the context product's
 * input); the context is transposed back into a copy that the output
 * projection keeps.  So three score-sized tensors per layer live until
 * the backward, where the fused model keeps one.
 */
struct zg_mat zg_attention(struct zgraph *g, const char *name,
			   struct zg_mat q, struct zg_mat kv, uint64_t batch,
			   unsigned heads, bool causal)
{
	uint64_t width = q.cols, sq = q.rows / batch, skv = kv.rows / batch;
	double mm = 2.0 * (double)batch * (double)sq * (double)skv *
		    (double)width;
	uint64_t score_elems = batch * heads * sq * skv;
	struct zg_mat qp, kvp, ctx, probs;
	struct zg_layer l;
	zg_t scores;
	char n[48];

	if (q.t == kv.t) {
		snprintf(n, sizeof(n), "%s.qkv", name);
		qp = zg_linear(g, n, q, 3 * width, true);
		snprintf(n, sizeof(n), "%s.qkv.heads", name);
		qp = kvp = heads_copy(g, n, qp);
	} else {
		snprintf(n, sizeof(n), "%s.q", name);
		qp = zg_linear(g, n, q, width, true);
		snprintf(n, sizeof(n), "%s.q.heads", name);
		qp = heads_copy(g, n, qp);
		snprintf(n, sizeof(n), "%s.kv", name);
		kvp = zg_linear(g, n, kv, 2 * width, true);
		snprintf(n, sizeof(n), "%s.kv.heads", name);
		kvp = heads_copy(g, n, kvp);
	}
	/* scores = Q Kᵀ / sqrt(d), per head */
	snprintf(n, sizeof(n), "%s.scores", name);
	l = (struct zg_layer){ .name = n, .kind = TMM_OP_MATMUL,
			       .in = { qp.t, kvp.t },
			       .n_in = qp.t == kvp.t ? 1 : 2, .n_out = 1,
			       .out_bytes = { score_elems * F32 },
			       .save_in = 3, .rows = batch, .flops = mm,
			       .bwd_flops = 2 * mm };
	scores = zg_layer(g, &l);
	/* the mask (causal or padding) and the softmax, fused */
	snprintf(n, sizeof(n), "%s.softmax", name);
	l = (struct zg_layer){ .name = n, .kind = TMM_OP_ACT,
			       .in = { scores }, .n_in = 1, .n_out = 1,
			       .out_bytes = { score_elems * F32 },
			       .save_out = 1, .rows = batch,
			       .flops = (causal ? 6.0 : 5.0) *
					(double)score_elems };
	probs.t = zg_layer(g, &l);
	probs.rows = batch;
	probs.cols = score_elems / (batch ? batch : 1);
	snprintf(n, sizeof(n), "%s.probs.drop", name);
	probs = zg_dropout(g, n, probs);
	/* context = P V */
	snprintf(n, sizeof(n), "%s.context", name);
	l = (struct zg_layer){ .name = n, .kind = TMM_OP_MATMUL,
			       .in = { probs.t, kvp.t }, .n_in = 2,
			       .n_out = 1,
			       .out_bytes = { q.rows * width * F32 },
			       .save_in = 3, .rows = q.rows, .flops = mm,
			       .bwd_flops = 2 * mm };
	ctx.t = zg_layer(g, &l);
	ctx.rows = q.rows;
	ctx.cols = width;
	snprintf(n, sizeof(n), "%s.context.heads", name);
	ctx = heads_copy(g, n, ctx);
	snprintf(n, sizeof(n), "%s.proj", name);
	return zg_linear(g, n, ctx, width, true);
}

struct zg_mat zg_embedding(struct zgraph *g, const char *name, zg_t ids,
			   uint64_t rows, uint64_t vocab, uint64_t width,
			   zg_t *table)
{
	char pn[48];
	struct zg_mat y = { ZG_NONE, rows, width };
	struct zg_layer l = { .name = name, .kind = TMM_OP_OTHER,
			      .in = { ids }, .n_in = 1, .n_out = 1,
			      .out_bytes = { rows * width * F32 },
			      .save_in = 1, .rows = rows,
			      .flops = (double)(rows * width) };

	snprintf(pn, sizeof(pn), "%s.table", name);
	l.param[l.n_param++] = zg_param(g, pn, vocab * width);
	if (table)
		*table = l.param[0];
	y.t = zg_layer(g, &l);
	return y;
}

struct zg_mat zg_add_table(struct zgraph *g, const char *name,
			   struct zg_mat x, uint64_t n)
{
	char pn[48];
	struct zg_layer l = { .name = name, .kind = TMM_OP_ELEMENTWISE,
			      .in = { x.t }, .n_in = 1, .n_out = 1,
			      .out_bytes = { x.rows * x.cols * F32 },
			      .rows = x.rows,
			      .flops = (double)(x.rows * x.cols) };

	snprintf(pn, sizeof(pn), "%s.table", name);
	l.param[l.n_param++] = zg_param(g, pn, n * x.cols);
	x.t = zg_layer(g, &l);
	return x;
}

struct zg_mat zg_tied_head(struct zgraph *g, const char *name,
			   struct zg_mat x, zg_t table, uint64_t vocab)
{
	double macs = (double)x.rows * (double)x.cols * (double)vocab;
	struct zg_mat y = { ZG_NONE, x.rows, vocab };
	struct zg_layer l = { .name = name, .kind = TMM_OP_MATMUL,
			      .in = { x.t }, .n_in = 1,
			      .param = { table }, .n_param = 1, .n_out = 1,
			      .out_bytes = { x.rows * vocab * F32 },
			      .save_in = 1, .rows = x.rows, .flops = 2 * macs,
			      .bwd_flops = 4 * macs };

	y.t = zg_layer(g, &l);
	return y;
}

void zg_softmax_xent(struct zgraph *g, const char *name, struct zg_mat logits)
{
	zg_t labels = zg_input(g, "labels", logits.rows * 4, logits.rows);
	struct zg_layer l = { .name = name, .kind = TMM_OP_LOSS,
			      .in = { logits.t, labels }, .n_in = 2,
			      .n_out = 1, .out_bytes = { F32 },
			      .save_in = 3, .seed = true,
			      /* the loss is a scalar */
			      .rows = logits.rows, .unbatched_out = 1,
			      .flops = 5.0 * (double)(logits.rows *
						      logits.cols) };

	zg_layer(g, &l);
}
