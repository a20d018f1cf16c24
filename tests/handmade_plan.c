/*
 * handmade_plan.c — see handmade_plan.h.
 */
#include <check.h>
#include <stdlib.h>

#include "handmade_plan.h"
#include "tensormm.h"

/* Could the tensor be recomputed after access `at`?  The last write
 * before it must be a pure op that does not read the tensor. */
static int recomputable(const struct tmm_trace *t, uint32_t tensor,
			uint32_t at)
{
	uint32_t w = TMM_TRACE_NONE;

	for (uint32_t k = 0; k <= at; k++)
		if (t->accesses[k].tensor == tensor &&
		    (t->accesses[k].flags & TMM_TA_WRITE))
			w = k;
	return w != TMM_TRACE_NONE && t->accesses[w].op != TMM_TRACE_NONE &&
	       (t->ops[t->accesses[w].op].flags & TMM_OP_PURE) &&
	       !(t->accesses[w].flags & TMM_TA_READ);
}

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
		drop = drop && recomputable(t, i, from);
		if (drop) {
			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_EVICT_DROP,
						      from, key, to, 0), 0);
		} else {
			uint32_t in = to > from + ahead ? to - ahead
							: from + 1;

			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_EVICT_SWAP,
						      from, key, to, 0), 0);
			ck_assert_int_eq(tmm_plan_add(plan, TMM_ACT_PREFETCH,
						      in, key, to, 0), 0);
		}
		evictions++;
	}
	tmm_plan_sort(plan);
	return evictions;
}
