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

#include "demo_pair.h"
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
	struct demo_pair d;
	bool ok;

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

	if (demo_pair_open(&d, "mlp", mc.steps, fraction, NULL))
		return 1;
	printf("libtensormm demo: an MLP (%u hidden layers of %u, batch %u) "
	       "on the simulated GPU\n\n", mc.layers, mc.width, mc.batch);
	ok = demo_pair_unconstrained(&d, train_model, &mc) == 0;
	if (ok) {
		/* Only the constrained run rehearses, and its first step
		 * is the one demo_pair_verdict describes. */
		mc.rehearse = rehearse != 0;
		mc.after_step = demo_note_first_step;
		mc.after_step_arg = &d.first;
		ok = demo_pair_constrained(&d, train_model, &mc,
					   stats_opts) == 0 &&
		     demo_pair_verdict(&d);
	}
	demo_pair_close(&d);
	return ok ? 0 : 1;
}
