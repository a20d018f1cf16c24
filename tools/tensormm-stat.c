/*
 * tensormm-stat — watch the processes that use libtensormm, and read the
 * trace files they write.
 *
 *   tensormm-stat [--json|--csv]                  list the processes
 *   tensormm-stat [-p PID] [--json|--csv] DELAY [COUNT]   scroll
 *   tensormm-stat report TRACE                    summarise a trace
 *   tensormm-stat plot TRACE -o OUT.svg [--iteration N]
 *   tensormm-stat tunables [--config STRING]
 *
 * The options and the exit codes are documented in tensormm-stat(1).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stat.h"
#include "lib/exec/stats_shm.h"
#include "lib/io/trace_file.h"
#include "tensormm.h"
#include "lib/base/tunables.h"

#define TOP_DEFAULT 10

static const char usage_text[] =
	"usage: tensormm-stat [-p PID] [--json | --csv] [DELAY [COUNT]]\n"
	"       tensormm-stat report TRACE [--top N]\n"
	"       tensormm-stat plot TRACE -o OUT.svg [--iteration N]\n"
	"       tensormm-stat tunables [--config STRING]\n"
	"       tensormm-stat --help | --version\n";

static const char help_text[] =
	"\n"
	"Without DELAY, lists the processes using libtensormm, one line per\n"
	"context.  With DELAY (seconds, may be fractional), prints a line per\n"
	"context every DELAY seconds, COUNT times (default: until "
	"interrupted);\n"
	"counters show the change since the previous line.\n"
	"\n"
	"  -p, --pid PID      only the contexts of process PID\n"
	"      --json         one JSON value per record (raw counters)\n"
	"      --csv          CSV with a header line (raw counters)\n"
	"  report TRACE       per-iteration summary of a trace file\n"
	"                     (TENSORMM_TRACE), and the top tensors by\n"
	"                     swapped bytes and by stall time\n"
	"      --top N        how many tensors in each top list (default 10)\n"
	"  plot TRACE         one iteration's device memory as SVG\n"
	"  -o, --output FILE  where the SVG goes\n"
	"      --iteration N  which iteration (default: the last)\n"
	"  tunables           every tunable, its value here and its source\n"
	"      --config STR   as a context given this config string\n"
	"  -h, --help         this help\n"
	"  -V, --version      the version\n"
	"\n"
	"Exit status: 0 success, 1 a segment or trace could not be read,\n"
	"2 bad arguments, 3 the PID has no libtensormm context.\n"
	"See tensormm-stat(1).\n";

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("tensormm-stat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	fputs(usage_text, stderr);
	return STAT_USAGE;
}

/* Parses a whole unsigned decimal number; false for anything else. */
static bool parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && !*end;
}

static bool parse_delay(const char *s, double *out)
{
	char *end;

	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return !errno && !*end && *out > 0 && *out <= 86400;
}

static const char *source_name(enum tmm_source src)
{
	switch (src) {
	case TMM_SRC_DEFAULT:
		return "default";
	case TMM_SRC_ENV:
		return "environment";
	case TMM_SRC_CONFIG:
		return "config";
	}
	return "?";
}

static int cmd_tunables(int argc, char **argv)
{
	const char *config = NULL;
	struct tmm_config cfg;
	const struct tmm_tunable *t;
	char err[1024], value[4200];
	size_t n;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			config = argv[++i];
		else
			return usage_error("tunables: unexpected argument "
					   "'%s'", argv[i]);
	}
	if (tmm_config_load(&cfg, config, err, sizeof(err)) < 0) {
		stat_error("%s", err);
		return STAT_FAILED;
	}
	t = tmm_tunables(&n);
	printf("# %-16s %-24s %-12s %s\n", "tunable", "value", "source",
	       "environment variable");
	for (size_t i = 0; i < n; i++) {
		tmm_config_format(&cfg, (enum tmm_tunable_id)i, value,
				  sizeof(value));
		printf("  %-16s %-24s %-12s %s\n", t[i].name,
		       *value ? value : "(empty)", source_name(cfg.source[i]),
		       t[i].env);
	}
	return STAT_OK;
}

static int cmd_report(int argc, char **argv)
{
	const char *path = NULL;
	unsigned long top = TOP_DEFAULT;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--top")) {
			if (i + 1 >= argc || !parse_ulong(argv[i + 1], &top) ||
			    top == 0 || top > 100000)
				return usage_error("report: --top needs a "
						   "number from 1 to 100000");
			i++;
		} else if (!path && argv[i][0] != '-') {
			path = argv[i];
		} else {
			return usage_error("report: unexpected argument '%s'",
					   argv[i]);
		}
	}
	if (!path)
		return usage_error("report: name a trace file (written by a "
				   "run with TENSORMM_TRACE=PATH)");
	return stat_report(path, (unsigned)top);
}

static int cmd_plot(int argc, char **argv)
{
	const char *path = NULL, *out = NULL;
	unsigned long iteration = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (i + 1 >= argc)
				return usage_error("plot: %s needs a file "
						   "name", argv[i]);
			out = argv[++i];
		} else if (!strcmp(argv[i], "--iteration")) {
			if (i + 1 >= argc ||
			    !parse_ulong(argv[i + 1], &iteration) ||
			    iteration == 0)
				return usage_error("plot: --iteration needs "
						   "an iteration number, 1 "
						   "for the first");
			i++;
		} else if (!path && argv[i][0] != '-') {
			path = argv[i];
		} else {
			return usage_error("plot: unexpected argument '%s'",
					   argv[i]);
		}
	}
	if (!path || !out)
		return usage_error("plot: name a trace file and an output, "
				   "e.g. plot run.trace -o run.svg");
	return stat_plot(path, out, iteration);
}

int main(int argc, char **argv)
{
	enum stat_format fmt = STAT_TEXT;
	unsigned long pid = 0, count = 0;
	const char *args[2];
	int n_args = 0;
	double delay = 0;

	if (argc > 1 && !strcmp(argv[1], "report"))
		return cmd_report(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "plot"))
		return cmd_plot(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "tunables"))
		return cmd_tunables(argc - 2, argv + 2);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			fputs(help_text, stdout);
			return STAT_OK;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("tensormm-stat %d.%d.%d (shared-memory layout "
			       "%u, trace format %u)\n", TMM_VERSION_MAJOR,
			       TMM_VERSION_MINOR, TMM_VERSION_PATCH,
			       TMM_SHM_LAYOUT, TMM_TRACE_FORMAT_VERSION);
			return STAT_OK;
		} else if (!strcmp(a, "--json")) {
			fmt = STAT_JSON;
		} else if (!strcmp(a, "--csv")) {
			fmt = STAT_CSV;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
			if (i + 1 >= argc || !parse_ulong(argv[i + 1], &pid) ||
			    pid == 0 || pid > 0x7fffffff)
				return usage_error("%s needs a process id, a "
						   "positive number", a);
			i++;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (n_args < 2) {
			args[n_args++] = a;
		} else {
			return usage_error("too many arguments: '%s'", a);
		}
	}
	if (n_args >= 1 && !parse_delay(args[0], &delay))
		return usage_error("DELAY '%s' is not a number of seconds "
				   "above 0 (such as 1 or 0.5)%s", args[0],
				   strcmp(args[0], "list") ? "" :
				   "; to list, give no argument");
	if (n_args == 2 && (!parse_ulong(args[1], &count) || count == 0))
		return usage_error("COUNT '%s' is not a positive number",
				   args[1]);
	if (n_args == 0 && !pid)
		return stat_list(fmt);
	if (n_args == 0)
		count = 1; /* -p PID alone: one sample */
	return stat_scroll((pid_t)pid, delay > 0 ? delay : 1, count, fmt);
}
