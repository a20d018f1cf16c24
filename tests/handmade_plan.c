/* SPDX-License-Identifier: MIT */
/*
 * handmade_plan.c — see handmade_plan.h.
 */
#include <check.h>
#include <stdlib.h>

#include "handmade_plan.h"

unsigned handmade_plan(const struct tmm_trace *t, enum handmade_style style,
		       uint32_t min_gap, uint32_t ahead, struct tmm_plan *plan)
{
	unsigned evictions = 0;

	ck_assert_int_eq(tmm_plan_init(plan, t, "handmade"), 0);
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		uint32_t prev = TMM_TRACE_NONE, from = 0, to = 0;
		uint64_t key = t->tensors[i].key;
		int drop;

		if (!(t->tensors[i].flags & TMM_TT_MADE_INSIDE))
			continue;
		for (uint32_t k = 0; k < t->n_accesses; k++) {
			if (t->accesses[k].tensor != i)
				continue;
			if (prev != TMM_TRACE_NONE && k - prev > to - from) {
				from = prev;
				to = k;
			}
			prev = k;
		}
		if (to - from < min_gap)
			continue;
		drop = style == HANDMADE_DROP ||
		       (style == HANDMADE_MIXED && evictions % 2 == 0);
		drop = drop && tmm_plan_droppable(t, i, from, NULL) ==
				       TMM_DROP_OK;
		if (drop) {
			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_EVICT_DROP,
						      from, key, to, 0), 0);
		} else {
			uint32_t in = to > from + ahead ? to - ahead
							: from + 1;

			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_EVICT_SWAP,
						      from, key, to, 0), 0);
			if (style == HANDMADE_MIGRATE && evictions % 2 == 0)
				plan->actions[plan->n_actions - 1].flags =
					TMM_ACT_MIGRATE;
			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_PREFETCH,
						      in, key, to, 0), 0);
		}
		evictions++;
	}
	tmm_plan_sort(plan);
	return evictions;
}
