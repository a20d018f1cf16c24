/* SPDX-License-Identifier: MIT */
/*
 * bench_stats_shm.c — what live statistics cost the hot path (a
 * benchmark, not a test).
 *
 * Three figures, each the best of several runs because the machine is
 * shared: the per-op hook alone (a coarse clock read, and a publication
 * whenever a millisecond has passed, so the publications are included,
 * spread over the ops of their millisecond); one publication on its own
 * (tmm_stats_get plus the seqlock write); and tmm_run of a do-nothing op
 * with stats_shm off and on, in alternation.
 *
 *   bench/bench_stats_shm [ops]        (default 2,000,000)
 *
 * The times are measured wall-clock times on this machine.
 */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "lib/core/context.h"
#include "machine.h"
#include "lib/exec/stats_shm.h"
#include "tensormm.h"

#define RUNS 7

static int nothing(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)in;
	(void)out;
	(void)user;
	(void)stream;
	return 0;
}

static tmm_ctx *make(const char *config, tmm_tensor *t, tmm_op *op)
{
	static const float one = 1.0f;
	tmm_ctx *ctx;

	if (tmm_ctx_create(&ctx, config) != 0) {
		fprintf(stderr, "bench_stats_shm: %s\n", tmm_last_error(NULL));
		exit(1);
	}
	for (int i = 0; i < 3; i++) {
		tmm_tensor_create(ctx, 4096, TMM_ACTIVATION, NULL, &t[i]);
		tmm_tensor_write(ctx, t[i], 0, &one, sizeof(one));
	}
	*op = (tmm_op){ .name = "bench", .kind = TMM_OP_ELEMENTWISE,
			.inputs = t, .n_inputs = 2, .outputs = t + 2,
			.n_outputs = 1, .run = nothing,
			.cost = { 1024, 12288 } };
	return ctx;
}

static double run_ns(tmm_ctx *ctx, const tmm_op *op, long ops)
{
	double t0 = bench_now_s();

	for (long k = 0; k < ops; k++)
		if (tmm_run(ctx, op) != 0) {
			fprintf(stderr, "bench_stats_shm: %s\n",
				tmm_last_error(ctx));
			exit(1);
		}
	return (bench_now_s() - t0) * 1e9 / (double)ops;
}

int main(int argc, char **argv)
{
	long ops = argc > 1 ? atol(argv[1]) : 2000000;
	double hook = 1e9, publish = 1e9, off = 1e9, on = 1e9, t0, ns;
	tmm_tensor ta[3], tb[3];
	tmm_op opa, opb;
	tmm_ctx *a, *b;
	char machine[384];

	if (ops <= 0) {
		fprintf(stderr, "usage: bench_stats_shm [ops > 0]\n");
		return 2;
	}
	a = make("backend=sim,budget=64MiB,stats_shm=off", ta, &opa);
	b = make("backend=sim,budget=64MiB,stats_shm=on", tb, &opb);
	if (!tmm_stats_shm_name(b)[0]) {
		fprintf(stderr, "bench_stats_shm: no segment (see the "
			"warning above)\n");
		return 1;
	}
	for (int r = 0; r < RUNS; r++) {
		t0 = bench_now_s();
		for (long k = 0; k < ops; k++)
			tmm_stats_shm_op(b);
		ns = (bench_now_s() - t0) * 1e9 / (double)ops;
		hook = ns < hook ? ns : hook;

		t0 = bench_now_s();
		for (long k = 0; k < ops / 20; k++)
			tmm_stats_shm_publish(b);
		ns = (bench_now_s() - t0) * 1e9 / (double)(ops / 20);
		publish = ns < publish ? ns : publish;

		ns = run_ns(a, &opa, ops);
		off = ns < off ? ns : off;
		ns = run_ns(b, &opb, ops);
		on = ns < on ? ns : on;
	}
	tmm_ctx_destroy(a);
	tmm_ctx_destroy(b);

	bench_describe_machine(machine, sizeof(machine));
	printf("live statistics (stats_shm) cost, best of %d runs of %ld "
	       "ops\n", RUNS, ops);
	printf("  per-op hook (clock check + publications every 1 ms): "
	       "%6.1f ns/op\n", hook);
	printf("  one publication (tmm_stats_get + seqlock write)    : "
	       "%6.1f ns\n", publish);
	printf("  tmm_run, 2 inputs + 1 output, stats_shm=off        : "
	       "%6.1f ns/op\n", off);
	printf("  tmm_run, 2 inputs + 1 output, stats_shm=on         : "
	       "%6.1f ns/op\n", on);
	printf("measured wall-clock times on %s\n", machine);
	return 0;
}
