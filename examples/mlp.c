/* SPDX-License-Identifier: MIT */
/*
 * mlp.c — the demo: train an MLP under memory pressure and show it costs
 * nothing in correctness.
 *
 * It trains the same model twice on the simulated GPU (backed memory, real
 * bytes): once with the whole device, to learn the run's peak device
 * memory, then with a budget of a fraction of that peak (30% by default),
 * so that libtensormm must swap tensors out and back in.  It prints the
 * loss of each step, libtensormm's statistics for the constrained run, and
 * whether its final weights are bit-identical to the unconstrained run's.
 *
 *   examples/mlp [--fraction F] [--steps N] [--layers N] [--width N]
 *                [--batch N] [--json] [--rehearse]
 *
 * Times in the statistics are simulated (virtual nanoseconds on the
 * TENSORMM_SIM_PROFILE hardware profile), not measured.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_run.h"
#include "mlp_model.h"
#include "tensormm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlp [--fraction F] [--steps N] [--layers N] "
		"[--width N] [--batch N] [--json]\n"
		"           [--rehearse]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 12)\n"
		"  --layers N    hidden layers (default 6)\n"
		"  --width N     units per hidden layer (default 256)\n"
		"  --batch N     samples per step (default 128)\n"
		"  --json        print the statistics as JSON\n"
		DEMO_REHEARSE_USAGE);
}

/* The model's trainer, typed as demo_train wants it. */
static int train_model(tmm_ctx *ctx, const void *cfg, float *losses,
		       uint8_t **weights, size_t *len, FILE *log)
{
	return mlp_train(ctx, cfg, losses, weights, len, log);
}

int main(int argc, char **argv)
{
	struct mlp_config mc;
	double fraction = 0.3;
	unsigned stats_opts = 0, rehearse = 0;
	struct demo_first_step first = { 0 };
	uint8_t *w_free = NULL, *w_tight = NULL;
	size_t len_free = 0, len_tight = 0;
	unsigned long long peak_free = 0, peak_tight = 0, budget;
	struct tmm_stats st_free, st_tight;
	float *loss_free, *loss_tight;
	char config[128];
	int rc, identical;

	mlp_config_default(&mc);
	{
		const struct demo_opt opts[] = {
			{ "--json", DEMO_FLAG, &stats_opts, TMM_STATS_JSON },
			{ "--fraction", DEMO_FRACTION, &fraction, 0 },
			{ "--steps", DEMO_COUNT, &mc.steps, 0 },
			{ "--layers", DEMO_COUNT, &mc.layers, 63 },
			{ "--width", DEMO_COUNT, &mc.width, 0 },
			{ "--batch", DEMO_COUNT, &mc.batch, 0 },
			DEMO_REHEARSE_OPT(rehearse),
		};
		int parsed = demo_parse_args("mlp", argc, argv, opts,
					 sizeof(opts) / sizeof(opts[0]), usage);

		if (parsed)
			return parsed == 1 ? 0 : 2;
	}

	loss_free = calloc(mc.steps, sizeof(float));
	loss_tight = calloc(mc.steps, sizeof(float));
	if (!loss_free || !loss_tight)
		return 1;

	printf("libtensormm demo: an MLP (%u hidden layers of %u, batch %u) "
	       "on the simulated GPU\n\n", mc.layers, mc.width, mc.batch);
	printf("1) unconstrained run, to measure the peak device memory\n");
	rc = demo_train("mlp", "backend=sim,sim_memory=backed,budget=100%",
			train_model, &mc, NULL, loss_free, &w_free, &len_free,
			&st_free, false, 0);
	if (rc)
		return 1;
	peak_free = st_free.device_peak;
	budget = (unsigned long long)((double)peak_free * fraction);
	printf("   peak %.2f MiB\n\n", peak_free / 1048576.0);

	printf("2) the same training with a budget of %.0f%% of that peak "
	       "(%.2f MiB)\n", 100.0 * fraction, budget / 1048576.0);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,budget=%lluB", budget);
	mc.rehearse = rehearse != 0;
	mc.after_step = demo_note_first_step;
	mc.after_step_arg = &first;
	rc = demo_train("mlp", config, train_model, &mc, stdout, loss_tight,
			&w_tight, &len_tight, &st_tight, true, stats_opts);
	if (rc)
		return 1;
	peak_tight = st_tight.device_peak;

	demo_print_first_step(&first);
	identical = len_free == len_tight &&
		    !memcmp(w_free, w_tight, len_free) &&
		    !memcmp(loss_free, loss_tight, mc.steps * sizeof(float));
	printf("\nweights and losses bit-identical to the unconstrained run: "
	       "%s\n", identical ? "yes" : "NO");
	printf("device peak %.2f MiB within the %.2f MiB budget: %s\n",
	       peak_tight / 1048576.0, budget / 1048576.0,
	       peak_tight <= budget ? "yes" : "NO");
	free(w_free);
	free(w_tight);
	free(loss_free);
	free(loss_tight);
	return identical && peak_tight <= budget ? 0 : 1;
}
