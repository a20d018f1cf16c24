/* SPDX-License-Identifier: MIT */
/*
 * calibrate.c — `tensormm-bench --calibrate` (calibrate.h).
 *
 * For each paper table (paper_figures.c), per covered cell: the paper's
 * largest batch and ours on the table's profile, each one's gain over its
 * table's baseline column, and the ratio of the two gains, which is what
 * is judged: a policy is faithful to its paper when it multiplies the
 * baseline's batch as the paper's did, whatever the frameworks' absolute
 * memory.  A baseline cell has no gain; it is judged by the ratio of the
 * absolute batches instead (ours over the paper's), which says how close
 * our baseline's memory is to the paper's framework.
 *
 * Only the largest batch is searched, once per (model, run): a baseline
 * shared by a table's row is searched once.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "clock.h"
#include "paper_figures.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

/* What one cell measured. */
struct ours {
	bool run;	  /* searched (else not wanted, or not available) */
	long batch;	  /* our largest batch */
	unsigned bound;	  /* the single-op bound there */
};

struct report {
	const struct opts *o;
	const struct paper_cell *cells;
	size_t n;
	struct ours *ours;
	int rc;
};

/* Whether this build knows the policy (tensormm-bench.c's probe). */
static bool available(const char *policy)
{
	char cfg[160];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=sim,sim_memory=phantom,policy=%s",
		 policy);
	if (tmm_ctx_create(&ctx, cfg) < 0)
		return false;
	tmm_ctx_destroy(ctx);
	return true;
}

/* The index of cell i's baseline cell (same table, same model). */
static size_t baseline_of(const struct report *r, size_t i)
{
	const struct paper_cell *c = &r->cells[i];

	for (size_t k = 0; k < r->n; k++)
		if (r->cells[k].table == c->table &&
		    r->cells[k].column == c->table->baseline &&
		    r->cells[k].model && c->model &&
		    strcmp(r->cells[k].model, c->model) == 0)
			return k;
	return r->n;
}

/* Searches cell i, once.  Returns false where it cannot be run here. */
static bool measure(struct report *r, size_t i)
{
	const struct paper_cell *c = &r->cells[i];
	const struct tmm_sim_profile *prof =
		tmm_sim_profile_find(c->table->profile);
	const struct zoo_model *m = zoo_find(c->model);
	struct bench_run how = paper_run(c);
	struct ours *u = &r->ours[i];
	unsigned probes = 0;
	double t0;

	if (u->run)
		return true;
	if (!prof || !m || !available(how.policy)) {
		fprintf(stderr, "tensormm-bench: --calibrate: %s %s %s needs "
			"%s, which this build lacks\n", c->table->key,
			c->row, c->table->columns[c->column].name,
			!prof ? c->table->profile
			      : !m ? c->model : how.policy);
		r->rc = 1;
		return false;
	}
	t0 = bench_now_s();
	u->batch = search_max_batch(r->o, prof, m, &how, &u->bound, &probes);
	u->run = true;
	fprintf(stderr, "  %-16s %-14s %-13s %-18s batch %ld  [%u probes, "
		"%.1f s]\n", c->table->key, m->name, how.policy, prof->name,
		u->batch, probes, bench_now_s() - t0);
	return true;
}

static bool wanted(const struct report *r, const struct paper_cell *c)
{
	if (paper_not_covered(c))
		return false;
	return r->o->calibrate == CALIBRATE_FULL || c->faithful;
}

/* The compared ratio of cell i: of the gains, or of the absolute batches
 * for a baseline cell; NAN where there is none. */
static double ratio_of(const struct report *r, size_t i, double *paper_gain,
		       double *our_gain)
{
	const struct paper_cell *c = &r->cells[i];
	size_t b = baseline_of(r, i);

	*paper_gain = *our_gain = NAN;
	if (c->column == c->table->baseline)
		return r->ours[i].batch > 0 ? (double)r->ours[i].batch /
						      (double)c->value
					    : NAN;
	if (b == r->n || !r->ours[b].run || r->ours[b].batch <= 0 ||
	    r->cells[b].value <= 0)
		return NAN;
	*paper_gain = (double)c->value / (double)r->cells[b].value;
	*our_gain = (double)r->ours[i].batch / (double)r->ours[b].batch;
	return *our_gain / *paper_gain;
}

static bool within(const struct report *r, double ratio)
{
	return !isnan(ratio) && ratio >= 1 - r->o->tolerance &&
	       ratio <= 1 + r->o->tolerance;
}

static void print_head(const struct report *r, const struct paper_table *t)
{
	const struct paper_column *b = &t->columns[t->baseline];

	printf("\n### %s %s: %s; ours on %s (simulated)\n\n", t->paper,
	       t->table, t->caption, t->profile);
	printf("Where: %s.  Baseline: %s, ours `%s`%s%s (%s).  Search: %s.  "
	       "First iteration: %s.\n\n",
	       t->where, b->name, t->baseline_run.policy,
	       t->baseline_run.config ? " with " : "",
	       t->baseline_run.config ? t->baseline_run.config : "",
	       t->baseline_why, search_caption(r->o), start_caption(r->o));
	printf("| model | paper's row | paper's column | our run | paper | "
	       "ours | paper's gain | our gain | ratio | within +-%.0f%% | "
	       "faithful | why not |\n"
	       "|---|---|---|---|---:|---:|---:|---:|---:|---|---|---|\n",
	       r->o->tolerance * 100);
}

static void print_cell(struct report *r, size_t i, size_t *n_in)
{
	const struct paper_cell *c = &r->cells[i];
	const struct ours *u = &r->ours[i];
	bool base = c->column == c->table->baseline;
	double pg, og, ratio = ratio_of(r, i, &pg, &og);
	bool in = within(r, ratio);

	printf("| %s | %s | %s | `%s`%s%s%s | %ld | %ld%s |",
	       zoo_find(c->model)->title, c->row,
	       c->table->columns[c->column].name, paper_run(c).policy,
	       paper_run(c).config ? " with `" : "",
	       paper_run(c).config ? paper_run(c).config : "",
	       paper_run(c).config ? "`" : "", c->value, u->batch,
	       u->batch > 0 && (unsigned)u->batch + 1 == u->bound
		       ? " (single-op bound)"
		       : "");
	if (base)
		printf(" baseline | baseline |");
	else if (isnan(pg) || isnan(og))
		printf(" - | - |");
	else
		printf(" %.2f | %.2f |", pg, og);
	if (isnan(ratio))
		printf(" - |");
	else
		printf(" %s%.2f |", base ? "abs. " : "", ratio);
	printf(" %s | %s | %s |\n", in ? "yes" : "**no**",
	       c->faithful ? "yes" : "", c->why_not);
	if (in)
		(*n_in)++;
	if (c->faithful && !in) {
		fprintf(stderr, "tensormm-bench: --calibrate: faithful cell "
			"%s %s, %s (%s, `%s` on %s): ratio %.2f is outside "
			"+-%.0f%% (--tolerance)\n", c->table->key, c->model,
			c->table->columns[c->column].name, c->row,
			paper_run(c).policy, c->table->profile, ratio,
			r->o->tolerance * 100);
		r->rc = 1;
	}
}

static void print_not_covered(const struct report *r,
			      const struct paper_table *t)
{
	bool any = false;

	for (size_t i = 0; i < r->n; i++) {
		const struct paper_cell *c = &r->cells[i];
		const char *why = paper_not_covered(c);

		if (c->table != t || !why)
			continue;
		if (!any)
			printf("\nNot covered:\n\n");
		any = true;
		printf("- %s, %s", c->row, t->columns[c->column].name);
		if (c->value >= 0)
			printf(" (%ld)", c->value);
		else
			printf(" ('%s')", c->mark);
		if (c->model)
			printf(" for our %s", c->model);
		printf(": %s.\n", why);
	}
}

static void report_table(struct report *r, const struct paper_table *t)
{
	size_t n_cells = 0, n_in = 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct paper_cell *c = &r->cells[i];
		size_t b;

		if (c->table != t || !wanted(r, c))
			continue;
		b = baseline_of(r, i);
		if (!measure(r, i) || (b < r->n && !measure(r, b)))
			continue;
		n_cells++;
	}
	if (!n_cells && r->o->calibrate == CALIBRATE_SHORT)
		return;
	print_head(r, t);
	for (size_t i = 0; i < r->n; i++)
		if (r->cells[i].table == t && wanted(r, &r->cells[i]) &&
		    r->ours[i].run)
			print_cell(r, i, &n_in);
	printf("\n%s %s: %zu of %zu %s cells within +-%.0f%% (a baseline "
	       "cell by its absolute batch).\n", t->paper, t->table, n_in,
	       n_cells, r->o->calibrate == CALIBRATE_SHORT ? "faithful"
							   : "covered",
	       r->o->tolerance * 100);
	if (r->o->calibrate == CALIBRATE_FULL)
		print_not_covered(r, t);
}

int calibrate(const struct opts *o)
{
	struct report r = { .o = o };
	const struct paper_table *const *tables;
	size_t n_tables;
	double t0 = bench_now_s();

	r.cells = paper_cells(&r.n);
	r.ours = calloc(r.n, sizeof(*r.ours));
	if (!r.ours) {
		fprintf(stderr, "tensormm-bench: out of memory\n");
		return 1;
	}
	tables = paper_tables(&n_tables);
	printf("\n## Calibration against the papers' maximum-batch tables "
	       "(%s, simulated)\n\n", o->calibrate == CALIBRATE_SHORT
					     ? "the faithful cells"
					     : "every covered cell");
	printf("Ours is the largest batch that trains on the sim profile "
	       "that stands for the paper's GPU; a gain is a column's batch "
	       "over its table's baseline column's, and the ratio is our "
	       "gain over the paper's.  (single-op bound): ours is the "
	       "largest batch below the one at which one op's own tensors "
	       "exceed the device.\n");
	for (size_t t = 0; t < n_tables; t++)
		report_table(&r, tables[t]);
	printf("\nCalibration wall time: %.1f s (host).\n",
	       bench_now_s() - t0);
	free(r.ours);
	return r.rc;
}
