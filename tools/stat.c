/* SPDX-License-Identifier: MIT */
/*
 * stat.c — what the commands of tensormm-stat share: the error message
 * on stderr, opening a trace file with a failure explained, JSON strings,
 * the timestamps of -t and the names of op and tensor kinds.
 *
 * They live here, below the commands (stat_live.c, stat_report.c,
 * stat_plot.c) and below tensormm-stat.c, which dispatches to them, so
 * that each depends only downwards: no command calls into another, nor
 * into main's file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "stat.h"
#include "tensormm.h"
#include "lib/io/trace_read.h"

static const char *const op_kinds[TMM_OP_KIND_COUNT] = {
	"other", "conv", "matmul", "pool", "act", "norm", "elementwise",
	"loss", "optimizer", "collective",
};

static const char *const tensor_kinds[TMM_KIND_COUNT] = {
	"persistent", "activation", "gradient", "scratch",
};

const char *stat_op_kind_name(uint32_t kind)
{
	return kind < TMM_OP_KIND_COUNT ? op_kinds[kind] : "?";
}

const char *stat_tensor_kind_name(uint32_t kind)
{
	return kind < TMM_KIND_COUNT ? tensor_kinds[kind] : "?";
}

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

/* The length of the UTF-8 sequence at s (at most `left` bytes), or 0
 * when it is not well formed: no overlong forms, no surrogates, nothing
 * above U+10FFFF (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	size_t n;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void stat_json_string(FILE *f, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = 0;

	while (len < max && u[len])
		len++;
	putc('"', f);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_len(u + i, len - i);

		if (n == 0) {
			fputs("\\ufffd", f);
			i++;
		} else if (n > 1) {
			fwrite(u + i, 1, n, f);
			i += n;
		} else {
			if (u[i] == '"' || u[i] == '\\')
				fprintf(f, "\\%c", u[i]);
			else if (u[i] < 0x20 || u[i] == 0x7f)
				fprintf(f, "\\u%04x", u[i]);
			else
				putc(u[i], f);
			i++;
		}
	}
	putc('"', f);
}

static struct timespec started;

void stat_clock_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &started);
}

void stat_timestamp(enum stat_ts ts, char *buf, size_t len)
{
	struct timespec now;
	struct tm tm;

	switch (ts) {
	case STAT_TS_NONE:
		break;
	case STAT_TS_ISO:
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec,
			 now.tv_nsec / 1000000);
		return;
	case STAT_TS_REL:
		/* Monotonic: a clock step must not make time run back. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		snprintf(buf, len, "%.3f",
			 (double)(now.tv_sec - started.tv_sec) +
				 (double)(now.tv_nsec - started.tv_nsec) / 1e9);
		return;
	case STAT_TS_UNIX:
		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(buf, len, "%lld.%03ld", (long long)now.tv_sec,
			 now.tv_nsec / 1000000);
		return;
	}
	if (len)
		*buf = 0;
}

int stat_timestamp_width(enum stat_ts ts)
{
	switch (ts) {
	case STAT_TS_ISO:
		return 24;
	case STAT_TS_REL:
		return 10;
	case STAT_TS_UNIX:
		return 14;
	case STAT_TS_NONE:
		break;
	}
	return 0;
}
