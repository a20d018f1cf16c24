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
 * How the first iteration starts (--start, struct opts.start): measured in
 * passive mode, or rehearsed (tmm_rehearsal_begin: the policy plans from
 * predicted op times and all 3 iterations are guided), or either (the
 * default): measured, and rehearsed where the measured start fails, so
 * that a batch whose passive first iteration cannot run is not lost to
 * it.  A program may start either way; the static planners of the papers
 * (vDNN, checkpointing, SuperNeurons) plan from the graph before any
 * step, which is what a rehearsal gives them.
 *
 * How the searches look (--search, struct opts.search): see search().
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
#include "op_bound.h"
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
	/* more of the config string (NULL: none), and a change to each
	 * graph before it runs (NULL: none): struct bench_run */
	const char *extra;
	graph_prepare_fn prepare;
	uint64_t capacity;     /* the profile's, for the single-op bound */
	unsigned probes;       /* runs so far */
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
static int run_graph(const struct zoo_model *m, unsigned batch,
		     unsigned scale, const char *cfg, enum drive_stop stop,
		     struct sampler *smp, bool no_peak, bool rehearse,
		     graph_prepare_fn prepare, struct drive_result *r);

static int run(const struct zoo_model *m, unsigned batch, unsigned scale,
	       const char *cfg, enum drive_stop stop, struct sampler *smp,
	       bool no_peak, struct drive_result *r)
{
	return run_graph(m, batch, scale, cfg, stop, smp, no_peak, false,
			 NULL, r);
}

static int run_graph(const struct zoo_model *m, unsigned batch,
		     unsigned scale, const char *cfg, enum drive_stop stop,
		     struct sampler *smp, bool no_peak, bool rehearse,
		     graph_prepare_fn prepare, struct drive_result *r)
{
	struct zoo_args a = { batch, scale };
	struct drive_opts d = { .config = cfg, .iterations = ITERATIONS,
				.stop = stop, .no_peak = no_peak,
				.rehearse = rehearse };
	struct zgraph g;
	int rc = zoo_build(m, &a, &g);

	if (rc < 0) {
		fprintf(stderr, "tensormm-bench: cannot build %s at batch %u, "
			"scale %u: %s\n", m->name, batch, scale, g.errmsg);
		exit(1);
	}
	if (prepare)
		prepare(&g);
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

/* What one probe found. */
enum verdict {
	FAILS = 0,
	TRAINS,
	OP_TOO_BIG, /* the runtime refused an op whose own tensors exceed
		     * the device: so will it at every larger x */
};

/* One start of the probe's configuration at (batch, scale); see the file
 * comment for what trains. */
static enum verdict try_start(struct probe *p, unsigned batch,
			      unsigned scale, bool rehearse)
{
	bool none = strcmp(p->policy, "none") == 0;
	struct drive_result r, u;
	char cfg[512];
	size_t len;
	int rc;

	config(cfg, sizeof(cfg), p->profile, p->policy, 0, 0);
	len = strlen(cfg);
	if (p->extra && *p->extra)
		snprintf(cfg + len, sizeof(cfg) - len, ",%s", p->extra);
	p->probes++;
	rc = run_graph(p->model, batch, scale, cfg,
		       none ? DRIVE_STOP_ON_EVICTION
			    : DRIVE_STOP_ON_GUIDED_EVICTION,
		       NULL, false, rehearse, p->prepare, &r);
	if (rc == -ENOMEM && op_too_big(r.error))
		return OP_TOO_BIG;
	if (rc == -ENOSPC || rc == -ENOMEM)
		return FAILS;
	if (rc < 0) {
		fprintf(stderr, "tensormm-bench: %s, %s, %s, batch %u, "
			"scale %u: %s\n", p->model->name, p->profile,
			p->policy, batch, scale, r.error);
		return FAILS;
	}
	if (none ? r.st.passive_evictions != 0
		 : r.st.guided_passive_evictions != 0 ||
			   r.st.plan_divergences != 0)
		return FAILS;
	if (p->min_ratio <= 0)
		return TRAINS;
	config(cfg, sizeof(cfg), p->profile, "none", UNLIMITED, 0);
	if (run_graph(p->model, batch, scale, cfg, DRIVE_RUN_ALL, NULL,
		      false, false, p->prepare, &u) < 0)
		return FAILS;
	return (double)u.it[ITERATIONS - 1].ns >=
			       p->min_ratio * (double)r.it[ITERATIONS - 1].ns
		       ? TRAINS
		       : FAILS;
}

/* Whether the probe's configuration trains at x, started as o->start
 * says (see the file comment).  `passive` and `none` plan nothing, so
 * there is nothing for a rehearsal to start: they are measured. */
static enum verdict probe_at(struct probe *p, unsigned x)
{
	unsigned batch = p->search_scale ? p->batch : x;
	unsigned scale = p->search_scale ? x : p->scale;
	bool plain = strcmp(p->policy, "none") == 0 ||
		     strcmp(p->policy, "passive") == 0;
	enum verdict v;

	if (plain || p->o->start != START_REHEARSED) {
		v = try_start(p, batch, scale, false);
		if (plain || v != FAILS || p->o->start == START_MEASURED)
			return v;
	}
	return try_start(p, batch, scale, true);
}

/* Whether the probe's configuration runs all its iterations at x, however
 * much passive mode it takes: nonzero unless an op was refused or another
 * error stopped it (0).  It tells whether the single-op bound holds. */
static int runs_at_all(struct probe *p, unsigned x)
{
	struct drive_result r;
	char cfg[512];
	size_t len;

	config(cfg, sizeof(cfg), p->profile, p->policy, 0, 0);
	len = strlen(cfg);
	if (p->extra && *p->extra)
		snprintf(cfg + len, sizeof(cfg) - len, ",%s", p->extra);
	p->probes++;
	return run_graph(p->model, p->search_scale ? p->batch : x,
			 p->search_scale ? x : p->scale, cfg, DRIVE_RUN_ALL,
			 NULL, true, false, p->prepare, &r) == 0;
}

static bool trains(struct probe *p, unsigned x)
{
	return probe_at(p, x) == TRAINS;
}

/*
 * The grid of the scan above the first failure: each step 1/16 of the
 * batch (6.25%; at least 1).  The calibration judges a gain within
 * +-35%, so a step is under a fifth of the tolerance, and the largest
 * grid point that trains is refined by bisection to the next one.
 * Geometric, so the scan costs the same per doubling of the batch
 * (about 11 probes) whatever the model: 30 to 40 probes from a first
 * failure near 200 to a single-op bound near 2,000.  A batch that trains
 * only strictly between two grid points above the first failure can be
 * missed; the tables' captions say so.
 */
#define SCAN_STEPS 16

static unsigned scan_step(unsigned x)
{
	return x / SCAN_STEPS > 1 ? x / SCAN_STEPS : 1;
}

/* bisect(): the largest x in (lo, hi) that trains, lo if none, given that
 * lo trains and hi does not, assuming monotonicity between them. */
static unsigned bisect(struct probe *p, unsigned lo, unsigned hi)
{
	while (hi - lo > 1) {
		unsigned x = lo + (hi - lo) / 2;

		if (trains(p, x))
			lo = x;
		else
			hi = x;
	}
	return lo;
}

/*
 * Scans (from, to] on the grid; returns the largest x there that trains,
 * refined by bisection towards the next grid point, or `best` if none.
 * *refused: the scan met an op the runtime refuses (nothing larger can
 * train), and stopped there.
 */
static unsigned scan(struct probe *p, unsigned from, unsigned to,
		     unsigned best, bool *refused)
{
	unsigned pass = 0, next = 0;

	*refused = false;
	for (unsigned x = from; x < to;) {
		unsigned nx = x + scan_step(x);
		enum verdict v;

		if (nx > to)
			nx = to;
		v = probe_at(p, nx);
		if (v == OP_TOO_BIG) {
			*refused = true;
			if (pass && !next)
				next = nx;
			break;
		}
		if (v == TRAINS) {
			pass = nx;
			next = 0;
		} else if (pass && !next) {
			next = nx;
		}
		x = nx;
	}
	if (!pass)
		return best;
	return next ? bisect(p, pass, next) : pass;
}

/*
 * The largest x in [1, cap] that trains (0 if none does), by o->search:
 *
 * SEARCH_BISECT (the rule before issue #22): doubling from 1, then
 * bisection, assuming that once x fails every larger x fails too.
 *
 * SEARCH_SCAN (the default): the same doubling and bisection up to the
 * single-op bound (op_bound.h) or cap, whichever is lower, find the first
 * failure; then, since max batch is not monotone here (a plan made for a
 * larger batch can fit where a smaller one's did not), the grid of
 * scan_step() is scanned above it up to that limit.  Where the single-op
 * bound is below cap, one probe at the bound checks that the runtime does
 * refuse it for this policy; if not (a policy that splits the op), the
 * scan goes on to cap.  *bound_out (NULL: not wanted): the single-op
 * bound, cap + 1 where there is none up to cap (or with SEARCH_BISECT).
 */
static long search_ex(struct probe *p, unsigned cap, unsigned *bound_out)
{
	unsigned lo, hi, x, bound, top, ignored;
	bool refused;

	if (!bound_out)
		bound_out = &ignored;
	*bound_out = cap + 1;
	if (p->o->search == SEARCH_BISECT) {
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
		return bisect(p, lo, hi);
	}
	if (cap < 1)
		return 0;
	bound = p->capacity
			? op_bound(p->model, p->search_scale,
				   p->search_scale ? p->batch : p->scale,
				   p->capacity, cap, p->prepare)
			: cap + 1;
	*bound_out = bound;
	top = bound - 1 < cap ? bound - 1 : cap;
	lo = 0;
	hi = top + 1;
	for (x = 1; x <= top; x = x * 2 > top && x < top ? top : x * 2) {
		if (!trains(p, x)) {
			hi = x;
			break;
		}
		lo = x;
	}
	if (lo && hi <= top)
		lo = bisect(p, lo, hi);
	/* lo + 1 is the first failure (or lo is top) */
	lo = scan(p, lo + 1, top, lo, &refused);
	if (refused || bound > cap || runs_at_all(p, bound) == 0)
		return lo;
	/* This policy runs an op the graph says is too big: the bound
	 * does not hold for it. */
	*bound_out = cap + 1;
	if (trains(p, bound))
		lo = bound;
	return scan(p, bound, cap, lo, &refused);
}

static long search(struct probe *p, unsigned cap)
{
	return search_ex(p, cap, NULL);
}

long search_max_batch(const struct opts *o,
		      const struct tmm_sim_profile *prof,
		      const struct zoo_model *m, const struct bench_run *how,
		      unsigned *bound, unsigned *probes)
{
	struct probe p = { .o = o, .model = m, .profile = prof->name,
			   .policy = how->policy, .batch = 16, .scale = 1,
			   .extra = how->config, .prepare = how->prepare,
			   .capacity = prof->capacity };
	long best = search_ex(&p, o->max_batch, bound);

	if (probes)
		*probes = p.probes;
	return best;
}

const char *search_caption(const struct opts *o)
{
	if (o->search == SEARCH_BISECT)
		return "doubling then bisection up to --max-batch, "
		       "assuming that a batch above one that fails fails "
		       "too (--search=bisect)";
	return "doubling then bisection to the first failure, then "
	       "a scan above it on a 1/16 geometric grid up to the "
	       "single-op bound (the batch at which one op's own tensors "
	       "exceed the device) or --max-batch, whichever is lower, "
	       "the last batch that trains refined by bisection; a batch "
	       "that trains only between two grid points may be missed "
	       "(--search=scan)";
}

const char *start_caption(const struct opts *o)
{
	switch (o->start) {
	case START_MEASURED:
		return "measured in passive mode (--start=measured)";
	case START_REHEARSED:
		return "rehearsed, so that all three are guided "
		       "(--start=rehearsed)";
	default:
		return "measured in passive mode, rehearsed where that "
		       "fails (--start=either)";
	}
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
		struct probe p = { .o = o, .model = m, .profile = prof->name,
				   .policy = o->policies[k], .batch = 16,
				   .scale = 1, .capacity = prof->capacity };
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
	struct probe p = { .o = o, .model = m, .profile = prof->name,
			   .policy = "none", .batch = 16, .scale = 1,
			   .capacity = prof->capacity };
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
