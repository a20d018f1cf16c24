/* SPDX-License-Identifier: MIT */
/*
 * grow.c — see grow.h.
 */
#include <stdlib.h>

#include "grow.h"
#include "xalloc.h"

bool tmm_grow(void **arr, uint32_t *cap, uint64_t need, size_t size)
{
	uint64_t n;
	void *p;

	if (need <= *cap)
		return true;
	if (need > UINT32_MAX / 2)
		return false;
	for (n = *cap ? *cap : 64; n < need; n *= 2)
		;
	p = tmm_realloc(*arr, n * size);
	if (!p)
		return false;
	*arr = p;
	*cap = (uint32_t)n;
	return true;
}
