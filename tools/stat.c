/*
 * stat.c — what the commands of tensormm-stat share: the error message
 * on stderr, and opening a trace file with a failure explained.
 *
 * They live here, below the commands (stat_live.c, stat_report.c,
 * stat_plot.c) and below tensormm-stat.c, which dispatches to them, so
 * that each depends only downwards: no command calls into another, nor
 * into main's file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "stat.h"
#include "lib/io/trace_read.h"

void stat_error(const char *fmt, ...)
{
	va_list ap;

	fputs("tensormm-stat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int stat_trace_open(const char *path, struct tmm_trace_reader **r,
		    struct tmm_trace_file_info *info)
{
	char err[1024];
	int rc = tmm_trace_reader_open(path, r, info, err, sizeof(err));

	if (rc == 0)
		return STAT_OK;
	return stat_trace_fail(path, rc, err);
}

int stat_trace_fail(const char *path, int rc, const char *err)
{
	if (rc == -EBADMSG)
		stat_error("%s is not a readable trace: %s; record it again "
			   "with TENSORMM_TRACE=%s", path, err, path);
	else if (rc == -ENOTSUP)
		stat_error("%s: %s; read it with the tensormm-stat of the "
			   "libtensormm that wrote it", path, err);
	else
		stat_error("%s", err);
	return STAT_FAILED;
}
