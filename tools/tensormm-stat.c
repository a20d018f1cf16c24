/* SPDX-License-Identifier: MIT */
/*
 * tensormm-stat — watch the processes that use libtensormm, and read the
 * trace files they write.
 *
 *   tensormm-stat [-p PID] [--json|--csv] [-o LIST] [-t [FMT]] [DELAY [COUNT]]
 *   tensormm-stat report TRACE [--top N]
 *   tensormm-stat plot TRACE -o OUT.svg [--iteration N]
 *   tensormm-stat export TRACE [-o OUT.json] [--iteration N]
 *   tensormm-stat tunables [--config STRING]
 *
 * This file is the command line: each command has its getopt_long table,
 * its usage and its --help, and a wrong option is answered with what to
 * write instead (the nearest option of the command, or the command that
 * has it).  The options and the exit codes are documented in
 * tensormm-stat(1).
 */
#include <errno.h>
#include <getopt.h>
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

/* Option values of long options with no short form. */
enum {
	OPT_JSON = 0x100,
	OPT_CSV,
	OPT_TOP,
	OPT_ITERATION,
	OPT_CONFIG,
};

/* One command: its name ("" for the live views), synopsis, the help of
 * its options, and its getopt tables.  Short options start with "-:":
 * operands come back in order (so an option may follow them whatever
 * POSIXLY_CORRECT says), and a missing argument is told from an unknown
 * option. */
struct command {
	const char *name;
	const char *usage;
	const char *help;
	const char *shortopts;
	const struct option *longopts;
};

static const struct option live_longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "columns", required_argument, NULL, 'o' },
	{ "timestamps", optional_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static const struct option report_longopts[] = {
	{ "top", required_argument, NULL, OPT_TOP },
	{ "columns", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option plot_longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "iteration", required_argument, NULL, OPT_ITERATION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option tunables_longopts[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct command live_cmd = {
	"",
	"usage: tensormm-stat [-p PID] [--json | --csv] [-o LIST] "
	"[-t [iso|rel|unix]] [DELAY [COUNT]]\n",
	"Without DELAY, lists the processes using libtensormm, one line per\n"
	"context.  With DELAY (seconds, may be fractional), prints a line per\n"
	"context every DELAY seconds, COUNT times (default: until "
	"interrupted);\n"
	"counters show the change since the previous line.\n"
	"\n"
	"  -p, --pid PID          only the contexts of process PID\n"
	"      --json             one JSON value per record (raw counters)\n"
	"      --csv              CSV with a header line (raw counters)\n"
	"  -o, --columns LIST     the table's columns, comma-separated;\n"
	"                         +LIST adds to the defaults, 'uvm' names\n"
	"                         the managed-memory columns, 'all' every\n"
	"                         one; -o help lists them\n"
	"  -t, --timestamps[=FMT] start each row with the time: iso (UTC,\n"
	"                         ISO-8601 with milliseconds, the default),\n"
	"                         rel (seconds since tensormm-stat started)\n"
	"                         or unix (seconds since the epoch)\n",
	"-:p:o:t::hV",
	live_longopts,
};

static const struct command report_cmd = {
	"report",
	"usage: tensormm-stat report TRACE [--top N] [-o LIST]\n",
	"Per-iteration summary of a trace file (TENSORMM_TRACE), the top\n"
	"tensors by swapped bytes and by stall time, and the last\n"
	"iteration's top ops by time, with the rates they reached.\n"
	"\n"
	"      --top N            how many rows in each top list "
	"(default 10)\n"
	"  -o, --columns LIST     the per-iteration table's columns, "
	"comma-\n"
	"                         separated; report -o help lists them\n",
	"-:o:h",
	report_longopts,
};

static const struct command plot_cmd = {
	"plot",
	"usage: tensormm-stat plot TRACE -o OUT.svg [--iteration N]\n",
	"One iteration's device memory as SVG.\n"
	"\n"
	"  -o, --output FILE      where the SVG goes\n"
	"      --iteration N      which iteration (default: the last)\n",
	"-:o:h",
	plot_longopts,
};

static const struct command export_cmd = {
	"export",
	"usage: tensormm-stat export TRACE [-o OUT.json] [--iteration N]\n",
	"A trace as Chrome/Perfetto JSON (ui.perfetto.dev, "
	"chrome://tracing):\n"
	"ops on a compute track, collectives on a network track, swaps on\n"
	"H2D and D2H tracks, device bytes in use as a counter, iterations\n"
	"laid end to end.\n"
	"\n"
	"  -o, --output FILE      where the JSON goes (default: stdout)\n"
	"      --iteration N      only that iteration (default: all)\n",
	"-:o:h",
	plot_longopts,
};

static const struct command tunables_cmd = {
	"tunables",
	"usage: tensormm-stat tunables [--config STRING]\n",
	"Every tunable, its value here and its source.\n"
	"\n"
	"      --config STRING    as a context given this config string\n",
	"-:h",
	tunables_longopts,
};

static const struct command *const commands[] = {
	&live_cmd, &report_cmd, &plot_cmd, &export_cmd, &tunables_cmd,
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char tail_text[] =
	"\n"
	"  -h, --help             this help (COMMAND --help: that "
	"command's)\n"
	"  -V, --version          the version\n"
	"\n"
	"Exit status: 0 success, 1 a segment or trace could not be read,\n"
	"2 bad arguments, 3 the PID has no libtensormm context.\n"
	"See tensormm-stat(1).\n";

static void print_usages(FILE *f)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "%s%s", i ? "       " : "",
			commands[i]->usage + (i ? strlen("usage: ") : 0));
	fputs("       tensormm-stat --help | --version\n", f);
}

/* --help: the whole page, or one command's. */
static int print_help(const struct command *cmd)
{
	if (cmd) {
		printf("%s\n%s", cmd->usage, cmd->help);
		printf("  -h, --help             this help\n\n"
		       "See tensormm-stat(1).\n");
		return STAT_OK;
	}
	print_usages(stdout);
	for (size_t i = 0; i < N_COMMANDS; i++)
		printf("\n%s%s%s", commands[i]->name,
		       commands[i]->name[0] ? ": " : "", commands[i]->help);
	fputs(tail_text, stdout);
	return STAT_OK;
}

static int usage_error(const struct command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A bad command line: the message, then the command's usage. */
static int usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("tensormm-stat: ", stderr);
	if (cmd && cmd->name[0])
		fprintf(stderr, "%s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	if (cmd)
		fputs(cmd->usage, stderr);
	else
		print_usages(stderr);
	return STAT_USAGE;
}

/* Edit distance of two short words, for "did you mean". */
static size_t distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), row[64], prev, tmp;

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

/* The long option of cmd nearest to name (len bytes), or NULL. */
static const char *nearest_option(const struct command *cmd,
				  const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_d = 3; /* further than 2 edits is no guess */

	for (const struct option *o = cmd->longopts; o->name; o++) {
		size_t d = distance(name, len, o->name);

		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	return best;
}

/* getopt_long takes an abbreviation that fits one option only: when
 * name fits several, says which.  Returns whether it did. */
static bool ambiguous(const struct command *cmd, const char *name,
		      size_t len)
{
	char fits[256] = "";
	int n = 0;

	for (const struct option *o = cmd->longopts; o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		snprintf(fits + strlen(fits), sizeof(fits) - strlen(fits),
			 "%s--%s", n ? " or " : "", o->name);
		n++;
	}
	if (n < 2)
		return false;
	usage_error(cmd, "'--%.*s' is ambiguous: write %s", (int)len, name,
		    fits);
	return true;
}

/* The argument an option with value `val` wants, for messages. */
static const char *wants(const struct command *cmd, int val)
{
	switch (val) {
	case 'p':
		return "a process id, a positive number";
	case 'o':
		if (cmd == &live_cmd)
			return "a list of columns, such as dev_used,host (-o "
			       "help lists them)";
		if (cmd == &report_cmd)
			return "a list of columns, such as iter,stall "
			       "(report -o help lists them)";
		return "a file name";
	case OPT_TOP:
		return "a number from 1 to 100000";
	case OPT_ITERATION:
		return "an iteration number, 1 for the first";
	case OPT_CONFIG:
		return "a config string, such as policy=none";
	}
	return "a value";
}

/*
 * Explains what getopt_long refused (c is '?' or ':'), with what to
 * write instead: the argument a known option wants, the nearest option
 * of this command, or the command an option belongs to.  Returns
 * STAT_USAGE.
 */
static int bad_option(const struct command *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1], *name, *near;
	size_t len;

	if (c == ':')
		return usage_error(cmd, "%s needs %s", arg,
				   wants(cmd, optopt));
	if (optopt && !strncmp(arg, "--", 2) && strchr(arg, '='))
		return usage_error(cmd, "%.*s takes no value",
				   (int)(strchr(arg, '=') - arg), arg);
	if (optopt && strncmp(arg, "--", 2)) {
		/* An unknown letter: argv may hold several ("-jx"). */
		return usage_error(cmd, "unknown option '-%c'; see "
				   "'tensormm-stat %s%s--help'", optopt,
				   cmd->name, cmd->name[0] ? " " : "");
	}
	name = arg + 2;
	len = strcspn(name, "=");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (commands[i] == cmd)
			continue;
		for (const struct option *o = commands[i]->longopts; o->name;
		     o++) {
			if (strlen(o->name) != len ||
			    strncmp(o->name, name, len))
				continue;
			const char *u = commands[i]->usage +
					strlen("usage: ");

			return usage_error(cmd, "unknown option '%s': --%s is "
					   "an option of %s; write: %.*s", arg,
					   o->name, commands[i]->name[0] ?
					   commands[i]->name : "the live view",
					   (int)strcspn(u, "\n"), u);
		}
	}
	if (ambiguous(cmd, name, len))
		return STAT_USAGE;
	near = nearest_option(cmd, name, len);
	if (near)
		return usage_error(cmd, "unknown option '%s'; did you mean "
				   "'--%s'?", arg, near);
	return usage_error(cmd, "unknown option '%s'; see "
			   "'tensormm-stat %s%s--help'", arg, cmd->name,
			   cmd->name[0] ? " " : "");
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

static bool parse_ts(const char *s, enum stat_ts *out)
{
	if (!strcmp(s, "iso"))
		*out = STAT_TS_ISO;
	else if (!strcmp(s, "rel"))
		*out = STAT_TS_REL;
	else if (!strcmp(s, "unix"))
		*out = STAT_TS_UNIX;
	else
		return false;
	return true;
}

/* The command nearest to a word that is not one, or NULL. */
static const char *nearest_command(const char *word)
{
	for (size_t i = 1; i < N_COMMANDS; i++)
		if (distance(word, strlen(word), commands[i]->name) <= 2)
			return commands[i]->name;
	return NULL;
}

static int print_version(void)
{
	printf("tensormm-stat %d.%d.%d (shared-memory layout %u, trace "
	       "format %u)\n", TMM_VERSION_MAJOR, TMM_VERSION_MINOR,
	       TMM_VERSION_PATCH, TMM_SHM_LAYOUT, TMM_TRACE_FORMAT_VERSION);
	return STAT_OK;
}

/* The list and the scrolling table. */
static int cmd_live(int argc, char **argv)
{
	const struct command *cmd = &live_cmd;
	struct stat_live_opts o = { .fmt = STAT_TEXT, .ts = STAT_TS_NONE };
	unsigned long pid = 0;
	const char *args[2];
	int n_args = 0, c, rc;
	const char *near;

	opterr = 0;
	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
				NULL)) != -1) {
		switch (c) {
		case 1:
			if (n_args == 2)
				return usage_error(cmd, "too many arguments: "
						   "'%s'", optarg);
			args[n_args++] = optarg;
			break;
		case 'h':
			return print_help(NULL);
		case 'V':
			return print_version();
		case OPT_JSON:
			o.fmt = STAT_JSON;
			break;
		case OPT_CSV:
			o.fmt = STAT_CSV;
			break;
		case 'p':
			if (!parse_ulong(optarg, &pid) || pid == 0 ||
			    pid > 0x7fffffff)
				return usage_error(cmd, "%s needs a process "
						   "id, a positive number",
						   argv[optind - 1]);
			break;
		case 'o':
			o.columns = optarg;
			break;
		case 't':
			o.ts = STAT_TS_ISO;
			/* "-t rel": the format may be the next word, as
			 * DELAY and COUNT are numbers. */
			if (!optarg && optind < argc &&
			    parse_ts(argv[optind], &o.ts))
				optind++;
			else if (optarg && !parse_ts(optarg, &o.ts))
				return usage_error(cmd, "-t takes iso, rel or "
						   "unix, not '%s'", optarg);
			break;
		default:
			return bad_option(cmd, c, argv);
		}
	}
	while (optind < argc && n_args < 2) /* after "--" */
		args[n_args++] = argv[optind++];
	if (optind < argc)
		return usage_error(cmd, "too many arguments: '%s'",
				   argv[optind]);
	if (o.columns && !strcmp(o.columns, "help")) {
		stat_live_columns_help(stdout);
		return STAT_OK;
	}
	if (o.columns && o.fmt != STAT_TEXT)
		return usage_error(cmd, "-o picks the columns of the table; "
				   "--json and --csv print every raw field: "
				   "drop -o, or drop --%s",
				   o.fmt == STAT_JSON ? "json" : "csv");
	if (n_args >= 1 && !parse_delay(args[0], &o.delay_s)) {
		near = nearest_command(args[0]);
		if (!strcmp(args[0], "list"))
			return usage_error(cmd, "DELAY 'list' is not a number "
					   "of seconds above 0 (such as 1 or "
					   "0.5); to list, give no argument");
		if (near)
			return usage_error(NULL, "unknown command '%s'; did "
					   "you mean '%s'?", args[0], near);
		return usage_error(cmd, "DELAY '%s' is not a number of "
				   "seconds above 0 (such as 1 or 0.5)",
				   args[0]);
	}
	if (n_args == 2 && (!parse_ulong(args[1], &o.count) || !o.count))
		return usage_error(cmd, "COUNT '%s' is not a positive number",
				   args[1]);
	rc = stat_live_check_columns(o.columns, n_args > 0 || pid);
	if (rc)
		return rc;
	o.pid = (pid_t)pid;
	if (n_args == 0 && !pid)
		return stat_list(&o);
	if (n_args == 0) {
		o.count = 1; /* -p PID alone: one sample */
		o.delay_s = 1;
	}
	return stat_scroll(&o);
}

/* The operand of a trace command; several, or none, is an error. */
static int trace_operand(const struct command *cmd, const char **path,
			 const char *arg)
{
	if (*path)
		return usage_error(cmd, "unexpected argument '%s' (the trace "
				   "is %s)", arg, *path);
	*path = arg;
	return STAT_OK;
}

static int cmd_report(int argc, char **argv)
{
	const struct command *cmd = &report_cmd;
	const char *path = NULL, *columns = NULL;
	unsigned long top = TOP_DEFAULT;
	int c, rc;

	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
				NULL)) != -1) {
		switch (c) {
		case 1:
			rc = trace_operand(cmd, &path, optarg);
			if (rc)
				return rc;
			break;
		case 'h':
			return print_help(cmd);
		case OPT_TOP:
			if (!parse_ulong(optarg, &top) || top == 0 ||
			    top > 100000)
				return usage_error(cmd, "--top needs a number "
						   "from 1 to 100000");
			break;
		case 'o':
			columns = optarg;
			break;
		default:
			return bad_option(cmd, c, argv);
		}
	}
	for (; optind < argc; optind++)
		if ((rc = trace_operand(cmd, &path, argv[optind])))
			return rc;
	if (columns && !strcmp(columns, "help")) {
		stat_report_columns_help(stdout);
		return STAT_OK;
	}
	if (!path)
		return usage_error(cmd, "name a trace file (written by a "
				   "run with TENSORMM_TRACE=PATH)");
	rc = stat_report_check_columns(columns);
	if (rc)
		return rc;
	return stat_report(path, (unsigned)top, columns);
}

/* plot and export: a trace, an output, an iteration. */
static int cmd_plot_export(const struct command *cmd, int argc, char **argv)
{
	const char *path = NULL, *out = NULL;
	unsigned long iteration = 0;
	bool plot = cmd == &plot_cmd;
	int c, rc;

	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
				NULL)) != -1) {
		switch (c) {
		case 1:
			rc = trace_operand(cmd, &path, optarg);
			if (rc)
				return rc;
			break;
		case 'h':
			return print_help(cmd);
		case 'o':
			out = optarg;
			break;
		case OPT_ITERATION:
			if (!parse_ulong(optarg, &iteration) || !iteration)
				return usage_error(cmd, "--iteration needs an "
						   "iteration number, 1 for "
						   "the first");
			break;
		default:
			return bad_option(cmd, c, argv);
		}
	}
	for (; optind < argc; optind++)
		if ((rc = trace_operand(cmd, &path, argv[optind])))
			return rc;
	if (plot && (!path || !out))
		return usage_error(cmd, "name a trace file and an output, "
				   "e.g. plot run.trace -o run.svg");
	if (!path)
		return usage_error(cmd, "name a trace file, e.g. export "
				   "run.trace -o run.json");
	if (plot)
		return stat_plot(path, out, iteration);
	return stat_export(path, out ? out : "-", iteration);
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
	const struct command *cmd = &tunables_cmd;
	const char *config = NULL;
	struct tmm_config cfg;
	const struct tmm_tunable *t;
	char err[1024], value[4200];
	size_t n;
	int c;

	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
				NULL)) != -1) {
		switch (c) {
		case 1:
			return usage_error(cmd, "unexpected argument '%s'; "
					   "a config string goes after "
					   "--config", optarg);
		case 'h':
			return print_help(cmd);
		case OPT_CONFIG:
			config = optarg;
			break;
		default:
			return bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'",
				   argv[optind]);
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

int main(int argc, char **argv)
{
	const char *word = argc > 1 ? argv[1] : "";

	stat_clock_start();
	opterr = 0; /* bad_option says it, with what to write instead */
	if (!strcmp(word, "help")) {
		for (size_t i = 1; argc > 2 && i < N_COMMANDS; i++)
			if (!strcmp(argv[2], commands[i]->name))
				return print_help(commands[i]);
		if (argc > 2)
			return usage_error(NULL, "no command '%s' to help "
					   "with", argv[2]);
		return print_help(NULL);
	}
	/* getopt_long reads argv from argv[optind]: a command's own
	 * arguments start after its name. */
	if (!strcmp(word, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(word, "plot"))
		return cmd_plot_export(&plot_cmd, argc - 1, argv + 1);
	if (!strcmp(word, "export"))
		return cmd_plot_export(&export_cmd, argc - 1, argv + 1);
	if (!strcmp(word, "tunables"))
		return cmd_tunables(argc - 1, argv + 1);
	return cmd_live(argc, argv);
}
