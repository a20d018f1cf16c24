/* SPDX-License-Identifier: MIT */
/*
 * calibrate.h — `tensormm-bench --calibrate`: ours beside the papers'
 * maximum-batch tables (paper_figures.h), cell by cell, gain against
 * gain.
 */
#ifndef BENCH_CALIBRATE_H
#define BENCH_CALIBRATE_H

#include "search.h"

/* A gain within this fraction of the paper's is "within" (the issue's
 * goal); --tolerance changes it for one run. */
#define CALIBRATE_TOLERANCE 0.35

/* o->calibrate's values. */
#define CALIBRATE_FULL 1  /* every covered cell */
#define CALIBRATE_SHORT 2 /* only the cells marked faithful, asserted */

/*
 * Searches the largest batch of every covered cell (CALIBRATE_FULL) or of
 * every faithful one and its baseline (CALIBRATE_SHORT), by o's search
 * rules, and prints the report on stdout as markdown.  Returns 0, or 1
 * when a faithful cell is outside o->tolerance (each named on stderr),
 * or a profile or policy the tables need is missing from this build.
 */
int calibrate(const struct opts *o);

#endif /* BENCH_CALIBRATE_H */
