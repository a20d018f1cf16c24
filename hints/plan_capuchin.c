/* SPDX-License-Identifier: MIT */
/*
 * plan_capuchin.c — Capuchin's hybrid policy (ASPLOS '20, §4.3–4.5).
 *
 * Algorithm 1: eviction candidates are tensors accessed more than once
 * whose gap between two consecutive accesses lies in the peak period;
 * they are ranked by free time FT.  Swaps are taken from the top while an
 * in-trigger can hide the prefetch entirely; after that each step compares
 * the overhead of the next swap with that of the best recomputation and
 * takes the smaller.  Algorithm 2 chooses recomputations by memory saving
 * per second (MSPS), updating the candidates' recomputation sources and
 * times as each choice changes what is available.
 *
 * Choices where the paper is silent, and ours:
 * - The required saving: the paper takes it from passive mode's evicted
 *   bytes (a scalar).  We have the whole memory curve, so we stop as soon
 *   as the curve under the chosen evictions is within the target at every
 *   access, and we skip a candidate whose gap holds no over-target access
 *   any more (its saving would not lower the peak).
 * - Candidates are (tensor, gap) pairs: a tensor accessed four times may be
 *   evicted in several of its gaps, each ranked by its own FT.
 * - In-trigger: the paper's reverse walk from the back-access (§4.4), then
 *   moved later while bringing the tensor back early would push the curve
 *   over the target ("not within the peak period").
 * - Recomputation time is the producer's measured duration; the sources of
 *   a recomputation are its producer's inputs, replaced by their own
 *   sources when they are themselves chosen for recomputation (lines 7-9
 *   and 18-20 of Algorithm 2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "msps.h"
#include "planners.h"

struct capuchin {
	struct tmm_analysis an;
	struct tmm_cands cs;
	struct tmm_eviction_set chosen;
	struct tmm_fit fit;	/* the curve under `chosen` */
};

/* Takes an eviction into the plan and updates the curve. */
static int take(struct capuchin *cp, struct tmm_eviction e)
{
	int rc = tmm_eviction_add(&cp->chosen, e);

	if (rc == 0)
		tmm_fit_add(&cp->an, &cp->fit, &e);
	return rc;
}

/* The best swap still worth taking, with its in-trigger and overhead;
 * -1 when none is left. */
static int64_t next_swap(struct capuchin *cp, uint32_t *trigger,
			 uint64_t *overhead)
{
	const struct tmm_analysis *an = &cp->an;

	for (uint32_t i = 0; i < cp->cs.n; i++) {
		struct tmm_cand *c = &cp->cs.c[i];
		struct tmm_eviction e = { .tensor = c->tensor,
					  .evict = c->evict,
					  .back = c->back };
		uint32_t gone, returns;
		uint64_t bytes = an->life[c->tensor].bytes;

		if (c->taken || c->no_swap)
			continue;
		e.in_trigger = tmm_in_trigger(an, c->tensor, c->evict,
					      c->back);
		/* Not within the peak: bring it back no earlier than the
		 * curve has room for it, that is after the last access
		 * before the back-access that has none. */
		for (uint32_t k = c->back - 1; k > e.in_trigger; k--)
			if (cp->fit.curve[k] + bytes > an->target) {
				e.in_trigger = k;
				break;
			}
		tmm_eviction_span(an, &e, &gone, &returns);
		if (!tmm_over_target(an, cp->fit.curve, gone, returns)) {
			/* Its copy would not be done in time to help, or
			 * the peak has gone: recomputation may still do. */
			c->no_swap = true;
			continue;
		}
		*trigger = e.in_trigger;
		*overhead = tmm_swap_overhead(an, c->tensor, c->evict,
					      e.in_trigger, c->back);
		return i;
	}
	return -1;
}

/* Algorithm 1's loop. */
static int hybrid(struct capuchin *cp)
{
	while (!tmm_fit_check(&cp->an, &cp->fit, &cp->chosen)) {
		uint32_t trigger = 0;
		uint64_t s_over = 0;
		int64_t s = next_swap(cp, &trigger, &s_over);
		int64_t r = -1;
		int rc;

		if (s < 0 || s_over > 0)
			r = tmm_msps_best(&cp->an, cp->fit.curve, &cp->cs);
		if (s < 0 && r < 0)
			break; /* nothing left: the plan will not fit */
		if (r < 0 || (s >= 0 && (double)s_over <=
						cp->cs.c[r].rp_time +
							cp->cs.c[r].ext_time)) {
			struct tmm_cand *c = &cp->cs.c[s];

			tmm_cands_retire_gap(&cp->cs, c);
			rc = take(cp, (struct tmm_eviction){
					      .tensor = c->tensor,
					      .evict = c->evict,
					      .back = c->back,
					      .in_trigger = trigger });
		} else {
			struct tmm_cand *c = &cp->cs.c[r];

			tmm_cands_retire_gap(&cp->cs, c);
			rc = tmm_msps_choose(&cp->cs, (uint32_t)r);
			if (rc == 0)
				rc = take(cp, (struct tmm_eviction){
						      .tensor = c->tensor,
						      .evict = c->evict,
						      .back = c->back,
						      .drop = true });
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tmm_plan_capuchin(const struct tmm_planner_input *in,
		      struct tmm_plan *out)
{
	struct capuchin cp = { 0 };
	int rc = tmm_plan_init(out, in->trace, "capuchin");

	if (rc == 0)
		rc = tmm_analysis_init(&cp.an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&cp.an, &cp.chosen);
	if (rc == 0)
		rc = tmm_fit_init(&cp.an, &cp.fit, &cp.chosen);
	if (rc < 0)
		goto out;
	rc = tmm_cands_find(&cp.an, cp.fit.curve, &cp.cs);
	if (rc == 0)
		rc = hybrid(&cp);
	if (rc == 0)
		rc = tmm_emit(&cp.an, cp.chosen.ev, cp.chosen.n, out);
out:
	tmm_cands_free(&cp.cs);
	tmm_fit_free(&cp.fit);
	tmm_eviction_set_free(&cp.chosen);
	tmm_analysis_free(&cp.an);
	return rc;
}
