/* SPDX-License-Identifier: MIT */
/*
 * bench_scaling.c — data-parallel scaling on the simulated GPU (issue 26
 * §5): one context plays one rank, since the ranks of a data-parallel
 * job are symmetric.  SIMULATED figures only.
 *
 *   bench/bench_scaling [--profile P] [--models m,...] [--batch B]
 *                       [--ranks 1,2,4,8] [--budgets 30,50]
 *                       [--bucket MiB] [--policy P] [--iterations I]
 *
 * Each rank trains batch/N samples (strong scaling: the global batch is
 * fixed), on phantom sim memory.  Its weight gradients are all-reduced in
 * buckets of about --bucket MiB (DDP's default, 25): an op of kind
 * TMM_OP_COLLECTIVE over the bucket's gradients, issued right after the
 * backward op that fills the bucket, and before any optimizer step that
 * reads one of them, with cost.net_bytes 2(N-1)/N x the bucket's bytes
 * (a ring all-reduce).  The budget is a fraction of the rank's own
 * unconstrained peak.  Per model, rank count and budget it prints:
 *
 *   step      the simulated step time (the last iteration)
 *   coll      time the collectives held the network (the sim's counter)
 *   exposed   step time less the same run's with no collectives: what
 *             the collectives added to the step
 *   eff       scaling efficiency, T(1) / (N x T(N)), T(1) the one-rank
 *             step at the same budget fraction (--ranks must start at 1)
 *   ideal     the ideal's efficiency: compute alone (the unconstrained
 *             step with no collectives at batch/N), plus what the ring
 *             all-reduce cannot hide: the last bucket's (latency + its
 *             bytes x 2(N-1)/N / net bandwidth), which no backward work
 *             follows; over the one-rank unconstrained step
 *   of_ideal  eff / ideal
 *   peak      the most device bytes one rank held
 *
 * Not modelled: congestion across nodes (every rank has the profile's
 * per-rank bandwidth whatever N) and stragglers (every rank is this one).
 * A collective's network part runs beside the later backward ops, as
 * DDP's all-reduce does; what reads its gradients waits for it
 * (docs/sim-network.md, which has the profile's network and its
 * sources).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drive.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/sim_profile.h"
#include "lib/core/context.h"
#include "tensormm.h"
#include "zoo.h"

#define MAX_LIST 8

struct opts {
	const char *profile;
	const char *models[MAX_LIST];
	unsigned n_models;
	unsigned batch;
	unsigned ranks[MAX_LIST], n_ranks;
	unsigned budgets[MAX_LIST], n_budgets; /* percent of the peak */
	double bucket_mib;
	const char *policy;
	unsigned iterations;
};

/* ------------------------------------------------------------------------
 * Buckets: collectives added to a finished graph
 * ---------------------------------------------------------------------- */

static bool reads(const struct zgraph *g, uint32_t i, zg_t t)
{
	const zg_t *in = zg_inputs(g, i);

	for (uint32_t k = 0; k < g->op[i].n_in; k++)
		if (in[k] == t)
			return true;
	return false;
}

/* Appends ids[0..n) twice (inputs, then the same as outputs) to g->ids. */
static int append_ids(struct zgraph *g, const zg_t *ids, uint32_t n,
		      uint64_t *at)
{
	uint64_t need = g->nids + 2 * (uint64_t)n;

	if (need > g->cids) {
		zg_t *p = realloc(g->ids, need * sizeof(*p));

		if (!p)
			return -ENOMEM;
		g->ids = p;
		g->cids = need;
	}
	if (need > g->csliced) {
		unsigned char *q = realloc(g->sliced, need);

		if (!q)
			return -ENOMEM;
		memset(q + g->csliced, 0, need - g->csliced);
		g->sliced = q;
		g->csliced = need;
	}
	*at = g->nids;
	memcpy(g->ids + g->nids, ids, n * sizeof(*ids));
	memcpy(g->ids + g->nids + n, ids, n * sizeof(*ids));
	memset(g->sliced + g->nids, 0, 2 * (size_t)n);
	g->nids = need;
	return 0;
}

struct bucketing {
	zg_t *pending;	      /* gradients not yet all-reduced */
	uint32_t n_pending;
	uint64_t bytes;	      /* theirs */
	uint64_t last_bytes;  /* the last bucket flushed */
	uint32_t buckets;
	struct zg_op *ops;    /* the new op list */
	uint32_t nops;
	uint32_t *new_index;  /* old op -> new op */
};

/* Emits the pending bucket as one collective op. */
static int flush(struct zgraph *g, struct bucketing *b, unsigned ranks)
{
	struct zg_op *op = &b->ops[b->nops];
	uint64_t at;
	int rc;

	if (!b->n_pending)
		return 0;
	rc = append_ids(g, b->pending, b->n_pending, &at);
	if (rc < 0)
		return rc;
	memset(op, 0, sizeof(*op));
	snprintf(op->name, sizeof(op->name), "allreduce%u", b->buckets);
	op->kind = TMM_OP_COLLECTIVE;
	op->flags = TMM_OP_BACKWARD;
	op->in_at = at;
	op->out_at = at + b->n_pending;
	op->n_in = op->n_out = b->n_pending;
	/* The reduction's arithmetic: read the bucket, add, write. */
	op->bytes = 3.0 * (double)b->bytes;
	op->flops = (double)b->bytes / 4;
	op->net_bytes = 2.0 * (ranks - 1) / ranks * (double)b->bytes;
	op->ws = ZG_NONE;
	b->nops++;
	b->buckets++;
	b->last_bytes = b->bytes;
	b->n_pending = 0;
	b->bytes = 0;
	return 0;
}

/*
 * Adds bucketed all-reduces to g (see the header).  With one rank there
 * is nothing to reduce and g stays as it is.  *last_bucket receives the
 * bytes of the last bucket.  Returns 0 or -ENOMEM.
 */
static int add_collectives(struct zgraph *g, unsigned ranks,
			   uint64_t bucket_bytes, uint64_t *last_bucket)
{
	struct bucketing b = { 0 };
	bool *weight_grad = calloc(g->nt ? g->nt : 1, sizeof(bool));
	int rc = 0;

	*last_bucket = 0;
	if (!weight_grad)
		return -ENOMEM;
	/* A weight gradient: what an optimizer step reads, bar the weight
	 * and its state (persistent). */
	for (uint32_t i = 0; i < g->nop; i++) {
		const zg_t *in = zg_inputs(g, i);

		if (g->op[i].kind != TMM_OP_OPTIMIZER)
			continue;
		for (uint32_t k = 0; k < g->op[i].n_in; k++)
			if (g->t[in[k]].kind == TMM_GRADIENT)
				weight_grad[in[k]] = true;
	}
	b.pending = calloc(g->nt ? g->nt : 1, sizeof(zg_t));
	b.ops = calloc(2 * (size_t)g->nop + 1, sizeof(*b.ops));
	b.new_index = calloc(g->nop + 1, sizeof(uint32_t));
	if (!b.pending || !b.ops || !b.new_index) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < g->nop && rc == 0 && ranks > 1; i++) {
		const struct zg_op *op = &g->op[i];
		const zg_t *out = zg_outputs(g, i);

		/* An optimizer step waits for its gradient's all-reduce. */
		for (uint32_t k = 0; k < b.n_pending && rc == 0; k++)
			if (op->kind == TMM_OP_OPTIMIZER &&
			    reads(g, i, b.pending[k]))
				rc = flush(g, &b, ranks);
		if (rc < 0)
			break;
		b.new_index[i] = b.nops;
		b.ops[b.nops++] = *op;
		if (!(op->flags & TMM_OP_BACKWARD))
			continue;
		for (uint32_t k = 0; k < op->n_out; k++) {
			bool seen = false;

			if (!weight_grad[out[k]])
				continue;
			for (uint32_t j = 0; j < b.n_pending; j++)
				seen |= b.pending[j] == out[k];
			if (seen)
				continue;
			b.pending[b.n_pending++] = out[k];
			b.bytes += g->t[out[k]].bytes;
		}
		if (b.bytes >= bucket_bytes)
			rc = flush(g, &b, ranks);
	}
	if (rc == 0 && ranks > 1)
		rc = flush(g, &b, ranks);
	if (rc < 0 || ranks <= 1)
		goto out;
	/* Tensors name ops by index: renumber. */
	for (zg_t t = 0; t < g->nt; t++) {
		if (g->t[t].producer != UINT32_MAX)
			g->t[t].producer = b.new_index[g->t[t].producer];
		if (g->t[t].last_use != UINT32_MAX)
			g->t[t].last_use = b.new_index[g->t[t].last_use];
	}
	g->n_forward = g->n_forward < g->nop ? b.new_index[g->n_forward]
					     : b.nops;
	free(g->op);
	g->op = b.ops;
	g->nop = g->cop = b.nops;
	b.ops = NULL;
	*last_bucket = b.last_bytes;
out:
	free(weight_grad);
	free(b.pending);
	free(b.ops);
	free(b.new_index);
	return rc;
}

/* ------------------------------------------------------------------------
 * Runs
 * ---------------------------------------------------------------------- */

struct run {
	uint64_t step_ns, peak, net_ns;
	uint64_t net_before;
};

/* The network's busy time over the last iteration, from the sim. */
static int after_iteration(void *arg, tmm_ctx *ctx, unsigned n)
{
	struct run *r = arg;
	struct tmm_sim_counters c;

	(void)n;
	if (tmm_sim_get_counters(&ctx->be, &c) < 0)
		return -EINVAL;
	r->net_ns = c.net_busy_ns - r->net_before;
	r->net_before = c.net_busy_ns;
	return 0;
}

static int run_one(const struct opts *o, const char *model, unsigned ranks,
		   uint64_t budget, bool collectives, struct run *r,
		   uint64_t *last_bucket)
{
	const struct zoo_model *m = zoo_find(model);
	struct zoo_args a = { .batch = o->batch / ranks, .scale = 1 };
	struct drive_opts d = { 0 };
	struct drive_result res;
	struct zgraph g;
	char config[256];
	int rc;

	memset(r, 0, sizeof(*r));
	if (!m) {
		fprintf(stderr, "bench_scaling: no model \"%s\" in the zoo\n",
			model);
		return -EINVAL;
	}
	if (a.batch == 0)
		a.batch = 1;
	rc = zoo_build(m, &a, &g);
	if (rc == 0 && collectives)
		rc = add_collectives(&g, ranks,
				     (uint64_t)(o->bucket_mib * 1048576.0),
				     last_bucket);
	if (rc < 0) {
		fprintf(stderr, "bench_scaling: %s: %s\n", model,
			g.errmsg[0] ? g.errmsg : strerror(-rc));
		zg_free(&g);
		return rc;
	}
	/* budget 0: the whole device, and nothing to plan */
	if (budget)
		snprintf(config, sizeof(config),
			 "backend=sim,sim_profile=%s,sim_memory=phantom,"
			 "mode=swap,policy=%s,stats_shm=off,budget=%lluB",
			 o->profile, o->policy, (unsigned long long)budget);
	else
		snprintf(config, sizeof(config),
			 "backend=sim,sim_profile=%s,sim_memory=phantom,"
			 "mode=swap,policy=none,stats_shm=off,budget=100%%",
			 o->profile);
	d.config = config;
	d.iterations = o->iterations;
	d.after_iteration = after_iteration;
	d.after_arg = r;
	rc = zoo_drive(&g, &d, &res);
	zg_free(&g);
	if (rc < 0) {
		fprintf(stderr, "bench_scaling: %s at %u ranks: %s\n", model,
			ranks, res.error);
		free(res.weights);
		return rc;
	}
	r->step_ns = res.it[res.done - 1].ns;
	for (unsigned i = 0; i < res.done; i++)
		if (res.it[i].peak > r->peak)
			r->peak = res.it[i].peak;
	free(res.weights);
	return 0;
}

/* The ring all-reduce of `bytes` over n ranks on the profile's network:
 * what the ideal cannot hide. */
static double ring_ns(const struct tmm_sim_profile *p, uint64_t bytes,
		      unsigned n)
{
	if (n <= 1 || !bytes)
		return 0;
	return (double)tmm_sim_net_ns(p, 2.0 * (n - 1) / n * (double)bytes);
}

static int bench_model(const struct opts *o, const char *model)
{
	const struct tmm_sim_profile *p = tmm_sim_profile_find(o->profile);
	double t1[MAX_LIST] = { 0 }, ideal1 = 0;

	printf("\n# %s, global batch %u, %s (%s, %.2f GB/s per rank), "
	       "policy %s, buckets of %.0f MiB: SIMULATED\n", model,
	       o->batch, p->name, p->net_link, p->net_gbps, o->policy,
	       o->bucket_mib);
	printf("# not modelled: congestion across nodes, stragglers; "
	       "collectives overlap the backward ops after them\n");
	printf("# %5s %6s %11s %10s %10s %6s %6s %8s %10s\n", "ranks",
	       "budget", "step_ms", "coll_ms", "exposed_ms", "eff", "ideal",
	       "of_ideal", "peak_MiB");
	for (unsigned ri = 0; ri < o->n_ranks; ri++) {
		unsigned n = o->ranks[ri];
		struct run free_run, with, without;
		uint64_t last = 0, unused;
		double ideal;
		int rc;

		/* Unconstrained, no collectives: the compute alone. */
		rc = run_one(o, model, n, 0, false, &free_run, &unused);
		if (rc < 0)
			return rc;
		for (unsigned bi = 0; bi < o->n_budgets; bi++) {
			uint64_t budget = free_run.peak * o->budgets[bi] / 100;
			double eff, ideal_eff;

			rc = run_one(o, model, n, budget, true, &with, &last);
			if (rc == 0)
				rc = run_one(o, model, n, budget, false,
					     &without, &unused);
			if (rc < 0)
				return rc;
			/* The same buckets at every budget: the last one's
			 * ring is what the ideal cannot hide. */
			ideal = (double)free_run.step_ns + ring_ns(p, last, n);
			if (n == 1) {
				t1[bi] = (double)with.step_ns;
				ideal1 = ideal;
			}
			eff = t1[bi] > 0 ? t1[bi] / (n * (double)with.step_ns)
					 : 0;
			ideal_eff = ideal1 > 0 ? ideal1 / (n * ideal) : 0;
			printf("  %5u %5u%% %11.3f %10.3f %10.3f %6.3f %6.3f "
			       "%8.3f %10.1f\n", n, o->budgets[bi],
			       with.step_ns / 1e6, with.net_ns / 1e6,
			       ((double)with.step_ns -
				(double)without.step_ns) / 1e6,
			       eff, ideal_eff,
			       ideal_eff > 0 ? eff / ideal_eff : 0,
			       with.peak / 1048576.0);
			fflush(stdout);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Command line
 * ---------------------------------------------------------------------- */

static unsigned split_list(char *s, const char **out)
{
	unsigned n = 0;

	for (char *tok = strtok(s, ","); tok && n < MAX_LIST;
	     tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

static int numbers(const char *what, char *s, unsigned *out, unsigned *n)
{
	const char *w[MAX_LIST];

	*n = split_list(s, w);
	for (unsigned i = 0; i < *n; i++) {
		char *end;
		unsigned long v = strtoul(w[i], &end, 10);

		if (*end || v == 0 || v > 1024) {
			fprintf(stderr, "bench_scaling: %s: \"%s\" is not a "
				"count from 1 to 1024\n", what, w[i]);
			return -EINVAL;
		}
		out[i] = (unsigned)v;
	}
	return *n ? 0 : -EINVAL;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_scaling [--profile P] [--models "
		"m,...] [--batch B] [--ranks 1,2,4,8] [--budgets 30,50] "
		"[--bucket MiB] [--policy P] [--iterations I]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static char models[] = "mlp_compute,resnet50", ranks[] = "1,2,4,8",
		    budgets[] = "30,50";
	struct opts o = { .profile = "a100-pcie4-40g", .batch = 256,
			  .bucket_mib = 25, .policy = "capuchin",
			  .iterations = 3 };
	char *m = models, *r = ranks, *b = budgets;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		if (!strcmp(argv[i], "--profile"))
			o.profile = v;
		else if (!strcmp(argv[i], "--models"))
			m = argv[i + 1];
		else if (!strcmp(argv[i], "--batch"))
			o.batch = (unsigned)atoi(v);
		else if (!strcmp(argv[i], "--ranks"))
			r = argv[i + 1];
		else if (!strcmp(argv[i], "--budgets"))
			b = argv[i + 1];
		else if (!strcmp(argv[i], "--bucket"))
			o.bucket_mib = atof(v);
		else if (!strcmp(argv[i], "--policy"))
			o.policy = v;
		else if (!strcmp(argv[i], "--iterations"))
			o.iterations = (unsigned)atoi(v);
		else
			return usage();
		i++;
	}
	if (!tmm_sim_profile_find(o.profile)) {
		fprintf(stderr, "bench_scaling: no sim profile \"%s\"\n",
			o.profile);
		return 2;
	}
	if (o.batch == 0 || !(o.bucket_mib > 0) || o.iterations == 0 ||
	    o.iterations > DRIVE_MAX_ITERATIONS)
		return usage();
	o.n_models = split_list(m, o.models);
	if (numbers("--ranks", r, o.ranks, &o.n_ranks) < 0 ||
	    numbers("--budgets", b, o.budgets, &o.n_budgets) < 0)
		return 2;
	for (unsigned i = 0; i < o.n_models; i++)
		if (bench_model(&o, o.models[i]) < 0)
			return 1;
	return 0;
}
