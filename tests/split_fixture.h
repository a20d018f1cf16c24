/* SPDX-License-Identifier: MIT */
/*
 * split_fixture.h — what the tests of split ops share (test_split.c,
 * test_split_reuse.c): their configuration, running a sliced toy op, and
 * finding an op's accesses in a trace to write plans by hand.
 */
#ifndef SPLIT_FIXTURE_H
#define SPLIT_FIXTURE_H

#include <stdint.h>

#include "tensormm.h"
#include "lib/io/trace.h"

/* The split ops' extra launches change their latencies: without
 * replan_drift=0 the guide would replace the hand-made plan with the
 * default policy's after the first split iteration. */
#define SWAP "backend=sim,mode=swap,replan_drift=0"
#define SWAP_BASE_UVM "backend=sim,mode=uvm,replan_drift=0"

/* Part counts to split the ROWS rows into: 2 and 4 divide them; 3, 7 and
 * 63 do not; 64 is a row each. */
#define SPLIT_PART_COUNTS 6
extern const uint32_t split_part_counts[SPLIT_PART_COUNTS];

/* A context, or the test fails with the library's message. */
tmm_ctx *split_ctx(const char *config);

/* Runs a pure op over rows that may be split (slice_extent ROWS) with
 * one output; fails the test with the library's message. */
void split_run_op(tmm_ctx *ctx, const char *name, tmm_run_fn run,
		  tmm_run_slice_fn run_slice, const tmm_tensor *in,
		  unsigned n_in, tmm_tensor out, const unsigned char *sliced);

/* The access of op `name` to its `nth` tensor (its list order, inputs
 * first: each tensor appears once per op). */
uint32_t split_access_of(const struct tmm_trace *t, const char *name,
			 unsigned nth);

/* The key of the tensor of access k. */
uint64_t split_key_at(const struct tmm_trace *t, uint32_t k);

#endif /* SPLIT_FIXTURE_H */
