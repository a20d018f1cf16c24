/* SPDX-License-Identifier: MIT */
/*
 * tables.h — tensormm-bench's figures for one profile, as markdown tables
 * and as SVG charts (tables.c).
 */
#ifndef BENCH_TABLES_H
#define BENCH_TABLES_H

#include "search.h"

/* The section of one profile: every table, `rows` one per model. */
void print_profile(const struct opts *o, const struct tmm_sim_profile *prof,
		   const struct row *rows);

/* --plot: the charts of one profile into o->plot_dir.  Returns 0, or a
 * negative errno, said on stderr. */
int plot(const struct opts *o, const struct tmm_sim_profile *prof,
	 const struct row *rows);

#endif /* BENCH_TABLES_H */
