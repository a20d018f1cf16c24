/* SPDX-License-Identifier: MIT */
/*
 * test_slices.c — the examples' TSPLIT micro-ops give the whole ops' bytes.
 *
 * The MLP and the GPT of examples/ train one step on the simulator's
 * backed memory, and a before_op hook catches every op they run, with the
 * inputs it really gets.  For each op that has a run_slice, the hook runs
 * it on host copies of those inputs, once whole (op->run) and then as p
 * micro-ops over consecutive row ranges for p in {2, 3, 7, rows}, and
 * compares every output byte.  The outputs start as a poison pattern each
 * time, so a micro-op that leans on the runtime to zero a sum, or that
 * skips rows, shows; after each micro-op the rows of sliced outputs past
 * its range must still hold the poison (a micro-op touches its rows
 * only), and the inputs must be unchanged.  Each sliced tensor's size
 * must be a multiple of the op's slice_extent.  Which ops split is
 * checked too: all but the optimizer's.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "gpt_model.h"
#include "mlp_model.h"
#include "tensormm.h"

#define POISON 0xa5

/* What the hook saw over one training run. */
struct seen {
	unsigned ops, split, compared; /* ops; with run_slice; runs checked */
};

/* Host copies of an op's tensors. */
struct buffers {
	unsigned n_in, n_out;
	size_t bytes[2 * 64];
	void *in[64], *pristine[64]; /* pristine: the inputs, kept */
	void *out[64], *whole[64];   /* whole: the outputs of op->run */
};

static int sliced(const tmm_op *op, unsigned i)
{
	return !op->sliced || op->sliced[i];
}

static void *must_alloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void load(tmm_ctx *ctx, const tmm_op *op, struct buffers *b)
{
	ck_assert_uint_le(op->n_inputs, 64);
	ck_assert_uint_le(op->n_outputs, 64);
	b->n_in = op->n_inputs;
	b->n_out = op->n_outputs;
	for (unsigned i = 0; i < b->n_in + b->n_out; i++) {
		tmm_tensor t = i < b->n_in ? op->inputs[i]
					   : op->outputs[i - b->n_in];
		size_t n = tmm_tensor_bytes(ctx, t);

		ck_assert_uint_gt(n, 0);
		b->bytes[i] = n;
		/* A sliced tensor is slice_extent rows of equal size. */
		if (sliced(op, i))
			ck_assert_msg(n % op->slice_extent == 0,
				      "%s: tensor %u has %zu bytes, not %zu "
				      "rows", op->name, i, n,
				      op->slice_extent);
		if (i >= b->n_in) {
			b->out[i - b->n_in] = must_alloc(n);
			b->whole[i - b->n_in] = must_alloc(n);
			continue;
		}
		b->in[i] = must_alloc(n);
		b->pristine[i] = must_alloc(n);
		ck_assert_msg(tmm_tensor_read(ctx, t, 0, b->in[i], n) == 0,
			      "%s", tmm_last_error(ctx));
		memcpy(b->pristine[i], b->in[i], n);
	}
}

static void unload(struct buffers *b)
{
	for (unsigned i = 0; i < b->n_in; i++) {
		free(b->in[i]);
		free(b->pristine[i]);
	}
	for (unsigned i = 0; i < b->n_out; i++) {
		free(b->out[i]);
		free(b->whole[i]);
	}
}

static void poison_outputs(struct buffers *b)
{
	for (unsigned i = 0; i < b->n_out; i++)
		memset(b->out[i], POISON, b->bytes[b->n_in + i]);
}

/* The rows [from, rows) of each sliced output still hold the poison. */
static void check_untouched(const tmm_op *op, const struct buffers *b,
			    size_t from, unsigned p)
{
	for (unsigned i = 0; i < b->n_out; i++) {
		size_t n = b->bytes[b->n_in + i], row = n / op->slice_extent;
		const unsigned char *o = b->out[i];

		if (!sliced(op, b->n_in + i))
			continue;
		for (size_t k = from * row; k < n; k++)
			ck_assert_msg(o[k] == POISON,
				      "%s in %u parts: output %u byte %zu, in "
				      "row %zu, written by the micro-op "
				      "ending at row %zu", op->name, p, i, k,
				      k / row, from);
	}
}

/* Runs op as p micro-ops and compares with the whole run. */
static void check_parts(const tmm_op *op, struct buffers *b, unsigned p)
{
	size_t rows = op->slice_extent;

	poison_outputs(b);
	for (unsigned k = 0; k < p; k++) {
		size_t begin = rows * k / p, end = rows * (k + 1) / p;
		int rc = op->run_slice(b->in, b->out, begin, end, op->user,
				       NULL);

		ck_assert_msg(rc == 0, "%s: rows [%zu, %zu) returned %d",
			      op->name, begin, end, rc);
		check_untouched(op, b, end, p);
	}
	for (unsigned i = 0; i < b->n_in; i++)
		ck_assert_msg(memcmp(b->in[i], b->pristine[i], b->bytes[i]) ==
				      0,
			      "%s in %u parts changed input %u", op->name, p,
			      i);
	for (unsigned i = 0; i < b->n_out; i++)
		ck_assert_msg(memcmp(b->out[i], b->whole[i],
				     b->bytes[b->n_in + i]) == 0,
			      "%s in %u parts: output %u differs from the "
			      "whole op's", op->name, p, i);
}

/* before_op hook: checks the op's split against its whole run. */
static int check_op(tmm_ctx *ctx, const tmm_op *op, void *arg)
{
	struct seen *seen = arg;
	const unsigned parts[] = { 2, 3, 7, 0 }; /* 0: one per row */
	struct buffers b;

	seen->ops++;
	/* Every op with a batch dimension splits: all but the optimizer. */
	ck_assert_msg((op->run_slice != NULL) ==
			      (op->kind != TMM_OP_OPTIMIZER),
		      "%s: run_slice %s", op->name,
		      op->run_slice ? "set" : "missing");
	if (!op->run_slice) {
		ck_assert_uint_eq(op->slice_extent, 0);
		return 0;
	}
	seen->split++;
	ck_assert_uint_ge(op->slice_extent, 2);
	ck_assert_ptr_nonnull(op->run);
	load(ctx, op, &b);
	poison_outputs(&b);
	ck_assert_int_eq(op->run(b.in, b.out, op->user, NULL), 0);
	for (unsigned i = 0; i < b.n_out; i++)
		memcpy(b.whole[i], b.out[i], b.bytes[b.n_in + i]);
	for (unsigned k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
		unsigned p = parts[k] ? parts[k] : (unsigned)op->slice_extent;

		if (p > op->slice_extent)
			continue;
		check_parts(op, &b, p);
		seen->compared++;
	}
	unload(&b);
	return 0;
}

static tmm_ctx *backed_ctx(void)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed") ==
			      0,
		      "%s", tmm_last_error(NULL));
	return ctx;
}

START_TEST(mlp_slices_match_the_whole_ops)
{
	struct seen seen = { 0 };
	struct mlp_config mc;
	tmm_ctx *ctx = backed_ctx();

	mlp_config_default(&mc);
	/* Small and odd, so that no cut falls on a round number. */
	mc.batch = 13;
	mc.inputs = 9;
	mc.width = 11;
	mc.layers = 2;
	mc.classes = 5;
	mc.steps = 1;
	mc.before_op = check_op;
	mc.before_op_arg = &seen;
	ck_assert_msg(mlp_train(ctx, &mc, NULL, NULL, NULL, NULL) == 0, "%s",
		      tmm_last_error(ctx));
	/* 3 layers: forward, 2 relu, loss, backward, 2 relu_backward. */
	ck_assert_uint_eq(seen.split, 3 + 2 + 1 + 3 + 2);
	ck_assert_uint_eq(seen.compared, 4 * seen.split);
	ck_assert_uint_eq(seen.ops, seen.split + 2 * 3); /* + the updates */
	tmm_ctx_destroy(ctx);
}
END_TEST

START_TEST(gpt_slices_match_the_whole_ops)
{
	struct seen seen = { 0 };
	struct gpt_config gc;
	tmm_ctx *ctx = backed_ctx();

	gpt_config_default(&gc);
	/* 8 sequences (the attention's rows) of 5 tokens: 40 rows. */
	gc.batch = 8;
	gc.seq = 5;
	gc.vocab = 11;
	gc.d_model = 8;
	gc.heads = 2;
	gc.layers = 2;
	gc.steps = 1;
	gc.before_op = check_op;
	gc.before_op_arg = &seen;
	ck_assert_msg(gpt_train(ctx, &gc, NULL, NULL, NULL, NULL) == 0, "%s",
		      tmm_last_error(ctx));
	/* A block: ln, qkv, attention, proj, add, ln, fc, gelu, fc2, add
	 * and the 8 backward ops of all but the adds; then embedding,
	 * ln_f, head, loss and the 3 backward ops of the first three. */
	ck_assert_uint_eq(seen.split, 2 * 18 + 7);
	ck_assert_uint_eq(seen.compared, 4 * seen.split);
	ck_assert_uint_gt(seen.ops, seen.split);
	tmm_ctx_destroy(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slices");
	TCase *tc = tcase_create("examples");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mlp_slices_match_the_whole_ops);
	tcase_add_test(tc, gpt_slices_match_the_whole_ops);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
