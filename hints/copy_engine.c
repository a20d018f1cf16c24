/* SPDX-License-Identifier: MIT */
/*
 * copy_engine.c — one copy engine's booked transfers, for the planners
 * that schedule copies on it (tsplit, tensile, stream); see copy_engine.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copy_engine.h"
#include "lib/base/xalloc.h"

/* The transfers do not overlap each other, so by start they are also by
 * end: the first that could overlap is found by bisection. */
uint64_t tmm_copy_engine_slot(const struct tmm_copy_engine *e,
			      uint64_t start, uint64_t ns)
{
	uint32_t lo = 0, hi = e->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->b[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i < e->n && e->b[i].start < start + ns; i++)
		if (e->b[i].end > start)
			start = e->b[i].end;
	return start;
}

/* From the latest transfer back: the gap before each one is the latest
 * that may hold the copy. */
bool tmm_copy_engine_latest(const struct tmm_copy_engine *e, uint64_t lo,
			    uint64_t hi, uint64_t ns, uint64_t *start)
{
	uint64_t end = hi;

	for (uint32_t i = e->n; i-- > 0;) {
		if (e->b[i].start >= end)
			continue;
		if (end >= ns && e->b[i].end <= end - ns)
			break;
		end = e->b[i].start;
	}
	if (end < ns || end - ns < lo)
		return false;
	*start = end - ns;
	return true;
}

/* Busy time that touches is kept as one interval: a saturated engine is
 * then one long interval, not thousands for the slot search to walk
 * through. */
int tmm_copy_engine_take(struct tmm_copy_engine *e, uint64_t start,
			 uint64_t ns)
{
	uint64_t end = start + ns;
	uint32_t i;

	for (i = e->n; i > 0 && e->b[i - 1].start > start; i--)
		;
	if (i > 0 && e->b[i - 1].end >= start) {
		struct tmm_copy_busy *prev = &e->b[i - 1];

		if (prev->end < end)
			prev->end = end;
		if (i < e->n && e->b[i].start <= prev->end) {
			prev->end = e->b[i].end > prev->end ? e->b[i].end
							    : prev->end;
			memmove(&e->b[i], &e->b[i + 1],
				sizeof(*e->b) * (e->n - i - 1));
			e->n--;
		}
		return 0;
	}
	if (i < e->n && e->b[i].start <= end) {
		e->b[i].start = start;
		if (e->b[i].end < end)
			e->b[i].end = end;
		return 0;
	}
	if (e->n == e->cap) {
		uint32_t cap = e->cap ? 2 * e->cap : 64;
		void *p = tmm_realloc(e->b, sizeof(*e->b) * cap);

		if (!p)
			return -ENOMEM;
		e->b = p;
		e->cap = cap;
	}
	memmove(&e->b[i + 1], &e->b[i], sizeof(*e->b) * (e->n - i));
	e->b[i] = (struct tmm_copy_busy){ start, end };
	e->n++;
	return 0;
}

void tmm_copy_engine_free(struct tmm_copy_engine *e)
{
	free(e->b);
	*e = (struct tmm_copy_engine){ 0 };
}
