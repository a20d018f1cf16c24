/* SPDX-License-Identifier: MIT */
/*
 * handmade_plan.h — a plan written by hand (by rule) for the tests.
 *
 * Not a planner: a simple, predictable rule that exercises every action.
 * For each tensor made inside the iteration, the longest stretch between
 * two of its accesses (at least `min_gap` accesses long) becomes an
 * eviction after the first of them with that back-access; the eviction is
 * a drop when `style` allows and the tensor can be recomputed, else a
 * swap with a prefetch `ahead` accesses before the back-access.
 */
#ifndef HANDMADE_PLAN_H
#define HANDMADE_PLAN_H

#include "lib/io/plan.h"
#include "lib/io/trace.h"

enum handmade_style {
	HANDMADE_SWAP,	/* swaps and prefetches only */
	HANDMADE_DROP,	/* drops wherever possible, swaps elsewhere */
	HANDMADE_MIXED, /* alternates drops and swaps */
	HANDMADE_MIGRATE, /* swaps only, every other one flagged
			   * TMM_ACT_MIGRATE */
};

/* Fills *plan (initialised here); returns how many evictions it has. */
unsigned handmade_plan(const struct tmm_trace *t, enum handmade_style style,
		       uint32_t min_gap, uint32_t ahead,
		       struct tmm_plan *plan);

#endif /* HANDMADE_PLAN_H */
