/* SPDX-License-Identifier: MIT */
/*
 * dp_report.c — the data-parallel examples' checks and report
 * (dp_report.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "dp_report.h"

unsigned long long dp_digest(const uint8_t *p, size_t len)
{
	unsigned long long h = 0xcbf29ce484222325ull;

	for (size_t k = 0; k < len; k++)
		h = (h ^ p[k]) * 0x100000001b3ull;
	return h;
}

void dp_figures_fill(tmm_ctx *ctx, const uint8_t *w, size_t len,
		     struct dp_figures *fig)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	tmm_stats_get(ctx, &st);
	fig->peak = st.device_peak;
	fig->budget = st.budget;
	fig->swap_outs = st.swap_out_count;
	fig->passive = st.passive_evictions;
	fig->uvm_evictions = st.uvm_evictions;
	fig->digest = dp_digest(w, len);
}

int dp_check_batch(const char *prog, unsigned batch, unsigned accumulate,
		   const struct dp_comm *c)
{
	unsigned parts = (unsigned)c->size * accumulate;

	if (batch % parts == 0)
		return 0;
	fprintf(stderr,
		"%s: --batch %u does not split into %d rank(s) x %u "
		"micro-batch(es): give a --batch that is a multiple of %u, "
		"or change -np or --accumulate\n",
		prog, batch, c->size, accumulate, parts);
	return 2;
}

void dp_report(const char *prog, const struct dp_comm *c,
	       const struct dp_figures *mine, bool simulated)
{
	struct dp_figures *all = calloc((size_t)c->size, sizeof(*all));

	if (!all || dp_comm_allgather(c, mine, sizeof(*mine), all)) {
		fprintf(stderr, "%s: rank %d: cannot gather the figures\n",
			prog, c->rank);
		free(all);
		dp_comm_abort(c, 1);
		return;
	}
	for (int r = 0; c->rank == 0 && r < c->size; r++)
		printf("rank %d: device peak %.2f MiB, budget %.2f MiB, "
		       "%llu swap-out(s), %llu passive eviction(s), "
		       "%llu uvm eviction(s), "
		       "%.2f MiB declared on the network%s\n", r,
		       all[r].peak / 1048576.0, all[r].budget / 1048576.0,
		       all[r].swap_outs, all[r].passive, all[r].uvm_evictions,
		       all[r].net / 1048576.0,
		       simulated ? " (simulated)" : "");
	free(all);
}

void dp_finish(const char *prog, const struct dp_comm *c,
	       unsigned long long d)
{
	bool same;

	if (dp_comm_same(c, d, &same) || !same) {
		fprintf(stderr, "%s: rank %d: the ranks' weights differ "
			"(a bug in the reduction)\n", prog, c->rank);
		dp_comm_abort(c, 1);
	}
	if (c->rank == 0) {
		printf("weights digest: %016llx\n", d);
		fflush(stdout);
	}
}
