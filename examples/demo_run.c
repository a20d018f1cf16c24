/*
 * demo_run.c — what the example programs share (see demo_run.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "demo_run.h"

int demo_parse_uint(const char *s, unsigned *out)
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

int demo_train(const char *prog, const char *config, demo_train_fn fn,
	       const void *cfg, FILE *log, float *losses, uint8_t **weights,
	       size_t *len, struct tmm_stats *st, bool print,
	       unsigned stats_opts)
{
	tmm_ctx *ctx;
	int rc = tmm_ctx_create(&ctx, config);

	if (rc) {
		fprintf(stderr, "%s: cannot create a context (%s): %s\n",
			prog, config, tmm_last_error(NULL));
		return rc;
	}
	rc = fn(ctx, cfg, losses, weights, len, log);
	if (rc) {
		fprintf(stderr, "%s: training failed: %s (%s)\n", prog,
			tmm_last_error(ctx), tmm_strerror(rc));
	} else {
		st->version = TMM_STATS_VERSION;
		tmm_stats_get(ctx, st);
		if (print) {
			printf("\n");
			fflush(stdout);
			tmm_stats_print(ctx, write_stdout, NULL, stats_opts);
		}
	}
	tmm_ctx_destroy(ctx);
	return rc;
}
