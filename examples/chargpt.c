/* SPDX-License-Identifier: MIT */
/*
 * chargpt.c — a character-level transformer trained in the pre-allocated
 * style (chargpt_model.h): its buffers made once, the ops run on views of
 * them, and the whole run bit-identical under memory pressure.
 *
 * Like examples/gpt, it trains twice on the simulated GPU (backed memory,
 * real bytes): once with the whole device, to learn the run's peak, then
 * with a budget of a fraction of that peak (30% by default), and prints
 * each step's loss, the constrained run's statistics and whether its
 * final weights and losses are bit-identical to the unconstrained run's.
 * --config appends tunables to both runs' configurations
 * ("policy=tsplit", "mode=swap", ...).
 *
 *   examples/chargpt [--fraction F] [--steps N] [--layers N] [--d-model N]
 *                    [--seq N] [--batch N] [--accum N] [--config STR]
 *                    [--json] [--rehearse]
 *
 * Times in the statistics are simulated (virtual nanoseconds on the
 * TENSORMM_SIM_PROFILE hardware profile), not measured.
 */
#include <stdbool.h>
#include <stdio.h>

#include "chargpt_model.h"
#include "demo_pair.h"
#include "tensormm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: chargpt [--fraction F] [--steps N] [--layers N] "
		"[--d-model N] [--seq N]\n"
		"               [--batch N] [--accum N] [--config STR] "
		"[--json] [--rehearse]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 20)\n"
		"  --layers N    transformer blocks, at most 64 (default 2)\n"
		"  --d-model N   model width, a multiple of the 4 heads, at "
		"most 8192 (default 32)\n"
		"  --seq N       characters per window, less than the text's "
		"%zu (default 32)\n"
		"  --batch N     windows per micro-batch, at most 4096 "
		"(default 4)\n"
		"  --accum N     micro-batches per step, at most 4096 "
		"(default 2)\n"
		"  --config STR  tunables appended to both runs' "
		"configurations\n"
		"                (e.g. mode=swap,policy=tsplit)\n"
		"  --json        print the statistics as JSON\n"
		DEMO_REHEARSE_USAGE,
		chargpt_text_length());
}

/* The model's trainer, typed as demo_train wants it. */
static int train_model(tmm_ctx *ctx, const void *cfg, float *losses,
		       uint8_t **weights, size_t *len, FILE *log)
{
	return chargpt_train(ctx, cfg, losses, weights, len, log);
}

/* Says which of the sizes on the command line cannot be, or returns 0. */
static int check_sizes(const struct chargpt_config *cc)
{
	char v[16];

	if (cc->d_model % cc->heads) {
		snprintf(v, sizeof(v), "%u", cc->d_model);
		return demo_bad_value("chargpt", "--d-model", v, usage);
	}
	if (cc->seq >= chargpt_text_length()) {
		snprintf(v, sizeof(v), "%u", cc->seq);
		return demo_bad_value("chargpt", "--seq", v, usage);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct chargpt_config cc;
	double fraction = 0.3;
	unsigned stats_opts = 0, rehearse = 0;
	const char *extra = NULL;
	struct demo_pair d;
	bool ok;

	chargpt_config_default(&cc);
	{
		const struct demo_opt opts[] = {
			{ "--json", DEMO_FLAG, &stats_opts, TMM_STATS_JSON },
			{ "--fraction", DEMO_FRACTION, &fraction, 0 },
			{ "--steps", DEMO_COUNT, &cc.steps, 0 },
			{ "--layers", DEMO_COUNT, &cc.layers, 64 },
			{ "--d-model", DEMO_COUNT, &cc.d_model, 8192 },
			{ "--seq", DEMO_COUNT, &cc.seq, 0 },
			{ "--batch", DEMO_COUNT, &cc.batch, 4096 },
			{ "--accum", DEMO_COUNT, &cc.accum, 4096 },
			{ "--config", DEMO_TEXT, &extra, 300 },
			DEMO_REHEARSE_OPT(rehearse),
		};
		int parsed = demo_parse_args("chargpt", argc, argv, opts,
					 sizeof(opts) / sizeof(opts[0]), usage);

		if (parsed)
			return parsed == 1 ? 0 : 2;
		if (check_sizes(&cc))
			return 2;
	}

	if (demo_pair_open(&d, "chargpt", cc.steps, fraction, extra))
		return 1;
	printf("libtensormm demo: a character-level transformer (%u blocks, "
	       "d_model %u, %u heads, %u characters in its vocabulary), "
	       "%u x %u windows of %u characters a step, on the simulated "
	       "GPU\n\n", cc.layers, cc.d_model, cc.heads,
	       chargpt_vocab_size(), cc.accum, cc.batch, cc.seq);
	ok = demo_pair_unconstrained(&d, train_model, &cc) == 0;
	if (ok) {
		/* Only the constrained run rehearses, and its first step
		 * is the one demo_pair_verdict describes. */
		cc.rehearse = rehearse != 0;
		cc.after_step = demo_note_first_step;
		cc.after_step_arg = &d.first;
		ok = demo_pair_constrained(&d, train_model, &cc,
					   stats_opts) == 0 &&
		     demo_pair_verdict(&d);
	}
	demo_pair_close(&d);
	return ok ? 0 : 1;
}
