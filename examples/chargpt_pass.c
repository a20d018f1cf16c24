/* SPDX-License-Identifier: MIT */
/*
 * chargpt_pass.c — the forward and backward passes of the character-level
 * transformer (chargpt_net.h): gpt_ops' kernels run as ops on views of the
 * activation, gradient and parameter buffers.
 *
 * Every parameter's gradient of a micro-batch is written by its kernel
 * into micro_grads, then added into the step's grads by an op of its own
 * (add_grad): gpt_ops' kernels start the sums they make from zero, so
 * they could not add the micro-batches up by themselves.
 */
#include "chargpt_net.h"

int chargpt_run(struct chargpt_net *m, tmm_op *op, double flops,
		const struct row_split *split)
{
	double bytes = 0;

	for (unsigned k = 0; k < op->n_inputs; k++)
		bytes += (double)tmm_tensor_bytes(m->ctx, op->inputs[k]);
	for (unsigned k = 0; k < op->n_outputs; k++)
		bytes += (double)tmm_tensor_bytes(m->ctx, op->outputs[k]);
	op->cost = (struct tmm_cost){ .flops = flops, .bytes = bytes };
	row_split_describe(op, split);
	return tmm_run(m->ctx, op);
}

/* grads[p] += micro_grads[p] · scale.  in: micro; out: the sum, which it
 * reads before it writes. */
static int grad_sum(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const struct grad_sum_dims *d = user;
	const float *g = in[0];
	float *sum = out[0];

	(void)stream;
	for (size_t k = 0; k < d->count; k++)
		sum[k] += g[k] * d->scale;
	return 0;
}

/* Adds the micro-batch gradient of parameter slot s (layer l) into the
 * step's: an op that reads its output, and says so (accumulate). */
static int add_grad(struct chargpt_net *m, unsigned s, unsigned l)
{
	static const unsigned char reads_its_output[1] = { 1 };
	tmm_tensor in = micro_grad(m, s, l);
	tmm_tensor out = chargpt_view(&m->grads, &m->play, s, l);
	tmm_op op = {
		.name = "grad_sum", .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_BACKWARD,
		.inputs = &in, .n_inputs = 1, .outputs = &out, .n_outputs = 1,
		.run = grad_sum, .user = &m->sum[s],
		.accumulate = reads_its_output,
	};

	return chargpt_run(m, &op, 2.0 * (double)m->sum[s].count, NULL);
}

/* y, mean, rstd (the activation slots y, y + 1, y + 2 of layer l) =
 * layer_norm(x) with the gain of slot g and the bias after it */
static int ln_fwd(struct chargpt_net *m, const char *name, unsigned g,
		  unsigned l, tmm_tensor x, unsigned y)
{
	tmm_tensor in[3] = { x, param(m, g, l), param(m, g + 1, l) };
	tmm_tensor out[3] = { act(m, y, l), act(m, y + 1, l),
			      act(m, y + 2, l) };
	const struct row_split split = { gpt_ln_forward_rows, m->n,
					 gpt_ln_forward_sliced };
	tmm_op op = {
		.name = name, .kind = TMM_OP_NORM, .flags = TMM_OP_PURE,
		.inputs = in, .n_inputs = 3, .outputs = out, .n_outputs = 3,
		.run = gpt_ln_forward, .user = &m->ln,
	};

	return chargpt_run(m, &op, 8.0 * (double)m->n * m->ln.c, &split);
}

/* dx = layer_norm'(dy) (+ dres when not NULL), from the forward's input x
 * and its statistics (slots mean, mean + 1); the gradients of the gain
 * (slot g) and the bias go to micro_grads, then into grads */
static int ln_bwd(struct chargpt_net *m, const char *name, unsigned g,
		  unsigned l, tmm_tensor x, unsigned mean, tmm_tensor dy,
		  const tmm_tensor *dres, tmm_tensor dx)
{
	const struct gpt_ln_dims *d = dres ? &m->ln_res : &m->ln;
	tmm_tensor in[6] = { x, param(m, g, l), act(m, mean, l),
			     act(m, mean + 1, l), dy,
			     dres ? *dres : TMM_TENSOR_NULL };
	tmm_tensor out[3] = { dx, micro_grad(m, g, l),
			      micro_grad(m, g + 1, l) };
	const struct row_split split = { gpt_ln_backward_rows, m->n,
					 gpt_ln_backward_sliced(d) };
	tmm_op op = {
		.name = name, .kind = TMM_OP_NORM, .flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = dres ? 6 : 5,
		.outputs = out, .n_outputs = 3,
		.run = gpt_ln_backward, .user = (void *)d,
	};
	int rc;

	if ((rc = chargpt_run(m, &op, 14.0 * (double)m->n * d->c, &split)) ||
	    (rc = add_grad(m, g, l)))
		return rc;
	return add_grad(m, g + 1, l);
}

/* y = x·W (+ bias): W is slot w of layer l, the bias the slot after it */
static int mm_fwd(struct chargpt_net *m, const char *name,
		  const struct gpt_mm_dims *d, unsigned w, unsigned l,
		  tmm_tensor x, tmm_tensor y)
{
	tmm_tensor in[3] = { x, param(m, w, l),
			     d->has_bias ? param(m, w + 1, l)
					 : TMM_TENSOR_NULL };
	const struct row_split split = { gpt_mm_forward_rows, d->n,
					 gpt_mm_forward_sliced(d) };
	tmm_op op = {
		.name = name, .kind = TMM_OP_MATMUL, .flags = TMM_OP_PURE,
		.inputs = in, .n_inputs = d->has_bias ? 3 : 2,
		.outputs = &y, .n_outputs = 1,
		.run = gpt_mm_forward, .user = (void *)d,
	};

	return chargpt_run(m, &op, 2.0 * (double)d->n * d->i * d->o, &split);
}

/* dx = dy·Wᵀ; the gradients of W (and the bias) go to micro_grads, then
 * into grads */
static int mm_bwd(struct chargpt_net *m, const char *name,
		  const struct gpt_mm_dims *d, unsigned w, unsigned l,
		  tmm_tensor x, tmm_tensor dy, tmm_tensor dx)
{
	tmm_tensor in[3] = { x, param(m, w, l), dy };
	tmm_tensor out[3] = { micro_grad(m, w, l), dx,
			      d->has_bias ? micro_grad(m, w + 1, l)
					  : TMM_TENSOR_NULL };
	const struct row_split split = { gpt_mm_backward_rows, d->n,
					 gpt_mm_backward_sliced };
	tmm_op op = {
		.name = name, .kind = TMM_OP_MATMUL, .flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 3,
		.outputs = out, .n_outputs = d->has_bias ? 3 : 2,
		.run = gpt_mm_backward, .user = (void *)d,
	};
	int rc;

	if ((rc = chargpt_run(m, &op, 4.0 * (double)d->n * d->i * d->o,
			      &split)) ||
	    (rc = add_grad(m, w, l)))
		return rc;
	return d->has_bias ? add_grad(m, w + 1, l) : 0;
}

/* y = a + b: a residual add */
static int residual(struct chargpt_net *m, tmm_tensor a, tmm_tensor b,
		    tmm_tensor y)
{
	tmm_tensor in[2] = { a, b };
	const struct row_split split = { gpt_add_forward_rows, m->add.rows,
					 NULL };
	tmm_op op = {
		.name = "residual_add", .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE,
		.inputs = in, .n_inputs = 2, .outputs = &y, .n_outputs = 1,
		.run = gpt_add_forward, .user = &m->add,
	};

	return chargpt_run(m, &op, (double)m->add.count, &split);
}

/* Causal attention's work: each query sees (t + 1) / 2 keys on average,
 * with a dot product and a weighted sum of width c over each. */
static double attn_flops(const struct chargpt_net *m)
{
	const struct gpt_attn_dims *a = &m->attn;

	return 2.0 * (double)m->n * (a->t + 1) * a->c +
	       3.0 * a->b * a->h * (double)a->t * a->t;
}

/* qkv → atty and probs */
static int attention(struct chargpt_net *m, unsigned l)
{
	tmm_tensor qkv = act(m, A_QKV, l);
	tmm_tensor out[2] = { act(m, A_ATTY, l), act(m, A_PROBS, l) };
	const struct row_split split = { gpt_attn_forward_rows, m->attn.b,
					 NULL };
	tmm_op op = {
		.name = "attention", .kind = TMM_OP_MATMUL,
		.flags = TMM_OP_PURE,
		.inputs = &qkv, .n_inputs = 1, .outputs = out, .n_outputs = 2,
		.run = gpt_attn_forward, .user = &m->attn,
	};

	return chargpt_run(m, &op, attn_flops(m), &split);
}

/* datty → dqkv, from qkv and probs */
static int attention_backward(struct chargpt_net *m, unsigned l)
{
	tmm_tensor in[3] = { act(m, A_QKV, l), act(m, A_PROBS, l),
			     dact(m, D_ATTY, l) };
	tmm_tensor out[2] = { dact(m, D_QKV, l), dact(m, D_ATTN_DP, l) };
	const struct row_split split = { gpt_attn_backward_rows, m->attn.b,
					 gpt_attn_backward_sliced };
	tmm_op op = {
		.name = "attention_backward", .kind = TMM_OP_MATMUL,
		.flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 3, .outputs = out, .n_outputs = 2,
		.run = gpt_attn_backward, .user = &m->attn,
	};

	return chargpt_run(m, &op, 2.0 * attn_flops(m), &split);
}

/* u → gu */
static int gelu(struct chargpt_net *m, unsigned l)
{
	tmm_tensor in = act(m, A_U, l), out = act(m, A_GU, l);
	const struct row_split split = { gpt_gelu_forward_rows, m->gelu.rows,
					 NULL };
	tmm_op op = {
		.name = "gelu", .kind = TMM_OP_ACT, .flags = TMM_OP_PURE,
		.inputs = &in, .n_inputs = 1, .outputs = &out, .n_outputs = 1,
		.run = gpt_gelu_forward, .user = &m->gelu,
	};

	return chargpt_run(m, &op, 20.0 * (double)m->gelu.count, &split);
}

/* dgu → du, from u */
static int gelu_backward(struct chargpt_net *m, unsigned l)
{
	tmm_tensor in[2] = { act(m, A_U, l), dact(m, D_GU, l) };
	tmm_tensor out = dact(m, D_U, l);
	const struct row_split split = { gpt_gelu_backward_rows, m->gelu.rows,
					 NULL };
	tmm_op op = {
		.name = "gelu_backward", .kind = TMM_OP_ACT,
		.flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 2, .outputs = &out, .n_outputs = 1,
		.run = gpt_gelu_backward, .user = &m->gelu,
	};

	return chargpt_run(m, &op, 30.0 * (double)m->gelu.count, &split);
}

/* Block l: x += proj(attn(ln1(x))), then x += fc2(gelu(fc(ln2(x)))), the
 * stream after each add a view of its own (r, then out). */
static int block_forward(struct chargpt_net *m, unsigned l)
{
	int rc;

	if ((rc = ln_fwd(m, "ln1", P_LN1_G, l, block_input(m, l), A_H1)) ||
	    (rc = mm_fwd(m, "qkv", &m->qkv, P_QKV_W, l, act(m, A_H1, l),
			 act(m, A_QKV, l))) ||
	    (rc = attention(m, l)) ||
	    (rc = mm_fwd(m, "proj", &m->proj, P_PROJ_W, l, act(m, A_ATTY, l),
			 act(m, A_PROJ, l))) ||
	    (rc = residual(m, block_input(m, l), act(m, A_PROJ, l),
			   act(m, A_R, l))) ||
	    (rc = ln_fwd(m, "ln2", P_LN2_G, l, act(m, A_R, l), A_H2)) ||
	    (rc = mm_fwd(m, "fc", &m->fc, P_FC_W, l, act(m, A_H2, l),
			 act(m, A_U, l))) ||
	    (rc = gelu(m, l)) ||
	    (rc = mm_fwd(m, "fc2", &m->fc2, P_FC2_W, l, act(m, A_GU, l),
			 act(m, A_MLP, l))))
		return rc;
	return residual(m, act(m, A_R, l), act(m, A_MLP, l),
			block_input(m, l + 1));
}

/* The embeddings, the blocks, the final norm and the head. */
int chargpt_forward(struct chargpt_net *m)
{
	unsigned L = m->cfg->layers;
	tmm_tensor in[3] = { m->tokens, param(m, P_WTE, 0),
			     param(m, P_WPE, 0) };
	tmm_tensor x0 = act(m, A_X0, 0);
	const struct row_split split = { gpt_embed_forward_rows, m->n,
					 gpt_embed_forward_sliced };
	tmm_op op = {
		.name = "embedding", .kind = TMM_OP_OTHER,
		.flags = TMM_OP_PURE,
		.inputs = in, .n_inputs = 3, .outputs = &x0, .n_outputs = 1,
		.run = gpt_embed_forward, .user = &m->embed,
	};
	int rc = chargpt_run(m, &op, (double)m->n * m->embed.c, &split);

	for (unsigned l = 0; rc == 0 && l < L; l++)
		rc = block_forward(m, l);
	if (rc ||
	    (rc = ln_fwd(m, "ln_f", P_LNF_G, 0, block_input(m, L), A_HF)))
		return rc;
	return mm_fwd(m, "head", &m->head, P_HEAD_W, 0, act(m, A_HF, 0),
		      act(m, A_LOGITS, 0));
}

/* dout: the gradient of block l's output; its input's goes to D_X. */
static int block_backward(struct chargpt_net *m, unsigned l,
			  tmm_tensor dout)
{
	tmm_tensor dr = dact(m, D_R, l);
	int rc;

	if ((rc = mm_bwd(m, "fc2_backward", &m->fc2, P_FC2_W, l,
			 act(m, A_GU, l), dout, dact(m, D_GU, l))) ||
	    (rc = gelu_backward(m, l)) ||
	    (rc = mm_bwd(m, "fc_backward", &m->fc, P_FC_W, l, act(m, A_H2, l),
			 dact(m, D_U, l), dact(m, D_H2, l))) ||
	    (rc = ln_bwd(m, "ln2_backward", P_LN2_G, l, act(m, A_R, l),
			 A_MEAN2, dact(m, D_H2, l), &dout, dr)) ||
	    (rc = mm_bwd(m, "proj_backward", &m->proj, P_PROJ_W, l,
			 act(m, A_ATTY, l), dr, dact(m, D_ATTY, l))) ||
	    (rc = attention_backward(m, l)) ||
	    (rc = mm_bwd(m, "qkv_backward", &m->qkv, P_QKV_W, l,
			 act(m, A_H1, l), dact(m, D_QKV, l),
			 dact(m, D_H1, l))))
		return rc;
	return ln_bwd(m, "ln1_backward", P_LN1_G, l, block_input(m, l),
		      A_MEAN1, dact(m, D_H1, l), &dr, dact(m, D_X, l));
}

/* The head, the final norm, the blocks from the top, the embeddings. */
int chargpt_backward(struct chargpt_net *m)
{
	unsigned L = m->cfg->layers;
	tmm_tensor in[2] = { m->tokens, dact(m, D_X, 0) };
	tmm_tensor out[2] = { micro_grad(m, P_WTE, 0),
			      micro_grad(m, P_WPE, 0) };
	const struct row_split split = { gpt_embed_backward_rows, m->n,
					 gpt_embed_backward_sliced };
	tmm_op op = {
		.name = "embedding_backward", .kind = TMM_OP_OTHER,
		.flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 2, .outputs = out, .n_outputs = 2,
		.run = gpt_embed_backward, .user = &m->embed,
	};
	int rc;

	if ((rc = mm_bwd(m, "head_backward", &m->head, P_HEAD_W, 0,
			 act(m, A_HF, 0), dact(m, D_LOGITS, 0),
			 dact(m, D_HF, 0))) ||
	    (rc = ln_bwd(m, "ln_f_backward", P_LNF_G, 0, block_input(m, L),
			 A_MEANF, dact(m, D_HF, 0), NULL, dact(m, D_TOP, 0))))
		return rc;
	for (unsigned l = L; l-- > 0;)
		if ((rc = block_backward(m, l,
					 l + 1 == L ? dact(m, D_TOP, 0)
						    : dact(m, D_X, l + 1))))
			return rc;
	if ((rc = chargpt_run(m, &op, 2.0 * (double)m->n * m->embed.c,
			      &split)) ||
	    (rc = add_grad(m, P_WTE, 0)))
		return rc;
	return add_grad(m, P_WPE, 0);
}
