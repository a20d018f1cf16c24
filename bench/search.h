/* SPDX-License-Identifier: MIT */
/*
 * search.h — what tensormm-bench measures: the options that say which
 * models, profiles and policies, the figures of one (profile, model), and
 * the searches and fixed-budget runs that fill them in (search.c).
 */
#ifndef BENCH_SEARCH_H
#define BENCH_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tmm_sim_profile;
struct zoo_model;

/* The most models, profiles or policies one run takes. */
#define MAX_LIST 32
/* Per run: the first iteration measured, the rest guided by its plan. */
#define ITERATIONS 3

/* How the searches look above the first failure (--search; search.c's
 * search_ex says what each does). */
enum search_rule {
	SEARCH_SCAN = 0, /* scan above it to the single-op bound */
	SEARCH_BISECT,	 /* none: max batch taken as monotone (the rule
			  * before issue #22, for before/after figures) */
};

/* How a probe's first iteration starts (--start; search.c's file
 * comment). */
enum start_rule {
	START_EITHER = 0, /* measured; rehearsed where measured fails */
	START_MEASURED,	  /* measured in passive mode (before #22) */
	START_REHEARSED,  /* rehearsed: every iteration guided */
};

/* What to run, from the command line (tensormm-bench.c). */
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
	enum search_rule search;
	enum start_rule start;
	/* --calibrate: 0 off, 1 every covered cell, 2 the faithful ones
	 * (calibrate.h) */
	int calibrate;
	double tolerance; /* --tolerance: a gain within this fraction of
			   * the paper's is "within" (default 0.35) */
};

/* One way to run a model: its policy, more tunables for its config
 * string ("name=value,..."; NULL or "": none), and a change to each graph
 * before it runs (NULL: the model as built). */
struct zgraph;
struct bench_run {
	const char *policy;
	const char *config;
	void (*prepare)(struct zgraph *g);
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
	/* a run failed because one op's own tensors exceed the budget, as
	 * no policy can help: outside the goal that every op that fits
	 * trains (issue #21) */
	bool budget_op_too_big, uvm_op_too_big;
	/* the device pool's fragmentation when the swap run peaked */
	double peak_fragmentation;
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

/* --csv: every figure is also written here as it is measured (NULL:
 * none).  main opens it, writes the header line and closes it. */
extern FILE *csv;

/* The searches of one model on one profile, every available policy:
 * largest batch, at 75% and 50% throughput, largest width scale. */
void measure_searches(const struct opts *o,
		      const struct tmm_sim_profile *prof,
		      const struct zoo_model *m, struct row *row);

/* The largest batch at which `how` trains m on prof at width 1, searched
 * by o's rules.  *bound (NULL: not wanted): the single-op bound, the
 * smallest batch the runtime refuses because one op's own tensors exceed
 * the device (op_bound.h); o->max_batch + 1 where none is up to it or
 * o->search does not look for one.  *probes (NULL: not wanted): the runs
 * the search took. */
long search_max_batch(const struct opts *o,
		      const struct tmm_sim_profile *prof,
		      const struct zoo_model *m, const struct bench_run *how,
		      unsigned *bound, unsigned *probes);

/* One sentence each, for the tables' captions: the search o runs, and how
 * its probes start. */
const char *search_caption(const struct opts *o);
const char *start_caption(const struct opts *o);

/* --budget-only: instead of measure_searches, marks every search figure
 * not measured. */
void skip_searches(const struct opts *o, struct row *row);

/* The fixed-budget figures of one model on one profile, every available
 * policy; measure_searches or skip_searches first. */
void measure_budget(const struct opts *o, const struct tmm_sim_profile *prof,
		    const struct zoo_model *m, struct row *row);

#endif /* BENCH_SEARCH_H */
