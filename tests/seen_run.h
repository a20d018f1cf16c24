/* SPDX-License-Identifier: MIT */
/*
 * seen_run.h — what a test keeps of a training run to try its plan on a
 * twin of the device (lib/twin/trial.h): the run's first trace, its
 * plan, its trial device and its link figures; and the small MLP such
 * tests train (tests/test_trial.c, tests/test_auto_twin.c).
 */
#ifndef SEEN_RUN_H
#define SEEN_RUN_H

#include <stdbool.h>

#include "hints/planner.h"
#include "lib/twin/trial.h"
#include "tensormm.h"

struct seen {
	struct tmm_trace trace;
	struct tmm_plan plan;
	struct tmm_trial_device dev;
	struct tmm_planner_device link;
	bool have;
};

/* Keeps ctx's first trace, plan p, ctx's trial device and its link
 * figures in s (have then true); a failure fails the test. */
void seen_take(struct seen *s, tmm_ctx *ctx, const struct tmm_plan *p);

/* Frees what s keeps, and zeroes it for another run. */
void seen_free(struct seen *s);

/* How many steps seen_train_mlp trains. */
#define SEEN_STEPS 4

/*
 * Trains the MLP example (5 hidden layers of 192, batch 64, SEEN_STEPS
 * steps) in a context made from config with `twin_ops` lent to its
 * planners (tmm_ctx_assemble; &tmm_twin_ops is tmm_ctx_create's),
 * after_step(ctx, step, arg) after each step (NULL: none), and fills
 * *st at the end.  A failure fails the test.
 */
void seen_train_mlp(const char *config, const struct tmm_twin_ops *twin_ops,
		    int (*after_step)(tmm_ctx *ctx, unsigned step, void *arg),
		    void *arg, struct tmm_stats *st);

#endif /* SEEN_RUN_H */
