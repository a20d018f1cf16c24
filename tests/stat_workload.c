/* SPDX-License-Identifier: MIT */
/*
 * stat_workload.c — a small training-shaped run for the tensormm-stat
 * tests: a chain of layers forward, then backward, on a budget that
 * forces swapping, so its trace and its live segment have something to
 * show.
 *
 *   stat_workload [--handmade|--collective] CONFIG ITERATIONS
 *                 [HOLD_S|crash READY_FILE]
 *
 * With --collective, each gradient is all-reduced (an op of kind
 * TMM_OP_COLLECTIVE, 1 MiB on the network; one rank, so its callback
 * leaves the bytes as they are) right after the backward that made it,
 * so the trace has collectives for tensormm-stat to show.
 * With --handmade, a plan made here by rule is installed after the first
 * iteration: each activation is evicted after its forward use until its
 * backward use, alternately dropped (recomputed when needed) and swapped
 * (prefetched two accesses ahead), so the trace also holds drops,
 * recomputations and planned swaps and prefetches.
 * With HOLD_S it keeps iterating for HOLD_S seconds after writing its pid
 * to READY_FILE, so a reader can watch it (or until READY_FILE.stop
 * exists, then ends normally); with "crash" it writes its pid
 * and waits to be killed, so its context is never destroyed, as in a
 * process that crashed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "tensormm.h"
#include "lib/record/tracker.h"

#define LAYERS 6
#define ELEMS 4096 /* floats per tensor: 16 KiB */

static int layer_fwd(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const float *x = in[0], *w = in[1];
	float *y = out[0];

	(void)user;
	(void)stream;
	for (int i = 0; i < ELEMS; i++)
		y[i] = x[i] * 0.5f + w[i];
	return 0;
}

static int layer_bwd(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const float *g = in[0], *x = in[1];
	float *gx = out[0];

	(void)user;
	(void)stream;
	for (int i = 0; i < ELEMS; i++)
		gx[i] = g[i] * 0.5f + x[i] * 0.001f;
	return 0;
}

/* One rank's all-reduce: its own sum, the bytes as they are. */
static int allreduce_self(void *const *in, void *const *out, void *user,
			  void *stream)
{
	(void)in;
	(void)out;
	(void)user;
	(void)stream;
	return 0;
}

static bool collectives; /* --collective */

static int allreduce(tmm_ctx *ctx, const char *name, tmm_tensor g)
{
	tmm_op op = {
		.name = name, .kind = TMM_OP_COLLECTIVE,
		.inputs = &g, .n_inputs = 1, .outputs = &g, .n_outputs = 1,
		.run = allreduce_self,
		.cost = { .bytes = 2.0 * ELEMS * 4, .net_bytes = 1 << 20 },
	};
	int rc = tmm_run(ctx, &op);

	if (rc < 0)
		fprintf(stderr, "stat_workload: %s: %s\n", name,
			tmm_last_error(ctx));
	return rc;
}

static int run(tmm_ctx *ctx, const char *name, unsigned flags,
	       tmm_run_fn fn, tmm_tensor a, tmm_tensor b, tmm_tensor out)
{
	tmm_tensor in[2] = { a, b };
	tmm_op op = {
		.name = name, .kind = TMM_OP_MATMUL, .flags = flags,
		.inputs = in, .n_inputs = 2, .outputs = &out, .n_outputs = 1,
		.run = fn, .cost = { 2e6, 3.0 * ELEMS * 4 },
	};
	int rc = tmm_run(ctx, &op);

	if (rc < 0)
		fprintf(stderr, "stat_workload: %s: %s\n", name,
			tmm_last_error(ctx));
	return rc;
}

static int iteration(tmm_ctx *ctx, const tmm_tensor *w, tmm_tensor input)
{
	tmm_tensor x[LAYERS + 1], g[LAYERS + 1];
	char name[32];
	int rc = tmm_iteration_begin(ctx);

	x[0] = input;
	for (int l = 0; l < LAYERS && !rc; l++) {
		snprintf(name, sizeof(name), "act%d", l + 1);
		rc = tmm_tensor_create(ctx, ELEMS * 4, TMM_ACTIVATION, name,
				       &x[l + 1]);
		snprintf(name, sizeof(name), "fwd%d", l + 1);
		if (!rc)
			rc = run(ctx, name, TMM_OP_PURE, layer_fwd, x[l], w[l],
				 x[l + 1]);
	}
	g[LAYERS] = x[LAYERS];
	for (int l = LAYERS - 1; l >= 0 && !rc; l--) {
		snprintf(name, sizeof(name), "grad%d", l);
		rc = tmm_tensor_create(ctx, ELEMS * 4, TMM_GRADIENT, name,
				       &g[l]);
		snprintf(name, sizeof(name), "bwd%d", l);
		if (!rc)
			rc = run(ctx, name, TMM_OP_BACKWARD, layer_bwd,
				 g[l + 1], x[l], g[l]);
		snprintf(name, sizeof(name), "allreduce%d", l);
		if (!rc && collectives)
			rc = allreduce(ctx, name, g[l]);
	}
	for (int l = 1; l <= LAYERS; l++)
		tmm_tensor_destroy(ctx, x[l]);
	for (int l = 0; l < LAYERS; l++)
		tmm_tensor_destroy(ctx, g[l]);
	if (!rc)
		rc = tmm_iteration_end(ctx);
	return rc;
}

/* The rule of --handmade; returns 0 or a negative errno. */
static int make_plan(const struct tmm_trace *t, struct tmm_plan *plan)
{
	unsigned n = 0;
	int rc = tmm_plan_init(plan, t, "handmade");

	for (uint32_t i = 0; i < t->n_tensors && !rc; i++) {
		uint32_t first = TMM_TRACE_NONE, next = TMM_TRACE_NONE;
		uint64_t key = t->tensors[i].key;

		if (t->tensors[i].kind != TMM_ACTIVATION)
			continue;
		/* Its first access after the one that made it, and the
		 * one after that: the forward read and the backward read. */
		for (uint32_t a = 0, seen = 0; a < t->n_accesses; a++) {
			if (t->accesses[a].tensor != i)
				continue;
			if (seen == 1)
				first = a;
			else if (seen == 2)
				next = a;
			seen++;
		}
		if (next == TMM_TRACE_NONE || next - first < 4)
			continue;
		if (n++ % 2 == 0 &&
		    tmm_plan_droppable(t, i, first, NULL) == TMM_DROP_OK) {
			rc = tmm_plan_add(plan, TMM_ACT_EVICT_DROP, first, key,
					  next, 0);
		} else {
			rc = tmm_plan_add(plan, TMM_ACT_EVICT_SWAP, first, key,
					  next, 0);
			if (!rc)
				rc = tmm_plan_add(plan, TMM_ACT_PREFETCH,
						  next - 2, key, next, 0);
		}
	}
	if (!rc)
		tmm_plan_sort(plan);
	return rc;
}

int main(int argc, char **argv)
{
	static float init[ELEMS];
	tmm_tensor w[LAYERS], input;
	tmm_ctx *ctx;
	int iterations, rc;
	double hold = 0;

	bool handmade = argc > 1 && !strcmp(argv[1], "--handmade");

	collectives = argc > 1 && !strcmp(argv[1], "--collective");
	if (handmade || collectives) {
		argc--;
		argv++;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: stat_workload [--handmade|"
			"--collective] CONFIG ITERATIONS [HOLD_S|crash "
			"READY_FILE]\n");
		return 2;
	}
	iterations = atoi(argv[2]);
	rc = tmm_ctx_create(&ctx, argv[1]);
	if (rc < 0) {
		fprintf(stderr, "stat_workload: %s\n", tmm_last_error(NULL));
		return 1;
	}
	for (int i = 0; i < ELEMS; i++)
		init[i] = (float)(i % 7);
	for (int l = 0; l < LAYERS && !rc; l++) {
		rc = tmm_tensor_create(ctx, ELEMS * 4, TMM_PERSISTENT, "weight",
				       &w[l]);
		if (!rc)
			rc = tmm_tensor_write(ctx, w[l], 0, init, sizeof(init));
	}
	if (!rc)
		rc = tmm_tensor_create(ctx, ELEMS * 4, TMM_SCRATCH, "input",
				       &input);
	if (!rc)
		rc = tmm_tensor_write(ctx, input, 0, init, sizeof(init));
	for (int i = 0; i < iterations && !rc; i++) {
		rc = iteration(ctx, w, input);
		if (i == 0 && handmade && !rc) {
			struct tmm_plan plan;

			rc = make_plan(tmm_tracker_first(ctx), &plan);
			if (!rc)
				rc = tmm_guide_install(ctx, &plan);
			tmm_plan_free(&plan);
		}
	}
	if (argc > 4 && !strcmp(argv[3], "crash") && !rc) {
		FILE *ready = fopen(argv[4], "w");

		if (ready) {
			fprintf(ready, "%d\n", (int)getpid());
			fclose(ready);
		}
		for (;;)
			pause(); /* until killed, context and all */
	}
	if (argc > 4 && !rc) {
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		char stop[4096];
		FILE *ready = fopen(argv[4], "w");

		hold = atof(argv[3]);
		if (ready) {
			fprintf(ready, "%d\n", (int)getpid());
			fclose(ready);
		}
		snprintf(stop, sizeof(stop), "%s.stop", argv[4]);
		for (double t = 0; t < hold && !rc; t += 0.02) {
			if (access(stop, F_OK) == 0)
				break;
			rc = iteration(ctx, w, input);
			nanosleep(&nap, NULL);
		}
	}
	if (rc < 0)
		fprintf(stderr, "stat_workload: %s\n", tmm_last_error(ctx));
	tmm_ctx_destroy(ctx);
	return rc < 0 ? 1 : 0;
}
