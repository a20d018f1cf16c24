/* SPDX-License-Identifier: MIT */
/*
 * gpt_ops.c — the kernels of gpt_ops.h.
 *
 * Plain loops in a fixed order: no threads, and no reduction whose order
 * depends on anything but the shapes, so a kernel run twice on the same
 * bytes gives the same bytes.  A kernel that accumulates (a weight
 * gradient, the attention's dQKV) first zeroes its own fresh output.
 *
 * Every kernel but AdamW is written once, for a range of rows (a TSPLIT
 * micro-op, row_split.h); the whole kernel runs it over all of them.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gpt_ops.h"
#include "row_split.h"

#define LN_EPS 1e-5f

/* ---- embeddings ------------------------------------------------------- */

/* Row r is token r % t of sequence r / t. */
int gpt_embed_forward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream)
{
	const struct gpt_embed_dims *d = user;
	const int32_t *tok = in[0];
	const float *wte = in[1], *wpe = in[2];
	float *x = out[0];

	(void)stream;
	for (size_t r = begin; r < end; r++) {
		const float *te, *pe = wpe + (r % d->t) * d->c;
		float *xr = x + r * d->c;

		if (tok[r] < 0 || (uint32_t)tok[r] >= d->v)
			return -EINVAL;
		te = wte + (size_t)tok[r] * d->c;
		for (unsigned k = 0; k < d->c; k++)
			xr[k] = te[k] + pe[k];
	}
	return 0;
}

int gpt_embed_forward(void *const *in, void *const *out, void *user,
		      void *stream)
{
	const struct gpt_embed_dims *d = user;

	return gpt_embed_forward_rows(in, out, 0, (size_t)d->b * d->t, user,
				      stream);
}

int gpt_embed_backward_rows(void *const *in, void *const *out, size_t begin,
			    size_t end, void *user, void *stream)
{
	const struct gpt_embed_dims *d = user;
	const int32_t *tok = in[0];
	const float *dx = in[1];
	float *dwte = out[0], *dwpe = out[1];

	(void)stream;
	row_split_start_sum(dwte, sizeof(float) * d->v * d->c, begin);
	row_split_start_sum(dwpe, sizeof(float) * d->t * d->c, begin);
	for (size_t r = begin; r < end; r++) {
		const float *dxr = dx + r * d->c;
		float *te, *pe = dwpe + (r % d->t) * d->c;

		if (tok[r] < 0 || (uint32_t)tok[r] >= d->v)
			return -EINVAL;
		te = dwte + (size_t)tok[r] * d->c;
		for (unsigned k = 0; k < d->c; k++) {
			te[k] += dxr[k];
			pe[k] += dxr[k];
		}
	}
	return 0;
}

int gpt_embed_backward(void *const *in, void *const *out, void *user,
		       void *stream)
{
	const struct gpt_embed_dims *d = user;

	return gpt_embed_backward_rows(in, out, 0, (size_t)d->b * d->t, user,
				       stream);
}

/* ---- layer norm ------------------------------------------------------- */

/* y = (x - mean) · rstd · gain + bias, row by row; mean and rstd are kept
 * for the backward, and regenerated with y if the library recomputes. */
int gpt_ln_forward_rows(void *const *in, void *const *out, size_t begin,
			size_t end, void *user, void *stream)
{
	const struct gpt_ln_dims *d = user;
	const float *x = in[0], *g = in[1], *b = in[2];
	float *y = out[0], *mean = out[1], *rstd = out[2];

	(void)stream;
	for (size_t r = begin; r < end; r++) {
		const float *xr = x + r * d->c;
		float *yr = y + r * d->c;
		float mu = 0.0f, var = 0.0f, rs;

		for (unsigned k = 0; k < d->c; k++)
			mu += xr[k];
		mu /= (float)d->c;
		for (unsigned k = 0; k < d->c; k++)
			var += (xr[k] - mu) * (xr[k] - mu);
		var /= (float)d->c;
		rs = 1.0f / sqrtf(var + LN_EPS);
		for (unsigned k = 0; k < d->c; k++)
			yr[k] = (xr[k] - mu) * rs * g[k] + b[k];
		mean[r] = mu;
		rstd[r] = rs;
	}
	return 0;
}

int gpt_ln_forward(void *const *in, void *const *out, void *user,
		   void *stream)
{
	const struct gpt_ln_dims *d = user;

	return gpt_ln_forward_rows(in, out, 0, d->n, user, stream);
}

/*
 * With x̂ = (x - mean)·rstd and dx̂ = dy·gain:
 * dx = rstd·(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)), plus dres when the norm
 * sits on the residual stream (the stream's gradient flows around it; the
 * sum goes to a fresh output, so the op accumulates into nothing).
 */
int gpt_ln_backward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream)
{
	const struct gpt_ln_dims *d = user;
	const float *x = in[0], *g = in[1], *mean = in[2], *rstd = in[3];
	const float *dy = in[4], *dres = d->has_dres ? in[5] : NULL;
	float *dx = out[0], *dg = out[1], *db = out[2];

	(void)stream;
	row_split_start_sum(dg, sizeof(float) * d->c, begin);
	row_split_start_sum(db, sizeof(float) * d->c, begin);
	for (size_t r = begin; r < end; r++) {
		const float *xr = x + r * d->c, *dyr = dy + r * d->c;
		float *dxr = dx + r * d->c;
		float mu = mean[r], rs = rstd[r], s1 = 0.0f, s2 = 0.0f;

		for (unsigned k = 0; k < d->c; k++) {
			float xh = (xr[k] - mu) * rs, dxh = dyr[k] * g[k];

			s1 += dxh;
			s2 += dxh * xh;
			dg[k] += dyr[k] * xh;
			db[k] += dyr[k];
		}
		s1 /= (float)d->c;
		s2 /= (float)d->c;
		for (unsigned k = 0; k < d->c; k++) {
			float xh = (xr[k] - mu) * rs;

			dxr[k] = rs * (dyr[k] * g[k] - s1 - xh * s2);
			if (dres)
				dxr[k] += dres[r * d->c + k];
		}
	}
	return 0;
}

int gpt_ln_backward(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const struct gpt_ln_dims *d = user;

	return gpt_ln_backward_rows(in, out, 0, d->n, user, stream);
}

/* ---- matrix products -------------------------------------------------- */

int gpt_mm_forward_rows(void *const *in, void *const *out, size_t begin,
			size_t end, void *user, void *stream)
{
	const struct gpt_mm_dims *d = user;
	const float *x = in[0], *w = in[1];
	const float *bias = d->has_bias ? in[2] : NULL;
	float *y = out[0];

	(void)stream;
	for (size_t r = begin; r < end; r++) {
		float *yr = y + r * d->o;

		for (unsigned c = 0; c < d->o; c++)
			yr[c] = bias ? bias[c] : 0.0f;
		for (unsigned k = 0; k < d->i; k++) {
			float xv = x[r * d->i + k];
			const float *wk = w + (size_t)k * d->o;

			for (unsigned c = 0; c < d->o; c++)
				yr[c] += xv * wk[c];
		}
	}
	return 0;
}

int gpt_mm_forward(void *const *in, void *const *out, void *user,
		   void *stream)
{
	const struct gpt_mm_dims *d = user;

	return gpt_mm_forward_rows(in, out, 0, d->n, user, stream);
}

/* dW = Xᵀ·dY, dX = dY·Wᵀ, dbias = Σ dY over rows (the sums row by row, in
 * order) */
int gpt_mm_backward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream)
{
	const struct gpt_mm_dims *d = user;
	const float *x = in[0], *w = in[1], *dy = in[2];
	float *dw = out[0], *dx = out[1], *db = d->has_bias ? out[2] : NULL;

	(void)stream;
	row_split_start_sum(dw, sizeof(float) * d->i * d->o, begin);
	if (db)
		row_split_start_sum(db, sizeof(float) * d->o, begin);
	for (size_t r = begin; r < end; r++) {
		const float *dyr = dy + r * d->o;

		for (unsigned c = 0; db && c < d->o; c++)
			db[c] += dyr[c];
		for (unsigned k = 0; k < d->i; k++) {
			float xv = x[r * d->i + k];
			float *dwk = dw + (size_t)k * d->o;

			for (unsigned c = 0; c < d->o; c++)
				dwk[c] += xv * dyr[c];
		}
		/* A separate loop: the one above then vectorizes. */
		for (unsigned k = 0; k < d->i; k++) {
			const float *wk = w + (size_t)k * d->o;
			float s = 0.0f;

			for (unsigned c = 0; c < d->o; c++)
				s += dyr[c] * wk[c];
			dx[r * d->i + k] = s;
		}
	}
	return 0;
}

int gpt_mm_backward(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const struct gpt_mm_dims *d = user;

	return gpt_mm_backward_rows(in, out, 0, d->n, user, stream);
}

/* ---- causal self-attention -------------------------------------------- */

/*
 * qkv rows hold [q | k | v], each c wide and split into h heads.  Row p of
 * a head attends to rows 0..p of its sequence: probs = softmax(q·kᵀ/√dh)
 * with the future masked (written as 0, so the whole output is defined),
 * y = probs·v.  A row, for a split, is a whole sequence: a token's output
 * reads the keys and values of the tokens before it.
 */
int gpt_attn_forward_rows(void *const *in, void *const *out, size_t begin,
			  size_t end, void *user, void *stream)
{
	const struct gpt_attn_dims *d = user;
	const float *qkv = in[0];
	float *y = out[0], *probs = out[1];
	unsigned dh = d->c / d->h;
	size_t row = 3 * (size_t)d->c;
	float scale = 1.0f / sqrtf((float)dh);

	(void)stream;
	for (size_t s = begin; s < end; s++) {
		const float *base = qkv + s * d->t * row;

		for (unsigned hd = 0; hd < d->h; hd++) {
			size_t off = (size_t)hd * dh;

			for (unsigned p = 0; p < d->t; p++) {
				const float *q = base + p * row + off;
				float *pr = probs + ((s * d->h + hd) *
						     d->t + p) * d->t;
				float *yr = y + (s * d->t + p) * d->c + off;
				float max = -INFINITY, sum = 0.0f;

				for (unsigned j = 0; j <= p; j++) {
					const float *k = base + j * row +
							 d->c + off;
					float dot = 0.0f;

					for (unsigned e = 0; e < dh; e++)
						dot += q[e] * k[e];
					pr[j] = dot * scale;
					if (pr[j] > max)
						max = pr[j];
				}
				for (unsigned j = 0; j <= p; j++) {
					pr[j] = expf(pr[j] - max);
					sum += pr[j];
				}
				for (unsigned j = 0; j <= p; j++)
					pr[j] /= sum;
				for (unsigned j = p + 1; j < d->t; j++)
					pr[j] = 0.0f;
				for (unsigned e = 0; e < dh; e++)
					yr[e] = 0.0f;
				for (unsigned j = 0; j <= p; j++) {
					const float *v = base + j * row +
							 2 * (size_t)d->c + off;

					for (unsigned e = 0; e < dh; e++)
						yr[e] += pr[j] * v[e];
				}
			}
		}
	}
	return 0;
}

int gpt_attn_forward(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const struct gpt_attn_dims *d = user;

	return gpt_attn_forward_rows(in, out, 0, d->b, user, stream);
}

/*
 * dp_j = dy·v_j; dv_j += p_j·dy; ds_j = p_j·(dp_j - Σ p·dp);
 * dq += ds_j·k_j/√dh; dk_j += ds_j·q/√dh.  dp lives in the scratch output,
 * zeroed by the first micro-op only: every row overwrites what it reads,
 * so the scratch ends as the last row leaves it however the op is split.
 * Rows are sequences, as for the forward.
 */
int gpt_attn_backward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream)
{
	const struct gpt_attn_dims *d = user;
	const float *qkv = in[0], *probs = in[1], *dy = in[2];
	float *dqkv = out[0], *dp = out[1];
	unsigned dh = d->c / d->h;
	size_t row = 3 * (size_t)d->c;
	float scale = 1.0f / sqrtf((float)dh);

	(void)stream;
	memset(dqkv + begin * d->t * row, 0,
	       sizeof(float) * (end - begin) * d->t * row);
	row_split_start_sum(dp, sizeof(float) * d->t, begin);
	for (size_t s = begin; s < end; s++) {
		const float *base = qkv + s * d->t * row;
		float *dbase = dqkv + s * d->t * row;

		for (unsigned hd = 0; hd < d->h; hd++) {
			size_t off = (size_t)hd * dh;

			for (unsigned p = 0; p < d->t; p++) {
				const float *q = base + p * row + off;
				const float *pr = probs + ((s * d->h + hd) *
							   d->t + p) * d->t;
				const float *dyr = dy + (s * d->t + p) *
							d->c + off;
				float *dq = dbase + p * row + off;
				float dot = 0.0f;

				for (unsigned j = 0; j <= p; j++) {
					const float *v = base + j * row +
							 2 * (size_t)d->c + off;
					float *dv = dbase + j * row +
						    2 * (size_t)d->c + off;
					float a = 0.0f;

					for (unsigned e = 0; e < dh; e++) {
						a += dyr[e] * v[e];
						dv[e] += pr[j] * dyr[e];
					}
					dp[j] = a;
					dot += pr[j] * a;
				}
				for (unsigned j = 0; j <= p; j++) {
					const float *k = base + j * row +
							 d->c + off;
					float *dk = dbase + j * row + d->c +
						    off;
					float ds = pr[j] * (dp[j] - dot) *
						   scale;

					for (unsigned e = 0; e < dh; e++) {
						dq[e] += ds * k[e];
						dk[e] += ds * q[e];
					}
				}
			}
		}
	}
	return 0;
}

int gpt_attn_backward(void *const *in, void *const *out, void *user,
		      void *stream)
{
	const struct gpt_attn_dims *d = user;

	return gpt_attn_backward_rows(in, out, 0, d->b, user, stream);
}

/* ---- GELU, residual add ----------------------------------------------- */

#define GELU_K 0.7978845608f /* √(2/π) */
#define GELU_C 0.044715f

/* The first element of row `r` of an elementwise op's tensors. */
static size_t ew_row(const struct gpt_ew_dims *d, size_t r)
{
	return r * (d->count / d->rows);
}

/* The tanh approximation: x/2 · (1 + tanh(√(2/π)·(x + 0.044715x³))) */
int gpt_gelu_forward_rows(void *const *in, void *const *out, size_t begin,
			  size_t end, void *user, void *stream)
{
	const struct gpt_ew_dims *d = user;
	const float *x = in[0];
	float *y = out[0];

	(void)stream;
	for (size_t k = ew_row(d, begin); k < ew_row(d, end); k++) {
		float v = x[k];

		y[k] = 0.5f * v * (1.0f + tanhf(GELU_K *
						(v + GELU_C * v * v * v)));
	}
	return 0;
}

int gpt_gelu_forward(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const struct gpt_ew_dims *d = user;

	return gpt_gelu_forward_rows(in, out, 0, d->rows, user, stream);
}

int gpt_gelu_backward_rows(void *const *in, void *const *out, size_t begin,
			   size_t end, void *user, void *stream)
{
	const struct gpt_ew_dims *d = user;
	const float *x = in[0], *dy = in[1];
	float *dx = out[0];

	(void)stream;
	for (size_t k = ew_row(d, begin); k < ew_row(d, end); k++) {
		float v = x[k];
		float th = tanhf(GELU_K * (v + GELU_C * v * v * v));
		float dth = GELU_K * (1.0f + 3.0f * GELU_C * v * v);

		dx[k] = dy[k] * (0.5f * (1.0f + th) +
				 0.5f * v * (1.0f - th * th) * dth);
	}
	return 0;
}

int gpt_gelu_backward(void *const *in, void *const *out, void *user,
		      void *stream)
{
	const struct gpt_ew_dims *d = user;

	return gpt_gelu_backward_rows(in, out, 0, d->rows, user, stream);
}

int gpt_add_forward_rows(void *const *in, void *const *out, size_t begin,
			 size_t end, void *user, void *stream)
{
	const struct gpt_ew_dims *d = user;
	const float *a = in[0], *b = in[1];
	float *y = out[0];

	(void)stream;
	for (size_t k = ew_row(d, begin); k < ew_row(d, end); k++)
		y[k] = a[k] + b[k];
	return 0;
}

int gpt_add_forward(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const struct gpt_ew_dims *d = user;

	return gpt_add_forward_rows(in, out, 0, d->rows, user, stream);
}

/* ---- loss ------------------------------------------------------------- */

/*
 * Mean softmax cross-entropy: loss[1] and dLogits = (softmax - 1hot) / n.
 * The loss is summed in the float it is kept in, row by row, and divided
 * by the micro-op that ends at the last row: a wider partial sum could not
 * be carried from one micro-op to the next, so the whole op sums the same
 * way.
 */
int gpt_xent_rows(void *const *in, void *const *out, size_t begin,
		  size_t end, void *user, void *stream)
{
	const struct gpt_xent_dims *d = user;
	const float *logits = in[0];
	const int32_t *tgt = in[1];
	float *loss = out[0], *dlogits = out[1];

	(void)stream;
	row_split_start_sum(loss, sizeof(float), begin);
	for (size_t r = begin; r < end; r++) {
		const float *l = logits + r * d->v;
		float *g = dlogits + r * d->v;
		float max = l[0], sum = 0.0f;

		if (tgt[r] < 0 || (uint32_t)tgt[r] >= d->v)
			return -EINVAL;
		for (unsigned c = 1; c < d->v; c++)
			if (l[c] > max)
				max = l[c];
		for (unsigned c = 0; c < d->v; c++) {
			g[c] = expf(l[c] - max);
			sum += g[c];
		}
		for (unsigned c = 0; c < d->v; c++) {
			g[c] /= sum;
			if ((int32_t)c == tgt[r])
				loss[0] -= (float)log((double)g[c] + 1e-12);
			g[c] = (g[c] - ((int32_t)c == tgt[r])) / (float)d->n;
		}
	}
	if (end == d->n)
		loss[0] /= (float)d->n;
	return 0;
}

int gpt_xent(void *const *in, void *const *out, void *user, void *stream)
{
	const struct gpt_xent_dims *d = user;

	return gpt_xent_rows(in, out, 0, d->n, user, stream);
}

/* ---- optimizer -------------------------------------------------------- */

/*
 * AdamW in place (as torch.optim.AdamW): m and v are the moments, step the
 * 1-based step count, which comes from a tensor because the op's `user`
 * must not change between steps.  The decay is decoupled: w·(1 - lr·wd).
 * It does not split: its elements are a parameter's, not a batch's rows.
 */
int gpt_adamw(void *const *in, void *const *out, void *user, void *stream)
{
	const struct gpt_adamw_dims *d = user;
	const float *grad = in[3];
	int32_t step = *(const int32_t *)in[4];
	float *w = out[0], *m = out[1], *v = out[2];
	float bc1, bc2, decay = 1.0f - d->lr * d->weight_decay;

	(void)stream;
	if (step < 1)
		return -EINVAL;
	bc1 = 1.0f - powf(d->beta1, (float)step);
	bc2 = 1.0f - powf(d->beta2, (float)step);
	for (size_t k = 0; k < d->count; k++) {
		float g = grad[k], mh, vh;

		m[k] = d->beta1 * m[k] + (1.0f - d->beta1) * g;
		v[k] = d->beta2 * v[k] + (1.0f - d->beta2) * g * g;
		mh = m[k] / bc1;
		vh = v[k] / bc2;
		w[k] = w[k] * decay - d->lr * mh / (sqrtf(vh) + d->eps);
	}
	return 0;
}

/* ---- which tensors a split cuts into rows ----------------------------- */

const unsigned char gpt_embed_forward_sliced[] = { 1, 0, 0, 1 };
const unsigned char gpt_embed_backward_sliced[] = { 1, 1, 0, 0 };
const unsigned char gpt_ln_forward_sliced[] = { 1, 0, 0, 1, 1, 1 };
const unsigned char gpt_mm_backward_sliced[] = { 1, 0, 1, 0, 1, 0 };
const unsigned char gpt_attn_backward_sliced[] = { 1, 1, 1, 1, 0 };
const unsigned char gpt_xent_sliced[] = { 1, 1, 0, 1 };

const unsigned char *gpt_ln_backward_sliced(const struct gpt_ln_dims *d)
{
	static const unsigned char plain[] = { 1, 0, 1, 1, 1, 1, 0, 0 };
	static const unsigned char res[] = { 1, 0, 1, 1, 1, 1, 1, 0, 0 };

	return d->has_dres ? res : plain;
}

const unsigned char *gpt_mm_forward_sliced(const struct gpt_mm_dims *d)
{
	static const unsigned char plain[] = { 1, 0, 1 };
	static const unsigned char bias[] = { 1, 0, 0, 1 };

	return d->has_bias ? bias : plain;
}
