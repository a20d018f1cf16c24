/* SPDX-License-Identifier: MIT */
/*
 * log.c — diagnostics on stderr, filtered by TENSORMM_LOG.
 */
#include <stdarg.h>
#include <stdio.h>

#include "context.h"

void tmm_log(const struct tmm_ctx *ctx, enum tmm_log_level level,
	     const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info",
					     "debug" };
	char line[1024];
	va_list ap;

	if (level > ctx->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line, so lines of several processes do not mix. */
	fprintf(stderr, "tensormm[%s]: %s\n", names[level], line);
}
