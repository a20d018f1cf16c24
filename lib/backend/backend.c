/* SPDX-License-Identifier: MIT */
/*
 * backend.c — what every backend implementation shares: the message a
 * failed call leaves in be->error, and a batch of prefetches for backends
 * that have no batch of their own.
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

int tmm_backend_prefetch_many(struct tmm_backend *be, enum tmm_engine engine,
			      const struct tmm_managed_range *ranges,
			      unsigned n, enum tmm_location to, int numa_node)
{
	if (n == 0)
		return 0;
	if (be->ops->prefetch_batch)
		return be->ops->prefetch_batch(be, engine, ranges, n, to,
					       numa_node);
	for (unsigned i = 0; i < n; i++) {
		int rc = be->ops->prefetch(be, engine, ranges[i].ptr,
					   ranges[i].bytes, to, numa_node);

		if (rc < 0)
			return rc;
	}
	return 0;
}
