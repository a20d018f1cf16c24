/* SPDX-License-Identifier: MIT */
/*
 * demo_pair.c — the examples' two trainings and their verdict (see
 * demo_pair.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_pair.h"

/* Room for the simulator's settings, a budget and 300 characters of
 * --config. */
#define CONFIG_MAX 512

int demo_pair_open(struct demo_pair *d, const char *prog, unsigned steps,
		   double fraction, const char *extra)
{
	*d = (struct demo_pair){ .prog = prog, .steps = steps,
				 .fraction = fraction, .extra = extra };
	d->losses[0] = calloc(steps, sizeof(float));
	d->losses[1] = calloc(steps, sizeof(float));
	if (!d->losses[0] || !d->losses[1]) {
		fprintf(stderr, "%s: out of memory\n", prog);
		demo_pair_close(d);
		return -1;
	}
	return 0;
}

/* Writes the configuration of a run with `budget` (a tunable's value)
 * and d's extra tunables into config; 0, or -1 where it does not fit. */
static int make_config(const struct demo_pair *d, const char *budget,
		       char config[CONFIG_MAX])
{
	int n = snprintf(config, CONFIG_MAX,
			 "backend=sim,sim_memory=backed,budget=%s%s%s",
			 budget, d->extra ? "," : "",
			 d->extra ? d->extra : "");

	if (n < 0 || n >= CONFIG_MAX) {
		fprintf(stderr, "%s: the tunables do not fit in %d "
			"characters\n", d->prog, CONFIG_MAX);
		return -1;
	}
	return 0;
}

int demo_pair_unconstrained(struct demo_pair *d, demo_train_fn fn,
			    const void *cfg)
{
	char config[CONFIG_MAX];
	int rc;

	printf("1) unconstrained run, to measure the peak device memory\n");
	/* The peak is measured with the extra tunables too: in mode=uvm a
	 * tensor takes whole pages, so the two modes' peaks differ. */
	if (make_config(d, "100%", config))
		return -1;
	rc = demo_train(d->prog, config, fn, cfg, NULL, d->losses[0],
			&d->weights[0], &d->len[0], &d->st[0], false, 0);
	if (rc)
		return rc;
	d->budget = (unsigned long long)((double)d->st[0].device_peak *
					 d->fraction);
	printf("   peak %.2f MiB\n\n", d->st[0].device_peak / 1048576.0);
	return 0;
}

int demo_pair_constrained(struct demo_pair *d, demo_train_fn fn,
			  const void *cfg, unsigned stats_opts)
{
	char config[CONFIG_MAX], budget[32];

	printf("2) the same training with a budget of %.0f%% of that peak "
	       "(%.2f MiB)%s%s\n", 100.0 * d->fraction,
	       d->budget / 1048576.0, d->extra ? ", with " : "",
	       d->extra ? d->extra : "");
	snprintf(budget, sizeof(budget), "%lluB", d->budget);
	if (make_config(d, budget, config))
		return -1;
	return demo_train(d->prog, config, fn, cfg, stdout, d->losses[1],
			  &d->weights[1], &d->len[1], &d->st[1], true,
			  stats_opts);
}

bool demo_pair_verdict(const struct demo_pair *d)
{
	unsigned long long peak = d->st[1].device_peak;
	bool identical =
		d->len[0] == d->len[1] &&
		!memcmp(d->weights[0], d->weights[1], d->len[0]) &&
		!memcmp(d->losses[0], d->losses[1],
			d->steps * sizeof(float));

	demo_print_first_step(&d->first);
	printf("\nweights and losses bit-identical to the unconstrained run: "
	       "%s\n", identical ? "yes" : "NO");
	printf("device peak %.2f MiB within the %.2f MiB budget: %s\n",
	       peak / 1048576.0, d->budget / 1048576.0,
	       peak <= d->budget ? "yes" : "NO");
	return identical && peak <= d->budget;
}

void demo_pair_close(struct demo_pair *d)
{
	for (unsigned k = 0; k < 2; k++) {
		free(d->weights[k]);
		free(d->losses[k]);
		d->weights[k] = NULL;
		d->losses[k] = NULL;
	}
}
