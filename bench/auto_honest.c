/* SPDX-License-Identifier: MIT */
/*
 * auto_honest.c — tensormm-bench --honest-auto (auto_honest.h).
 *
 * Each (model, policy) runs at the fixed budget and batch of
 * measure_budget, in swap mode, as that table's runs do (auto with
 * auto_goal=speed), once per seed with sim_jitter=HONEST_JITTER on the
 * measured device: the first iteration's trace, and so every plan, is
 * made from jittered op times, and the throughput is the third
 * iteration's.  The twin that auto tries plans on has no jitter
 * (lib/twin/trial.c spells sim_jitter=0; tests/test_auto_twin.c holds it
 * to that), which is the point: auto is judged on a device that differs
 * from the one it tried its plans on, as a real GPU would.  auto runs
 * again per seed with auto_twin=off, picking by the forecast alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto_honest.h"
#include "drive.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

/* A throughput over the seeds: median and spread of the runs that
 * completed (ok of them). */
struct spread {
	double med, min, max;
	unsigned ok;
};

const char *honest_policy_label(const char *policy)
{
	return strcmp(policy, "auto") == 0 ? "auto (twin-judged)" : policy;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Samples/s of model m at `batch` under cfg, or a negative errno. */
static int run_once(const struct zoo_model *m, long batch, const char *cfg,
		    double *samples_s)
{
	struct zoo_args a = { (unsigned)batch, 1 };
	struct drive_opts d = { .config = cfg, .iterations = ITERATIONS,
				.no_peak = true };
	struct drive_result r;
	struct zgraph g;
	int rc = zoo_build(m, &a, &g);

	if (rc < 0) {
		fprintf(stderr, "tensormm-bench: cannot build %s at batch "
			"%ld: %s\n", m->name, batch, g.errmsg);
		return rc;
	}
	rc = zoo_drive(&g, &d, &r);
	zg_free(&g);
	if (rc < 0) {
		fprintf(stderr, "  honest: %s: %s\n", cfg, r.error);
		return rc;
	}
	*samples_s = (double)batch / ((double)r.it[ITERATIONS - 1].ns * 1e-9);
	return 0;
}

/* One policy over the seeds; `extra` is appended to each config. */
static struct spread measure(const struct tmm_sim_profile *prof,
			     const struct zoo_model *m, const struct row *row,
			     const char *policy, const char *extra)
{
	double v[HONEST_SEEDS];
	struct spread s = { 0 };

	for (unsigned seed = 1; seed <= HONEST_SEEDS; seed++) {
		char cfg[320];

		snprintf(cfg, sizeof(cfg),
			 "backend=sim,mode=swap,sim_memory=phantom,"
			 "sim_profile=%s,policy=%s,budget=%lluB,"
			 "sim_jitter=%g,sim_seed=%u%s",
			 prof->name, policy, (unsigned long long)row->budget,
			 HONEST_JITTER, seed, extra);
		if (run_once(m, row->ref_batch, cfg, &v[s.ok]) == 0)
			s.ok++;
	}
	if (!s.ok)
		return s;
	qsort(v, s.ok, sizeof(v[0]), by_value);
	s.min = v[0];
	s.max = v[s.ok - 1];
	/* With an even count, the mean of the middle two. */
	s.med = s.ok % 2 ? v[s.ok / 2] : (v[s.ok / 2 - 1] + v[s.ok / 2]) / 2;
	return s;
}

static void print_spread(const struct spread *s)
{
	if (!s->ok) {
		printf(" failed |");
		return;
	}
	printf(" %.1f [%.1f–%.1f]", s->med, s->min, s->max);
	if (s->ok < HONEST_SEEDS)
		printf(" (%u of %d ran)", s->ok, HONEST_SEEDS);
	printf(" |");
}

static void print_ratio(const struct spread *a, const struct spread *b)
{
	if (a->ok && b->ok && b->med > 0)
		printf(" %.3f |", a->med / b->med);
	else
		printf(" - |");
}

static void csv_spread(const struct tmm_sim_profile *prof,
		       const struct zoo_model *m, const char *policy,
		       const struct spread *s)
{
	if (!csv || !s->ok)
		return;
	fprintf(csv, "%s,%s,%s,honest_throughput_median_sim,%.6g,samples/s\n"
		     "%s,%s,%s,honest_throughput_min_sim,%.6g,samples/s\n"
		     "%s,%s,%s,honest_throughput_max_sim,%.6g,samples/s\n",
		prof->name, m->name, policy, s->med, prof->name, m->name,
		policy, s->min, prof->name, m->name, policy, s->max);
	fflush(csv);
}

/* What one model measured: every policy, and auto with no twin. */
struct honest_row {
	struct spread p[MAX_LIST];
	struct spread forecast_only; /* auto, auto_twin=off */
	size_t best;		     /* the best other policy, or MAX_LIST */
	size_t auto_k;		     /* auto's index, or MAX_LIST */
};

static void measure_model(const struct opts *o,
			  const struct tmm_sim_profile *prof,
			  const struct zoo_model *m, const struct row *row,
			  struct honest_row *h)
{
	memset(h, 0, sizeof(*h));
	h->best = h->auto_k = MAX_LIST;
	for (size_t k = 0; k < o->n_policies; k++) {
		bool is_auto = strcmp(o->policies[k], "auto") == 0;

		if (!o->available[k])
			continue;
		fprintf(stderr, "  honest: %s %s, %d seeds\n", m->name,
			o->policies[k], HONEST_SEEDS);
		/* auto as the fixed-budget table runs it: how fast. */
		h->p[k] = measure(prof, m, row, o->policies[k],
				  is_auto ? ",auto_goal=speed" : "");
		csv_spread(prof, m, o->policies[k], &h->p[k]);
		if (is_auto) {
			h->auto_k = k;
			fprintf(stderr, "  honest: %s auto, auto_twin=off, %d "
				"seeds\n", m->name, HONEST_SEEDS);
			h->forecast_only = measure(prof, m, row, "auto",
						   ",auto_twin=off");
			csv_spread(prof, m, "auto_twin_off",
				   &h->forecast_only);
		} else if (h->p[k].ok &&
			   (h->best == MAX_LIST ||
			    h->p[k].med > h->p[h->best].med)) {
			h->best = k;
		}
	}
}

void honest_auto(const struct opts *o, const struct tmm_sim_profile *prof,
		 const struct row *rows)
{
	struct honest_row *h = calloc(o->n_models, sizeof(*h));

	if (!h) {
		fprintf(stderr, "tensormm-bench: out of memory\n");
		return;
	}
	for (size_t i = 0; i < o->n_models; i++)
		if (rows[i].ref_batch > 0)
			measure_model(o, prof, o->models[i], &rows[i], &h[i]);
	printf("\n### Honest auto: the fixed budget (%.0f%% of the "
	       "unconstrained peak) with jitter on the device, "
	       "sim_jitter=%g, seeds 1-%d, samples/s (sim), median "
	       "[min–max]\n\n",
	       o->budget_frac * 100, HONEST_JITTER, HONEST_SEEDS);
	printf("The twin auto tries plans on has no jitter: \"twin-judged\" "
	       "is auto as the other tables run it (auto_goal=speed), its "
	       "plan picked by trials on a device that is not the one "
	       "measured; \"auto_twin=off\" picks by the forecast alone, "
	       "the path a real GPU takes.\n\n");
	printf("| model | batch | best other policy | its samples/s | "
	       "auto (twin-judged) | / best | auto, auto_twin=off | "
	       "/ best |\n|---|---:|---|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < o->n_models; i++) {
		const struct honest_row *r = &h[i];
		static const struct spread none;
		const struct spread *best =
			r->best < MAX_LIST ? &r->p[r->best] : &none;
		const struct spread *tw =
			r->auto_k < MAX_LIST ? &r->p[r->auto_k] : &none;

		if (rows[i].ref_batch <= 0) {
			printf("| %s | - | does not train at batch 1 | | | | "
			       "| |\n", o->models[i]->title);
			continue;
		}
		printf("| %s | %ld | %s |", o->models[i]->title,
		       rows[i].ref_batch,
		       r->best < MAX_LIST ? o->policies[r->best] : "-");
		print_spread(best);
		if (r->auto_k == MAX_LIST) {
			printf(" not run | - | not run | - |\n");
			continue;
		}
		print_spread(tw);
		print_ratio(tw, best);
		print_spread(&r->forecast_only);
		print_ratio(&r->forecast_only, best);
		printf("\n");
	}
	printf("\nEvery policy under the same jitter, samples/s (sim), "
	       "median [min–max]:\n\n| model |");
	for (size_t k = 0; k < o->n_policies; k++)
		printf(" %s |", honest_policy_label(o->policies[k]));
	printf("\n|---|");
	for (size_t k = 0; k < o->n_policies; k++)
		printf("---:|");
	printf("\n");
	for (size_t i = 0; i < o->n_models; i++) {
		printf("| %s |", o->models[i]->title);
		for (size_t k = 0; k < o->n_policies; k++) {
			if (!o->available[k])
				printf(" n/a |");
			else if (rows[i].ref_batch <= 0)
				printf(" - |");
			else
				print_spread(&h[i].p[k]);
		}
		printf("\n");
	}
	free(h);
}
