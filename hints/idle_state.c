/* SPDX-License-Identifier: MIT */
/*
 * idle_state.c — persistent state idle across the step boundary,
 * swapped out while it idles (see idle_state.h).
 */
#include <errno.h>

#include "idle_state.h"

/* The idle time across the boundary must hold the copy out and the copy
 * in this many times over: the plan's own swaps share the link. */
#define IDLE_COPIES_SLACK 4

/* Whether t is state this module may move: made before the iteration,
 * alive after it, touched in it, and not overwritten whole first. */
static bool is_state(const struct tmm_analysis *an, uint32_t t)
{
	const struct tmm_trace *tr = an->trace;

	return an->life[t].first != TMM_TRACE_NONE &&
	       !(tr->tensors[t].flags &
		 (TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE)) &&
	       !tmm_made_fresh(an, t);
}

/* Whether the curve is over the target anywhere while e holds t away. */
static bool over_while_away(const struct tmm_analysis *an,
			    const struct tmm_eviction *e)
{
	uint32_t gone, returns;

	tmm_eviction_span(an, e, &gone, &returns);
	for (uint32_t k = gone; k < returns; k++)
		if (an->base[k] > an->target)
			return true;
	return false;
}

/* Whether t is worth the two swaps (idle_state.h says when); fills *in
 * and *out with them where it is.  `end` is the iteration's end. */
static bool worth_moving(const struct tmm_analysis *an, uint32_t t,
			 uint64_t end, struct tmm_eviction *in,
			 struct tmm_eviction *out)
{
	const struct tmm_life *l = &an->life[t];
	uint64_t in_ns, out_ns, first_ns, idle_ns;

	if (!is_state(an, t))
		return false;
	in_ns = tmm_swap_ns(an, l->bytes, true);
	out_ns = tmm_swap_ns(an, l->bytes, false);
	first_ns = tmm_access_begin(an, l->first);
	idle_ns = first_ns + (end - tmm_access_end(an, l->last));
	/* A first access too early for a prefetch from the start would
	 * need one that wraps around from the step before; TENSILE's
	 * planner makes those, not this. */
	if (first_ns < 2 * in_ns ||
	    idle_ns < IDLE_COPIES_SLACK * (in_ns + out_ns))
		return false;
	*in = (struct tmm_eviction){
		.tensor = t, .evict = TMM_TRACE_NONE, .back = l->first,
		.in_trigger = tmm_in_trigger(an, t, 0, l->first) };
	*out = (struct tmm_eviction){ .tensor = t, .evict = l->last,
				      .back = TMM_TRACE_NONE };
	return over_while_away(an, in) || over_while_away(an, out);
}

int tmm_idle_state(const struct tmm_analysis *an,
		   struct tmm_eviction_set *set)
{
	const struct tmm_trace *tr = an->trace;
	uint64_t end;

	if (!an->offload_idle || tr->n_accesses == 0)
		return 0;
	end = tmm_access_end(an, tr->n_accesses - 1);
	for (uint32_t t = 0; t < tr->n_tensors; t++) {
		struct tmm_eviction in, out;

		if (!worth_moving(an, t, end, &in, &out))
			continue;
		if (tmm_eviction_add(set, in) < 0 ||
		    tmm_eviction_add(set, out) < 0)
			return -ENOMEM;
	}
	return 0;
}

bool tmm_idle_state_any(const struct tmm_analysis *an)
{
	const struct tmm_trace *tr = an->trace;
	struct tmm_eviction in, out;
	uint64_t end;

	if (tr->n_accesses == 0)
		return false;
	end = tmm_access_end(an, tr->n_accesses - 1);
	for (uint32_t t = 0; t < tr->n_tensors; t++)
		if (worth_moving(an, t, end, &in, &out))
			return true;
	return false;
}
