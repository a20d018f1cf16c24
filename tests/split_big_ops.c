/* SPDX-License-Identifier: MIT */
/*
 * split_big_ops.c — see split_big_ops.h.
 */
#include <check.h>

#include "lib/core/context.h"
#include "split_big_ops.h"

int big_fill(void *const *in, void *const *out, void *user, void *stream)
{
	uint32_t *o = out[0], salt = *(const uint32_t *)user;

	(void)in;
	(void)stream;
	for (uint32_t i = 0; i < BIG_ELEMS; i++)
		o[i] = i * 2654435761u + salt;
	return 0;
}

int big_rows_slice(void *const *in, void *const *out, size_t begin, size_t end,
		   void *user, void *stream)
{
	const uint32_t *x = in[0];
	uint32_t *y = out[0];

	(void)user;
	(void)stream;
	for (size_t r = begin; r < end; r++)
		for (size_t c = 0; c < BIG_COLS; c++)
			y[r * BIG_COLS + c] =
				x[r * BIG_COLS + c] * 3u + (uint32_t)r;
	return 0;
}

int big_rows(void *const *in, void *const *out, void *user, void *stream)
{
	return big_rows_slice(in, out, 0, BIG_ROWS, user, stream);
}

int big_mix(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *y = in[0], *x = in[1];
	uint32_t *u = out[0];

	(void)user;
	(void)stream;
	for (uint32_t i = 0; i < BIG_ELEMS; i++)
		u[i] = y[i] ^ (x[i] << 1);
	return 0;
}

int big_op(tmm_ctx *ctx, const char *name, tmm_run_fn run,
	   tmm_run_slice_fn slice, const tmm_tensor *in, unsigned n_in,
	   tmm_tensor out, void *user)
{
	tmm_op op = {
		.name = name, .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE, .inputs = in, .n_inputs = n_in,
		.outputs = &out, .n_outputs = 1, .run = run,
		.cost = { 0, slice ? ROWS_COST_BYTES : 3.0 * BIG_BYTES },
		.run_slice = slice, .slice_extent = slice ? BIG_ROWS : 0,
		.user = user,
	};

	return tmm_run(ctx, &op);
}

void big_run(tmm_ctx *ctx, const char *name, tmm_run_fn run,
	     tmm_run_slice_fn slice, const tmm_tensor *in, unsigned n_in,
	     tmm_tensor out, void *user)
{
	ck_assert_msg(big_op(ctx, name, run, slice, in, n_in, out, user) == 0,
		      "%s: %s", name, tmm_last_error(ctx));
}

void big_sim_counters(tmm_ctx *ctx, struct tmm_sim_counters *c)
{
	ck_assert_int_eq(tmm_sim_get_counters(&ctx->be, c), 0);
}

uint32_t big_salts[3] = { 1, 2, 3 };

void big_up_to_rows(tmm_ctx *ctx, tmm_tensor *t, unsigned n)
{
	tmm_tensor pad;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES, TMM_ACTIVATION,
					   "pad", &pad), 0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
	big_run(ctx, "pad", big_fill, NULL, NULL, 0, pad, &big_salts[0]);
	big_run(ctx, "fill", big_fill, NULL, NULL, 0, t[0], &big_salts[1]);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
}

int big_tail(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *y = in[0];
	uint32_t *u = out[0];

	(void)user;
	(void)stream;
	for (uint32_t i = 0; i < BIG_ELEMS; i++)
		u[i] = y[i] ^ 0x5bd1e995u;
	return 0;
}
