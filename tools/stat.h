/* SPDX-License-Identifier: MIT */
/*
 * stat.h — the pieces of tensormm-stat, one file per concept: live
 * segments (stat_live.c), trace reports (stat_report.c), timelines as SVG
 * (stat_plot.c), traces as Chrome/Perfetto JSON (stat_export.c);
 * tensormm-stat.c parses the command line.  What more than one of them
 * uses (errors, trace opening, JSON strings, timestamps, the names of op
 * and tensor kinds) is in stat.c,
 * and the column selection of the tables (-o) in stat_columns.c, so the
 * commands depend on those and never on each other.
 */
#ifndef TMM_STAT_H
#define TMM_STAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes, as documented in tensormm-stat(1). */
enum stat_exit {
	STAT_OK = 0,
	STAT_FAILED = 1,  /* a trace or segment could not be read or used */
	STAT_USAGE = 2,	  /* a bad command line */
	STAT_NO_PID = 3,  /* the PID given has no libtensormm context */
};

enum stat_format { STAT_TEXT, STAT_JSON, STAT_CSV };

/* -t: what a row's leading timestamp is (tensormm-stat(1)). */
enum stat_ts {
	STAT_TS_NONE,
	STAT_TS_ISO,  /* UTC, ISO-8601 with milliseconds */
	STAT_TS_REL,  /* seconds since tensormm-stat started (monotonic) */
	STAT_TS_UNIX, /* seconds since the epoch, with milliseconds */
};

/* What the live views (the list and the scrolling table) are asked. */
struct stat_live_opts {
	pid_t pid;	       /* > 0: only this process's contexts */
	double delay_s;	       /* scrolling: seconds between samples */
	unsigned long count;   /* scrolling: samples, 0 until interrupted */
	enum stat_format fmt;
	const char *columns;   /* -o LIST, or NULL for the view's defaults */
	enum stat_ts ts;
};

/* Prints "tensormm-stat: <message>" on stderr. */
void stat_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lists the processes using libtensormm (o->pid, o->fmt, o->columns,
 * o->ts).  Returns an exit code. */
int stat_list(const struct stat_live_opts *o);

/*
 * Prints a line per context every o->delay_s seconds, o->count times (0:
 * until interrupted); only the contexts of o->pid when it is > 0.
 * Returns an exit code.
 */
int stat_scroll(const struct stat_live_opts *o);

/* Checks a -o LIST against the live views' columns (`scroll`: the
 * scrolling table's defaults for a leading '+'), explaining an error on
 * stderr.  Returns an exit code. */
int stat_live_check_columns(const char *list, bool scroll);

/* Prints the live views' columns for -o help. */
void stat_live_columns_help(FILE *f);

/* Summarises a trace file: its per-iteration table with the columns of
 * `columns` (-o LIST, NULL for the defaults), then the top tensors.
 * Returns an exit code. */
int stat_report(const char *path, unsigned top, const char *columns);

/* Checks a report's -o LIST, explaining an error on stderr.  Returns an
 * exit code. */
int stat_report_check_columns(const char *list);

/* Prints the report's columns for -o help. */
void stat_report_columns_help(FILE *f);

/* Draws iteration `iteration` (0: the last) of a trace as SVG into
 * `out`.  Returns an exit code. */
int stat_plot(const char *path, const char *out, unsigned long iteration);

/*
 * Writes iterations of a trace as Chrome/Perfetto JSON into `out` ("-":
 * stdout): all of them laid end to end, or only `iteration` (> 0).
 * Returns an exit code.
 */
int stat_export(const char *path, const char *out, unsigned long iteration);

/* ------------------------------------------------------------------------
 * Columns of the text tables (stat_columns.c)
 * ---------------------------------------------------------------------- */

/* One column a table can print. */
struct stat_column {
	const char *name;  /* what -o names it by */
	const char *unit;  /* the second header line ("" for none) */
	int width;	   /* negative: left-aligned */
	const char *help;  /* one line for -o help */
	const char *group; /* a name that selects it with others, or NULL */
	/* The view's own: how to print it, and from what. */
	int how;
	const char *src[2];
};

#define STAT_MAX_COLUMNS 64

/* The columns chosen, in the order asked: indices into a table. */
struct stat_selection {
	size_t n;
	unsigned char col[STAT_MAX_COLUMNS];
};

/*
 * Fills *sel from LIST, a comma-separated list of column names of `cols`
 * ("all" for every one, a group name for its columns; a leading '+' adds
 * to `defaults`, itself such a list).  NULL or "" takes the defaults.
 * An unknown name is an error naming the known ones, for `view` (e.g.
 * "-o").  Returns an exit code.
 */
int stat_columns_select(const struct stat_column *cols, size_t n,
			const char *defaults, const char *list,
			const char *view, struct stat_selection *sel);

/* Prints each column's name, unit and help, one per line. */
void stat_columns_help(FILE *f, const struct stat_column *cols, size_t n);

/* Prints the two header lines ("# name..." and "# unit...") of the
 * selected columns, after a timestamp column when `ts` is not NONE. */
void stat_columns_header(const struct stat_column *cols,
			 const struct stat_selection *sel, enum stat_ts ts);

/* Prints one cell of column `c`, padded to its width, after a space. */
void stat_columns_cell(const struct stat_column *c, const char *text);

/* ------------------------------------------------------------------------
 * Shared helpers (stat.c)
 * ---------------------------------------------------------------------- */

/* Writes s (at most `max` bytes, or up to its NUL) as a JSON string:
 * quotes, backslashes and control bytes escaped, and bytes that are not
 * UTF-8 replaced by U+FFFD, so that the output is always valid JSON
 * whatever names a program gave. */
void stat_json_string(FILE *f, const char *s, size_t max);

/* Notes now as the start for STAT_TS_REL; main calls it first. */
void stat_clock_start(void);

/* Formats the current time as `ts` asks into buf: ISO-8601 UTC with
 * milliseconds ("2026-11-22T17:51:46.123Z"), or seconds with
 * milliseconds. */
void stat_timestamp(enum stat_ts ts, char *buf, size_t len);

/* The width of stat_timestamp's text for `ts`, for aligned tables. */
int stat_timestamp_width(enum stat_ts ts);

struct tmm_trace_reader;
struct tmm_trace_file_info;

/* Opens a trace file for reading, explaining a failure on stderr.
 * Returns 0, or an exit code. */
int stat_trace_open(const char *path, struct tmm_trace_reader **r,
		    struct tmm_trace_file_info *info);

/* Prints a failed tmm_trace_reader_next on stderr.  Returns an exit
 * code. */
int stat_trace_fail(const char *path, int rc, const char *err);

/* The names of an op's kind (enum tmm_op_kind) and of a tensor's (enum
 * tmm_kind), as the commands print them; "?" for a value out of range. */
const char *stat_op_kind_name(uint32_t kind);
const char *stat_tensor_kind_name(uint32_t kind);

#endif /* TMM_STAT_H */
