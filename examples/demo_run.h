/* SPDX-License-Identifier: MIT */
/*
 * demo_run.h — what the example programs share: reading a count from the
 * command line, and one training run in a fresh context with its
 * statistics.
 */
#ifndef DEMO_RUN_H
#define DEMO_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensormm.h"

/* Parses a count in 1 .. 2^20 into *out.  Returns 0 or -1. */
int demo_parse_uint(const char *s, unsigned *out);

/* One command-line option of an example. */
enum demo_opt_kind {
	DEMO_COUNT,	/* --name N: a count into *(unsigned *)value, at most
			 * `max` (0: 2^20) */
	DEMO_FRACTION,	/* --name F: 0 < F <= 1 into *(double *)value */
	DEMO_FLAG,	/* --name: `max` into *(unsigned *)value */
	DEMO_TEXT,	/* --name S: 1 to `max` characters, *(const char **) */
};

struct demo_opt {
	const char *name;
	enum demo_opt_kind kind;
	void *value;
	unsigned max;
};

/*
 * Reads argv against opts[0..n) (and -h / --help).  Returns 0 to go on,
 * 1 after printing the usage for --help (exit 0), or 2 after saying on
 * stderr, as `prog`, which option or value was wrong, with the usage
 * (exit 2).
 */
int demo_parse_args(const char *prog, int argc, char **argv,
		    const struct demo_opt *opts, size_t n,
		    void (*usage)(FILE *f));

/* Says that `value` is wrong for `option`, with the usage; returns 2. */
int demo_bad_value(const char *prog, const char *option, const char *value,
		   void (*usage)(FILE *f));

/* The option that rehearses the first step before training (the models'
 * `rehearse`), for an example's option table, and its usage line. */
#define DEMO_REHEARSE_OPT(flag) { "--rehearse", DEMO_FLAG, &(flag), 1 }
#define DEMO_REHEARSE_USAGE \
	"  --rehearse    rehearse one step first (tmm_rehearsal_begin): " \
	"the plan comes\n" \
	"                from predicted op times, not from a measured " \
	"first step\n"

/* What the first training step of a run did. */
struct demo_first_step {
	bool seen;
	bool guided;		    /* it followed a plan (else measured) */
	uint64_t passive_evictions; /* during the first step */
};

/* An after_step callback (mlp_config, gpt_config) that fills the
 * struct demo_first_step `arg` after step 1.  Returns 0. */
int demo_note_first_step(tmm_ctx *ctx, unsigned step, void *arg);

/* Prints, as a line of the demo, how the first step ran. */
void demo_print_first_step(const struct demo_first_step *f);

/* A model's training function, as mlp_train and gpt_train are. */
typedef int (*demo_train_fn)(tmm_ctx *ctx, const void *cfg, float *losses,
			     uint8_t **weights, size_t *len, FILE *log);

/*
 * Trains once with fn and its cfg in a context made from `config`: fills
 * losses, *weights (from malloc) and *len, and *st with the context's
 * statistics at the end; with print, prints them on stdout (stats_opts:
 * tmm_stats_print's).  Messages on stderr start with `prog`.  Returns 0
 * or the error of the context or the training.
 */
int demo_train(const char *prog, const char *config, demo_train_fn fn,
	       const void *cfg, FILE *log, float *losses, uint8_t **weights,
	       size_t *len, struct tmm_stats *st, bool print,
	       unsigned stats_opts);

#endif /* DEMO_RUN_H */
