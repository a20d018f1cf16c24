/* SPDX-License-Identifier: MIT */
/*
 * split_fixture.c — see split_fixture.h.
 */
#include <check.h>
#include <string.h>

#include "split_fixture.h"
#include "toy_ops.h"

const uint32_t split_part_counts[SPLIT_PART_COUNTS] = { 2, 3, 4, 7, 63, 64 };

tmm_ctx *split_ctx(const char *config)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

void split_run_op(tmm_ctx *ctx, const char *name, tmm_run_fn run,
		  tmm_run_slice_fn run_slice, const tmm_tensor *in,
		  unsigned n_in, tmm_tensor out, const unsigned char *sliced)
{
	tmm_op op = {
		.name = name, .kind = TMM_OP_ELEMENTWISE,
		.flags = TMM_OP_PURE, .inputs = in, .n_inputs = n_in,
		.outputs = &out, .n_outputs = 1, .run = run,
		.cost = { 2.0 * ELEMS * COLS, 12.0 * ELEMS },
		.run_slice = run_slice, .slice_extent = ROWS,
		.sliced = sliced,
	};

	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s: %s", name,
		      tmm_last_error(ctx));
}

/* The access of op `name` to its `nth` tensor (its list order, inputs
 * first: each tensor here appears once per op). */
uint32_t split_access_of(const struct tmm_trace *t, const char *name,
			 unsigned nth)
{
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		uint32_t op = t->accesses[k].op;

		if (op != TMM_TRACE_NONE &&
		    strcmp(tmm_trace_str(t, t->ops[op].name), name) == 0 &&
		    (k == 0 || t->accesses[k - 1].op != op))
			return k + nth;
	}
	ck_abort_msg("no op '%s' in the trace", name);
	return 0;
}

uint64_t split_key_at(const struct tmm_trace *t, uint32_t k)
{
	return t->tensors[t->accesses[k].tensor].key;
}
