/* SPDX-License-Identifier: MIT */
/*
 * bench_tracker.c — what recording an access costs (a benchmark, not a
 * test).
 *
 * Two figures, both real CPU time on this machine:
 *  1. the tracker alone: tmm_tracker_op() called directly for ops of two
 *     inputs and one output inside iterations of `ops` ops, after a first
 *     iteration has sized the arrays — ns per recorded access;
 *  2. the whole runtime: tmm_run of the same op inside iterations (the
 *     tracker, the lineage and the plan check all on) minus tmm_run
 *     outside iterations (all off), per access.
 * Target (issue #3): < 50 ns per recorded access.
 *
 *   bench/bench_tracker [iterations] [ops per iteration]
 *                       (default 400 iterations of 5,000 ops)
 *
 * The simulated device only holds the tensors; no time printed here is
 * simulated.
 */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "machine.h"
#include "lib/core/context.h"
#include "tensormm.h"
#include "lib/record/tracker.h"

static void check(tmm_ctx *ctx, int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bench_tracker: %s: %s\n", what,
			tmm_last_error(ctx));
		exit(1);
	}
}

/* Seconds spent in tmm_tracker_op over `iters` iterations of `ops`. */
static double time_tracker(tmm_ctx *ctx, const tmm_op *op,
			   struct tmm_tensor_rec **recs, long iters, long ops)
{
	static const uint8_t flags[3];
	double spent = 0;
	uint32_t first, n;

	for (long it = 0; it <= iters; it++) {
		double t0;

		check(ctx, tmm_iteration_begin(ctx), "iteration_begin");
		t0 = bench_now_s();
		for (long k = 0; k < ops; k++)
			tmm_tracker_op(ctx, op, recs, flags, 3,
				       (uint64_t)k * 100, 50, 0, &first, &n);
		if (it > 0) /* the first iteration sizes the arrays */
			spent += bench_now_s() - t0;
		check(ctx, tmm_iteration_end(ctx), "iteration_end");
	}
	return spent;
}

/* Seconds of tmm_run over `iters` x `ops` calls, in or out of
 * iterations. */
static double time_run(tmm_ctx *ctx, const tmm_op *op, long iters, long ops,
		       bool in_iterations)
{
	double spent = 0;

	for (long it = 0; it <= iters; it++) {
		double t0;

		if (in_iterations)
			check(ctx, tmm_iteration_begin(ctx), "begin");
		t0 = bench_now_s();
		for (long k = 0; k < ops; k++)
			check(ctx, tmm_run(ctx, op), "tmm_run");
		if (it > 0)
			spent += bench_now_s() - t0;
		if (in_iterations)
			check(ctx, tmm_iteration_end(ctx), "end");
	}
	return spent;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 400;
	long ops = argc > 2 ? atol(argv[2]) : 5000;
	struct tmm_tensor_rec *recs[3];
	double accesses, alone, with, without;
	char machine[384];
	tmm_tensor t[3];
	tmm_ctx *ctx;

	if (iters <= 0 || ops <= 0) {
		fprintf(stderr, "usage: bench_tracker [iterations > 0] "
				"[ops per iteration > 0]\n");
		return 2;
	}
	if (tmm_ctx_create(&ctx, "backend=sim,mode=swap,sim_memory=backed,"
				 "budget=64MiB") != 0) {
		fprintf(stderr, "bench_tracker: %s\n", tmm_last_error(NULL));
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		static const float one = 1.0f;

		check(ctx, tmm_tensor_create(ctx, 4096, TMM_ACTIVATION, NULL,
					     &t[i]), "create");
		check(ctx, tmm_tensor_write(ctx, t[i], 0, &one, sizeof(one)),
		      "write");
		recs[i] = tmm_tensor_lookup(ctx, t[i], "bench");
	}
	{
		tmm_op op = { .name = "bench", .kind = TMM_OP_ELEMENTWISE,
			      .flags = TMM_OP_PURE,
			      .inputs = t, .n_inputs = 2,
			      .outputs = t + 2, .n_outputs = 1,
			      .run = bench_nothing, .cost = { 1024, 12288 } };

		alone = time_tracker(ctx, &op, recs, iters, ops);
		without = time_run(ctx, &op, iters, ops, false);
		with = time_run(ctx, &op, iters, ops, true);
	}
	tmm_ctx_destroy(ctx);

	accesses = 3.0 * (double)iters * (double)ops;
	bench_describe_machine(machine, sizeof(machine));
	printf("access tracker cost (2 inputs + 1 output per op)\n");
	printf("  tracker alone        : %6.1f ns per recorded access\n",
	       alone * 1e9 / accesses);
	printf("  tmm_run, tracking on : %6.1f ns per op\n",
	       with * 1e9 / (accesses / 3));
	printf("  tmm_run, tracking off: %6.1f ns per op\n",
	       without * 1e9 / (accesses / 3));
	printf("  difference           : %6.1f ns per recorded access "
	       "(tracker + lineage + plan check)\n",
	       (with - without) * 1e9 / accesses);
	printf("  target               : < 50 ns per recorded access -> %s\n",
	       alone * 1e9 / accesses < 50 ? "met" : "NOT met");
	printf("how: %ld timed iterations of %ld ops after one that sizes the "
	       "arrays, CLOCK_MONOTONIC wall time, sim backend holding the "
	       "tensors (real CPU time, not simulated); %s\n",
	       iters, ops, machine);
	return 0;
}
