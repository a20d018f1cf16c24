/* SPDX-License-Identifier: MIT */
/*
 * gpu_goals.h — issue #19's goals judged from the runs of one
 * bench_gpu_train invocation: each goal beside the figure that meets or
 * misses it, in one markdown table, so that a lent GPU's one call says
 * where the library stands.
 *
 * The goals (issue #19, "Goals on the H100 shapes"):
 * - compute-bound at 40%: swap+auto at most 1.15x, uvm+auto at most
 *   1.25x the unconstrained step;
 * - transfer-bound at 30%: swap+auto and uvm+auto at most 1.5x;
 * - uvm+auto at most 10% slower than swap+auto, at every shape and budget
 *   where both ran;
 * - auto at most 3% slower than the best other policy of the same shape,
 *   mode and budget, among those this invocation ran (the table names
 *   them);
 * - mode=uvm with no memory pressure (a budget above the peak) at most
 *   1.05x, by policy none;
 * - every run bit-identical to the unconstrained one.
 * A run that failed or differed counts for no figure: its goal says
 * "failed".  A goal whose runs were not made is left out, except the four
 * named cells of the known shapes, which say "not run" when their shape
 * ran, or was meant to, without them.
 *
 * Below the table, auto in the other mode=uvm ways the call ran
 * (uvm-copy, uvm-nocupti, ...) is held to uvm+auto's limits in a table of
 * its own, not counted among the missed goals: it says what taking that
 * way would give, where auto's own way is the one the goals judge.
 */
#ifndef BENCH_GPU_GOALS_H
#define BENCH_GPU_GOALS_H

#include <stdbool.h>

/* One run of the benchmark, as the goals need it. */
struct goal_run {
	const char *shape;  /* "compute-bound", "transfer-bound", "custom" */
	const char *mode;   /* "swap", "uvm", "uvm-copy", ... */
	const char *policy;
	double budget;	    /* fraction of the unconstrained peak */
	double ms, x;	    /* median steady step, and over unconstrained */
	bool ok;	    /* it ran and was bit-identical */
};

/* The runs of one invocation, in the order they ran. */
struct goal_book {
	struct goal_run *runs;
	unsigned n, cap;
	unsigned lost;	 /* runs goal_book_add had no memory for */
	bool no_bytes;	 /* the runs' bytes were not compared (the
			  * simulator's phantom memory): no bit-identity
			  * goal, and `ok` means only that a run ran */
	const char *meant[4]; /* shapes meant to run, their runs made or
			       * not (goal_book_expect) */
	unsigned n_meant;
};

/* Notes one run; the strings must outlive the book.  0, or -ENOMEM (the
 * run is then left out of the goals, which say so). */
int goal_book_add(struct goal_book *b, const struct goal_run *r);

/* Notes that `shape` was meant to run (the string must outlive the
 * book): its named goals then say "not run" even where none of its runs
 * was made (a deadline passed first). */
void goal_book_expect(struct goal_book *b, const char *shape);

void goal_book_free(struct goal_book *b);

/* Prints the goals table, under a heading of `title`, through `out`
 * (printf-like); returns how many goals were judged and missed (not run
 * and failed included). */
unsigned goal_book_print(const struct goal_book *b, const char *title,
			 void (*out)(const char *fmt, ...));

#endif /* BENCH_GPU_GOALS_H */
