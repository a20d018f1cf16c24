/* SPDX-License-Identifier: MIT */
/*
 * bench_run.c — the runtime's own cost per op (a benchmark, not a test).
 *
 * Measures the real CPU time of tmm_run on this machine for ops whose
 * tensors are all resident and that fire no plan action: what libtensormm
 * adds to every op of a training step (handle checks, pinning, residency,
 * LRU bookkeeping, the backend's kernel bracket).  The op itself does no
 * work, so the figure is all overhead.  Target: < 1 µs per op.
 *
 *   bench/bench_run [ops]        (default 2,000,000)
 *
 * The simulated device is used only to hold the tensors; the times printed
 * here are measured wall-clock times, not simulated ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "machine.h"
#include "tensormm.h"

/* Times `ops` calls of one op shape; returns ns per op. */
static double time_ops(tmm_ctx *ctx, const tmm_op *op, long ops)
{
	double t0;

	for (long k = 0; k < ops / 10; k++) /* warm up */
		tmm_run(ctx, op);
	t0 = bench_now_s();
	for (long k = 0; k < ops; k++) {
		if (tmm_run(ctx, op) != 0) {
			fprintf(stderr, "bench_run: %s\n", tmm_last_error(ctx));
			exit(1);
		}
	}
	return (bench_now_s() - t0) * 1e9 / (double)ops;
}

int main(int argc, char **argv)
{
	long ops = argc > 1 ? atol(argv[1]) : 2000000;
	tmm_ctx *ctx;
	tmm_tensor t[8];
	char machine[384];
	double ns3, ns8;

	if (ops <= 0) {
		fprintf(stderr, "usage: bench_run [ops > 0]\n");
		return 2;
	}
	if (tmm_ctx_create(&ctx, "backend=sim,mode=swap,sim_memory=backed,"
				 "budget=64MiB") != 0) {
		fprintf(stderr, "bench_run: %s\n", tmm_last_error(NULL));
		return 1;
	}
	for (int i = 0; i < 8; i++) {
		static const float one = 1.0f;

		tmm_tensor_create(ctx, 4096, TMM_ACTIVATION, NULL, &t[i]);
		tmm_tensor_write(ctx, t[i], 0, &one, sizeof(one));
	}
	{
		tmm_op op3 = { .name = "bench3", .kind = TMM_OP_ELEMENTWISE,
			       .inputs = t, .n_inputs = 2,
			       .outputs = t + 2, .n_outputs = 1,
			       .run = bench_nothing, .cost = { 1024, 12288 } };
		tmm_op op8 = { .name = "bench8", .kind = TMM_OP_MATMUL,
			       .inputs = t, .n_inputs = 6,
			       .outputs = t + 6, .n_outputs = 2,
			       .run = bench_nothing, .cost = { 1024, 12288 } };

		ns3 = time_ops(ctx, &op3, ops);
		ns8 = time_ops(ctx, &op8, ops);
	}
	tmm_ctx_destroy(ctx);

	bench_describe_machine(machine, sizeof(machine));
	printf("tmm_run overhead per op, no plan actions, all tensors "
	       "resident\n");
	printf("  2 inputs + 1 output : %7.1f ns/op\n", ns3);
	printf("  6 inputs + 2 outputs: %7.1f ns/op\n", ns8);
	printf("  target              : < 1000 ns/op  -> %s\n",
	       ns3 < 1000 && ns8 < 1000 ? "met" : "NOT met");
	printf("how: %ld timed calls per shape after %ld warm-up calls, "
	       "CLOCK_MONOTONIC wall time, sim backend holding the tensors "
	       "(real CPU time, not simulated); %s\n",
	       ops, ops / 10, machine);
	return 0;
}
