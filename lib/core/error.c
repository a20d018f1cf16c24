/* SPDX-License-Identifier: MIT */
/*
 * error.c — error codes and messages.
 *
 * Functions return a negative errno; the detailed message (which tensor,
 * which op, how many bytes, which tunable) is kept per context, because a
 * code alone rarely tells a user what to change.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "context.h"

/* The last tmm_ctx_create() failure of this thread (there is no context to
 * hold it). */
_Thread_local char tmm_create_error[512];

void tmm_fail_add_context(struct tmm_ctx *ctx)
{
	/* A failure inside a recomputation names the op re-run (current_op)
	 * and the op it was for, which is the one the program ran. */
	if (ctx->recompute_for && !strstr(ctx->error, "(while recomputing")) {
		size_t len = strlen(ctx->error);

		snprintf(ctx->error + len, sizeof(ctx->error) - len,
			 " (while recomputing with op '%s' for op '%s')",
			 ctx->current_op ? ctx->current_op : "(none)",
			 ctx->recompute_for);
	}
}

int tmm_fail(struct tmm_ctx *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->error, sizeof(ctx->error), fmt, ap);
	va_end(ap);
	tmm_fail_add_context(ctx);
	atomic_fetch_add_explicit(&ctx->fails, 1, memory_order_relaxed);
	return code;
}

const char *tmm_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EINVAL:
		return "invalid argument";
	case -EBADF:
		return "bad handle (null, destroyed, or from another context)";
	case -ENOMEM:
		return "out of memory (device budget or host)";
	case -ENODATA:
		return "tensor holds no bytes (never written, or discarded "
		       "by liveness=discard)";
	case -ENODEV:
		return "device backend not available";
	case -ENOTSUP:
		return "operation not supported by this backend or mode";
	case -EBUSY:
		return "busy (tensor acquired, context in a call on another "
		       "thread, or a call refused inside a callback)";
	case -EIO:
		return "device error";
	case -ERANGE:
		return "value out of range";
	case -EAGAIN:
		return "not possible yet (an iteration must complete first)";
	case -ELOOP:
		return "recomputation chain too deep";
	case -EBADMSG:
		return "corrupt or truncated file";
	case -ENOSPC:
		return "no space left";
	default:
		return "unknown error";
	}
}

const char *tmm_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}
