/* SPDX-License-Identifier: MIT */
/*
 * split_big_ops.h — row ops over tensors of a megabyte, for the tests of
 * split ops whose copies must take longer than the simulator's copy
 * latency to overlap anything (test_split_stream.c,
 * test_split_overlap.c).
 */
#ifndef SPLIT_BIG_OPS_H
#define SPLIT_BIG_OPS_H

#include <stdint.h>

#include "tensormm.h"
#include "lib/backend/backend_sim.h"

/* The row ops' tensors: BIG_ROWS rows of BIG_COLS uint32. */
#define BIG_ROWS 64
#define BIG_COLS 4096
#define BIG_ELEMS (BIG_ROWS * BIG_COLS)
#define BIG_BYTES (BIG_ELEMS * 4)
/* A row op's memory traffic, as its cost hint: a few hundred
 * microseconds on the simulator, longer than copying its output to the
 * host. */
#define ROWS_COST_BYTES 3e8

/* out[0][i] = i * 2654435761 + *(uint32_t *)user. */
int big_fill(void *const *in, void *const *out, void *user, void *stream);

/* y row r = x row r * 3 + r, over rows [begin, end), or all of them. */
int big_rows_slice(void *const *in, void *const *out, size_t begin,
		   size_t end, void *user, void *stream);
int big_rows(void *const *in, void *const *out, void *user, void *stream);

/* u = y ^ (x << 1), from in = { y, x }. */
int big_mix(void *const *in, void *const *out, void *user, void *stream);

/* u = y ^ a constant. */
int big_tail(void *const *in, void *const *out, void *user, void *stream);

/* Runs a pure op over the big tensors with one output; one with a slice
 * callback (a row op, ROWS_COST_BYTES) may be split.  big_op returns
 * tmm_run's result, big_run fails the test on an error. */
int big_op(tmm_ctx *ctx, const char *name, tmm_run_fn run,
	   tmm_run_slice_fn slice, const tmm_tensor *in, unsigned n_in,
	   tmm_tensor out, void *user);
void big_run(tmm_ctx *ctx, const char *name, tmm_run_fn run,
	     tmm_run_slice_fn slice, const tmm_tensor *in, unsigned n_in,
	     tmm_tensor out, void *user);

/* The simulator's counters, or the test fails. */
void big_sim_counters(tmm_ctx *ctx, struct tmm_sim_counters *c);

/* The salts of pad, x and a third tensor. */
extern uint32_t big_salts[3];

/*
 * Begins an iteration: creates t[0 .. n) (BIG_BYTES each), pad =
 * fill(), t[0] = fill(), and pad goes: pad's place is then free just
 * below t[0], for the reuse of its rows by a split op's output.
 */
void big_up_to_rows(tmm_ctx *ctx, tmm_tensor *t, unsigned n);

#endif /* SPLIT_BIG_OPS_H */
