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
