/* SPDX-License-Identifier: MIT */
/*
 * xalloc.h — the host allocations of lib/ and hints/, each a failure
 * point: the fault site host_alloc (fault.h, the `fault` tunable).
 *
 * Every malloc, calloc, realloc, aligned_alloc, strdup and strndup of the
 * library goes through these, so that a test can fail the N-th host
 * allocation of a run and see that the library either recovers or fails
 * with an error, never crashes or leaks.  Each behaves as the C library
 * call of the same name; an injected failure returns NULL with errno
 * ENOMEM and leaves a realloc'd block as it was, as a real one does.
 * While no fault is set, the only cost is one relaxed atomic load.
 */
#ifndef TMM_XALLOC_H
#define TMM_XALLOC_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

/* True when this allocation is to fail (errno is then ENOMEM). */
static inline bool tmm_xalloc_fails(void)
{
	if (!tmm_fault_now(TMM_SITE_HOST_ALLOC))
		return false;
	errno = ENOMEM;
	return true;
}

static inline void *tmm_malloc(size_t n)
{
	return tmm_xalloc_fails() ? NULL : malloc(n);
}

static inline void *tmm_calloc(size_t n, size_t size)
{
	return tmm_xalloc_fails() ? NULL : calloc(n, size);
}

static inline void *tmm_realloc(void *p, size_t n)
{
	return tmm_xalloc_fails() ? NULL : realloc(p, n);
}

static inline void *tmm_aligned_alloc(size_t align, size_t n)
{
	return tmm_xalloc_fails() ? NULL : aligned_alloc(align, n);
}

static inline char *tmm_strdup(const char *s)
{
	return tmm_xalloc_fails() ? NULL : strdup(s);
}

static inline char *tmm_strndup(const char *s, size_t n)
{
	return tmm_xalloc_fails() ? NULL : strndup(s, n);
}

#endif /* TMM_XALLOC_H */
