/* SPDX-License-Identifier: MIT */
/*
 * search.c — tensormm-bench's measurements: the searches for the largest
 * batch and width scale that train (at all, and at 75% / 50% of the
 * unconstrained throughput), and the runs at a fixed budget.
 *
 * "Trains" means: 3 iterations (1 measured, 2-3 guided by the policy's
 * plan) complete with no passive eviction inside a guided iteration, so
 * the plan, not passive mode, made it fit.  Policy `none` makes no plan;
 * for it, a batch trains when nothing is ever evicted.
 *
 * `auto` runs with its default goal (auto_goal=fit: a plan that trains
 * first) in the searches, and with auto_goal=speed at the fixed budget,
 * where the figure is how fast it runs.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "drive.h"
#include "search.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

/* "Unlimited" device memory for the unconstrained runs: phantom memory
 * costs nothing, so this is only address space. */
#define UNLIMITED (1ull << 40)

FILE *csv;

/* ---- running one configuration ------------------------------------------- */

static void config_mode(char *buf, size_t len, const char *mode,
			const char *profile, const char *policy,
			uint64_t capacity, uint64_t budget);

/* The searches and TENSILE's metrics run in swap mode, the papers'. */
static void config(char *buf, size_t len, const char *profile,
		   const char *policy, uint64_t capacity, uint64_t budget)
{
	config_mode(buf, len, "swap", profile, policy, capacity, budget);
}

static void config_mode(char *buf, size_t len, const char *mode,
			const char *profile, const char *policy,
			uint64_t capacity, uint64_t budget)
{
	int n = snprintf(buf, len, "backend=sim,mode=%s,sim_memory=phantom,"
			 "sim_profile=%s,policy=%s", mode, profile, policy);

	if (capacity && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ",sim_capacity=%llu",
			      (unsigned long long)capacity);
	if (budget && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ",budget=%lluB",
			      (unsigned long long)budget);
	/* The searches ask what trains, auto's default goal (fit); the
	 * fixed budget asks how fast, and says so to auto. */
	if (budget && strcmp(policy, "auto") == 0 && n > 0 &&
	    (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",auto_goal=speed");
}

struct probe {
	const struct opts *o;
	const struct zoo_model *model;
	const char *profile, *policy;
	unsigned batch, scale; /* the one not searched */
	double min_ratio;      /* throughput criterion, 0: none */
	bool search_scale;
};

struct sampler {
	uint64_t *y;
	size_t n, cap;
	size_t backward_at, optimizer_at; /* first op of each phase */
};

/* Did a run fail because one op, or one tensor, alone exceeds the budget
 * (run.c's and tensor.c's messages), rather than for want of room the
 * pool should have made? */
static bool op_too_big(const char *error)
{
	return strstr(error, "than the whole device budget") != NULL;
}

static void sample(void *arg, uint32_t op, uint64_t in_use)
{
	struct sampler *s = arg;

	(void)op;
	if (s->n < s->cap)
		s->y[s->n++] = in_use;
}

/*
 * Builds the model and runs it.  Returns the driver's result code; a graph
 * that cannot be built is fatal (a bug in the zoo, not a measurement).
 */
static int run(const struct zoo_model *m, unsigned batch, unsigned scale,
	       const char *cfg, enum drive_stop stop, struct sampler *smp,
	       bool no_peak, struct drive_result *r)
{
	struct zoo_args a = { batch, scale };
	struct drive_opts d = { .config = cfg, .iterations = ITERATIONS,
				.stop = stop, .no_peak = no_peak };
	struct zgraph g;
	int rc = zoo_build(m, &a, &g);

	if (rc < 0) {
		fprintf(stderr, "tensormm-bench: cannot build %s at batch %u, "
			"scale %u: %s\n", m->name, batch, scale, g.errmsg);
		exit(1);
	}
	if (smp) {
		free(smp->y);
		smp->y = calloc(g.nop, sizeof(*smp->y));
		smp->n = 0;
		smp->cap = smp->y ? g.nop : 0;
		smp->backward_at = g.n_forward;
		smp->optimizer_at = g.nop;
		for (uint32_t i = g.n_forward; i < g.nop; i++) {
			if (g.op[i].kind == TMM_OP_OPTIMIZER) {
				smp->optimizer_at = i;
				break;
			}
		}
		d.sample = sample;
		d.sample_arg = smp;
		d.sample_iteration = ITERATIONS;
	}
	rc = zoo_drive(&g, &d, r);
	zg_free(&g);
	return rc;
}

/* Whether the probe's configuration trains (see the file comment). */
static bool trains(const struct probe *p, unsigned x)
{
	unsigned batch = p->search_scale ? p->batch : x;
	unsigned scale = p->search_scale ? x : p->scale;
	bool none = strcmp(p->policy, "none") == 0;
	struct drive_result r, u;
	char cfg[256];
	int rc;

	config(cfg, sizeof(cfg), p->profile, p->policy, 0, 0);
	rc = run(p->model, batch, scale, cfg,
		 none ? DRIVE_STOP_ON_EVICTION : DRIVE_STOP_ON_GUIDED_EVICTION,
		 NULL, false, &r);
	if (rc == -ENOSPC || rc == -ENOMEM)
		return false;
	if (rc < 0) {
		fprintf(stderr, "tensormm-bench: %s, %s, %s, batch %u, "
			"scale %u: %s\n", p->model->name, p->profile,
			p->policy, batch, scale, r.error);
		return false;
	}
	if (none ? r.st.passive_evictions != 0
		 : r.st.guided_passive_evictions != 0 ||
			   r.st.plan_divergences != 0)
		return false;
	if (p->min_ratio <= 0)
		return true;
	config(cfg, sizeof(cfg), p->profile, "none", UNLIMITED, 0);
	if (run(p->model, batch, scale, cfg, DRIVE_RUN_ALL, NULL, false,
		&u) < 0)
		return false;
	return (double)u.it[ITERATIONS - 1].ns >=
	       p->min_ratio * (double)r.it[ITERATIONS - 1].ns;
}

/* The largest x in [1, cap] that trains (0 if none does), assuming that
 * once x fails every larger x fails too. */
static long search(const struct probe *p, unsigned cap)
{
	unsigned lo, hi, x;

	if (cap < 1 || !trains(p, 1))
		return 0;
	lo = 1;
	for (x = 2;; x *= 2) {
		if (x >= cap) {
			if (trains(p, cap))
				return cap;
			hi = cap;
			break;
		}
		if (!trains(p, x)) {
			hi = x;
			break;
		}
		lo = x;
	}
	while (hi - lo > 1) {
		x = lo + (hi - lo) / 2;
		if (trains(p, x))
			lo = x;
		else
			hi = x;
	}
	return lo;
}

/* ---- the measurements ---------------------------------------------------- */

static void csv_row(const char *profile, const char *model,
		    const char *policy, const char *metric, double v,
		    const char *unit)
{
	if (!csv)
		return;
	fprintf(csv, "%s,%s,%s,%s,%.6g,%s\n", profile, model, policy,
		metric, v, unit);
	/* A long run stopped part way keeps every figure it has. */
	fflush(csv);
}

void measure_searches(const struct opts *o,
		      const struct tmm_sim_profile *prof,
		      const struct zoo_model *m, struct row *row)
{
	for (size_t k = 0; k < o->n_policies; k++) {
		struct cell *c = &row->cells[k];
		struct probe p = { o, m, prof->name, o->policies[k], 16, 1,
				   0, false };
		double t0 = bench_now_s();

		c->max_batch = c->batch75 = c->batch50 = c->max_scale = -1;
		if (!o->available[k])
			continue;
		c->max_batch = search(&p, o->max_batch);
		p.min_ratio = 0.75;
		c->batch75 = search(&p, (unsigned)c->max_batch);
		p.min_ratio = 0.50;
		c->batch50 = search(&p, (unsigned)c->max_batch);
		p.min_ratio = 0;
		p.search_scale = true;
		p.batch = o->width_batch;
		c->max_scale = search(&p, o->max_scale);
		fprintf(stderr, "  %-14s %-18s %-12s batch %ld (75%%: %ld, "
			"50%%: %ld), scale %ld  [%.1f s]\n", m->name,
			prof->name, o->policies[k], c->max_batch, c->batch75,
			c->batch50, c->max_scale, bench_now_s() - t0);
		csv_row(prof->name, m->name, o->policies[k], "max_batch",
			(double)c->max_batch, "samples");
		csv_row(prof->name, m->name, o->policies[k],
			"max_batch_75pct_throughput", (double)c->batch75,
			"samples");
		csv_row(prof->name, m->name, o->policies[k],
			"max_batch_50pct_throughput", (double)c->batch50,
			"samples");
		csv_row(prof->name, m->name, o->policies[k], "max_width_scale",
			(double)c->max_scale, "x");
	}
}

/* --budget-only: every search figure is "not measured" (-1), so the
 * fixed-budget section searches `none`'s batch itself. */
void skip_searches(const struct opts *o, struct row *row)
{
	for (size_t k = 0; k < o->n_policies; k++) {
		struct cell *c = &row->cells[k];

		c->max_batch = c->batch75 = c->batch50 = c->max_scale = -1;
	}
}

/*
 * The fixed-budget section: the batch is the largest `none` trains (so the
 * unconstrained peak is about the device), the budget a fraction of that
 * run's peak.
 */
void measure_budget(const struct opts *o, const struct tmm_sim_profile *prof,
		    const struct zoo_model *m, struct row *row)
{
	struct probe p = { o, m, prof->name, "none", 16, 1, 0, false };
	struct sampler smp = { 0 };
	struct drive_result u, r;
	char cfg[256];

	row->ref_batch = -1;
	for (size_t k = 0; k < o->n_policies; k++)
		if (strcmp(o->policies[k], "none") == 0)
			row->ref_batch = row->cells[k].max_batch;
	if (row->ref_batch < 0)
		row->ref_batch = search(&p, o->max_batch);
	if (row->ref_batch <= 0)
		return;
	config(cfg, sizeof(cfg), prof->name, "none", UNLIMITED, 0);
	if (run(m, (unsigned)row->ref_batch, 1, cfg, DRIVE_RUN_ALL, &smp,
		false, &u) < 0) {
		fprintf(stderr, "tensormm-bench: %s unconstrained: %s\n",
			m->name, u.error);
		free(smp.y);
		row->ref_batch = 0;
		return;
	}
	row->mem = smp.y;
	row->n_mem = smp.n;
	row->backward_at = smp.backward_at;
	row->optimizer_at = smp.optimizer_at;
	row->vmp = u.it[ITERATIONS - 1].peak;
	row->vtc_ns = (double)u.it[ITERATIONS - 1].ns;
	row->budget = (uint64_t)((double)row->vmp * o->budget_frac);
	for (size_t k = 0; k < o->n_policies; k++) {
		struct cell *c = &row->cells[k];
		const struct drive_iteration *it = &r.it[ITERATIONS - 1];
		struct sampler s = { 0 };

		if (!o->available[k])
			continue;
		/* The budget in managed memory first (the swap run's
		 * result is kept in r below). */
		config_mode(cfg, sizeof(cfg), "uvm", prof->name,
			    o->policies[k], 0, row->budget);
		c->uvm_rc = run(m, (unsigned)row->ref_batch, 1, cfg,
				DRIVE_RUN_ALL, NULL, true, &r);
		if (c->uvm_rc == 0) {
			c->uvm_samples_s = (double)row->ref_batch /
					   ((double)it->ns * 1e-9);
			csv_row(prof->name, m->name, o->policies[k],
				"throughput_uvm_sim", c->uvm_samples_s,
				"samples/s");
		} else {
			c->uvm_op_too_big = op_too_big(r.error);
			fprintf(stderr, "  %s %s in uvm mode at budget: %s\n",
				m->name, o->policies[k], r.error);
		}
		config(cfg, sizeof(cfg), prof->name, o->policies[k], 0,
		       row->budget);
		c->budget_rc = run(m, (unsigned)row->ref_batch, 1, cfg,
				   DRIVE_RUN_ALL, &s, false, &r);
		c->mem = s.y;
		c->n_mem = s.n;
		if (c->budget_rc < 0) {
			c->budget_op_too_big = op_too_big(r.error);
			fprintf(stderr, "  %s %s at budget: %s\n", m->name,
				o->policies[k], r.error);
			continue;
		}
		c->emp = r.it[1].peak > it->peak ? r.it[1].peak : it->peak;
		c->peak_fragmentation = r.it[1].peak > it->peak
						? r.it[1].peak_fragmentation
						: it->peak_fragmentation;
		c->etc_ns = (double)it->ns;
		c->msr = ((double)row->vmp - (double)c->emp) /
			 (double)row->vmp;
		c->eor = (c->etc_ns - row->vtc_ns) / row->vtc_ns;
		c->cbr = c->eor > 0 ? c->msr / c->eor : INFINITY;
		c->samples_s = (double)row->ref_batch / (c->etc_ns * 1e-9);
		c->plan_ns = r.st.plan_ns;
		/* Again without the per-op statistics the driver reads for
		 * the peak, so the host time is the runtime's own. */
		if (run(m, (unsigned)row->ref_batch, 1, cfg, DRIVE_RUN_ALL,
			NULL, true, &r) == 0 && it->accesses)
			c->host_ns_access = (double)it->host_ns /
					    (double)it->accesses;
		csv_row(prof->name, m->name, o->policies[k], "budget_peak",
			(double)c->emp, "bytes");
		csv_row(prof->name, m->name, o->policies[k],
			"fragmentation_at_peak", c->peak_fragmentation, "");
		csv_row(prof->name, m->name, o->policies[k], "msr", c->msr, "");
		csv_row(prof->name, m->name, o->policies[k], "eor", c->eor, "");
		csv_row(prof->name, m->name, o->policies[k], "cbr", c->cbr, "");
		csv_row(prof->name, m->name, o->policies[k],
			"throughput_sim", c->samples_s, "samples/s");
		csv_row(prof->name, m->name, o->policies[k], "plan_host",
			(double)c->plan_ns, "ns");
		csv_row(prof->name, m->name, o->policies[k],
			"runtime_host_per_access", c->host_ns_access, "ns");
	}
	csv_row(prof->name, m->name, "none", "unconstrained_peak",
		(double)row->vmp, "bytes");
	csv_row(prof->name, m->name, "none", "unconstrained_iteration_sim",
		row->vtc_ns, "ns");
}
