/* SPDX-License-Identifier: MIT */
/*
 * gpt_ops.h — the math of the GPT example (examples/gpt_model.c), as
 * libtensormm op callbacks.
 *
 * Each kernel is a tmm_run_fn on device pointers, which are host memory on
 * the simulator's backed device.  `user` points at the dims struct of the
 * kernel's family.  The model owns those structs and never changes them,
 * because the library may call a pure kernel again, later, to recompute
 * its outputs.  Every kernel writes all of every output and runs its loops
 * in a fixed order, so its results are bit-reproducible.
 *
 * Tensors are row-major float32 unless said otherwise; token ids are int32.
 * The in[] and out[] order of each kernel is given by its comment.
 *
 * Splitting (TSPLIT): every kernel but AdamW has a twin, *_rows, that is a
 * tmm_run_slice_fn over the rows of the samples (a token: batch × seq
 * rows; for the attention, whose tokens read the earlier ones, a whole
 * sequence: batch rows), and a list of which of its tensors (inputs, then
 * outputs: tmm_op.sliced) are cut into those rows; where no list is given
 * all are.  Weights are whole, and their gradients are summed row by row
 * in order across the micro-ops, so a split op gives the whole op's bytes.
 */
#ifndef GPT_OPS_H
#define GPT_OPS_H

#include <stddef.h>

#include "tensormm.h"

/* b sequences of t tokens, model width c, vocabulary v */
struct gpt_embed_dims {
	unsigned b, t, c, v;
};

/* n rows of c; has_dres: the backward adds a residual-stream gradient */
struct gpt_ln_dims {
	size_t n;
	unsigned c;
	int has_dres;
};

/* Y[n×o] = X[n×i]·W[i×o] (+ bias[o] when has_bias) */
struct gpt_mm_dims {
	size_t n;
	unsigned i, o;
	int has_bias;
};

/* causal self-attention: b sequences of t, width c, h heads of c/h */
struct gpt_attn_dims {
	unsigned b, t, c, h;
};

/* elementwise ops over `count` floats, in `rows` rows of equal size */
struct gpt_ew_dims {
	size_t count, rows;
};

/* softmax cross-entropy: n rows of v logits */
struct gpt_xent_dims {
	size_t n;
	unsigned v;
};

/* AdamW over `count` floats; weight_decay 0 for gains and biases */
struct gpt_adamw_dims {
	size_t count;
	float lr, beta1, beta2, eps, weight_decay;
};

/* in: tok[b×t], wte[v×c], wpe[t×c]; out: x[b×t×c] */
int gpt_embed_forward(void *const *in, void *const *out, void *user,
		      void *stream);
int gpt_embed_forward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream);
extern const unsigned char gpt_embed_forward_sliced[];
/* in: tok, dx; out: dwte, dwpe */
int gpt_embed_backward(void *const *in, void *const *out, void *user,
		       void *stream);
int gpt_embed_backward_rows(void *const *in, void *const *out, size_t begin,
			    size_t end, void *user, void *stream);
extern const unsigned char gpt_embed_backward_sliced[];

/* in: x, gain, bias; out: y, mean[n], rstd[n] */
int gpt_ln_forward(void *const *in, void *const *out, void *user,
		   void *stream);
int gpt_ln_forward_rows(void *const *in, void *const *out, size_t begin,
			size_t end, void *user, void *stream);
extern const unsigned char gpt_ln_forward_sliced[];
/* in: x, gain, mean, rstd, dy (, dres); out: dx, dgain, dbias */
int gpt_ln_backward(void *const *in, void *const *out, void *user,
		    void *stream);
int gpt_ln_backward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream);
/* (the list depends on whether dres is there) */
const unsigned char *gpt_ln_backward_sliced(const struct gpt_ln_dims *d);

/* in: x, w (, bias); out: y */
int gpt_mm_forward(void *const *in, void *const *out, void *user,
		   void *stream);
int gpt_mm_forward_rows(void *const *in, void *const *out, size_t begin,
			size_t end, void *user, void *stream);
/* (the list depends on whether the bias is there) */
const unsigned char *gpt_mm_forward_sliced(const struct gpt_mm_dims *d);
/* in: x, w, dy; out: dw, dx (, dbias) */
int gpt_mm_backward(void *const *in, void *const *out, void *user,
		    void *stream);
int gpt_mm_backward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream);
extern const unsigned char gpt_mm_backward_sliced[];

/* in: qkv[b×t×3c]; out: y[b×t×c], probs[b×h×t×t].  Rows: the b sequences */
int gpt_attn_forward(void *const *in, void *const *out, void *user,
		     void *stream);
int gpt_attn_forward_rows(void *const *in, void *const *out, size_t begin,
			  size_t end, void *user, void *stream);
/* in: qkv, probs, dy; out: dqkv, scratch[t].  Rows: the b sequences */
int gpt_attn_backward(void *const *in, void *const *out, void *user,
		      void *stream);
int gpt_attn_backward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream);
extern const unsigned char gpt_attn_backward_sliced[];

/* in: x; out: gelu(x) */
int gpt_gelu_forward(void *const *in, void *const *out, void *user,
		     void *stream);
int gpt_gelu_forward_rows(void *const *in, void *const *out, size_t begin,
			  size_t end, void *user, void *stream);
/* in: x, dy; out: dx */
int gpt_gelu_backward(void *const *in, void *const *out, void *user,
		      void *stream);
int gpt_gelu_backward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream);

/* in: a, b; out: a + b */
int gpt_add_forward(void *const *in, void *const *out, void *user,
		    void *stream);
int gpt_add_forward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream);

/* in: logits, targets; out: loss[1] (the mean), dlogits */
int gpt_xent(void *const *in, void *const *out, void *user, void *stream);
int gpt_xent_rows(void *const *in, void *const *out, size_t begin,
		  size_t end, void *user, void *stream);
extern const unsigned char gpt_xent_sliced[];

/* in: w, m, v, grad, step[1] (int32, from 1); out: w, m, v (in place).
 * No twin: the elements are a parameter's, not rows of samples. */
int gpt_adamw(void *const *in, void *const *out, void *user, void *stream);

#endif /* GPT_OPS_H */
