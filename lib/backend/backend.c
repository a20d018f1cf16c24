/* SPDX-License-Identifier: MIT */
/*
 * backend.c — what every backend implementation shares: the message a
 * failed call leaves in be->error.
 *
 * Choosing and opening a backend is backend_open.c's: it names the
 * implementations, and they call in here, so the two apart make no loop.
 */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"

int tmm_backend_fail(struct tmm_backend *be, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(be->error, sizeof(be->error), fmt, ap);
	va_end(ap);
	return code;
}
