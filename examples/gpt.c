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

#include "demo_pair.h"
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
	const char *extra = NULL;
	struct demo_pair d;
	bool ok;

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

	if (demo_pair_open(&d, "gpt", gc.steps, fraction, extra))
		return 1;
	printf("libtensormm demo: a GPT (%u blocks, d_model %u, %u heads, "
	       "vocab %u, %u sequences of %u tokens) on the simulated GPU\n\n",
	       gc.layers, gc.d_model, gc.heads, gc.vocab, gc.batch, gc.seq);
	ok = demo_pair_unconstrained(&d, train_model, &gc) == 0;
	if (ok) {
		/* Only the constrained run rehearses, and its first step
		 * is the one demo_pair_verdict describes. */
		gc.rehearse = rehearse != 0;
		gc.after_step = demo_note_first_step;
		gc.after_step_arg = &d.first;
		ok = demo_pair_constrained(&d, train_model, &gc,
					   stats_opts) == 0 &&
		     demo_pair_verdict(&d);
	}
	demo_pair_close(&d);
	return ok ? 0 : 1;
}
