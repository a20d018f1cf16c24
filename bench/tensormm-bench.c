/*
 * tensormm-bench.c — the papers' tables, reproduced on the simulated GPU.
 *
 * Runs the model zoo (bench/models/) through the real runtime (tmm_run,
 * the tracker, the planner of each policy, the mover) on the phantom sim
 * backend and prints, per hardware profile:
 *
 *   - the largest batch that trains under each policy (Capuchin Table 2,
 *     TSPLIT Table IV), and the largest that keeps 75% and 50% of the
 *     unconstrained throughput (TSPLIT Fig. 14a);
 *   - the largest width scale at batch 16 (TSPLIT Table V);
 *   - at a fixed budget: TENSILE's MSR, EOR and CBR, the simulated
 *     throughput, the planning time and the runtime's cost per access.
 *
 * "Trains" means: 3 iterations (1 measured, 2-3 guided by the policy's
 * plan) complete with no passive eviction inside a guided iteration, so
 * the plan, not passive mode, made it fit.  Policy `none` makes no plan;
 * for it, a batch trains when nothing is ever evicted.
 *
 * `auto` runs with its default goal (auto_goal=fit: a plan that trains
 * first) in the searches, and with auto_goal=speed at the fixed budget,
 * where the figure is how fast it runs.
 *
 * Figures marked (sim) are virtual time on the profile; figures marked
 * (host) are real time on this machine.  See --help and
 * docs/benchmarks.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "drive.h"
#include "machine.h"
#include "plot.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

#define MAX_LIST 32
#define ITERATIONS 3
/* "Unlimited" device memory for the unconstrained runs: phantom memory
 * costs nothing, so this is only address space. */
#define UNLIMITED (1ull << 40)

/* Every policy the design names, in the order the tables show them. */
static const char *const known_policies[] = {
	"passive", "none", "vdnn-conv", "vdnn-all", "checkpoint", "superneurons",
	"capuchin", "tensile", "tsplit", "auto",
};

/* The models of the papers' tables (the default; Capuchin does not say
 * BERT's sequence length, so both); --full runs all. */
static const char *const paper_models[] = {
	"vgg16", "resnet50", "resnet101", "resnet152", "inception_v3",
	"inception_v4", "densenet121", "bert_base", "bert_base_512",
	"transformer",
};
static const char *const quick_models[] = { "resnet50", "bert_base" };
/* Capuchin's P100 and TSPLIT's TITAN RTX. */
static const char *const paper_profiles[] = { "p100-pcie3-16g",
					       "titanrtx-pcie3-24g" };

struct opts {
	const struct zoo_model *models[MAX_LIST];
	size_t n_models;
	const struct tmm_sim_profile *profiles[MAX_LIST];
	size_t n_profiles;
	const char *policies[MAX_LIST];
	bool available[MAX_LIST];
	size_t n_policies;
	const char *csv_path, *plot_dir;
	double budget_frac;
	unsigned max_batch, max_scale, width_batch;
	bool quick;
	bool budget_only; /* --budget-only: no searches */
};

/* What one (profile, model, policy) measured; -1: not measured. */
struct cell {
	long max_batch, batch75, batch50, max_scale;
	/* at the fixed budget */
	int budget_rc;
	uint64_t emp;
	double etc_ns, msr, eor, cbr, samples_s, host_ns_access;
	uint64_t plan_ns;
	uint64_t *mem; /* device bytes after each op of iteration 3 */
	size_t n_mem;
	/* the same budget in mode=uvm (managed memory on the simulated
	 * driver): its rc and simulated throughput */
	int uvm_rc;
	double uvm_samples_s;
};

/* What one (profile, model) measured for the fixed-budget section. */
struct row {
	long ref_batch;
	uint64_t vmp, budget;
	double vtc_ns;
	uint64_t *mem; /* unconstrained run, iteration 3 */
	size_t n_mem, backward_at, optimizer_at;
	struct cell cells[MAX_LIST];
};

static FILE *csv;

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
		n += snprintf(buf + n, len - (size_t)n, ",budget=%llu",
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

static void measure_searches(const struct opts *o,
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
static void skip_searches(const struct opts *o, struct row *row)
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
static void measure_budget(const struct opts *o,
			   const struct tmm_sim_profile *prof,
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
		}
		config(cfg, sizeof(cfg), prof->name, o->policies[k], 0,
		       row->budget);
		c->budget_rc = run(m, (unsigned)row->ref_batch, 1, cfg,
				   DRIVE_RUN_ALL, &s, false, &r);
		c->mem = s.y;
		c->n_mem = s.n;
		if (c->budget_rc < 0) {
			fprintf(stderr, "  %s %s at budget: %s\n", m->name,
				o->policies[k], r.error);
			continue;
		}
		c->emp = r.it[1].peak > it->peak ? r.it[1].peak : it->peak;
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

/* ---- tables -------------------------------------------------------------- */

static void table_head(const struct opts *o, const char *first)
{
	printf("| %s |", first);
	for (size_t k = 0; k < o->n_policies; k++)
		printf(" %s |", o->policies[k]);
	printf("\n|---|");
	for (size_t k = 0; k < o->n_policies; k++)
		printf("---:|");
	printf("\n");
}

static void print_modes(const struct opts *o, const struct row *rows);

static void print_profile(const struct opts *o,
			  const struct tmm_sim_profile *prof,
			  const struct row *rows)
{
	char na[256] = "";
	size_t len = 0;

	for (size_t k = 0; k < o->n_policies; k++)
		if (!o->available[k] && len < sizeof(na))
			len += (size_t)snprintf(na + len, sizeof(na) - len,
						"%s%s", len ? ", " : "",
						o->policies[k]);
	printf("\n## %s: %s, %.0f GiB (simulated)\n\n", prof->name,
	       prof->description, (double)prof->capacity / 1073741824.0);
	if (len)
		printf("n/a: policy not available in this build (%s).\n\n",
		       na);
	printf("### Largest batch that trains (Capuchin Table 2, TSPLIT "
	       "Table IV)\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			if (rows[i].cells[k].max_batch < 0)
				printf(" n/a |");
			else
				printf(" %ld |", rows[i].cells[k].max_batch);
		}
		printf("\n");
	}
	printf("\n### Largest batch at >= 75%% / >= 50%% of the unconstrained "
	       "throughput, simulated (TSPLIT Fig. 14a)\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &rows[i].cells[k];

			if (c->max_batch < 0)
				printf(" n/a |");
			else
				printf(" %ld / %ld |", c->batch75, c->batch50);
		}
		printf("\n");
	}
	printf("\n### Largest width scale at batch %u (TSPLIT Table V)\n\n",
	       o->width_batch);
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			if (rows[i].cells[k].max_scale < 0)
				printf(" n/a |");
			else
				printf(" %ld |", rows[i].cells[k].max_scale);
		}
		printf("\n");
	}
	printf("\n### At a fixed budget: %.0f%% of the unconstrained peak, at "
	       "the largest batch `none` trains (TENSILE's metrics)\n\n",
	       o->budget_frac * 100);
	printf("| model | batch | peak unconstr. | budget | policy | peak | "
	       "MSR | EOR | CBR | samples/s (sim) | plan ms (host) | "
	       "runtime ns/access (host) |\n"
	       "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct row *r = &rows[i];

		if (r->ref_batch <= 0) {
			printf("| %s | - | - | - | - | does not train at "
			       "batch 1 | | | | | | |\n",
			       o->models[i]->title);
			continue;
		}
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &r->cells[k];

			if (!o->available[k])
				continue;
			printf("| %s | %ld | %.2f GiB | %.2f GiB | %s |",
			       o->models[i]->title, r->ref_batch,
			       (double)r->vmp / 1073741824.0,
			       (double)r->budget / 1073741824.0,
			       o->policies[k]);
			if (c->budget_rc < 0) {
				printf(" failed: %s | | | | | | |\n",
				       tmm_strerror(c->budget_rc));
				continue;
			}
			printf(" %.2f GiB | %.3f | %.3f | ",
			       (double)c->emp / 1073741824.0, c->msr, c->eor);
			if (isinf(c->cbr))
				printf("inf |");
			else
				printf("%.3f |", c->cbr);
			printf(" %.1f | %.3f | %.0f |\n", c->samples_s,
			       (double)c->plan_ns / 1e6, c->host_ns_access);
		}
	}
	print_modes(o, rows);
}

/* The fixed budget again, by mode: swap (pool and pinned copies) against
 * uvm (managed memory, the simulated driver); `passive` in uvm is the
 * driver with no hints at all. */
static void print_modes(const struct opts *o, const struct row *rows)
{
	printf("\n### Simulated throughput at the fixed budget by mode, "
	       "samples/s (swap / uvm)\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct row *r = &rows[i];

		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &r->cells[k];

			if (!o->available[k]) {
				printf(" n/a |");
				continue;
			}
			if (r->ref_batch <= 0) {
				printf(" - |");
				continue;
			}
			if (c->budget_rc < 0)
				printf(" failed /");
			else
				printf(" %.1f /", c->samples_s);
			if (c->uvm_rc < 0)
				printf(" failed |");
			else
				printf(" %.1f |", c->uvm_samples_s);
		}
		printf("\n");
	}
}

/* ---- plots --------------------------------------------------------------- */

static int plot(const struct opts *o, const struct tmm_sim_profile *prof,
		const struct row *rows)
{
	const char *groups[MAX_LIST], *series[MAX_LIST];
	double *values;
	size_t ns = 0;
	char path[512], title[256];
	int rc = 0;

	char names[MAX_LIST][48], failed[MAX_LIST][48];

	for (size_t k = 0; k < o->n_policies; k++) {
		snprintf(names[k], sizeof(names[k]), "%s, at the budget",
			 o->policies[k]);
		snprintf(failed[k], sizeof(failed[k]), "%s: fails there",
			 o->policies[k]);
	}
	for (size_t i = 0; i < o->n_models; i++) {
		struct plot_series s[MAX_LIST + 1];
		const struct row *r = &rows[i];
		size_t n = 0;

		if (r->ref_batch <= 0)
			continue;
		s[n++] = (struct plot_series){ "none, unconstrained", r->mem,
					       r->n_mem };
		for (size_t k = 0; k < o->n_policies; k++) {
			if (!o->available[k])
				continue;
			/* a run that failed still gets its legend line */
			if (r->cells[k].budget_rc < 0)
				s[n++] = (struct plot_series){ failed[k],
							       NULL, 0 };
			else
				s[n++] = (struct plot_series){
					names[k], r->cells[k].mem,
					r->cells[k].n_mem };
		}
		snprintf(path, sizeof(path), "%s/memory-%s-%s.svg",
			 o->plot_dir, prof->name, o->models[i]->name);
		snprintf(title, sizeof(title), "%s, batch %ld, on %s "
			 "(simulated): one guided iteration",
			 o->models[i]->title, r->ref_batch, prof->name);
		rc = plot_memory(path, title, s, n, r->budget,
				 r->backward_at, r->optimizer_at);
		if (rc < 0)
			goto fail;
	}
	for (size_t k = 0; k < o->n_policies; k++)
		if (o->available[k])
			series[ns++] = o->policies[k];
	values = calloc(o->n_models * (ns ? ns : 1), sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_models; i++) {
		size_t j = 0;

		groups[i] = o->models[i]->title;
		for (size_t k = 0; k < o->n_policies; k++)
			if (o->available[k])
				values[i * ns + j++] =
					(double)rows[i].cells[k].max_batch;
	}
	snprintf(path, sizeof(path), "%s/max-batch-%s.svg", o->plot_dir,
		 prof->name);
	snprintf(title, sizeof(title), "Largest batch that trains, per policy, "
		 "on %s (simulated)", prof->name);
	rc = plot_bars(path, title, "batch size", groups, o->n_models, series,
		       ns, values);
	free(values);
	if (rc == 0)
		return 0;
fail:
	fprintf(stderr, "tensormm-bench: cannot write %s: %s\n", path,
		strerror(-rc));
	return rc;
}

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: tensormm-bench [options]\n"
"\n"
"Runs the model zoo through libtensormm on the simulated GPU (phantom\n"
"memory) and prints, per hardware profile and policy: the largest batch\n"
"that trains, the largest batch at >= 75%% and >= 50%% of the\n"
"unconstrained throughput, the largest width scale at batch 16, and\n"
"TENSILE's MSR/EOR/CBR at a fixed budget, as markdown tables.  Times\n"
"marked (sim) are simulated; (host) are real time on this machine.\n"
"\n"
"  --models LIST     comma-separated models (default: the papers' ones:\n"
"                    vgg16,resnet50,resnet101,resnet152,inception_v3,\n"
"                    inception_v4,densenet121,bert_base,bert_base_512,\n"
"                    transformer);\n"
"                    'list' prints every model and exits\n"
"  --profiles LIST   comma-separated sim profiles (default:\n"
"                    p100-pcie3-16g,titanrtx-pcie3-24g, the papers' GPUs);\n"
"                    'list' prints every profile and exits\n"
"  --policies LIST   comma-separated policies (default: all the design\n"
"                    names: none,vdnn-conv,vdnn-all,checkpoint,\n"
"                    superneurons,capuchin,tensile,tsplit,auto); one this\n"
"                    build does not know is shown as n/a\n"
"  --quick           resnet50 and bert_base on p100-pcie3-16g only\n"
"  --full            every model on every profile (long)\n"
"  --budget FRAC     fixed budget as a fraction of the unconstrained\n"
"                    peak, 0 < FRAC <= 1 (default 0.5); `auto` runs\n"
"                    there with auto_goal=speed, in the searches with\n"
"                    its default, fit\n"
"  --budget-only     only the fixed-budget figures: no searches of the\n"
"                    largest batch or width scale (minutes instead of\n"
"                    hours with `auto`, whose probes each try every plan)\n"
"  --max-batch N     largest batch the searches try (default 4096)\n"
"  --max-scale N     largest width scale tried (default 64)\n"
"  --csv FILE        also write every figure to FILE as CSV\n"
"                    (profile,model,policy,metric,value,unit)\n"
"  --plot DIR        write SVG charts to DIR (created if missing): memory\n"
"                    over one iteration per model and policy, and the\n"
"                    largest batch per policy per model\n"
"  -h, --help        this text\n"
"\n"
"Progress goes to stderr; the tables to stdout.\n");
}

/* Splits a comma-separated list in place into at most MAX_LIST items. */
static size_t split(char *s, const char **out)
{
	size_t n = 0;

	for (char *tok = strtok(s, ","); tok && n < MAX_LIST;
	     tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

static int parse_unsigned(const char *flag, const char *v, unsigned *out)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (*v == '\0' || *end != '\0' || x < 1 || x > 1000000) {
		fprintf(stderr, "tensormm-bench: %s '%s' is not a whole number "
			"from 1 to 1000000\n", flag, v);
		return -EINVAL;
	}
	*out = (unsigned)x;
	return 0;
}

static int set_models(struct opts *o, const char *const *names, size_t n)
{
	size_t all;

	o->n_models = 0;
	for (size_t i = 0; i < n; i++) {
		const struct zoo_model *m = zoo_find(names[i]);

		if (!m) {
			const struct zoo_model *z = zoo_models(&all);

			fprintf(stderr, "tensormm-bench: unknown model '%s'; "
				"the zoo has:", names[i]);
			for (size_t k = 0; k < all; k++)
				fprintf(stderr, " %s", z[k].name);
			fprintf(stderr, "\n");
			return -EINVAL;
		}
		o->models[o->n_models++] = m;
	}
	return 0;
}

static int set_profiles(struct opts *o, const char *const *names, size_t n)
{
	size_t all;

	o->n_profiles = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tmm_sim_profile *p, *z;

		p = tmm_sim_profile_find(names[i]);
		if (!p) {
			z = tmm_sim_profiles(&all);

			fprintf(stderr, "tensormm-bench: unknown profile '%s'; "
				"there are:", names[i]);
			for (size_t k = 0; k < all; k++)
				fprintf(stderr, " %s", z[k].name);
			fprintf(stderr, "\n");
			return -EINVAL;
		}
		o->profiles[o->n_profiles++] = p;
	}
	return 0;
}

/*
 * A policy is available when a context accepts it: the `policy` tunable
 * refuses an unknown name with -EINVAL.  Nothing here knows which
 * planners exist.
 */
static int probe_policies(struct opts *o)
{
	for (size_t k = 0; k < o->n_policies; k++) {
		char cfg[160];
		tmm_ctx *ctx;
		int rc;

		snprintf(cfg, sizeof(cfg), "backend=sim,sim_memory=phantom,"
			 "policy=%s", o->policies[k]);
		rc = tmm_ctx_create(&ctx, cfg);
		o->available[k] = rc == 0;
		if (rc == 0) {
			tmm_ctx_destroy(ctx);
		} else if (rc != -EINVAL) {
			fprintf(stderr, "tensormm-bench: cannot create a "
				"simulated context: %s\n",
				tmm_last_error(NULL));
			return rc;
		}
	}
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "models", required_argument, NULL, 'm' },
		{ "profiles", required_argument, NULL, 'p' },
		{ "policies", required_argument, NULL, 'P' },
		{ "quick", no_argument, NULL, 'q' },
		{ "full", no_argument, NULL, 'f' },
		{ "budget", required_argument, NULL, 'b' },
		{ "budget-only", no_argument, NULL, 'O' },
		{ "max-batch", required_argument, NULL, 'B' },
		{ "max-scale", required_argument, NULL, 'S' },
		{ "csv", required_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *models[MAX_LIST], *profiles[MAX_LIST];
	size_t n_models = 0, n_profiles = 0;
	bool full = false;
	char *end;
	int c;

	o->budget_frac = 0.5;
	o->max_batch = 4096;
	o->max_scale = 64;
	o->width_batch = 16;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "list") == 0) {
				size_t n;
				const struct zoo_model *z = zoo_models(&n);

				for (size_t k = 0; k < n; k++)
					printf("%-16s %s\n", z[k].name,
					       z[k].title);
				exit(0);
			}
			n_models = split(optarg, models);
			break;
		case 'p':
			if (strcmp(optarg, "list") == 0) {
				size_t n;
				const struct tmm_sim_profile *z =
					tmm_sim_profiles(&n);

				for (size_t k = 0; k < n; k++)
					printf("%-20s %s\n", z[k].name,
					       z[k].description);
				exit(0);
			}
			n_profiles = split(optarg, profiles);
			break;
		case 'P':
			o->n_policies = split(optarg, o->policies);
			break;
		case 'q':
			o->quick = true;
			break;
		case 'f':
			full = true;
			break;
		case 'b':
			o->budget_frac = strtod(optarg, &end);
			if (*end || !(o->budget_frac > 0) ||
			    o->budget_frac > 1) {
				fprintf(stderr, "tensormm-bench: --budget '%s' "
					"is not a fraction in (0, 1]\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'O':
			o->budget_only = true;
			break;
		case 'B':
			if (parse_unsigned("--max-batch", optarg,
					   &o->max_batch) < 0)
				return -EINVAL;
			break;
		case 'S':
			if (parse_unsigned("--max-scale", optarg,
					   &o->max_scale) < 0)
				return -EINVAL;
			break;
		case 'c':
			o->csv_path = optarg;
			break;
		case 'o':
			o->plot_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tensormm-bench: unexpected argument '%s' "
			"(try --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (full && o->quick) {
		fprintf(stderr, "tensormm-bench: --quick and --full "
			"contradict each other; pick one\n");
		return -EINVAL;
	}
	if (!n_models) {
		size_t n;
		const struct zoo_model *z = zoo_models(&n);

		if (full) {
			for (size_t k = 0; k < n && k < MAX_LIST; k++)
				models[n_models++] = z[k].name;
		} else if (o->quick) {
			n_models = 2;
			memcpy(models, quick_models, sizeof(quick_models));
		} else {
			n_models = sizeof(paper_models) /
				   sizeof(paper_models[0]);
			memcpy(models, paper_models, sizeof(paper_models));
		}
	}
	if (!n_profiles) {
		size_t n;
		const struct tmm_sim_profile *z = tmm_sim_profiles(&n);

		if (full) {
			for (size_t k = 0; k < n && k < MAX_LIST; k++)
				profiles[n_profiles++] = z[k].name;
		} else {
			n_profiles = o->quick ? 1 : 2;
			memcpy(profiles, paper_profiles,
			       n_profiles * sizeof(*profiles));
		}
	}
	if (!o->n_policies) {
		o->n_policies = sizeof(known_policies) /
				 sizeof(known_policies[0]);
		memcpy(o->policies, known_policies, sizeof(known_policies));
	}
	if (set_models(o, models, n_models) < 0 ||
	    set_profiles(o, profiles, n_profiles) < 0)
		return -EINVAL;
	return probe_policies(o);
}

int main(int argc, char **argv)
{
	static struct opts o;
	struct row *rows;
	char machine[384];
	double t0 = bench_now_s();
	time_t now = time(NULL);
	char date[64];
	int rc = 0;

	if (parse(argc, argv, &o) < 0)
		return 2;
	if (o.csv_path) {
		csv = fopen(o.csv_path, "w");
		if (!csv) {
			fprintf(stderr, "tensormm-bench: cannot write --csv "
				"%s: %s\n", o.csv_path, strerror(errno));
			return 1;
		}
		fprintf(csv, "profile,model,policy,metric,value,unit\n");
	}
	if (o.plot_dir && mkdir(o.plot_dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "tensormm-bench: cannot create --plot %s: %s\n",
			o.plot_dir, strerror(errno));
		return 1;
	}
	rows = calloc(o.n_models, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "tensormm-bench: out of memory\n");
		return 1;
	}
	bench_describe_machine(machine, sizeof(machine));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("# tensormm-bench\n\n");
	printf("Run on %s, %s.  Sim backend, phantom memory, mode=swap "
	       "(the last table: swap and uvm); %d iterations per run (1 "
	       "measured, then guided).\n", date, machine, ITERATIONS);
	for (size_t p = 0; p < o.n_profiles; p++) {
		const struct tmm_sim_profile *prof = o.profiles[p];

		memset(rows, 0, o.n_models * sizeof(*rows));
		for (size_t i = 0; i < o.n_models; i++) {
			fprintf(stderr, "[%zu/%zu] %s on %s\n",
				p * o.n_models + i + 1,
				o.n_profiles * o.n_models, o.models[i]->name,
				prof->name);
			if (o.budget_only)
				skip_searches(&o, &rows[i]);
			else
				measure_searches(&o, prof, o.models[i],
						 &rows[i]);
			measure_budget(&o, prof, o.models[i], &rows[i]);
		}
		print_profile(&o, prof, rows);
		if (o.plot_dir && plot(&o, prof, rows) < 0)
			rc = 1;
		for (size_t i = 0; i < o.n_models; i++) {
			free(rows[i].mem);
			for (size_t k = 0; k < o.n_policies; k++)
				free(rows[i].cells[k].mem);
		}
		fflush(stdout);
	}
	printf("\nTotal wall time: %.1f s (host).\n", bench_now_s() - t0);
	free(rows);
	if (csv && fclose(csv) != 0) {
		fprintf(stderr, "tensormm-bench: error writing %s\n",
			o.csv_path);
		rc = 1;
	}
	return rc;
}
