/*
 * stat.h — the pieces of tensormm-stat, one file per concept: live
 * segments (stat_live.c), trace reports (stat_report.c), timelines as SVG
 * (stat_plot.c); tensormm-stat.c parses the command line.  What more than
 * one of them uses (stat_error, stat_trace_open, stat_trace_fail) is in
 * stat.c, so the commands depend on it and never on each other.
 */
#ifndef TMM_STAT_H
#define TMM_STAT_H

#include <stdbool.h>
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

/* Prints "tensormm-stat: <message>" on stderr. */
void stat_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lists the processes using libtensormm.  Returns an exit code. */
int stat_list(enum stat_format fmt);

/*
 * Prints a line per context every `delay_s` seconds, `count` times (0:
 * until interrupted); only the contexts of `pid` when pid > 0.  Returns
 * an exit code.
 */
int stat_scroll(pid_t pid, double delay_s, unsigned long count,
		enum stat_format fmt);

/* Summarises a trace file.  Returns an exit code. */
int stat_report(const char *path, unsigned top);

/* Draws iteration `iteration` (0: the last) of a trace as SVG into
 * `out`.  Returns an exit code. */
int stat_plot(const char *path, const char *out, unsigned long iteration);

struct tmm_trace_reader;
struct tmm_trace_file_info;

/* Opens a trace file for reading, explaining a failure on stderr.
 * Returns 0, or an exit code. */
int stat_trace_open(const char *path, struct tmm_trace_reader **r,
		    struct tmm_trace_file_info *info);

/* Prints a failed tmm_trace_reader_next on stderr.  Returns an exit
 * code. */
int stat_trace_fail(const char *path, int rc, const char *err);

#endif /* TMM_STAT_H */
