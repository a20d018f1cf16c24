/* SPDX-License-Identifier: MIT */
/*
 * seen_run.c — a run's trace, plan and device kept for a trial on a
 * twin, and the MLP the trial tests train (see seen_run.h).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "seen_run.h"

#include "lib/api/lifecycle.h"
#include "lib/core/context.h"
#include "lib/record/tracker.h"
#include "mlp_model.h"

void seen_take(struct seen *s, tmm_ctx *ctx, const struct tmm_plan *p)
{
	ck_assert_int_eq(tmm_trace_copy(&s->trace, tmm_tracker_first(ctx)),
			 0);
	ck_assert_int_eq(tmm_plan_copy(&s->plan, p), 0);
	ck_assert_int_eq(tmm_trial_device_of(ctx, &s->dev), 0);
	s->link = (struct tmm_planner_device){
		.capacity = ctx->be.info.capacity,
		.h2d_gbps = ctx->be.info.h2d_gbps,
		.d2h_gbps = ctx->be.info.d2h_gbps,
		.copy_latency_ns = ctx->be.info.copy_latency_ns,
		.launch_ns = ctx->be.info.launch_ns,
	};
	s->have = true;
}

void seen_free(struct seen *s)
{
	tmm_trace_free(&s->trace);
	tmm_plan_free(&s->plan);
	memset(s, 0, sizeof(*s));
}

void seen_train_mlp(const char *config, const struct tmm_twin_ops *twin_ops,
		    int (*after_step)(tmm_ctx *ctx, unsigned step, void *arg),
		    void *arg, struct tmm_stats *st)
{
	struct mlp_config mc;
	float losses[SEEN_STEPS];
	uint8_t *weights;
	size_t len;
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_assemble(&ctx, config, twin_ops) == 0, "%s",
		      tmm_last_error(NULL));
	mlp_config_default(&mc);
	mc.steps = SEEN_STEPS;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	mc.after_step = after_step;
	mc.after_step_arg = arg;
	ck_assert_msg(mlp_train(ctx, &mc, losses, &weights, &len, NULL) == 0,
		      "%s", tmm_last_error(ctx));
	free(weights);
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
