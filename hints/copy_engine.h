/* SPDX-License-Identifier: MIT */
/*
 * copy_engine.h — one copy engine's chosen transfers, by start, for a
 * planner that prices swaps on one-at-a-time copy engines (tsplit, Eq. 3:
 * a copy queued behind the chosen ones whose intervals it would overlap;
 * tensile, §IV-C: swap-outs as early and swap-ins as late as the engines
 * allow; stream: a prefetch booked as late as it can land in time).
 */
#ifndef TMM_COPY_ENGINE_H
#define TMM_COPY_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* Zeroed: no transfer booked. */
struct tmm_copy_engine {
	struct tmm_copy_busy {
		uint64_t start, end;
	} *b;
	uint32_t n, cap;
};

/* The start of a copy of `ns` that may begin at `start`: after every
 * booked transfer it would overlap. */
uint64_t tmm_copy_engine_slot(const struct tmm_copy_engine *e,
			      uint64_t start, uint64_t ns);

/* The latest start s of a copy of `ns` with lo <= s and s + ns <= hi
 * that overlaps no booked transfer, into *start (a prefetch that should
 * land just in time).  Returns false when the engine has no such gap. */
bool tmm_copy_engine_latest(const struct tmm_copy_engine *e, uint64_t lo,
			    uint64_t hi, uint64_t ns, uint64_t *start);

/* Books [start, start + ns), a slot tmm_copy_engine_slot found.  Returns
 * 0 or -ENOMEM. */
int tmm_copy_engine_take(struct tmm_copy_engine *e, uint64_t start,
			 uint64_t ns);

/* Frees the bookings; e is then empty. */
void tmm_copy_engine_free(struct tmm_copy_engine *e);

#endif /* TMM_COPY_ENGINE_H */
