/* SPDX-License-Identifier: MIT */
/*
 * tables.c — tensormm-bench's figures for one profile: the markdown
 * tables on stdout and, with --plot, the SVG charts (drawn by plot.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto_honest.h"
#include "plot.h"
#include "tables.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

/* ---- tables -------------------------------------------------------------- */

static void table_head(const struct opts *o, const char *first)
{
	printf("| %s |", first);
	for (size_t k = 0; k < o->n_policies; k++)
		printf(" %s |", honest_policy_label(o->policies[k]));
	printf("\n|---|");
	for (size_t k = 0; k < o->n_policies; k++)
		printf("---:|");
	printf("\n");
}

static void print_modes(const struct opts *o, const struct row *rows);
static void print_fragmentation(const struct opts *o,
				const struct row *rows);

void print_profile(const struct opts *o, const struct tmm_sim_profile *prof,
		   const struct row *rows)
{
	char na[256] = "";
	size_t len = 0;

	for (size_t k = 0; k < o->n_policies; k++)
		if (!o->available[k] && len < sizeof(na))
			len += (size_t)snprintf(na + len, sizeof(na) - len,
						"%s%s", len ? ", " : "",
						o->policies[k]);
	printf("\n## %s: %s, %.0f GiB (simulated)\n\n", prof->name,
	       prof->description, (double)prof->capacity / 1073741824.0);
	if (len)
		printf("n/a: policy not available in this build (%s).\n\n",
		       na);
	printf("### Largest batch that trains (Capuchin Table 2, TSPLIT "
	       "Table IV)\n\n");
	printf("Search: %s.  First iteration: %s.\n\n", search_caption(o),
	       start_caption(o));
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			if (rows[i].cells[k].max_batch < 0)
				printf(" n/a |");
			else
				printf(" %ld |", rows[i].cells[k].max_batch);
		}
		printf("\n");
	}
	printf("\n### Largest batch at >= 75%% / >= 50%% of the unconstrained "
	       "throughput, simulated (TSPLIT Fig. 14a)\n\n");
	printf("The same search, up to the largest batch that trains.\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &rows[i].cells[k];

			if (c->max_batch < 0)
				printf(" n/a |");
			else
				printf(" %ld / %ld |", c->batch75, c->batch50);
		}
		printf("\n");
	}
	printf("\n### Largest width scale at batch %u (TSPLIT Table V)\n\n",
	       o->width_batch);
	printf("The same search over the width scale, up to %s.\n\n",
	       o->search == SEARCH_BISECT ? "--max-scale"
					  : "its single-op bound or "
					    "--max-scale");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			if (rows[i].cells[k].max_scale < 0)
				printf(" n/a |");
			else
				printf(" %ld |", rows[i].cells[k].max_scale);
		}
		printf("\n");
	}
	printf("\n### At a fixed budget: %.0f%% of the unconstrained peak, at "
	       "the largest batch `none` trains (TENSILE's metrics)\n\n",
	       o->budget_frac * 100);
	printf("| model | batch | peak unconstr. | budget | policy | peak | "
	       "MSR | EOR | CBR | samples/s (sim) | plan ms (host) | "
	       "runtime ns/access (host) |\n"
	       "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct row *r = &rows[i];

		if (r->ref_batch <= 0) {
			printf("| %s | - | - | - | - | does not train at "
			       "batch 1 | | | | | | |\n",
			       o->models[i]->title);
			continue;
		}
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &r->cells[k];

			if (!o->available[k])
				continue;
			printf("| %s | %ld | %.2f GiB | %.2f GiB | %s |",
			       o->models[i]->title, r->ref_batch,
			       (double)r->vmp / 1073741824.0,
			       (double)r->budget / 1073741824.0,
			       honest_policy_label(o->policies[k]));
			if (c->budget_rc < 0) {
				printf(" failed: %s | | | | | | |\n",
				       c->budget_op_too_big
					       ? "an op alone exceeds the "
						 "budget"
					       : tmm_strerror(c->budget_rc));
				continue;
			}
			printf(" %.2f GiB | %.3f | %.3f | ",
			       (double)c->emp / 1073741824.0, c->msr, c->eor);
			if (isinf(c->cbr))
				printf("inf |");
			else
				printf("%.3f |", c->cbr);
			printf(" %.1f | %.3f | %.0f |\n", c->samples_s,
			       (double)c->plan_ns / 1e6, c->host_ns_access);
		}
	}
	print_modes(o, rows);
	print_fragmentation(o, rows);
}

/* The fixed budget again, by mode: swap (pool and pinned copies) against
 * uvm (managed memory, the simulated driver); `passive` in uvm is the
 * driver with no hints at all. */
static void print_modes(const struct opts *o, const struct row *rows)
{
	printf("\n### Simulated throughput at the fixed budget by mode, "
	       "samples/s (swap / uvm)\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct row *r = &rows[i];

		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &r->cells[k];

			if (!o->available[k]) {
				printf(" n/a |");
				continue;
			}
			if (r->ref_batch <= 0) {
				printf(" - |");
				continue;
			}
			if (c->budget_rc < 0)
				printf(" %s /", c->budget_op_too_big
							? "op > budget"
							: "failed");
			else
				printf(" %.1f /", c->samples_s);
			if (c->uvm_rc < 0)
				printf(" %s |", c->uvm_op_too_big
							? "op > budget"
							: "failed");
			else
				printf(" %.1f |", c->uvm_samples_s);
		}
		printf("\n");
	}
}

/* The device pool when the swap run at the fixed budget peaked: how much
 * of its free memory the largest hole was not (issue #21). */
static void print_fragmentation(const struct opts *o, const struct row *rows)
{
	printf("\n### Pool fragmentation at the peak of the fixed budget, "
	       "swap mode, %% (1 - largest free block / free bytes)\n\n");
	table_head(o, "model");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct row *r = &rows[i];

		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			const struct cell *c = &r->cells[k];

			if (!o->available[k])
				printf(" n/a |");
			else if (r->ref_batch <= 0 || c->budget_rc < 0)
				printf(" - |");
			else
				printf(" %.1f |",
				       100.0 * c->peak_fragmentation);
		}
		printf("\n");
	}
}

/* ---- plots --------------------------------------------------------------- */

int plot(const struct opts *o, const struct tmm_sim_profile *prof,
	 const struct row *rows)
{
	const char *groups[MAX_LIST], *series[MAX_LIST];
	double *values;
	size_t ns = 0;
	char path[512], title[256];
	int rc = 0;

	char names[MAX_LIST][48], failed[MAX_LIST][48];

	for (size_t k = 0; k < o->n_policies; k++) {
		snprintf(names[k], sizeof(names[k]), "%s, at the budget",
			 o->policies[k]);
		snprintf(failed[k], sizeof(failed[k]), "%s: fails there",
			 o->policies[k]);
	}
	for (size_t i = 0; i < o->n_models; i++) {
		struct plot_series s[MAX_LIST + 1];
		const struct row *r = &rows[i];
		size_t n = 0;

		if (r->ref_batch <= 0)
			continue;
		s[n++] = (struct plot_series){ "none, unconstrained", r->mem,
					       r->n_mem };
		for (size_t k = 0; k < o->n_policies; k++) {
			if (!o->available[k])
				continue;
			/* a run that failed still gets its legend line */
			if (r->cells[k].budget_rc < 0)
				s[n++] = (struct plot_series){ failed[k],
							       NULL, 0 };
			else
				s[n++] = (struct plot_series){
					names[k], r->cells[k].mem,
					r->cells[k].n_mem };
		}
		snprintf(path, sizeof(path), "%s/memory-%s-%s.svg",
			 o->plot_dir, prof->name, o->models[i]->name);
		snprintf(title, sizeof(title), "%s, batch %ld, on %s "
			 "(simulated): one guided iteration",
			 o->models[i]->title, r->ref_batch, prof->name);
		rc = plot_memory(path, title, s, n, r->budget,
				 r->backward_at, r->optimizer_at);
		if (rc < 0)
			goto fail;
	}
	for (size_t k = 0; k < o->n_policies; k++)
		if (o->available[k])
			series[ns++] = o->policies[k];
	values = calloc(o->n_models * (ns ? ns : 1), sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_models; i++) {
		size_t j = 0;

		groups[i] = o->models[i]->title;
		for (size_t k = 0; k < o->n_policies; k++)
			if (o->available[k])
				values[i * ns + j++] =
					(double)rows[i].cells[k].max_batch;
	}
	snprintf(path, sizeof(path), "%s/max-batch-%s.svg", o->plot_dir,
		 prof->name);
	snprintf(title, sizeof(title), "Largest batch that trains, per policy, "
		 "on %s (simulated)", prof->name);
	rc = plot_bars(path, title, "batch size", groups, o->n_models, series,
		       ns, values);
	free(values);
	if (rc == 0)
		return 0;
fail:
	fprintf(stderr, "tensormm-bench: cannot write %s: %s\n", path,
		strerror(-rc));
	return rc;
}
