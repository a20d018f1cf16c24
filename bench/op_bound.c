/* SPDX-License-Identifier: MIT */
/*
 * op_bound.c — the single-op bound of a model on a device (op_bound.h),
 * computed from the zoo's graphs: no run, only their sizes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/base/pool_align.h"
#include "op_bound.h"
#include "zoo.h"

uint64_t graph_largest_op(const struct zgraph *g)
{
	uint64_t most = 0;

	for (uint32_t i = 0; i < g->nop; i++) {
		const struct zg_op *op = &g->op[i];
		/* inputs and outputs are back to back in g->ids */
		const zg_t *ids = g->ids + op->in_at;
		uint32_t n = op->n_in + op->n_out;
		uint64_t need = 0;

		for (uint32_t k = 0; k < n; k++) {
			bool again = false;

			/* a tensor listed twice (in place) counts once */
			for (uint32_t j = 0; j < k && !again; j++)
				again = ids[j] == ids[k];
			if (!again)
				need += (g->t[ids[k]].bytes + TMM_POOL_ALIGN -
					 1) / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
		}
		if (need > most)
			most = need;
	}
	return most;
}

/* Whether one op of m at x exceeds capacity; a graph that cannot be built
 * is fatal, as in search.c (a bug in the zoo, not a measurement). */
static bool too_big(const struct zoo_model *m, bool scale, unsigned fixed,
		    unsigned x, uint64_t capacity, graph_prepare_fn prepare)
{
	struct zoo_args a = { scale ? fixed : x, scale ? x : fixed };
	struct zgraph g;
	bool over;

	if (zoo_build(m, &a, &g) < 0) {
		fprintf(stderr, "tensormm-bench: cannot build %s at batch %u, "
			"scale %u: %s\n", m->name, a.batch, a.scale, g.errmsg);
		exit(1);
	}
	if (prepare)
		prepare(&g);
	over = graph_largest_op(&g) > capacity;
	zg_free(&g);
	return over;
}

unsigned op_bound(const struct zoo_model *m, bool scale, unsigned fixed,
		  uint64_t capacity, unsigned limit, graph_prepare_fn prepare)
{
	unsigned lo = 0, hi, x;

	/* Doubling, then bisection: lo fits, hi does not. */
	for (x = 1;; x *= 2) {
		if (x >= limit) {
			if (!too_big(m, scale, fixed, limit, capacity,
				     prepare))
				return limit + 1;
			hi = limit;
			break;
		}
		if (too_big(m, scale, fixed, x, capacity, prepare)) {
			hi = x;
			break;
		}
		lo = x;
	}
	while (hi - lo > 1) {
		x = lo + (hi - lo) / 2;
		if (too_big(m, scale, fixed, x, capacity, prepare))
			hi = x;
		else
			lo = x;
	}
	return hi;
}
