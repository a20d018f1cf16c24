/* SPDX-License-Identifier: MIT */
/*
 * plan_repair.c — scheduling what passive mode had to do under a plan
 * (plan_repair.h).
 *
 * A passive eviction of tensor t, for the op whose accesses begin at
 * `need`, is repaired in one of two ways:
 *  - the plan does nothing to t between its last access before `need`
 *    and its next one: a swap is scheduled over that gap.  A tensor that
 *    the iteration has not touched yet (a weight, optimizer state) leaves
 *    after the latest access that lets its copy end before `need`;
 *  - the plan swapped t out in that gap but prefetched it before `need`:
 *    the prefetch fires after the op at `need` instead.
 * Anything else the plan does to t there is left alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_repair.h"

/*
 * For a tensor the iteration has not touched before access `need`: the
 * latest access after which its swap-out still ends before `need` begins,
 * or the access just before `need` when none does, or TMM_TRACE_NONE at
 * the iteration's first op.
 */
static uint32_t leave_by(const struct tmm_analysis *an, uint32_t t,
			 uint32_t need)
{
	uint64_t copy = tmm_swap_ns(an, an->life[t].bytes, false);
	uint64_t by = tmm_access_begin(an, need);

	if (need == 0)
		return TMM_TRACE_NONE;
	for (uint32_t k = need; k-- > 0;)
		if (tmm_access_end(an, k) + copy <= by)
			return k;
	return need - 1;
}

/* The plan's actions on `key` in [from, to) (sorted by trigger): how
 * many, and the index of the last PREFETCH among them (or n_actions). */
static uint32_t actions_between(const struct tmm_plan *p, uint64_t key,
				uint32_t from, uint32_t to,
				uint32_t *prefetch)
{
	uint32_t n = 0;

	*prefetch = p->n_actions;
	for (uint32_t a = 0; a < p->n_actions; a++) {
		const struct tmm_plan_action *x = &p->actions[a];

		if (x->trigger >= to)
			break;
		if (x->trigger < from || x->key != key)
			continue;
		n++;
		if (x->type == TMM_ACT_PREFETCH)
			*prefetch = a;
	}
	return n;
}

struct repair {
	const struct tmm_analysis *an;
	struct tmm_plan *out;	    /* the copy being repaired */
	struct tmm_eviction_set add; /* swaps to schedule */
	uint32_t delayed;	    /* prefetches made later */
};

/* Repairs one passive eviction, if it can (see the file comment). */
static int repair_one(struct repair *r, const struct tmm_trial_eviction *pe)
{
	const struct tmm_analysis *an = r->an;
	uint32_t t = pe->tensor, need, last_of_need, before, after, to;
	uint32_t n, prefetch;
	struct tmm_eviction e;

	if (t >= an->trace->n_tensors || pe->access >= an->trace->n_accesses)
		return 0;
	need = an->op_start[pe->access];
	/* Not back before the op that needed the room has run. */
	last_of_need = an->op_end[need] - 1;
	tmm_accesses_around(an, t, need, &before, &after);
	if (before == TMM_TRACE_NONE)
		before = leave_by(an, t, need);
	if (before == TMM_TRACE_NONE ||
	    (after != TMM_TRACE_NONE && last_of_need >= after))
		return 0;
	to = after == TMM_TRACE_NONE ? an->trace->n_accesses : after;
	n = actions_between(r->out, an->trace->tensors[t].key, before, to,
			    &prefetch);
	if (n) {
		struct tmm_plan_action *x = prefetch < r->out->n_actions
						    ? &r->out->actions[prefetch]
						    : NULL;

		/* Sorting waits for the end: the indices stay valid. */
		if (x && x->trigger < last_of_need) {
			x->trigger = last_of_need;
			r->delayed++;
		}
		return 0;
	}
	/* A tensor evicted twice in one gap is scheduled once. */
	for (uint32_t j = 0; j < r->add.n; j++)
		if (r->add.ev[j].tensor == t && r->add.ev[j].evict == before)
			return 0;
	e = (struct tmm_eviction){ .tensor = t, .evict = before,
				   .back = after, .drop = false };
	if (after != TMM_TRACE_NONE) {
		uint32_t in = tmm_in_trigger(an, t, before, after);

		e.in_trigger = in > last_of_need ? in : last_of_need;
	}
	return tmm_eviction_add(&r->add, e);
}

int tmm_plan_repair(const struct tmm_analysis *an, const struct tmm_plan *p,
		    const struct tmm_trial_eviction *ev, uint32_t n,
		    struct tmm_plan *out, uint32_t *added)
{
	struct repair r = { .an = an, .out = out };
	int rc = tmm_plan_copy(out, p);

	*added = 0;
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = repair_one(&r, &ev[i]);
	if (rc == 0 && r.add.n)
		rc = tmm_emit(an, r.add.ev, r.add.n, out);
	if (rc == 0) {
		/* tmm_emit judged the new evictions alone. */
		out->predicted_peak = p->predicted_peak;
		out->fits = p->fits;
		tmm_plan_sort(out);
		*added = r.add.n + r.delayed;
	}
	tmm_eviction_set_free(&r.add);
	if (rc < 0)
		tmm_plan_free(out);
	return rc;
}
