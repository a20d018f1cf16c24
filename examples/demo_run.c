/* SPDX-License-Identifier: MIT */
/*
 * demo_run.c — what the example programs share (see demo_run.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int demo_bad_value(const char *prog, const char *option, const char *value,
		   void (*usage)(FILE *f))
{
	fprintf(stderr, "%s: bad value '%s' for %s\n", prog, value, option);
	usage(stderr);
	return 2;
}

/* Reads option o's value v; returns whether it is good. */
static bool read_opt(const struct demo_opt *o, const char *v)
{
	char *end;
	double f;
	unsigned u;

	switch (o->kind) {
	case DEMO_COUNT:
		if (demo_parse_uint(v, &u) || (o->max && u > o->max))
			return false;
		*(unsigned *)o->value = u;
		return true;
	case DEMO_FRACTION:
		f = strtod(v, &end);
		if (*end || end == v || !(f > 0.0) || f > 1.0)
			return false;
		*(double *)o->value = f;
		return true;
	case DEMO_TEXT:
		if (!*v || strlen(v) > o->max)
			return false;
		*(const char **)o->value = v;
		return true;
	case DEMO_FLAG:
		break;
	}
	return false;
}

int demo_parse_args(const char *prog, int argc, char **argv,
		    const struct demo_opt *opts, size_t n,
		    void (*usage)(FILE *f))
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		const struct demo_opt *o = NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		for (size_t k = 0; k < n && !o; k++)
			if (!strcmp(a, opts[k].name))
				o = &opts[k];
		if (!o) {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
			usage(stderr);
			return 2;
		}
		if (o->kind == DEMO_FLAG) {
			*(unsigned *)o->value = o->max;
			continue;
		}
		if (!read_opt(o, v))
			return demo_bad_value(prog, a, v, usage);
		i++;
	}
	return 0;
}

int demo_note_first_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct demo_first_step *f = arg;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	if (step != 1 || tmm_stats_get(ctx, &st))
		return 0;
	f->seen = true;
	f->guided = st.guided_iterations > 0;
	f->passive_evictions = st.passive_evictions;
	return 0;
}

void demo_print_first_step(const struct demo_first_step *f)
{
	if (!f->seen)
		return;
	printf("first step %s, with %llu passive eviction(s)\n",
	       f->guided ? "guided by the plan" : "measured (no plan yet)",
	       (unsigned long long)f->passive_evictions);
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
