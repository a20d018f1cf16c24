/* SPDX-License-Identifier: MIT */
/*
 * toy_ops.c — see toy_ops.h.
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "toy_ops.h"

int toy_fill(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *w = in[0];
	uint32_t *o = out[0];

	(void)user;
	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++)
		o[k] = w[k] * 3u + k;
	return 0;
}

int toy_mix(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *a = in[0], *b = in[1];
	uint32_t *o = out[0];

	(void)user;
	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++)
		o[k] = ((a[k] << 5) | (a[k] >> 27)) ^ (b[k] * 2654435761u + k);
	return 0;
}

int toy_split(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *a = in[0];
	uint32_t *x = out[0], *y = out[1];

	(void)user;
	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++) {
		x[k] = a[k] ^ 0x5a5a5a5au;
		y[k] = a[k] + 17u;
	}
	return 0;
}

int toy_bump(void *const *in, void *const *out, void *user, void *stream)
{
	uint32_t *o = out[0];

	(void)in;
	(void)user;
	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++)
		o[k] += 1;
	return 0;
}

int toy_rows_slice(void *const *in, void *const *out, size_t begin,
		   size_t end, void *user, void *stream)
{
	const uint32_t *a = in[0];
	uint32_t *o = out[0];

	(void)user;
	(void)stream;
	for (size_t k = begin * COLS; k < end * COLS; k++)
		o[k] = ((a[k] << 3) | (a[k] >> 29)) ^ ((uint32_t)k * 40503u);
	return 0;
}

int toy_rows(void *const *in, void *const *out, void *user, void *stream)
{
	return toy_rows_slice(in, out, 0, ROWS, user, stream);
}

int toy_matmul_slice(void *const *in, void *const *out, size_t begin,
		     size_t end, void *user, void *stream)
{
	const uint32_t *a = in[0], *b = in[1];
	uint32_t *o = out[0];

	(void)user;
	(void)stream;
	for (size_t r = begin; r < end; r++)
		for (size_t c = 0; c < COLS; c++) {
			uint32_t sum = 0;

			for (size_t k = 0; k < COLS; k++)
				sum += a[r * COLS + k] * b[k * COLS + c];
			o[r * COLS + c] = sum;
		}
	return 0;
}

int toy_matmul(void *const *in, void *const *out, void *user, void *stream)
{
	return toy_matmul_slice(in, out, 0, ROWS, user, stream);
}

void toy_run(tmm_ctx *ctx, const char *name, unsigned flags, tmm_run_fn fn,
	     const tmm_tensor *in, unsigned n_in, const tmm_tensor *out,
	     unsigned n_out)
{
	tmm_op op = {
		.name = name, .kind = TMM_OP_ELEMENTWISE, .flags = flags,
		.inputs = in, .n_inputs = n_in, .outputs = out,
		.n_outputs = n_out, .run = fn,
		.cost = { 4.0 * ELEMS, 12.0 * ELEMS },
	};

	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s: %s", name,
		      tmm_last_error(ctx));
}

void toy_chain_step(tmm_ctx *ctx, tmm_tensor w, int chain)
{
	tmm_tensor t[TOY_CHAIN_MAX];

	ck_assert_int_le(chain, TOY_CHAIN_MAX);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < chain; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	for (int i = 1; i < chain; i++) {
		tmm_tensor in[2] = { t[i - 1], t[i / 2] };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[i], 1);
	}
	{
		tmm_tensor in[2] = { w, t[chain - 1] };

		toy_run(ctx, "update", TMM_OP_BACKWARD, toy_mix, in, 2, &w, 1);
	}
	for (int i = 0; i < chain; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

void toy_pattern(uint32_t *v, uint32_t salt)
{
	for (uint32_t k = 0; k < ELEMS; k++)
		v[k] = k * 2654435761u ^ salt;
}

tmm_tensor toy_weight(tmm_ctx *ctx, uint32_t salt)
{
	static uint32_t v[ELEMS];
	tmm_tensor w;

	for (uint32_t k = 0; k < ELEMS; k++)
		v[k] = (k + salt) * 2654435761u;
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, v, BYTES), 0);
	return w;
}
