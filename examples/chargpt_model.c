/* SPDX-License-Identifier: MIT */
/*
 * chargpt_model.c — the character-level transformer of chargpt_model.h:
 * its text, its buffers and their views, and its steps (the forward and
 * backward passes are chargpt_pass.c's).
 *
 * The buffers (chargpt_buffers.h) are made once, before the first step:
 *
 *   params       PERSISTENT  every weight; a view per parameter and layer
 *   grads        GRADIENT    the step's gradient, the same layout
 *   micro_grads  GRADIENT    one micro-batch's gradient, the same layout:
 *                            what the backward kernels write
 *   adam_m/v     PERSISTENT  AdamW's moments, used whole only
 *   acts         ACTIVATION  a micro-batch's activations, a view each
 *   act_grads    GRADIENT    their gradients, a view each
 *   tokens, targets, adam_step: int32, rewritten before each use
 *
 * A step zeroes `grads` whole (one fill); for each micro-batch it writes
 * the windows, runs the forward and the loss into views of `acts`, then
 * the backward into views of `act_grads` and `micro_grads`, each
 * parameter's gradient added into its view of `grads` as soon as it is
 * made; then one AdamW op updates the whole `params` from the whole
 * `grads`, `adam_m` and `adam_v`.
 *
 * The forward ops and the loss are pure, so the library may drop their
 * outputs and recompute them.  Every input of theirs stays unchanged
 * until the last read of those outputs: the parameters change only in the
 * AdamW op at the step's end, and the next micro-batch rewrites the tokens
 * only once every activation of this one has been read for the last time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chargpt_net.h"
#include "train_steps.h"

/* ---- the text --------------------------------------------------------- */

/* The corpus, written for this example.  Its distinct characters are the
 * vocabulary. */
static const char text[] =
	"The keeper of the north light wrote one line in her log each "
	"night. Fog came in off the bay at six; the lamp was lit by seven; "
	"two boats went past, both slow and both late. She kept the brass "
	"bright and the wick trimmed, and when the gulls woke her at dawn "
	"she noted the wind, the height of the tide and how many ships she "
	"had counted. Nobody ever read the log. The light never went out, "
	"and that was the whole of the job: to be there, every night, "
	"whether or not anyone looked.";

#define TEXT_LEN (sizeof(text) - 1)

/* Ids in byte order, so the vocabulary does not depend on where in the
 * text a character first appears. */
static void make_vocab(struct chargpt_vocab *v)
{
	bool seen[256] = { false };

	for (size_t k = 0; k < TEXT_LEN; k++)
		seen[(unsigned char)text[k]] = true;
	v->size = 0;
	for (unsigned c = 0; c < 256; c++)
		v->id[c] = seen[c] ? (int32_t)v->size++ : -1;
}

unsigned chargpt_vocab_size(void)
{
	struct chargpt_vocab v;

	make_vocab(&v);
	return v.size;
}

size_t chargpt_text_length(void)
{
	return TEXT_LEN;
}

/* ---- deterministic numbers -------------------------------------------- */

/* A 64-bit finaliser (splitmix64's): turns a counter into bits that look
 * random, so any draw can be made from its coordinates alone. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1), the `k`-th draw of stream `seed`. */
static float unit_draw(uint64_t seed, uint64_t k)
{
	uint64_t bits = mix64(seed + 0x9e3779b97f4a7c15ull * (k + 1));

	return (float)((double)(bits >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/*
 * Where window `w` of micro-batch `k` of step `step` starts.  A function
 * of those numbers alone, not of a generator's state, so that a rehearsed
 * first step (which draws the same windows) changes nothing after it.
 */
static size_t window_start(uint64_t seed, unsigned step, unsigned k,
			   unsigned w, unsigned seq)
{
	uint64_t where = ((uint64_t)step << 42) ^ ((uint64_t)k << 21) ^ w;

	return (size_t)(mix64(seed ^ mix64(where)) % (TEXT_LEN - seq));
}

/* ---- the shapes ------------------------------------------------------- */

static bool in_unit_interval(float x) /* [0, 1): AdamW's betas */
{
	return x >= 0.0f && x < 1.0f;
}

/*
 * -EINVAL for a config the model cannot be built from.  The bounds keep
 * the largest tensor a config can ask for (the attention's probabilities,
 * batch × heads × seq² floats) under 2^43 floats, and every buffer's
 * bytes far inside a 64-bit size_t: a size that large fails to be
 * allocated instead of wrapping.
 */
static int check_config(const struct chargpt_config *c, unsigned vocab)
{
	bool sizes = c->batch && c->batch <= 4096 && c->accum &&
		     c->accum <= 4096 && c->seq && c->seq < TEXT_LEN &&
		     c->d_model && c->d_model <= 8192 && c->heads &&
		     c->d_model % c->heads == 0 && c->layers &&
		     c->layers <= 64 && c->steps < INT32_MAX && vocab >= 2;
	bool adamw = isfinite(c->lr) && c->lr >= 0.0f &&
		     in_unit_interval(c->beta1) &&
		     in_unit_interval(c->beta2) && isfinite(c->eps) &&
		     c->eps > 0.0f && isfinite(c->weight_decay) &&
		     c->weight_decay >= 0.0f;

	return sizes && adamw ? 0 : -EINVAL;
}

/* The op dimensions and the three layouts, from the config. */
static int set_shapes(struct chargpt_net *m)
{
	const struct chargpt_config *c = m->cfg;
	size_t d = c->d_model, n, v = m->voc.size;
	unsigned L = c->layers;
	int rc;

	m->n = n = (size_t)c->batch * c->seq;
	m->embed = (struct gpt_embed_dims){ c->batch, c->seq, c->d_model,
					    m->voc.size };
	m->ln = (struct gpt_ln_dims){ n, c->d_model, 0 };
	m->ln_res = (struct gpt_ln_dims){ n, c->d_model, 1 };
	m->qkv = (struct gpt_mm_dims){ n, c->d_model, 3 * c->d_model, 1 };
	m->proj = (struct gpt_mm_dims){ n, c->d_model, c->d_model, 1 };
	m->fc = (struct gpt_mm_dims){ n, c->d_model, 4 * c->d_model, 1 };
	m->fc2 = (struct gpt_mm_dims){ n, 4 * c->d_model, c->d_model, 1 };
	m->head = (struct gpt_mm_dims){ n, c->d_model, m->voc.size, 0 };
	m->attn = (struct gpt_attn_dims){ c->batch, c->seq, c->d_model,
					  c->heads };
	m->gelu = (struct gpt_ew_dims){ n * 4 * d, n };
	m->add = (struct gpt_ew_dims){ n * d, n };
	m->xent = (struct gpt_xent_dims){ n, m->voc.size };

	{
		const struct chargpt_slot p[N_PARAM_SLOTS] = {
			[P_WTE] = { "wte", false, v * d },
			[P_WPE] = { "wpe", false, c->seq * d },
			[P_LN1_G] = { "ln1_g", true, d },
			[P_LN1_B] = { "ln1_b", true, d },
			[P_QKV_W] = { "qkv_w", true, d * 3 * d },
			[P_QKV_B] = { "qkv_b", true, 3 * d },
			[P_PROJ_W] = { "proj_w", true, d * d },
			[P_PROJ_B] = { "proj_b", true, d },
			[P_LN2_G] = { "ln2_g", true, d },
			[P_LN2_B] = { "ln2_b", true, d },
			[P_FC_W] = { "fc_w", true, d * 4 * d },
			[P_FC_B] = { "fc_b", true, 4 * d },
			[P_FC2_W] = { "fc2_w", true, 4 * d * d },
			[P_FC2_B] = { "fc2_b", true, d },
			[P_LNF_G] = { "lnf_g", false, d },
			[P_LNF_B] = { "lnf_b", false, d },
			[P_HEAD_W] = { "head_w", false, d * v },
		};
		const struct chargpt_slot a[N_ACT_SLOTS] = {
			[A_X0] = { "x0", false, n * d },
			[A_H1] = { "h1", true, n * d },
			[A_MEAN1] = { "mean1", true, n },
			[A_RSTD1] = { "rstd1", true, n },
			[A_QKV] = { "qkv", true, n * 3 * d },
			[A_ATTY] = { "atty", true, n * d },
			[A_PROBS] = { "probs", true,
				      (size_t)c->batch * c->heads * c->seq *
					      c->seq },
			[A_PROJ] = { "proj", true, n * d },
			[A_R] = { "r", true, n * d },
			[A_H2] = { "h2", true, n * d },
			[A_MEAN2] = { "mean2", true, n },
			[A_RSTD2] = { "rstd2", true, n },
			[A_U] = { "u", true, n * 4 * d },
			[A_GU] = { "gu", true, n * 4 * d },
			[A_MLP] = { "mlp", true, n * d },
			[A_OUT] = { "out", true, n * d },
			[A_HF] = { "hf", false, n * d },
			[A_MEANF] = { "meanf", false, n },
			[A_RSTDF] = { "rstdf", false, n },
			[A_LOGITS] = { "logits", false, n * v },
			[A_LOSS] = { "loss", false, 1 },
		};
		const struct chargpt_slot g[N_DACT_SLOTS] = {
			[D_LOGITS] = { "logits", false, n * v },
			[D_HF] = { "hf", false, n * d },
			[D_TOP] = { "top", false, n * d },
			[D_GU] = { "gu", true, n * 4 * d },
			[D_U] = { "u", true, n * 4 * d },
			[D_H2] = { "h2", true, n * d },
			[D_R] = { "r", true, n * d },
			[D_ATTY] = { "atty", true, n * d },
			[D_QKV] = { "qkv", true, n * 3 * d },
			[D_ATTN_DP] = { "attn_dp", true, c->seq },
			[D_H1] = { "h1", true, n * d },
			[D_X] = { "x", true, n * d },
		};

		memcpy(m->pslot, p, sizeof(p));
		memcpy(m->aslot, a, sizeof(a));
		memcpy(m->dslot, g, sizeof(g));
	}
	if ((rc = chargpt_layout_init(&m->play, m->pslot, N_PARAM_SLOTS, L)) ||
	    (rc = chargpt_layout_init(&m->alay, m->aslot, N_ACT_SLOTS, L)) ||
	    (rc = chargpt_layout_init(&m->dlay, m->dslot, N_DACT_SLOTS, L)))
		return rc;
	/* One AdamW over every parameter, with one weight decay for all of
	 * them, gains and biases included, as llm.c's train_gpt2.c. */
	m->adamw = (struct gpt_adamw_dims){ m->play.floats, c->lr, c->beta1,
					    c->beta2, c->eps,
					    c->weight_decay };
	for (unsigned s = 0; s < N_PARAM_SLOTS; s++)
		m->sum[s] = (struct grad_sum_dims){ m->pslot[s].floats,
						    1.0f / (float)c->accum };
	return 0;
}

/* The views the ops name. */
/* ---- making the buffers ----------------------------------------------- */

/*
 * GPT-2's initialisation, written into the whole parameter buffer at once:
 * weights uniform with std 0.02 (half-width 0.02·√3), the two projections
 * into the residual stream scaled by 1/√(2L) so that the stream's variance
 * does not grow with depth; gains 1, biases 0.
 */
static int init_params(struct chargpt_net *m)
{
	const struct chargpt_config *c = m->cfg;
	float a = 0.02f * sqrtf(3.0f);
	float ares = a / sqrtf(2.0f * (float)c->layers);
	float *w = malloc(m->play.floats * sizeof(float));
	uint64_t draw = 0;
	int rc;

	if (!w)
		return -ENOMEM;
	for (unsigned s = 0; s < N_PARAM_SLOTS; s++) {
		const struct chargpt_slot *sl = &m->pslot[s];
		bool gain = s == P_LN1_G || s == P_LN2_G || s == P_LNF_G;
		bool matrix = s == P_WTE || s == P_WPE || s == P_QKV_W ||
			      s == P_PROJ_W || s == P_FC_W || s == P_FC2_W ||
			      s == P_HEAD_W;
		float half = s == P_PROJ_W || s == P_FC2_W ? ares : a;

		for (unsigned l = 0; l < (sl->per_layer ? c->layers : 1); l++) {
			float *at = w + chargpt_layout_offset(&m->play, s, l);

			for (size_t k = 0; k < sl->floats; k++)
				at[k] = matrix ? half * unit_draw(c->seed,
								  draw++)
					       : gain ? 1.0f : 0.0f;
		}
	}
	rc = tmm_tensor_write(m->ctx, m->params.whole, 0, w,
			      m->play.floats * sizeof(float));
	free(w);
	return rc;
}

static int make_buffers(struct chargpt_net *m)
{
	tmm_ctx *ctx = m->ctx;
	size_t ids = m->n * sizeof(int32_t);
	int rc;

	if ((rc = chargpt_buffer_make(ctx, &m->play, TMM_PERSISTENT, "params",
				      "", &m->params)) ||
	    (rc = chargpt_buffer_make(ctx, &m->play, TMM_GRADIENT, "grads",
				      "grad.", &m->grads)) ||
	    (rc = chargpt_buffer_make(ctx, &m->play, TMM_GRADIENT,
				      "micro_grads", "micro.", &m->micro)) ||
	    (rc = chargpt_buffer_make(ctx, &m->play, TMM_PERSISTENT, "adam_m",
				      NULL, &m->adam_m)) ||
	    (rc = chargpt_buffer_make(ctx, &m->play, TMM_PERSISTENT, "adam_v",
				      NULL, &m->adam_v)) ||
	    (rc = chargpt_buffer_make(ctx, &m->alay, TMM_ACTIVATION, "acts",
				      "", &m->acts)) ||
	    (rc = chargpt_buffer_make(ctx, &m->dlay, TMM_GRADIENT,
				      "act_grads", "d.", &m->dacts)) ||
	    (rc = tmm_tensor_create(ctx, ids, TMM_ACTIVATION, "tokens",
				    &m->tokens)) ||
	    (rc = tmm_tensor_create(ctx, ids, TMM_ACTIVATION, "targets",
				    &m->targets)) ||
	    (rc = tmm_tensor_create(ctx, sizeof(int32_t), TMM_PERSISTENT,
				    "adam_step", &m->adam_step)))
		return rc;
	m->tok_host = malloc(ids);
	m->tgt_host = malloc(ids);
	if (!m->tok_host || !m->tgt_host)
		return -ENOMEM;
	if ((rc = init_params(m)) ||
	    (rc = tmm_tensor_fill(ctx, m->adam_m.whole, 0)))
		return rc;
	return tmm_tensor_fill(ctx, m->adam_v.whole, 0);
}

static void free_buffers(struct chargpt_net *m)
{
	struct chargpt_buffer *all[] = { &m->params, &m->grads, &m->micro,
					 &m->adam_m, &m->adam_v, &m->acts,
					 &m->dacts };
	tmm_tensor single[] = { m->tokens, m->targets, m->adam_step };

	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
		chargpt_buffer_free(m->ctx, all[k]);
	for (size_t k = 0; k < sizeof(single) / sizeof(single[0]); k++)
		if (single[k].id)
			tmm_tensor_destroy(m->ctx, single[k]);
	free(m->tok_host);
	free(m->tgt_host);
}

/* ---- one step --------------------------------------------------------- */

/* The windows of micro-batch k of `step`: each token's target is the
 * character after it. */
static int write_batch(struct chargpt_net *m, unsigned step, unsigned k)
{
	const struct chargpt_config *c = m->cfg;
	size_t ids = m->n * sizeof(int32_t);
	int rc;

	for (unsigned w = 0; w < c->batch; w++) {
		size_t at = window_start(c->seed, step, k, w, c->seq);
		int32_t *tok = m->tok_host + (size_t)w * c->seq;
		int32_t *tgt = m->tgt_host + (size_t)w * c->seq;

		for (unsigned p = 0; p < c->seq; p++) {
			tok[p] = m->voc.id[(unsigned char)text[at + p]];
			tgt[p] = m->voc.id[(unsigned char)text[at + p + 1]];
		}
	}
	rc = tmm_tensor_write(m->ctx, m->tokens, 0, m->tok_host, ids);
	return rc ? rc : tmm_tensor_write(m->ctx, m->targets, 0, m->tgt_host,
					  ids);
}

/* The loss of the micro-batch's logits, read into *loss at once (the
 * next micro-batch overwrites it), and the gradient of the logits. */
static int loss_op(struct chargpt_net *m, float *loss)
{
	tmm_tensor in[2] = { act(m, A_LOGITS, 0), m->targets };
	tmm_tensor out[2] = { act(m, A_LOSS, 0), dact(m, D_LOGITS, 0) };
	const struct row_split split = { gpt_xent_rows, m->n,
					 gpt_xent_sliced };
	tmm_op op = {
		.name = "softmax_xent", .kind = TMM_OP_LOSS,
		.flags = TMM_OP_PURE,
		.inputs = in, .n_inputs = 2, .outputs = out, .n_outputs = 2,
		.run = gpt_xent, .user = &m->xent,
	};
	int rc = chargpt_run(m, &op, 5.0 * (double)m->n * m->xent.v, &split);

	return rc ? rc : tmm_tensor_read(m->ctx, out[0], 0, loss,
					 sizeof(*loss));
}

/* One update of every parameter: AdamW on the whole buffers, in place,
 * as one op (llm.c's gpt2_update). */
static int update(struct chargpt_net *m, unsigned step)
{
	int32_t t = (int32_t)step + 1; /* AdamW counts steps from 1 */
	tmm_tensor in[5] = { m->params.whole, m->adam_m.whole,
			     m->adam_v.whole, m->grads.whole, m->adam_step };
	tmm_op op = {
		.name = "adamw", .kind = TMM_OP_OPTIMIZER,
		.flags = TMM_OP_BACKWARD,
		.inputs = in, .n_inputs = 5, .outputs = in, .n_outputs = 3,
		.run = gpt_adamw, .user = &m->adamw,
	};
	int rc = tmm_tensor_write(m->ctx, m->adam_step, 0, &t, sizeof(t));

	return rc ? rc : chargpt_run(m, &op, 12.0 * (double)m->adamw.count,
				     NULL);
}

/* *loss_out: the mean of the micro-batches' losses.  (A train_step_fn:
 * model is the struct chargpt_net.) */
static int one_step(void *model, unsigned step, float *loss_out)
{
	struct chargpt_net *m = model;
	tmm_ctx *ctx = m->ctx;
	float sum = 0.0f;
	int rc;

	/* llm.c's zero_grad: the micro-batches' gradients add into it. */
	if ((rc = tmm_iteration_begin(ctx)) ||
	    (rc = tmm_tensor_fill(ctx, m->grads.whole, 0)))
		return rc;
	for (unsigned k = 0; k < m->cfg->accum; k++) {
		float loss;

		if ((rc = write_batch(m, step, k)) ||
		    (rc = chargpt_forward(m)) || (rc = loss_op(m, &loss)) ||
		    (rc = chargpt_backward(m)))
			return rc;
		sum += loss;
	}
	*loss_out = sum / (float)m->cfg->accum;
	if ((rc = update(m, step)))
		return rc;
	return tmm_iteration_end(ctx);
}

/* ---- training --------------------------------------------------------- */

void chargpt_config_default(struct chargpt_config *cfg)
{
	*cfg = (struct chargpt_config){
		.batch = 4, .accum = 2, .seq = 32, .d_model = 32, .heads = 4,
		.layers = 2, .steps = 20, .lr = 3e-3f, .beta1 = 0.9f,
		.beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
		.seed = 1234,
	};
}

/* The whole parameter buffer, in one read of the parent. */
static int read_weights(struct chargpt_net *m, uint8_t **weights, size_t *len)
{
	size_t bytes = m->play.floats * sizeof(float);
	uint8_t *buf = malloc(bytes);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = tmm_tensor_read(m->ctx, m->params.whole, 0, buf, bytes);
	if (rc) {
		free(buf);
		return rc;
	}
	*weights = buf;
	*len = bytes;
	return 0;
}

int chargpt_train(tmm_ctx *ctx, const struct chargpt_config *cfg,
		  float *losses, uint8_t **weights, size_t *weights_len,
		  FILE *log)
{
	struct chargpt_net m = { .cfg = cfg, .ctx = ctx };
	int rc;

	make_vocab(&m.voc);
	rc = check_config(cfg, m.voc.size);
	if (rc == 0)
		rc = set_shapes(&m);
	if (rc == 0)
		rc = make_buffers(&m);
	if (rc == 0)
		rc = train_steps(ctx, one_step, &m, cfg->steps, cfg->rehearse,
				 losses, log, cfg->after_step,
				 cfg->after_step_arg);
	if (rc == 0 && weights)
		rc = read_weights(&m, weights, weights_len);
	free_buffers(&m);
	return rc;
}
