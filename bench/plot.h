/* SPDX-License-Identifier: MIT */
/*
 * plot.h — the two SVG charts of tensormm-bench, written by hand.
 */
#ifndef BENCH_PLOT_H
#define BENCH_PLOT_H

#include <stddef.h>
#include <stdint.h>

/* One line of a chart: a name and its points (y per x = 0, 1, ...). */
struct plot_series {
	const char *name;
	const uint64_t *y;
	size_t n;
};

/*
 * Device memory in use over one iteration: one line per series (x: op
 * index, y: bytes), a dashed line at `limit` bytes (0: none), and dotted
 * lines where the backward pass and the optimizer steps begin (op
 * indices; 0: none).  Returns 0 or a negative errno (the file could not
 * be written).
 */
int plot_memory(const char *path, const char *title,
		const struct plot_series *s, size_t n, uint64_t limit,
		size_t backward_at, size_t optimizer_at);

/*
 * Grouped bars: for each of `n_groups` groups (x labels), one bar per
 * series; values[g * n_series + k], negative for "not available" (no
 * bar).  Returns 0 or a negative errno.
 */
int plot_bars(const char *path, const char *title, const char *y_label,
	      const char *const *groups, size_t n_groups,
	      const char *const *series, size_t n_series,
	      const double *values);

#endif /* BENCH_PLOT_H */
