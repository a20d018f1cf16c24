/* SPDX-License-Identifier: MIT */
/*
 * mlp_dp.c — data-parallel training of the MLP of mlp_model.h: one
 * process per rank, each in its own context under its own budget.
 *
 *   mpirun -np N examples/mlp_dp [--batch B] [--accumulate M] [--zero 1]
 *                                [--steps S] [--layers L] [--width W]
 *                                [--bucket-kib K] [--transport mpi|nccl]
 *
 * Each of the N ranks trains B/N samples of every step (in M
 * micro-batches of B/(N x M) with --accumulate M); after the backward of
 * each bucket of layers, its gradients are reduced across ranks by one
 * TMM_OP_COLLECTIVE op and its parameters updated (dp_grads.h).  The
 * reduction sums in rank order, so `mpirun -np N mlp_dp --batch B` and
 * `mlp_dp --batch B --accumulate N` (one process, no MPI) end with the
 * same weights, bit for bit, under any policy, mode and budget.  The last
 * line is "weights digest: <16 hex digits>", over every parameter.
 *
 * The context of each rank takes the TENSORMM_* tunables as usual
 * (tensormm(7)), on top of "sim_memory=backed": on the sim the
 * collectives run MPI on host memory.  On the cuda backend, a build
 * with NCCL runs them with NCCL on the collective's stream (dp_nccl.c),
 * or, with --transport mpi, copies them to the host and runs the sim's
 * MPI collectives there (dp_staged.c), so that ranks may share a GPU.
 * docs/scaling.md says how to launch it and what crosses which link.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_run.h"
#include "dp_comm.h"
#include "dp_grads.h"
#include "dp_cuda.h"
#include "dp_mlp.h"
#include "dp_report.h"
#include "mlp_model.h"
#include "tensormm.h"

/* NCCL where this build has it: the fast path, one GPU a rank. */
#ifdef MLP_DP_NCCL
#define DEFAULT_TRANSPORT "nccl"
#else
#define DEFAULT_TRANSPORT "mpi"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: [mpirun -np N] mlp_dp [--batch B] [--accumulate M] "
		"[--zero 0|1]\n"
		"              [--steps S] [--layers L] [--width W] "
		"[--bucket-kib K]\n"
		"              [--transport mpi|nccl]\n"
		"  --batch B       samples per step over all ranks; a multiple"
		" of N x M\n"
		"                  (default 64)\n"
		"  --accumulate M  micro-batches per rank and step, their "
		"gradients summed\n"
		"                  in order (default 1): one process with "
		"--accumulate N\n"
		"                  gives the weights of N ranks\n"
		"  --zero 0|1      1: ZeRO stage 1, each rank keeps the "
		"optimizer state of\n"
		"                  1/N of the parameters (default 0); same "
		"weights\n"
		"  --steps S       training steps (default 4)\n"
		"  --layers L      hidden layers, 1 to 63 (default 3)\n"
		"  --width W       units per hidden layer (default 64)\n"
		"  --bucket-kib K  gradients per all-reduce, in KiB: a bucket "
		"closes at K\n"
		"                  (default 64)\n"
		"  --transport T   how the cuda backend's collectives move "
		"gradients: nccl,\n"
		"                  NCCL on the device (one GPU a rank), or "
		"mpi, staged\n"
		"                  through host memory and MPI (ranks may "
		"share a GPU);\n"
		"                  default " DEFAULT_TRANSPORT " on cuda (the "
		"sim has only mpi)\n"
		"Each rank's context takes the TENSORMM_* tunables "
		"(tensormm(7)).  The last\n"
		"line is \"weights digest: <16 hex digits>\" over every "
		"parameter.\n");
}

struct dp_args {
	unsigned batch, accumulate, steps, layers, width, bucket_kib;
	const char *zero;
	const char *transport;	/* "mpi", "nccl" or NULL: the default */
};

/* Checks the flags against the world; says what to change.  0 or 2. */
static int check_args(const struct dp_args *a, const struct dp_comm *c)
{
	if (strcmp(a->zero, "0") && strcmp(a->zero, "1")) {
		fprintf(stderr, "mlp_dp: --zero takes 0 or 1, not '%s'\n",
			a->zero);
		return 2;
	}
	if (a->transport && strcmp(a->transport, "mpi") &&
	    strcmp(a->transport, "nccl")) {
		fprintf(stderr, "mlp_dp: --transport takes mpi or nccl, not "
			"'%s'\n", a->transport);
		return 2;
	}
	return dp_check_batch("mlp_dp", a->batch, a->accumulate, c);
}

/* Ends what the cuda transport t set up (none, t NULL, on the sim). */
static void transport_close(struct dp_setup *s,
			    const struct dp_cuda_transport *t)
{
	if (t)
		t->close(s);
}

/* Makes the rank's context; stops every rank where it cannot. */
static tmm_ctx *open_context(const struct dp_comm *c)
{
	tmm_ctx *ctx;

	if (tmm_ctx_create(&ctx, "sim_memory=backed")) {
		fprintf(stderr, "mlp_dp: rank %d: cannot create a context: "
			"%s\n", c->rank, tmm_last_error(NULL));
		dp_comm_abort(c, 1);
	}
	return ctx;
}

/*
 * Makes the rank's context *ctx and sets s (and mc's kernels) up for its
 * backend and --transport; *t is the cuda transport (NULL on the sim).
 * On cuda the
 * transport's own device memory (cuBLAS's workspace, NCCL's buffers)
 * comes first: in mode=swap a context takes its budget of the device in
 * one allocation when it is made (lib/mem/pool.h), the whole device with
 * the default budget or with budget=N%peak until the first iteration has
 * measured the peak.  So a first context only tells the backend and the
 * device, and goes; the one that trains is made after.  0, or 1 with the
 * reason on stderr.
 */
static int open_transport(const struct dp_comm *c, struct mlp_config *mc,
			  const struct dp_args *a, tmm_ctx **ctx,
			  struct dp_setup *s,
			  const struct dp_cuda_transport **t)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	bool nccl;
	int rc;

	*t = NULL;
	*ctx = open_context(c);
	tmm_stats_get(*ctx, &st);
	nccl = a->transport ? !strcmp(a->transport, "nccl")
			    : !strcmp(st.backend, "cuda") &&
				      !strcmp(DEFAULT_TRANSPORT, "nccl");
	if (strcmp(st.backend, "cuda")) {
		if (!nccl)
			return 0;
		fprintf(stderr, "mlp_dp: rank %d: --transport nccl needs the "
			"cuda backend, and the context is on %s: give "
			"--transport mpi, or TENSORMM_BACKEND=cuda\n", c->rank,
			st.backend);
		return 1;
	}
	tmm_ctx_destroy(*ctx);
	*ctx = NULL;
	/* check_args took only these two names */
	*t = dp_cuda_transport(nccl ? "nccl" : "mpi");
	if ((*t)->missing) {
		fprintf(stderr, "mlp_dp: rank %d: %s\n", c->rank,
			(*t)->missing);
		*t = NULL;
		return 1;
	}
	rc = (*t)->setup(c, mc, st.device_index, s);
	if (rc) {
		fprintf(stderr, "mlp_dp: rank %d: %s\n", c->rank,
			(*t)->why(rc));
		return 1;
	}
	*ctx = open_context(c);
	return 0;
}

/* Trains in ctx as rank c->rank with the transport of s; fills *fig.
 * 0, or 1 with the reason on stderr. */
static int train(tmm_ctx *ctx, const struct dp_comm *c, struct mlp_config *mc,
		 const struct dp_setup *s, struct dp_figures *fig)
{
	struct dp_setup ts = *s;
	struct dp_trainer *t = NULL;
	struct dp_mlp *dm = NULL;
	uint8_t *w = NULL;
	size_t len = 0;
	int rc;

	/* The transport has chosen the kernels (mc->kernels) by now. */
	rc = dp_mlp_open(ctx, mc, s->zero, &dm);
	if (rc == 0) {
		ts.model = dp_mlp_model(dm);
		ts.micro = mc->micro;
		rc = dp_trainer_open(ctx, &ts, &t);
	}
	if (rc == 0)
		dp_mlp_attach(dm, t);
	mc->after_backward = dp_mlp_after_backward;
	mc->after_backward_arg = dm;
	if (rc == 0)
		rc = mlp_train(ctx, mc, NULL, &w, &len,
			       c->rank == 0 ? stdout : NULL);
	if (rc) {
		const char *op = dp_trainer_failed(t);

		fprintf(stderr,
			"mlp_dp: rank %d: training failed%s%s: %s (%s)\n",
			c->rank, op ? " in " : "", op ? op : "",
			tmm_last_error(ctx), tmm_strerror(rc));
		dp_trainer_close(ctx, t);
		dp_mlp_close(ctx, dm);
		return 1;
	}
	if (c->rank == 0)
		printf("%u bucket(s) of gradients a step\n",
		       dp_trainer_buckets(t));
	fig->net = (unsigned long long)dp_trainer_net_bytes(t);
	dp_trainer_close(ctx, t);
	dp_mlp_close(ctx, dm);
	dp_figures_fill(ctx, w, len, fig);
	free(w);
	return 0;
}

int main(int argc, char **argv)
{
	struct dp_args a = { .batch = 64, .accumulate = 1, .steps = 4,
			     .layers = 3, .width = 64, .bucket_kib = 64,
			     .zero = "0", .transport = NULL };
	const struct demo_opt opts[] = {
		{ "--batch", DEMO_COUNT, &a.batch, 0 },
		{ "--accumulate", DEMO_COUNT, &a.accumulate, 1024 },
		{ "--zero", DEMO_TEXT, &a.zero, 1 },
		{ "--steps", DEMO_COUNT, &a.steps, 0 },
		{ "--layers", DEMO_COUNT, &a.layers, 63 },
		{ "--width", DEMO_COUNT, &a.width, 0 },
		{ "--bucket-kib", DEMO_COUNT, &a.bucket_kib, 1u << 20 },
		{ "--transport", DEMO_TEXT, &a.transport, 4 },
	};
	struct dp_figures fig = { 0 };
	struct mlp_config mc;
	struct dp_setup s;
	struct dp_comm c;
	tmm_ctx *ctx;
	const struct dp_cuda_transport *t;
	int rc;

	rc = demo_parse_args("mlp_dp", argc, argv, opts,
			     sizeof(opts) / sizeof(opts[0]), usage);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (dp_comm_open(&c, &argc, &argv))
		return 1;
	if ((rc = check_args(&a, &c))) {
		dp_comm_close(&c);
		return rc;
	}

	mlp_config_default(&mc);
	mc.batch = a.batch / ((unsigned)c.size * a.accumulate);
	mc.micro = a.accumulate;
	mc.shards = (unsigned)c.size;
	mc.shard = (unsigned)c.rank;
	mc.steps = a.steps;
	mc.layers = a.layers;
	mc.width = a.width;
	if (c.rank == 0)
		printf("mlp_dp: %d rank(s) x %u micro-batch(es) of %u "
		       "samples (batch %u), %u hidden layers of %u, ZeRO-1 "
		       "%s\n", c.size, a.accumulate, mc.batch, a.batch,
		       a.layers, a.width, strcmp(a.zero, "1") ? "off" : "on");

	s = (struct dp_setup){
		.comm = &c, .transport = dp_host_transport(),
		.bucket_bytes = (size_t)a.bucket_kib * 1024,
		.zero = !strcmp(a.zero, "1"),
	};
	/* A rank that fails stops them all: the others would wait in the
	 * next collective for ever.  Its context goes first, or its
	 * statistics segment (stats_shm) would outlive the process. */
	if (open_transport(&c, &mc, &a, &ctx, &s, &t) ||
	    train(ctx, &c, &mc, &s, &fig)) {
		if (ctx)
			tmm_ctx_destroy(ctx);
		dp_comm_abort(&c, 1);
	}
	transport_close(&s, t);
	{
		struct tmm_stats st = { .version = TMM_STATS_VERSION };

		tmm_stats_get(ctx, &st);
		dp_report("mlp_dp", &c, &fig, st.simulated != 0);
	}
	tmm_ctx_destroy(ctx);
	dp_finish("mlp_dp", &c, fig.digest);
	dp_comm_close(&c);
	return 0;
}
