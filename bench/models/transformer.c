/* SPDX-License-Identifier: MIT */
/*
 * transformer.c — BERT, GPT-2 and the Transformer of TSPLIT.
 *
 * BERT: Devlin, Chang, Lee & Toutanova, "BERT: Pre-training of Deep
 * Bidirectional Transformers", NAACL 2019, §3: BASE L=12, H=768, A=12
 * (110 M parameters), LARGE L=24, H=1024, A=16 (340 M); feed-forward 4H,
 * WordPiece vocabulary 30,522, 512 positions, 2 segments; post-layer-norm
 * blocks (Vaswani et al.) with GELU.  We train it as a sentence classifier
 * (the pooler, tanh, and a 2-way output, §4.1) at sequence 128 or 512.
 *
 * GPT-2: Radford et al., "Language Models are Unsupervised Multitask
 * Learners", 2019, Table 2 and §2.3: small 12 layers × 768, medium 24 ×
 * 1024, vocabulary 50,257, context 1024, pre-layer-norm blocks with a final
 * layer norm, the output head tied to the token embedding.  The paper's
 * table says 117 M and 345 M; the released checkpoints hold 124 M and
 * 355 M, which is what we count.  Trained as a language model over the
 * whole 1024-token context.
 *
 * TSPLIT's Transformer (Nie et al., TSPLIT, ICDE 2022, Tables IV/V): the
 * paper names the Transformer of Vaswani et al. on IWSLT2016 but gives no
 * sizes, so we take "Transformer base" from Vaswani et al., "Attention Is
 * All You Need", NeurIPS 2017, Table 3: 6 encoder and 6 decoder layers,
 * d_model 512, d_ff 2048, 8 heads, a shared 37,000-token vocabulary with
 * tied embeddings (65 M parameters), ReLU; sequences of 128 tokens on both
 * sides (our choice: IWSLT sentences are shorter than that).
 *
 * All are trained with Adam (two state tensors per weight).  The width
 * scale multiplies the hidden and feed-forward sizes; heads stay fixed.
 *
 * BERT's buffers are TensorFlow 1.x's (graph.h: ZG_FW_TF1), the
 * framework of Google's release and of Capuchin's baseline (TF 1.11,
 * Capuchin §6.1): dropout 0.1 on the embeddings, the attention
 * probabilities and each sublayer's output before its residual
 * (hidden_dropout_prob, attention_probs_dropout_prob in bert_config.json),
 * each keeping a fp32 mask; GELU and layer norm op by op; the heads
 * transposed into copies (layers.c).  GPT-2 and the Transformer keep the
 * fused model without dropout.  What that gives against the public
 * figures: docs/model-zoo.md.
 */
#include <stdio.h>

#include "zoo.h"

enum arch { BERT, GPT, ENCDEC };

struct tcfg {
	enum arch arch;
	unsigned layers, hidden, heads, ffn, vocab, seq, positions;
};

static const struct tcfg configs[] = {
	{ BERT, 12, 768, 12, 3072, 30522, 128, 512 },	  /* bert-base */
	{ BERT, 12, 768, 12, 3072, 30522, 512, 512 },	  /* ... seq 512 */
	{ BERT, 24, 1024, 16, 4096, 30522, 128, 512 },	  /* bert-large */
	{ BERT, 24, 1024, 16, 4096, 30522, 512, 512 },	  /* ... seq 512 */
	{ GPT, 12, 768, 12, 3072, 50257, 1024, 1024 },	  /* gpt2 small */
	{ GPT, 24, 1024, 16, 4096, 50257, 1024, 1024 },	  /* gpt2 medium */
	{ ENCDEC, 6, 512, 8, 2048, 37000, 128, 0 },	  /* transformer */
};

struct tnet {
	struct zgraph *g;
	uint64_t batch, hidden, ffn;
	unsigned heads;
};

static struct zg_mat ffn(struct tnet *t, const char *name, struct zg_mat x,
			 bool gelu)
{
	char n[48];
	struct zg_mat h;

	snprintf(n, sizeof(n), "%s.fc1", name);
	h = zg_linear(t->g, n, x, t->ffn, true);
	snprintf(n, sizeof(n), "%s.act", name);
	h = gelu ? zg_gelu(t->g, n, h) : zg_mrelu(t->g, n, h);
	snprintf(n, sizeof(n), "%s.fc2", name);
	return zg_linear(t->g, n, h, t->hidden, true);
}

/* x + f(x) then layer norm (BERT, the original Transformer). */
static struct zg_mat post_ln(struct tnet *t, const char *name,
			     struct zg_mat x, struct zg_mat fx)
{
	char n[48];

	snprintf(n, sizeof(n), "%s.drop", name);
	fx = zg_dropout(t->g, n, fx);
	snprintf(n, sizeof(n), "%s.res", name);
	x = zg_madd(t->g, n, x, fx);
	snprintf(n, sizeof(n), "%s.ln", name);
	return zg_layernorm(t->g, n, x);
}

static struct zg_mat encoder_layer(struct tnet *t, const char *name,
				   struct zg_mat x, bool gelu)
{
	char n[48];

	snprintf(n, sizeof(n), "%s.attn", name);
	x = post_ln(t, n, x,
		    zg_attention(t->g, n, x, x, t->batch, t->heads, false));
	snprintf(n, sizeof(n), "%s.ffn", name);
	return post_ln(t, n, x, ffn(t, n, x, gelu));
}

static struct zg_mat decoder_layer(struct tnet *t, const char *name,
				   struct zg_mat x, struct zg_mat mem)
{
	char n[48];

	snprintf(n, sizeof(n), "%s.self", name);
	x = post_ln(t, n, x,
		    zg_attention(t->g, n, x, x, t->batch, t->heads, true));
	snprintf(n, sizeof(n), "%s.cross", name);
	x = post_ln(t, n, x,
		    zg_attention(t->g, n, x, mem, t->batch, t->heads, false));
	snprintf(n, sizeof(n), "%s.ffn", name);
	return post_ln(t, n, x, ffn(t, n, x, false));
}

/* Pre-layer-norm block: x + attn(ln(x)), then x + mlp(ln(x)). */
static struct zg_mat gpt_layer(struct tnet *t, const char *name,
			       struct zg_mat x)
{
	char n[48];
	struct zg_mat h;

	snprintf(n, sizeof(n), "%s.ln1", name);
	h = zg_layernorm(t->g, n, x);
	snprintf(n, sizeof(n), "%s.attn", name);
	h = zg_attention(t->g, n, h, h, t->batch, t->heads, true);
	snprintf(n, sizeof(n), "%s.res1", name);
	x = zg_madd(t->g, n, x, h);
	snprintf(n, sizeof(n), "%s.ln2", name);
	h = zg_layernorm(t->g, n, x);
	snprintf(n, sizeof(n), "%s.mlp", name);
	h = ffn(t, n, h, true);
	snprintf(n, sizeof(n), "%s.res2", name);
	return zg_madd(t->g, n, x, h);
}

static struct zg_mat bert(struct tnet *t, const struct tcfg *c)
{
	struct zgraph *g = t->g;
	uint64_t rows = t->batch * c->seq;
	zg_t ids = zg_input(g, "token_ids", rows * 4, rows);
	struct zg_mat x, cls;
	struct zg_layer l;
	char n[32];

	x = zg_embedding(g, "tok", ids, rows, c->vocab, t->hidden, NULL);
	x = zg_add_table(g, "segment", x, 2);
	x = zg_add_table(g, "position", x, c->positions);
	x = zg_layernorm(g, "emb.ln", x);
	x = zg_dropout(g, "emb.drop", x);
	for (unsigned i = 0; i < c->layers; i++) {
		snprintf(n, sizeof(n), "l%u", i + 1);
		x = encoder_layer(t, n, x, true);
	}
	/* the pooler reads the first ([CLS]) token of each sequence */
	l = (struct zg_layer){ .name = "cls", .kind = TMM_OP_OTHER,
			       .in = { x.t }, .n_in = 1, .n_out = 1,
			       .out_bytes = { t->batch * t->hidden * 4 },
			       .rows = t->batch };
	cls.t = zg_layer(g, &l);
	cls.rows = t->batch;
	cls.cols = t->hidden;
	cls = zg_linear(g, "pooler", cls, t->hidden, true);
	l = (struct zg_layer){ .name = "pooler.tanh", .kind = TMM_OP_ACT,
			       .in = { cls.t }, .n_in = 1, .n_out = 1,
			       .out_bytes = { t->batch * t->hidden * 4 },
			       .save_out = 1, .rows = t->batch,
			       .flops = 10.0 * (double)(t->batch * t->hidden) };
	cls.t = zg_layer(g, &l);
	return zg_linear(g, "classifier", cls, 2, true);
}

static struct zg_mat gpt(struct tnet *t, const struct tcfg *c)
{
	struct zgraph *g = t->g;
	uint64_t rows = t->batch * c->seq;
	zg_t ids = zg_input(g, "token_ids", rows * 4, rows), wte;
	struct zg_mat x;
	char n[32];

	x = zg_embedding(g, "wte", ids, rows, c->vocab, t->hidden, &wte);
	x = zg_add_table(g, "wpe", x, c->positions);
	for (unsigned i = 0; i < c->layers; i++) {
		snprintf(n, sizeof(n), "h%u", i + 1);
		x = gpt_layer(t, n, x);
	}
	x = zg_layernorm(g, "ln_f", x);
	return zg_tied_head(g, "lm_head", x, wte, c->vocab);
}

static struct zg_mat encdec(struct tnet *t, const struct tcfg *c)
{
	struct zgraph *g = t->g;
	uint64_t rows = t->batch * c->seq;
	zg_t src = zg_input(g, "src_ids", rows * 4, rows), emb;
	zg_t tgt = zg_input(g, "tgt_ids", rows * 4, rows);
	struct zg_mat x, y;
	struct zg_layer l;
	char n[32];

	/* One table embeds both sides and is the output projection
	 * (Vaswani et al. §3.4); the sinusoidal positions have no weights
	 * and cost one elementwise add, which we leave out. */
	x = zg_embedding(g, "src_emb", src, rows, c->vocab, t->hidden, &emb);
	for (unsigned i = 0; i < c->layers; i++) {
		snprintf(n, sizeof(n), "enc%u", i + 1);
		x = encoder_layer(t, n, x, false);
	}
	l = (struct zg_layer){ .name = "tgt_emb", .kind = TMM_OP_OTHER,
			       .in = { tgt }, .n_in = 1,
			       .param = { emb }, .n_param = 1, .n_out = 1,
			       .out_bytes = { rows * t->hidden * 4 },
			       .save_in = 1, .rows = rows,
			       .flops = (double)(rows * t->hidden) };
	y.t = zg_layer(g, &l);
	y.rows = rows;
	y.cols = t->hidden;
	for (unsigned i = 0; i < c->layers; i++) {
		snprintf(n, sizeof(n), "dec%u", i + 1);
		y = decoder_layer(t, n, y, x);
	}
	return zg_tied_head(g, "generator", y, emb, c->vocab);
}

/* variant: the index into configs[]. */
int zoo_build_transformer(struct zgraph *g, const struct zoo_model *m,
			  const struct zoo_args *a)
{
	const struct tcfg *c = &configs[m->variant < sizeof(configs) /
							    sizeof(configs[0])
						? m->variant : 0];
	struct tnet t = { g, a->batch, (uint64_t)c->hidden * a->scale,
			  (uint64_t)c->ffn * a->scale, c->heads };
	struct zg_mat logits;

	switch (c->arch) {
	case BERT:
		g->framework = ZG_FW_TF1;
		g->dropout_mask_bytes = 4; /* TF1's fp32 mask */
		logits = bert(&t, c);
		break;
	case GPT:
		logits = gpt(&t, c);
		break;
	default:
		logits = encdec(&t, c);
		break;
	}
	zg_softmax_xent(g, "loss", logits);
	return g->err;
}
