/* SPDX-License-Identifier: MIT */
/*
 * gpt_dp.c — data-parallel training of the GPT of gpt_model.h on the
 * sim: one process per rank, each in its own context under its own
 * budget.
 *
 *   mpirun -np N examples/gpt_dp [--batch B] [--accumulate M] [--steps S]
 *                                [--layers L] [--d-model D] [--seq T]
 *                                [--bucket-kib K]
 *
 * Each of the N ranks trains B/N sequences of every step (in M
 * micro-batches of B/(N x M) with --accumulate M).  The model hands each
 * parameter's gradients over as the backward pass finishes them
 * (gpt_config.after_grad); dp_grads.h groups them into buckets (the head
 * and the final norm, then transformer blocks from the last, then the
 * embeddings, which get buckets of their own), reduces each bucket
 * across ranks by one TMM_OP_COLLECTIVE op right after its backward, and
 * runs the model's own AdamW on its parameters.  The reduction sums in
 * rank order, so `mpirun -np N gpt_dp --batch B` and `gpt_dp --batch B
 * --accumulate N` (one process, no MPI) end with the same weights, bit
 * for bit, under any policy, mode and budget.  The last line is "weights
 * digest: <16 hex digits>", over every parameter.
 *
 * The context of each rank takes the TENSORMM_* tunables as usual
 * (tensormm(7)), on top of "sim_memory=backed": the GPT's kernels are
 * CPU loops and the collectives run MPI on host memory, so only the sim
 * backend runs it.  docs/scaling.md says how to launch it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_run.h"
#include "dp_comm.h"
#include "dp_grads.h"
#include "dp_report.h"
#include "gpt_model.h"
#include "tensormm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: [mpirun -np N] gpt_dp [--batch B] [--accumulate M] "
		"[--steps S]\n"
		"              [--layers L] [--d-model D] [--seq T] "
		"[--bucket-kib K]\n"
		"  --batch B       sequences per step over all ranks; a "
		"multiple of N x M\n"
		"                  (default 8)\n"
		"  --accumulate M  micro-batches per rank and step, their "
		"gradients summed\n"
		"                  in order (default 1): one process with "
		"--accumulate N\n"
		"                  gives the weights of N ranks\n"
		"  --steps S       training steps (default 4)\n"
		"  --layers L      transformer blocks, 1 to 64 (default 2)\n"
		"  --d-model D     model width, a multiple of the 4 heads "
		"(default 64)\n"
		"  --seq T         tokens per sequence (default 32)\n"
		"  --bucket-kib K  gradients per all-reduce, in KiB: a bucket "
		"closes after\n"
		"                  the block that brings it to K (default 64)\n"
		"Runs on the sim backend only.  Each rank's context takes the "
		"TENSORMM_*\n"
		"tunables (tensormm(7)).  The last line is \"weights digest: "
		"<16 hex digits>\"\n"
		"over every parameter.\n");
}

/*
 * The GPT as dp_grads.h sees it (gpt_param_layout's order and groups),
 * and the glue between the model's hook and the trainer.
 */
struct gpt_dp {
	struct dp_model model;
	size_t *floats;
	unsigned *group;
	bool *alone;		/* per group */
	struct dp_trainer *t;
	/* The model's AdamW of the step now running (gpt_grad.update). */
	int (*update)(tmm_ctx *ctx, unsigned param, tmm_tensor g, void *arg);
	void *update_arg;
};

/* dp_model.update: the model's own AdamW of this step. */
static int gpt_update(tmm_ctx *ctx, unsigned p, tmm_tensor w, tmm_tensor g,
		      void *arg)
{
	struct gpt_dp *d = arg;

	(void)w;
	return d->update(ctx, p, g, d->update_arg);
}

/* gpt_config.after_grad: hands one parameter's gradients over. */
static int gpt_after_grad(tmm_ctx *ctx, const struct gpt_grad *g, void *arg)
{
	struct gpt_dp *d = arg;

	d->update = g->update;
	d->update_arg = g->update_arg;
	return dp_grad_ready(ctx, d->t, g->param, g->micro, g->w, g->g);
}

static void gpt_dp_free(struct gpt_dp *d)
{
	free(d->floats);
	free(d->group);
	free(d->alone);
}

/* Describes gc's parameters to the trainer.  0 or -ENOMEM. */
static int gpt_dp_init(struct gpt_dp *d, const struct gpt_config *gc)
{
	unsigned n = gpt_param_layout(gc, NULL, NULL);
	unsigned groups = gc->layers + 2;

	*d = (struct gpt_dp){ 0 };
	d->floats = calloc(n, sizeof(*d->floats));
	d->group = calloc(n, sizeof(*d->group));
	d->alone = calloc(groups, sizeof(*d->alone));
	if (!d->floats || !d->group || !d->alone)
		return -ENOMEM;
	gpt_param_layout(gc, d->floats, d->group);
	/* The head (with the final norm) and the embeddings each get a
	 * bucket of their own: the head's collective then starts as soon
	 * as the backward begins, not after the last block's, and the last
	 * block's (block 0) does not wait for the embeddings' backward. */
	d->alone[0] = true;
	d->alone[groups - 1] = true;
	d->model = (struct dp_model){
		.n_params = n, .floats = d->floats, .group = d->group,
		.alone = d->alone, .update = gpt_update, .arg = d,
	};
	return 0;
}

struct args {
	unsigned batch, accumulate, steps, layers, d_model, seq, bucket_kib;
};

/* Trains in ctx as rank c->rank; fills *fig.  0, or 1 with the reason
 * on stderr. */
static int train(tmm_ctx *ctx, const struct dp_comm *c, struct gpt_config *gc,
		 const struct args *a, struct dp_figures *fig)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct gpt_dp d;
	struct dp_setup s = {
		.comm = c, .model = &d.model, .micro = a->accumulate,
		.transport = dp_host_transport(),
		.bucket_bytes = (size_t)a->bucket_kib * 1024,
	};
	uint8_t *w = NULL;
	size_t len = 0;
	int rc;

	tmm_stats_get(ctx, &st);
	if (strcmp(st.backend, "sim")) {
		fprintf(stderr, "gpt_dp: rank %d: the GPT's kernels are CPU "
			"loops on the sim's memory, and the context is on %s: "
			"give TENSORMM_BACKEND=sim\n", c->rank, st.backend);
		return 1;
	}
	rc = gpt_dp_init(&d, gc);
	if (rc == 0)
		rc = dp_trainer_open(ctx, &s, &d.t);
	gc->after_grad = gpt_after_grad;
	gc->after_grad_arg = &d;
	if (rc == 0)
		rc = gpt_train(ctx, gc, NULL, &w, &len,
			       c->rank == 0 ? stdout : NULL);
	if (rc) {
		const char *op = dp_trainer_failed(d.t);

		fprintf(stderr,
			"gpt_dp: rank %d: training failed%s%s: %s (%s)\n",
			c->rank, op ? " in " : "", op ? op : "",
			tmm_last_error(ctx), tmm_strerror(rc));
		dp_trainer_close(ctx, d.t);
		gpt_dp_free(&d);
		return 1;
	}
	if (c->rank == 0)
		printf("%u bucket(s) of gradients a step\n",
		       dp_trainer_buckets(d.t));
	fig->net = (unsigned long long)dp_trainer_net_bytes(d.t);
	dp_trainer_close(ctx, d.t);
	gpt_dp_free(&d);
	dp_figures_fill(ctx, w, len, fig);
	free(w);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { .batch = 8, .accumulate = 1, .steps = 4,
			  .layers = 2, .d_model = 64, .seq = 32,
			  .bucket_kib = 64 };
	const struct demo_opt opts[] = {
		{ "--batch", DEMO_COUNT, &a.batch, 0 },
		{ "--accumulate", DEMO_COUNT, &a.accumulate, 1024 },
		{ "--steps", DEMO_COUNT, &a.steps, 0 },
		{ "--layers", DEMO_COUNT, &a.layers, 64 },
		{ "--d-model", DEMO_COUNT, &a.d_model, 0 },
		{ "--seq", DEMO_COUNT, &a.seq, 0 },
		{ "--bucket-kib", DEMO_COUNT, &a.bucket_kib, 1u << 20 },
	};
	struct dp_figures fig = { 0 };
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct gpt_config gc;
	struct dp_comm c;
	tmm_ctx *ctx;
	int rc;

	rc = demo_parse_args("gpt_dp", argc, argv, opts,
			     sizeof(opts) / sizeof(opts[0]), usage);
	if (rc)
		return rc == 1 ? 0 : 2;
	gpt_config_default(&gc);
	if (a.d_model % gc.heads) {
		char v[16];

		snprintf(v, sizeof(v), "%u", a.d_model);
		return demo_bad_value("gpt_dp", "--d-model", v, usage);
	}
	if (dp_comm_open(&c, &argc, &argv))
		return 1;
	if ((rc = dp_check_batch("gpt_dp", a.batch, a.accumulate, &c))) {
		dp_comm_close(&c);
		return rc;
	}

	gc.batch = a.batch / ((unsigned)c.size * a.accumulate);
	gc.micro = a.accumulate;
	gc.shards = (unsigned)c.size;
	gc.shard = (unsigned)c.rank;
	gc.steps = a.steps;
	gc.layers = a.layers;
	gc.d_model = a.d_model;
	gc.seq = a.seq;
	if (c.rank == 0)
		printf("gpt_dp: %d rank(s) x %u micro-batch(es) of %u "
		       "sequences of %u tokens (batch %u), %u blocks, d_model "
		       "%u\n", c.size, a.accumulate, gc.batch, a.seq, a.batch,
		       a.layers, a.d_model);

	/* A rank that fails stops them all: the others would wait in the
	 * next collective for ever. */
	if (tmm_ctx_create(&ctx, "sim_memory=backed")) {
		fprintf(stderr, "gpt_dp: rank %d: cannot create a context: "
			"%s\n", c.rank, tmm_last_error(NULL));
		dp_comm_abort(&c, 1);
	}
	/* The context goes before the abort, or its statistics segment
	 * (stats_shm) would outlive the process. */
	if (train(ctx, &c, &gc, &a, &fig)) {
		tmm_ctx_destroy(ctx);
		dp_comm_abort(&c, 1);
	}
	tmm_stats_get(ctx, &st);
	dp_report("gpt_dp", &c, &fig, st.simulated != 0);
	tmm_ctx_destroy(ctx);
	dp_finish("gpt_dp", &c, fig.digest);
	dp_comm_close(&c);
	return 0;
}
