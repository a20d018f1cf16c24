/* SPDX-License-Identifier: MIT */
/*
 * test_tsplit_big_op.c — an op whose tensors alone exceed the budget
 * trains under tsplit, split, where whole-tensor policies cannot run it
 * (TSPLIT §III-A: "breaks apart memory bottlenecks").
 *
 * x = fill(); y = rows(x), x's last use; y read back.  rows holds x and y,
 * 2 MiB, over a 1.5 MiB budget.  The first iteration is rehearsed
 * (tmm_rehearsal_begin), as the paper plans from profiled ops before
 * training; tsplit then splits rows and swaps x out at it slice by slice,
 * so that y grows into x's rows (lib/exec/split.c): the op needs x and one
 * part of y.  Every iteration's y is the one computed on the host, with no
 * passive eviction.  Under vdnn-all, whose plan moves whole tensors only,
 * the same op is refused as larger than the budget.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "split_big_ops.h"
#include "tensormm.h"

#define ITERATIONS 3
#define BUDGET (3 * BIG_BYTES / 2)
/* Free below x once pad goes: room for the output rows ahead of the
 * input's (an eighth of y: the lead of 8 parts or more). */
#define PAD_BYTES (BIG_BYTES / 8)

static uint32_t pad_salt = 7;

static int pad_fill(void *const *in, void *const *out, void *user,
		    void *stream)
{
	uint32_t *o = out[0];

	(void)in;
	(void)stream;
	for (uint32_t i = 0; i < PAD_BYTES / 4; i++)
		o[i] = i ^ *(const uint32_t *)user;
	return 0;
}

/* One iteration; returns tmm_run's result for rows, and y in out when it
 * ran. */
static int iteration(tmm_ctx *ctx, uint32_t *out)
{
	tmm_tensor pad, x, y;
	tmm_op fill_pad = {
		.name = "pad", .kind = TMM_OP_ELEMENTWISE, .outputs = &pad,
		.n_outputs = 1, .run = pad_fill, .user = &pad_salt,
		.cost = { 0, 2.0 * PAD_BYTES },
	};
	int rc;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, PAD_BYTES, TMM_ACTIVATION,
					   "pad", &pad), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES, TMM_ACTIVATION,
					   "x", &x), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES, TMM_ACTIVATION,
					   "y", &y), 0);
	ck_assert_msg(tmm_run(ctx, &fill_pad) == 0, "%s", tmm_last_error(ctx));
	big_run(ctx, "fill", big_fill, NULL, NULL, 0, x, &big_salts[1]);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, pad), 0);
	rc = big_op(ctx, "rows", big_rows, big_rows_slice, &x, 1, y, NULL);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, x), 0);
	if (rc == 0 && out)
		ck_assert_int_eq(tmm_tensor_read(ctx, y, 0, out, BIG_BYTES), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, y), 0);
	if (rc == 0)
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	return rc;
}

static tmm_ctx *rehearsed(const char *policy)
{
	char config[160];
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 "backend=sim,mode=swap,replan_drift=0,policy=%s,budget=%uB",
		 policy, (unsigned)BUDGET);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	ck_assert_int_eq(iteration(ctx, NULL), 0);
	ck_assert_msg(tmm_rehearsal_end(ctx) == 0, "%s", tmm_last_error(ctx));
	return ctx;
}

START_TEST(tsplit_trains_an_op_larger_than_the_budget)
{
	static uint32_t x[BIG_ELEMS], want[BIG_ELEMS], got[BIG_ELEMS];
	tmm_ctx *ctx = rehearsed("tsplit");
	struct tmm_stats st;

	/* y as big_rows makes it from big_fill's x, on the host. */
	big_fill(NULL, (void *const[]){ x }, &big_salts[1], NULL);
	big_rows((void *const[]){ x }, (void *const[]){ want }, NULL, NULL);
	for (int it = 0; it < ITERATIONS; it++) {
		memset(got, 0, sizeof(got));
		ck_assert_msg(iteration(ctx, got) == 0, "iteration %d: %s",
			      it + 1, tmm_last_error(ctx));
		ck_assert_msg(!memcmp(got, want, sizeof(got)),
			      "iteration %d: y is not rows(x)", it + 1);
	}
	st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.split_ops, ITERATIONS);
	ck_assert_uint_eq(st.split_fallbacks, 0);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_le(st.device_peak, BUDGET);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(whole_tensor_policies_cannot_run_it)
{
	tmm_ctx *ctx = rehearsed("vdnn-all");

	ck_assert_int_eq(iteration(ctx, NULL), -ENOMEM);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx),
				     "more than the whole device budget"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tsplit_big_op");
	TCase *tc = tcase_create("big_op");

	tcase_add_test(tc, tsplit_trains_an_op_larger_than_the_budget);
	tcase_add_test(tc, whole_tensor_policies_cannot_run_it);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
