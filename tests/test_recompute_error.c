/* SPDX-License-Identifier: MIT */
/*
 * test_recompute_error.c — a failure while recomputing names both ops:
 * the one re-run and the one the program ran, which needed its output
 * (issue #21's notes: "while recomputing X for op Y").
 *
 * The MLP trains under a handmade plan that drops activations, so its
 * backward pass recomputes them by re-running forward ops.  The forward
 * kernels here fail when re-run (called after the step's loss), and the
 * training must stop with an error that names a forward op as the one
 * re-run and a backward op as the one it was for.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "handmade_plan.h"
#include "lib/record/tracker.h"
#include "lib/exec/guide.h"
#include "mlp_model.h"
#include "tensormm.h"

/* Set by the loss of a step, cleared after it: a forward kernel running
 * in between is a recomputation. */
static bool after_loss;

static int fail_when_rerun(void)
{
	return after_loss ? -EIO : 0;
}

static int fc_forward(void *const *in, void *const *out, void *user,
		      void *stream)
{
	int rc = fail_when_rerun();

	return rc ? rc : mlp_cpu_kernels()->fc_forward(in, out, user, stream);
}

static int relu_forward(void *const *in, void *const *out, void *user,
			void *stream)
{
	int rc = fail_when_rerun();

	return rc ? rc
		  : mlp_cpu_kernels()->relu_forward(in, out, user, stream);
}

static int softmax_xent(void *const *in, void *const *out, void *user,
			void *stream)
{
	after_loss = true;
	return mlp_cpu_kernels()->softmax_xent(in, out, user, stream);
}

/* After step 1, a plan that drops wherever it can. */
static int after_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct tmm_plan plan;
	int rc = 0;

	(void)arg;
	after_loss = false;
	if (step != 1)
		return 0;
	ck_assert_uint_gt(handmade_plan(tmm_tracker_first(ctx), HANDMADE_DROP,
					4, 6, &plan),
			  0);
	rc = tmm_guide_install(ctx, &plan);
	tmm_plan_free(&plan);
	return rc;
}

START_TEST(a_failed_recomputation_names_both_ops)
{
	struct mlp_kernels k = *mlp_cpu_kernels();
	struct mlp_config mc;
	const char *err, *re_run, *for_op;
	tmm_ctx *ctx;
	int rc;

	k.fc_forward = fc_forward;
	k.relu_forward = relu_forward;
	k.softmax_xent = softmax_xent;
	mlp_config_default(&mc);
	mc.steps = 3;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	mc.kernels = &k;
	mc.after_step = after_step;
	after_loss = false;
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,policy=none,log=error"), 0);
	rc = mlp_train(ctx, &mc, NULL, NULL, NULL, NULL);
	err = tmm_last_error(ctx);
	fprintf(stderr, "the error: %s\n", err);
	ck_assert_msg(rc < 0, "training did not fail: no recomputation?");
	re_run = strstr(err, "while recomputing with op '");
	ck_assert_msg(re_run, "%s", err);
	for_op = strstr(re_run, "' for op '");
	ck_assert_msg(for_op, "%s", err);
	/* The op re-run is a forward one, the op it was for a backward one,
	 * and the callback's failure is what is reported. */
	ck_assert_msg(strncmp(re_run + strlen("while recomputing with op '"),
			      "fc_forward", 10) == 0 ||
			      strncmp(re_run + strlen("while recomputing with "
						      "op '"),
				      "relu", 4) == 0,
		      "%s", err);
	ck_assert_msg(strstr(for_op, "backward") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "returned -5") != NULL, "%s", err);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("recompute_error");
	TCase *tc = tcase_create("recompute_error");

	tcase_add_test(tc, a_failed_recomputation_names_both_ops);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
