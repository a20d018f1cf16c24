/* SPDX-License-Identifier: MIT */
/*
 * bench_scaling.c — data-parallel scaling on the simulated GPU (issue 26
 * §5): one context plays one rank, since the ranks of a data-parallel
 * job are symmetric.  SIMULATED figures only.
 *
 *   bench/bench_scaling [--profile P] [--models m,...] [--batch B]
 *                       [--ranks 1,2,4,8] [--budgets 30,50]
 *                       [--bucket MiB] [--policy P] [--iterations I]
 *                       [--liveness keep|discard] [--update-lag L]
 *
 * Each rank trains batch/N samples (strong scaling: the global batch is
 * fixed), on phantom sim memory, its gradients reduced by collective ops
 * (dp_graph.h: buckets of about --bucket MiB, DDP's default 25, each a
 * ring all-reduce of 2(N-1)/N x its bytes on the network; an optimizer
 * step the model runs as soon as its gradients are ready runs --update-lag
 * buckets later, 1 by default, so that the reduction overlaps the next
 * bucket's backward, as DDP's does; 0 keeps the model's placement).  The budget
 * is a fraction of the rank's own unconstrained peak.  Per model, rank
 * count and budget it prints:
 *
 *   step      the simulated step time (the last iteration)
 *   coll      time the collectives held the network (the sim's counter)
 *   exp       exposed collective time, in the same run: the time compute
 *             waited for a collective's event while a collective held
 *             the link (the sim's net_wait_ns), so 0 <= exp <= coll
 *   stall     compute time lost waiting for the swap engine's copies
 *   bound     a lower bound on the step whatever the plan (bound_ns,
 *             and hints/swap_bound.h's windows)
 *   goal      the step that would reach 90% of the ideal's efficiency
 *   eff       scaling efficiency, T(1) / (N x T(N)), T(1) the one-rank
 *             step at the same budget fraction (--ranks must start at 1)
 *   ideal     the ideal's efficiency: compute alone (the unconstrained
 *             step with no collectives at batch/N), plus what the ring
 *             all-reduce cannot hide: the last bucket's (latency + its
 *             bytes x 2(N-1)/N / net bandwidth), which no backward work
 *             follows; over the one-rank unconstrained step
 *   of_ideal  eff / ideal
 *   need      the most device bytes one rank holds unconstrained
 *   z1_step   the step with ZeRO stage 1 (dp_graph.h) at the same budget
 *             in bytes
 *   z1_need   what a rank needs unconstrained with ZeRO-1
 *   reach     whether the goal can be reached: "no" where bound > goal
 *             (no plan can), "met" where the step is at most the goal,
 *             else "open" (not ruled out, not reached)
 *
 * The driver reads no tensor after its last use, so the ranks run with
 * liveness=discard (tensormm(7)): a step's tensors idle until it ends
 * leave the device without a copy.  --liveness keep copies them.
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

#include "dp_graph.h"
#include "drive.h"
#include "hints/swap_bound.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/sim_profile.h"
#include "lib/core/context.h"
#include "lib/record/tracker.h"
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
	const char *liveness; /* "keep" or "discard" */
	unsigned iterations;
	unsigned update_lag; /* dp_graph.h's lag, in buckets */
};

/* ------------------------------------------------------------------------
 * Runs
 * ---------------------------------------------------------------------- */

struct run {
	uint64_t step_ns, peak, net_ns, stall_ns, exposed_ns;
	uint64_t net_before, stall_before, exposed_before;
	uint64_t persistent;	   /* weights and optimizer state, bytes */
	struct dp_graph_info dp;
	/* With `want_trace`, the first iteration's trace (the one plans
	 * are made from), for the bound; free with tmm_trace_free. */
	bool want_trace;
	struct tmm_trace trace;
};

/* The network's busy time, the compute's stall on copies and its wait
 * for collectives over the last iteration; the first trace. */
static int after_iteration(void *arg, tmm_ctx *ctx, unsigned n)
{
	struct run *r = arg;
	struct tmm_sim_counters c;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	const struct tmm_trace *first;

	(void)n;
	if (tmm_sim_get_counters(&ctx->be, &c) < 0 ||
	    tmm_stats_get(ctx, &st) < 0)
		return -EINVAL;
	r->net_ns = c.net_busy_ns - r->net_before;
	r->net_before = c.net_busy_ns;
	r->exposed_ns = c.net_wait_ns - r->exposed_before;
	r->exposed_before = c.net_wait_ns;
	r->stall_ns = st.stall_ns - r->stall_before;
	r->stall_before = st.stall_ns;
	first = tmm_tracker_first(ctx);
	if (r->want_trace && !r->trace.n_accesses && first &&
	    tmm_trace_copy(&r->trace, first) < 0)
		return -ENOMEM;
	return 0;
}

/* What one run is: a budget (0: unconstrained, nothing planned), and
 * whether the rank reduces its gradients, and with ZeRO-1; whether the
 * run keeps its first trace. */
struct shape {
	uint64_t budget;
	bool collectives, zero1, trace;
};

static int run_one(const struct opts *o, const char *model, unsigned ranks,
		   struct shape sh, struct run *r)
{
	const struct zoo_model *m = zoo_find(model);
	struct zoo_args a = { .batch = o->batch / ranks, .scale = 1 };
	struct drive_opts d = { 0 };
	struct drive_result res;
	struct zgraph g;
	char config[256];
	int rc;

	memset(r, 0, sizeof(*r));
	r->want_trace = sh.trace;
	if (!m) {
		fprintf(stderr, "bench_scaling: no model \"%s\" in the zoo\n",
			model);
		return -EINVAL;
	}
	if (a.batch == 0)
		a.batch = 1;
	rc = zoo_build(m, &a, &g);
	if (rc == 0 && sh.collectives)
		rc = dp_graph_make(&g, ranks,
				   (uint64_t)(o->bucket_mib * 1048576.0),
				   sh.zero1, o->update_lag, &r->dp);
	if (rc < 0) {
		fprintf(stderr, "bench_scaling: %s: %s\n", model,
			g.errmsg[0] ? g.errmsg : strerror(-rc));
		zg_free(&g);
		return rc;
	}
	if (sh.budget)
		snprintf(config, sizeof(config),
			 "backend=sim,sim_profile=%s,sim_memory=phantom,"
			 "mode=swap,policy=%s,stats_shm=off,budget=%lluB,"
			 "liveness=%s",
			 o->profile, o->policy,
			 (unsigned long long)sh.budget, o->liveness);
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
		fprintf(stderr, "bench_scaling: %s at %u ranks%s: %s\n", model,
			ranks, sh.zero1 ? " with ZeRO-1" : "", res.error);
		free(res.weights);
		tmm_trace_free(&r->trace);
		return rc;
	}
	r->step_ns = res.it[res.done - 1].ns;
	for (unsigned i = 0; i < res.done; i++)
		if (res.it[i].peak > r->peak)
			r->peak = res.it[i].peak;
	r->persistent = res.persistent_bytes;
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

/*
 * A lower bound on the step of a rank holding `budget` bytes, whatever
 * its plan: the largest of
 *   - its compute alone (`compute_ns`: the unconstrained step without
 *     collectives, which every plan runs at least);
 *   - the all-reduce's whole ring on the network;
 *   - the bytes any plan must load, and copy out, each step under the
 *     budget (hints/swap_bound.h: Belady's MIN over TMM_SWAP_BOUND_PASSES
 *     repetitions of the run's first trace, which also covers what the
 *     kept bytes beyond the budget cost), over the link's rate that way;
 *     where the collectives cross PCIe (net_over_pcie), the ring's
 *     2(N-1)/N x the gradients go each way on the same link.  The sim
 *     gives a copy and a collective that share the link half of it each
 *     (docs/sim-network.md), and the ring's rate is at most the link's,
 *     so that link is busy at least the sum of the two.
 * Valid for a steady step: the plan repeats from one step to the next,
 * as the guided iterations that the bench times do.  The caller takes
 * the larger of this and tmm_swap_bound_step's windows (each window of
 * ops at least its ops' least time, or the copies it needs that cannot
 * have been made before it, over the link), which see copies that
 * cannot hide under compute elsewhere.
 */
static double bound_ns(const struct tmm_sim_profile *p, double compute_ns,
		       const struct run *with, const struct tmm_swap_bound *sb,
		       unsigned n)
{
	double ring = n > 1 ? 2.0 * (n - 1) / n * (double)with->dp.grad_bytes
			    : 0;
	double pcie = p->net_over_pcie ? ring : 0;
	double h2d = (sb->h2d_bytes + pcie) / p->h2d_gbps;
	double d2h = (sb->d2h_bytes + pcie) / p->d2h_gbps;
	double net = ring_ns(p, with->dp.grad_bytes, n);
	double b = compute_ns;

	if (h2d > b)
		b = h2d;
	if (d2h > b)
		b = d2h;
	return net > b ? net : b;
}

/* The goal: at least this fraction of the ideal's efficiency. */
#define GOAL_OF_IDEAL 0.9

/* Each op's time in an unconstrained run's trace, the least it takes
 * (a convolution's algorithm is the fastest there, and nothing is split
 * or recomputed), after their count in [0]; NULL: out of memory. */
static double *least_op_ns(const struct tmm_trace *t)
{
	double *ns = malloc(sizeof(*ns) * ((size_t)t->n_ops + 1));

	if (!ns)
		return NULL;
	ns[0] = t->n_ops;
	for (uint32_t i = 0; i < t->n_ops; i++)
		ns[i + 1] = t->ops[i].end_ns > t->ops[i].begin_ns
				    ? (double)(t->ops[i].end_ns -
					       t->ops[i].begin_ns)
				    : 0;
	return ns;
}

/* Whether the goal can be reached (the reach column). */
static const char *reach(double step, double bound, double goal)
{
	if (bound > goal)
		return "no";
	return step <= goal ? "met" : "open";
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
	printf("# update lag %u: %s\n", o->update_lag,
	       o->update_lag ? "an optimizer step the model runs as soon as "
			       "its gradients are ready runs that many "
			       "gradient buckets later, so that their "
			       "reduction overlaps the backward between"
			     : "optimizer steps where the model has them");
	printf("# liveness=%s: %s\n", o->liveness,
	       strcmp(o->liveness, "keep")
		       ? "tensors idle until the step ends leave without a "
			 "copy (the driver reads none after its last use)"
		       : "tensors idle until the step ends are copied out");
	if (!strcmp(o->policy, "auto"))
		printf("# policy auto tries its plans on a twin of the "
		       "simulated device, which a real GPU does not offer\n");
	printf("# exp: compute waiting for collectives while they hold the "
	       "link, in the same run (0 <= exp <= coll)\n");
	printf("# bound: the most of compute alone, the ring on the network, "
	       "the bytes any plan must copy each way under the budget "
	       "(Belady over %u steps of the trace)%s over the link, and the "
	       "sum over windows of ops of each one's least compute or "
	       "copies (hints/swap_bound.h)\n", TMM_SWAP_BOUND_PASSES,
	       p->net_over_pcie ? " plus the ring's, which crosses PCIe," : "");
	printf("# reach: no = bound > goal, no plan reaches 90%% of the "
	       "ideal; met = the step does; open = neither\n");
	printf("# %5s %6s %9s %8s %8s %8s %9s %9s %6s %6s %8s %9s "
	       "%10s %11s %5s\n", "ranks", "budget", "step_ms", "coll_ms",
	       "exp_ms", "stall_ms", "bound_ms", "goal_ms", "eff", "ideal",
	       "of_ideal", "need_MiB", "z1_step_ms", "z1_need_MiB", "reach");
	for (unsigned ri = 0; ri < o->n_ranks; ri++) {
		unsigned n = o->ranks[ri];
		struct run free_run, z1_free, with, z1, free_coll;
		double ideal, *op_ns = NULL;
		int rc;

		/* Unconstrained, no collectives: the compute alone; and
		 * what a rank needs with ZeRO-1; and with collectives, each
		 * op's least time for the bound. */
		rc = run_one(o, model, n, (struct shape){ 0 }, &free_run);
		if (rc == 0)
			rc = run_one(o, model, n,
				     (struct shape){ 0, true, true, false },
				     &z1_free);
		if (rc == 0)
			rc = run_one(o, model, n,
				     (struct shape){ 0, true, false, true },
				     &free_coll);
		if (rc < 0)
			return rc;
		op_ns = least_op_ns(&free_coll.trace);
		tmm_trace_free(&free_coll.trace);
		if (!op_ns) {
			fprintf(stderr, "bench_scaling: out of memory\n");
			return -ENOMEM;
		}
		for (unsigned bi = 0; bi < o->n_budgets; bi++) {
			uint64_t budget = free_run.peak * o->budgets[bi] / 100;
			struct tmm_swap_bound sb;
			double eff, ideal_eff, goal, bound, windows = 0;

			rc = run_one(o, model, n,
				     (struct shape){ budget, true, false,
						     true },
				     &with);
			if (rc == 0)
				rc = run_one(o, model, n,
					     (struct shape){ budget, true,
							     true, false },
					     &z1);
			if (rc == 0) {
				rc = tmm_swap_bound(&with.trace, budget,
						    TMM_SWAP_BOUND_PASSES,
						    &sb);
				/* The same ops as unconstrained, or the
				 * unconstrained times do not apply. */
				if (rc == 0 && with.trace.n_ops ==
						       (uint32_t)op_ns[0])
					rc = tmm_swap_bound_step(
						&with.trace, op_ns + 1, budget,
						p->h2d_gbps, p->d2h_gbps,
						&windows);
				if (rc < 0)
					fprintf(stderr, "bench_scaling: %s: "
						"the bound: %s\n", model,
						strerror(-rc));
			}
			tmm_trace_free(&with.trace);
			if (rc < 0) {
				free(op_ns);
				return rc;
			}
			/* The same buckets at every budget: the last one's
			 * ring is what the ideal cannot hide. */
			ideal = (double)free_run.step_ns +
				ring_ns(p, with.dp.last_bucket, n);
			if (n == 1) {
				t1[bi] = (double)with.step_ns;
				ideal1 = ideal;
			}
			eff = t1[bi] > 0 ? t1[bi] / (n * (double)with.step_ns)
					 : 0;
			ideal_eff = ideal1 > 0 ? ideal1 / (n * ideal) : 0;
			/* the step that would reach the goal */
			goal = ideal_eff > 0 ? t1[bi] / (n * GOAL_OF_IDEAL *
							 ideal_eff)
					     : 0;
			bound = bound_ns(p, (double)free_run.step_ns, &with,
					 &sb, n);
			if (windows > bound)
				bound = windows;
			printf("  %5u %5u%% %9.3f %8.3f %8.3f %8.3f %9.3f "
			       "%9.3f %6.3f %6.3f %8.3f %9.1f %10.3f "
			       "%11.1f %5s\n", n, o->budgets[bi],
			       with.step_ns / 1e6, with.net_ns / 1e6,
			       with.exposed_ns / 1e6, with.stall_ns / 1e6,
			       bound / 1e6, goal / 1e6, eff, ideal_eff,
			       ideal_eff > 0 ? eff / ideal_eff : 0,
			       free_run.peak / 1048576.0, z1.step_ns / 1e6,
			       (n > 1 ? z1_free.peak : free_run.peak) /
				       1048576.0,
			       reach((double)with.step_ns, bound, goal));
			fflush(stdout);
		}
		free(op_ns);
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
		"[--bucket MiB] [--policy P] [--iterations I] "
		"[--liveness keep|discard] [--update-lag 0-8]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static char models[] = "mlp_compute,resnet50", ranks[] = "1,2,4,8",
		    budgets[] = "30,50";
	struct opts o = { .profile = "a100-pcie4-40g", .batch = 256,
			  .bucket_mib = 25, .policy = "auto",
			  .iterations = 3, .liveness = "discard",
			  .update_lag = 1 };
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
		else if (!strcmp(argv[i], "--update-lag") &&
			 v[0] >= '0' && v[0] <= '8' && !v[1])
			o.update_lag = (unsigned)(v[0] - '0');
		else if (!strcmp(argv[i], "--liveness") &&
			 (!strcmp(v, "keep") || !strcmp(v, "discard")))
			o.liveness = v;
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
