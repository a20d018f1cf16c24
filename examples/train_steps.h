/* SPDX-License-Identifier: MIT */
/*
 * train_steps.h — the training loop the model examples share
 * (mlp_model.c, gpt_model.c, chargpt_model.c): the first step rehearsed
 * where asked (tmm_rehearsal_begin), then every step, its loss kept and
 * logged, and the caller's after_step hook after each.  A model brings
 * its one-step function.
 *
 * Header-only (static inline): each model is linked into many programs
 * (the examples, and the tests and benchmarks built on them), which then
 * need no other source.
 */
#ifndef TRAIN_STEPS_H
#define TRAIN_STEPS_H

#include <stdbool.h>
#include <stdio.h>

#include "tensormm.h"

/* A model's step `step` (from 0) on `model`: its loss into *loss.
 * Returns 0 or a negative errno. */
typedef int (*train_step_fn)(void *model, unsigned step, float *loss);

/*
 * Trains `model` for `steps` steps of `step` in ctx.  With rehearse, one
 * step first runs as the training will run it, inside a rehearsal, so
 * that the plan comes from predicted op times (the loss it reads is zero
 * and is not used).  Each step's loss goes into losses[] (when not NULL)
 * and onto log as "step N  loss L" (when not NULL); after_step (when not
 * NULL) follows each step with its number from 1.  Returns 0 or the
 * first error.
 */
static inline int train_steps(tmm_ctx *ctx, train_step_fn step, void *model,
			      unsigned steps, bool rehearse, float *losses,
			      FILE *log,
			      int (*after_step)(tmm_ctx *ctx, unsigned step,
						void *arg),
			      void *after_step_arg)
{
	float loss;
	int rc = 0;

	if (rehearse) {
		rc = tmm_rehearsal_begin(ctx);
		if (rc == 0)
			rc = step(model, 0, &loss);
		if (rc == 0)
			rc = tmm_rehearsal_end(ctx);
	}
	for (unsigned s = 0; rc == 0 && s < steps; s++) {
		rc = step(model, s, &loss);
		if (rc == 0 && losses)
			losses[s] = loss;
		if (rc == 0 && log)
			fprintf(log, "step %2u  loss %.4f\n", s + 1, loss);
		if (rc == 0 && after_step)
			rc = after_step(ctx, s + 1, after_step_arg);
	}
	return rc;
}

#endif /* TRAIN_STEPS_H */
