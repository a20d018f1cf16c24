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
