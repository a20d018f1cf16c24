/* SPDX-License-Identifier: MIT */
/*
 * gpt.c — the demo: train a small GPT under memory pressure and show it
 * costs nothing in correctness.
 *
 * It trains the same transformer twice on the simulated GPU (backed
 * memory, real bytes): once with the whole device, to learn the run's peak
 * device memory, then with a budget of a fraction of that peak (30% by
 * default), so that libtensormm must swap tensors out and back in.  It
 * prints the loss of each step, libtensormm's statistics for the
 * constrained run, and whether its final weights and losses are
 * bit-identical to the unconstrained run's.  --config appends tunables to
 * both runs' configurations ("policy=none", "mode=swap", ...), so that
 * other policies and modes can be tried on the same model.
 *
 *   examples/gpt [--fraction F] [--steps N] [--layers N] [--d-model N]
 *                [--seq N] [--batch N] [--config STR] [--json]
 *                [--rehearse]
 *
 * Times in the statistics are simulated (virtual nanoseconds on the
 * TENSORMM_SIM_PROFILE hardware profile), not measured.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_run.h"
#include "gpt_model.h"
#include "tensormm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpt [--fraction F] [--steps N] [--layers N] "
		"[--d-model N] [--seq N]\n"
		"           [--batch N] [--config STR] [--json] [--rehearse]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 12)\n"
		"  --layers N    transformer blocks, at most 64 (default 2)\n"
		"  --d-model N   model width, a multiple of the 4 heads "
		"(default 64)\n"
		"  --seq N       tokens per sequence (default 32)\n"
		"  --batch N     sequences per step (default 8)\n"
		"  --config STR  tunables appended to both runs' "
		"configurations\n"
		"                (e.g. policy=none)\n"
		"  --json        print the statistics as JSON\n"
		DEMO_REHEARSE_USAGE);
}

/* The model's trainer, typed as demo_train wants it. */
static int train_model(tmm_ctx *ctx, const void *cfg, float *losses,
		       uint8_t **weights, size_t *len, FILE *log)
{
	return gpt_train(ctx, cfg, losses, weights, len, log);
}

int main(int argc, char **argv)
{
	struct gpt_config gc;
	double fraction = 0.3;
	unsigned stats_opts = 0, rehearse = 0;
	struct demo_first_step first = { 0 };
	const char *extra = NULL;
	uint8_t *w_free = NULL, *w_tight = NULL;
	size_t len_free = 0, len_tight = 0;
	unsigned long long peak_free = 0, peak_tight = 0, budget;
	struct tmm_stats st_free, st_tight;
	float *loss_free = NULL, *loss_tight = NULL;
	char config[512];
	int rc, n, ok = 0;
	bool identical;

	gpt_config_default(&gc);
	{
		const struct demo_opt opts[] = {
			{ "--json", DEMO_FLAG, &stats_opts, TMM_STATS_JSON },
			{ "--fraction", DEMO_FRACTION, &fraction, 0 },
			{ "--steps", DEMO_COUNT, &gc.steps, 0 },
			{ "--layers", DEMO_COUNT, &gc.layers, 64 },
			{ "--d-model", DEMO_COUNT, &gc.d_model, 0 },
			{ "--seq", DEMO_COUNT, &gc.seq, 0 },
			{ "--batch", DEMO_COUNT, &gc.batch, 0 },
			{ "--config", DEMO_TEXT, &extra, 300 },
			DEMO_REHEARSE_OPT(rehearse),
		};
		int parsed = demo_parse_args("gpt", argc, argv, opts,
					 sizeof(opts) / sizeof(opts[0]), usage);

		if (parsed)
			return parsed == 1 ? 0 : 2;
		if (gc.d_model % gc.heads) {
			char v[16];

			snprintf(v, sizeof(v), "%u", gc.d_model);
			return demo_bad_value("gpt", "--d-model", v, usage);
		}
	}

	loss_free = calloc(gc.steps, sizeof(float));
	loss_tight = calloc(gc.steps, sizeof(float));
	if (!loss_free || !loss_tight)
		goto out;

	printf("libtensormm demo: a GPT (%u blocks, d_model %u, %u heads, "
	       "vocab %u, %u sequences of %u tokens) on the simulated GPU\n\n",
	       gc.layers, gc.d_model, gc.heads, gc.vocab, gc.batch, gc.seq);
	printf("1) unconstrained run, to measure the peak device memory\n");
	/* The peak is measured with --config's tunables too: in mode=uvm a
	 * tensor takes whole pages, so the two modes' peaks differ. */
	n = snprintf(config, sizeof(config),
		     "backend=sim,sim_memory=backed,budget=100%%%s%s",
		     extra ? "," : "", extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(config))
		goto out;
	rc = demo_train("gpt", config,
			train_model, &gc, NULL, loss_free, &w_free, &len_free,
			&st_free, false, 0);
	peak_free = st_free.device_peak;
	if (rc)
		goto out;
	budget = (unsigned long long)((double)peak_free * fraction);
	printf("   peak %.2f MiB\n\n", peak_free / 1048576.0);

	printf("2) the same training with a budget of %.0f%% of that peak "
	       "(%.2f MiB)%s%s\n", 100.0 * fraction, budget / 1048576.0,
	       extra ? ", with " : "", extra ? extra : "");
	/* --config is at most 300 characters: it fits. */
	n = snprintf(config, sizeof(config),
		     "backend=sim,sim_memory=backed,budget=%lluB%s%s",
		     budget, extra ? "," : "", extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(config))
		goto out;
	gc.rehearse = rehearse != 0;
	gc.after_step = demo_note_first_step;
	gc.after_step_arg = &first;
	rc = demo_train("gpt", config, train_model, &gc, stdout, loss_tight,
			&w_tight, &len_tight, &st_tight, true, stats_opts);
	peak_tight = st_tight.device_peak;
	if (rc)
		goto out;

	demo_print_first_step(&first);
	identical = len_free == len_tight &&
		    !memcmp(w_free, w_tight, len_free) &&
		    !memcmp(loss_free, loss_tight, gc.steps * sizeof(float));
	printf("\nweights and losses bit-identical to the unconstrained run: "
	       "%s\n", identical ? "yes" : "NO");
	printf("device peak %.2f MiB within the %.2f MiB budget: %s\n",
	       peak_tight / 1048576.0, budget / 1048576.0,
	       peak_tight <= budget ? "yes" : "NO");
	ok = identical && peak_tight <= budget;
out:
	free(w_free);
	free(w_tight);
	free(loss_free);
	free(loss_tight);
	return ok ? 0 : 1;
}
