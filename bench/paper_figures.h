/* SPDX-License-Identifier: MIT */
/*
 * paper_figures.h — the papers' maximum-batch tables as data: every cell
 * of Capuchin Table 2, TSPLIT Table IV and SuperNeurons Table 5, with
 * where it is printed, which of our policies and profiles stands for it,
 * and what `tensormm-bench --calibrate` needs to judge ours against it
 * (calibrate.c).  The figures themselves are in paper_figures.c.
 */
#ifndef BENCH_PAPER_FIGURES_H
#define BENCH_PAPER_FIGURES_H

#include <stdbool.h>
#include <stddef.h>

#include "search.h"

#define PAPER_MAX_COLUMNS 6

/* One column of a paper's table. */
struct paper_column {
	const char *name;	 /* the paper's: "vDNN all" */
	const char *policy;	 /* ours, NULL where not covered */
	const char *mapping;	 /* why that policy stands for it, or why
				  * none does */
	const char *config;	 /* more tunables for our run, or NULL: what
				  * makes the policy the paper's system
				  * rather than ours beyond it */
};

/* One of the papers' tables. */
struct paper_table {
	const char *key;	 /* "capuchin-t2": what the report names */
	const char *paper;	 /* authors, venue */
	const char *table;	 /* "Table 2" */
	const char *where;	 /* section, and page where the text has
				  * page markers */
	const char *caption;	 /* what the figures are, on what */
	const char *profile;	 /* our sim profile for its GPU */
	struct paper_column columns[PAPER_MAX_COLUMNS];
	size_t n_columns;
	size_t baseline;	 /* the column every gain is over */
	/* Our run for the baseline column: the one place to change it
	 * (its policy, more tunables, a change to the graph). */
	struct bench_run baseline_run;
	const char *baseline_why;
};

/* One cell of a paper's table. */
struct paper_cell {
	const struct paper_table *table;
	const char *row;	 /* the paper's model name */
	const char *model;	 /* our zoo model, NULL: not in the zoo */
	size_t column;		 /* index into table->columns */
	long value;		 /* the paper's figure; -1: none */
	const char *mark;	 /* the paper's text where value < 0 ("x") */
	/* Why our model cannot stand for this cell, a reason kept with
	 * the data ("" where it should be within +-35%). */
	const char *why_not;
	/* Marked faithful: --calibrate=short asserts it stays within
	 * +-35% (make check runs that). */
	bool faithful;
};

/*
 * A baseline that keeps every tensor of the iteration until it ends
 * (zgraph.destroy_at_end), as TSPLIT says its Base does: it "stores all
 * the feature maps and parameters during the training process" (VI-A).
 * For struct bench_run.prepare.
 */
void paper_keep_all(struct zgraph *g);

/* Every table, in the report's order; *n receives their number. */
const struct paper_table *const *paper_tables(size_t *n);

/* Every cell of every table, covered or not; *n receives their number. */
const struct paper_cell *paper_cells(size_t *n);

/*
 * Why a cell is not covered (no zoo model, no policy, no figure in the
 * paper), or NULL where it is: one of our runs stands for it.
 */
const char *paper_not_covered(const struct paper_cell *c);

/* Our run for cell c (covered): the table's baseline run for the
 * baseline column, else the column's policy as it is. */
struct bench_run paper_run(const struct paper_cell *c);

#endif /* BENCH_PAPER_FIGURES_H */
