/* SPDX-License-Identifier: MIT */
/*
 * gpu_train_options.h — bench_gpu_train's command line: the shapes it
 * knows, the policies, and what a command line chose (see
 * bench_gpu_train.c for what the benchmark does with them).
 */
#ifndef BENCH_GPU_TRAIN_OPTIONS_H
#define BENCH_GPU_TRAIN_OPTIONS_H

#include <stdbool.h>

#define MAX_STEPS 1000

struct shape {
	const char *name;
	unsigned width, layers, batch;
};

#define N_POLICIES 11

/* A mode, and the config words that give it: swap, uvm, or uvm with one
 * of its ways asked for (see gpu_train_options.c). */
struct run_mode {
	const char *name;
	const char *config;
	bool uvm;
};

#define MAX_MODES 14

/* What the command line chose. */
struct options {
	struct shape shapes[2];
	unsigned n_shapes;
	struct shape custom;
	const struct run_mode *modes[MAX_MODES];
	unsigned n_modes;
	const char *policies[N_POLICIES];
	unsigned n_policies;
	double budgets[8];
	unsigned n_budgets;
	unsigned steps, warmup;
	const char *append;
	const char *commit;
	bool goals; /* --goals: issue #19's cells, and its goals table */
	bool has_deadline;
	unsigned deadline_s; /* --deadline: no run starts past it */
};

/* One run of a shape's table: a mode, a policy, a fraction of the peak. */
struct cell {
	const struct run_mode *mode;
	const char *policy;
	double budget;
};

/* The most cells of one shape: every mode x policy x budget. */
#define MAX_CELLS (MAX_MODES * N_POLICIES * 8)

/*
 * Fills o (zeroed by the caller) from argv.  Returns 0, 1 after printing
 * the help (--help: the program exits 0), or 2 after saying on stderr
 * what was wrong with the command line.
 */
int gpu_train_parse_args(struct options *o, int argc, char **argv);

/*
 * The runs of shape sh's table, in the order they run, into cells (room
 * for MAX_CELLS); returns how many.  Every mode x budget x policy chosen,
 * or with --goals the cells issue #19's goals are judged by
 * (gpu_goals.h): at the shape's goal budget (40% compute-bound, 30%
 * otherwise) auto and the peers closest to it on the H200 (tensile,
 * capuchin, tsplit) in mode=swap and mode=uvm, auto by the copy way
 * (uvm-copy) and with CUPTI off (uvm-nocupti: what its counters cost),
 * and policy none in mode=uvm at 200% (no pressure).
 */
unsigned gpu_train_cells(const struct options *o, const struct shape *sh,
			 struct cell *cells);

#endif /* BENCH_GPU_TRAIN_OPTIONS_H */
