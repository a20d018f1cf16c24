/* SPDX-License-Identifier: MIT */
/*
 * demo_pair.h — the story examples/mlp, gpt and chargpt tell: the same
 * training twice on the simulated GPU (backed memory, real bytes),
 * first with the whole device to measure the run's peak, then under a
 * budget of a fraction of that peak, and whether the constrained run
 * ends bit-identical to the first, within its budget.  The example sets
 * its model up and says what it trains; these calls run the two
 * trainings (demo_train), print each step and compare.
 */
#ifndef DEMO_PAIR_H
#define DEMO_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demo_run.h"
#include "tensormm.h"

struct demo_pair {
	const char *prog;	   /* starts every message on stderr */
	unsigned steps;		   /* the model's: each run keeps its losses */
	double fraction;	   /* of the unconstrained peak: the budget */
	const char *extra;	   /* tunables for both runs, or NULL */
	unsigned long long budget; /* bytes, set by the unconstrained run */
	/* The constrained run's first step: the after_step_arg to give
	 * it, with demo_note_first_step. */
	struct demo_first_step first;
	/* Each run's results: [0] unconstrained, [1] constrained. */
	float *losses[2];
	uint8_t *weights[2];
	size_t len[2];
	struct tmm_stats st[2];
};

/*
 * Sets d up for a model of `steps` steps, a budget of `fraction` of the
 * peak, and `extra` (at most 300 characters, --config) appended to both
 * runs' configurations.  Returns 0, or -1 after saying why on stderr.
 */
int demo_pair_open(struct demo_pair *d, const char *prog, unsigned steps,
		   double fraction, const char *extra);

/* Trains with fn and its cfg on the whole device, prints the peak and
 * takes the budget from it.  Returns 0 or the error (said on stderr). */
int demo_pair_unconstrained(struct demo_pair *d, demo_train_fn fn,
			    const void *cfg);

/* Trains again under the budget, printing each step's loss, then the
 * statistics (stats_opts: tmm_stats_print's).  Returns 0 or the error
 * (said on stderr). */
int demo_pair_constrained(struct demo_pair *d, demo_train_fn fn,
			  const void *cfg, unsigned stats_opts);

/* Prints how the constrained run's first step ran, whether its weights
 * and losses are the unconstrained run's bit for bit, and whether its
 * peak stayed within the budget; returns whether both hold. */
bool demo_pair_verdict(const struct demo_pair *d);

/* Frees what the runs made. */
void demo_pair_close(struct demo_pair *d);

#endif /* DEMO_PAIR_H */
