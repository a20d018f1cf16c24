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
 *                [--batch N] [--json]
 *
 * Times in the statistics are simulated (virtual nanoseconds on the
 * TENSORMM_SIM_PROFILE hardware profile), not measured.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_model.h"
#include "tensormm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlp [--fraction F] [--steps N] [--layers N] "
		"[--width N] [--batch N] [--json]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 12)\n"
		"  --layers N    hidden layers (default 6)\n"
		"  --width N     units per hidden layer (default 256)\n"
		"  --batch N     samples per step (default 128)\n"
		"  --json        print the statistics as JSON\n");
}

static int parse_uint(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > 1u << 20)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static void write_stdout(void *arg, const char *text, size_t len)
{
	(void)arg;
	fwrite(text, 1, len, stdout);
}

/* Trains once; returns 0 and the weights, loss curve and peak. */
static int train(const char *config, const struct mlp_config *mc, FILE *log,
		 float *losses, uint8_t **weights, size_t *len,
		 unsigned long long *peak, unsigned stats_opts, bool print)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;
	int rc = tmm_ctx_create(&ctx, config);

	if (rc) {
		fprintf(stderr, "mlp: cannot create a context: %s\n",
			tmm_last_error(NULL));
		return rc;
	}
	rc = mlp_train(ctx, mc, losses, weights, len, log);
	if (rc) {
		fprintf(stderr, "mlp: training failed: %s (%s)\n",
			tmm_last_error(ctx), tmm_strerror(rc));
	} else {
		tmm_stats_get(ctx, &st);
		*peak = st.device_peak;
		if (print) {
			printf("\n");
			fflush(stdout);
			tmm_stats_print(ctx, write_stdout, NULL, stats_opts);
		}
	}
	tmm_ctx_destroy(ctx);
	return rc;
}

int main(int argc, char **argv)
{
	struct mlp_config mc;
	double fraction = 0.3;
	unsigned stats_opts = 0;
	uint8_t *w_free = NULL, *w_tight = NULL;
	size_t len_free = 0, len_tight = 0;
	unsigned long long peak_free = 0, peak_tight = 0, budget;
	float *loss_free, *loss_tight;
	char config[128];
	int rc, identical;

	mlp_config_default(&mc);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		int bad = 0;

		if (!strcmp(a, "--json")) {
			stats_opts = TMM_STATS_JSON;
			continue;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--fraction")) {
			char *end;

			fraction = strtod(v, &end);
			bad = *end || end == v || !(fraction > 0.0) ||
			      fraction > 1.0;
		} else if (!strcmp(a, "--steps")) {
			bad = parse_uint(v, &mc.steps);
		} else if (!strcmp(a, "--layers")) {
			bad = parse_uint(v, &mc.layers) || mc.layers > 63;
		} else if (!strcmp(a, "--width")) {
			bad = parse_uint(v, &mc.width);
		} else if (!strcmp(a, "--batch")) {
			bad = parse_uint(v, &mc.batch);
		} else {
			fprintf(stderr, "mlp: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "mlp: bad value '%s' for %s\n", v, a);
			usage(stderr);
			return 2;
		}
		i++;
	}
	loss_free = calloc(mc.steps, sizeof(float));
	loss_tight = calloc(mc.steps, sizeof(float));
	if (!loss_free || !loss_tight)
		return 1;

	printf("libtensormm demo: an MLP (%u hidden layers of %u, batch %u) "
	       "on the simulated GPU\n\n", mc.layers, mc.width, mc.batch);
	printf("1) unconstrained run, to measure the peak device memory\n");
	rc = train("backend=sim,sim_memory=backed,budget=100%", &mc,
		   NULL, loss_free, &w_free, &len_free, &peak_free, 0, false);
	if (rc)
		return 1;
	budget = (unsigned long long)((double)peak_free * fraction);
	printf("   peak %.2f MiB\n\n", peak_free / 1048576.0);

	printf("2) the same training with a budget of %.0f%% of that peak "
	       "(%.2f MiB)\n", 100.0 * fraction, budget / 1048576.0);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,budget=%llu", budget);
	rc = train(config, &mc, stdout, loss_tight, &w_tight, &len_tight,
		   &peak_tight, stats_opts, true);
	if (rc)
		return 1;

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
