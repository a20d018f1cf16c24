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
 * - Recomputation happens in the backward pass only (§4.4: on demand, at
 *   a back-access of the backward propagation): a gap whose back-access
 *   is in the forward pass is swapped or left alone.
 * - A recomputation reads its sources on the device, or recomputes them:
 *   never a source swapped out at the time, which would have to be
 *   swapped in for it (§4.3–4.4).  A drop whose sources are out is not
 *   chosen; a swap of a source of a chosen recomputation brings it back
 *   for that recomputation (its in-trigger is set for the earlier of the
 *   two accesses).
 * - What a round learns of the curve (whether a candidate would lower the
 *   peak) holds for that round only: the curve moves, and a full count
 *   (tmm_fit_check) can raise it; choices stay.
 * - One planning margin (tmm_analysis_one_margin): the runtime makes the
 *   holes a plan's allocations need, so no second margin for the largest
 *   tensor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "idle_state.h"
#include "msps.h"
#include "planners.h"
#include "lib/base/xalloc.h"

struct capuchin {
	struct tmm_analysis an;
	struct tmm_cands cs;
	struct tmm_eviction_set chosen;
	struct tmm_fit fit;	/* the curve under `chosen` */
	/* Per tensor, its chosen swaps: a chain through swap_next[] of
	 * indices into chosen.ev (TMM_TRACE_NONE ends it). */
	uint32_t *swap_head, *swap_next;
	uint32_t *recomps, n_recomps; /* candidates chosen to recompute */
};

/* Is tensor t swapped out (not yet brought back) at access `at`? */
static bool swapped_out_at(const struct capuchin *cp, uint32_t t,
			   uint32_t at)
{
	for (uint32_t j = cp->swap_head[t]; j != TMM_TRACE_NONE;
	     j = cp->swap_next[j]) {
		uint32_t gone, returns;

		tmm_eviction_span(&cp->an, &cp->chosen.ev[j], &gone, &returns);
		if (gone <= at && at < returns)
			return true;
	}
	return false;
}

/* Are all of candidate c's sources on the device at access `at`? */
static bool sources_resident(const struct capuchin *cp,
			     const struct tmm_cand *c, uint32_t at)
{
	for (uint32_t k = 0; k < c->n_srcs; k++)
		if (swapped_out_at(cp, c->srcs[k], at))
			return false;
	return true;
}

/*
 * §4.3–4.4: a recomputation reads tensors that are on the device, or
 * that are recomputed themselves; never one swapped out, which would
 * have to be swapped in first.  Candidate i may be recomputed when its
 * sources are resident at its back-access and, as choosing it makes the
 * recomputations that read it read its sources instead (Algorithm 2,
 * lines 6-12), at theirs too.
 */
static bool recompute_ok(void *arg, const struct tmm_cands *cs, uint32_t i)
{
	const struct capuchin *cp = arg;
	const struct tmm_cand *c = &cs->c[i];

	if (!sources_resident(cp, c, cp->an.op_start[c->back]))
		return false;
	for (uint32_t r = 0; r < cp->n_recomps; r++) {
		const struct tmm_cand *rp = &cs->c[cp->recomps[r]];

		for (uint32_t k = 0; k < rp->n_srcs; k++)
			if (rp->srcs[k] == c->tensor &&
			    !sources_resident(cp, c,
					      cp->an.op_start[rp->back]))
				return false;
	}
	return true;
}

/*
 * The access by which a swap of c's tensor must be back: its back-access,
 * or the first back-access of a chosen recomputation that reads it, if
 * that comes earlier in the gap (the recomputation reads it on the
 * device, never swapped in for it).
 */
static uint32_t needed_by(const struct capuchin *cp, const struct tmm_cand *c)
{
	uint32_t by = c->back;

	for (uint32_t r = 0; r < cp->n_recomps; r++) {
		const struct tmm_cand *rp = &cp->cs.c[cp->recomps[r]];

		if (rp->back <= c->evict || rp->back >= by)
			continue;
		for (uint32_t k = 0; k < rp->n_srcs; k++)
			if (rp->srcs[k] == c->tensor) {
				by = rp->back;
				break;
			}
	}
	return by;
}

/* Takes an eviction into the plan and updates the curve. */
static int take(struct capuchin *cp, struct tmm_eviction e)
{
	uint32_t j = cp->chosen.n;
	int rc = tmm_eviction_add(&cp->chosen, e);

	if (rc < 0)
		return rc;
	tmm_fit_add(&cp->an, &cp->fit, &e);
	if (!e.drop) {
		cp->swap_next[j] = cp->swap_head[e.tensor];
		cp->swap_head[e.tensor] = j;
	}
	return 0;
}

/*
 * The best swap worth taking this round, with its in-trigger and
 * overhead; -1 when none is.  Whether a swap lowers the peak is asked
 * afresh each round: the curve moves, and with it the in-trigger.
 */
static int64_t next_swap(struct capuchin *cp, uint32_t *trigger,
			 uint64_t *overhead)
{
	const struct tmm_analysis *an = &cp->an;

	for (uint32_t i = 0; i < cp->cs.n; i++) {
		struct tmm_cand *c = &cp->cs.c[i];
		struct tmm_eviction e = { .tensor = c->tensor,
					  .evict = c->evict,
					  .back = c->back };
		uint32_t gone, returns, by;
		uint64_t bytes = an->life[c->tensor].bytes;

		if (c->taken)
			continue;
		/* Not even the whole gap holds an access over the target:
		 * no in-trigger can make this swap lower the peak. */
		if (!tmm_over_target(an, cp->fit.curve, an->op_end[c->evict],
				     c->back))
			continue;
		by = needed_by(cp, c);
		if (by <= an->op_end[c->evict])
			continue; /* read by a recomputation at once */
		e.in_trigger = tmm_in_trigger(an, c->tensor, c->evict, by);
		/* Not within the peak: bring it back no earlier than the
		 * curve has room for it, that is after the last access
		 * before it is needed that has none, and at the latest
		 * before the op that needs it. */
		for (uint32_t k = tmm_last_in_trigger(an, c->evict, by);
		     k > e.in_trigger; k--)
			if (cp->fit.curve[k] + bytes > an->target) {
				e.in_trigger = k;
				break;
			}
		tmm_eviction_span(an, &e, &gone, &returns);
		/* Its copy would not be done in time to help, or the peak
		 * has gone: recomputation may still do. */
		if (!tmm_over_target(an, cp->fit.curve, gone, returns))
			continue;
		*trigger = e.in_trigger;
		*overhead = tmm_swap_overhead(an, c->tensor, c->evict,
					      e.in_trigger, by);
		return i;
	}
	return -1;
}

/* Algorithm 1's loop. */
static int hybrid(struct capuchin *cp)
{
	for (;;) {
		/* With nothing over the target on the running curve, the
		 * check counts the whole curve again, which can be higher:
		 * a new round for what the candidates learnt of it. */
		bool full = !tmm_fit_over(&cp->an, &cp->fit);
		uint32_t trigger = 0;
		uint64_t s_over = 0;
		int64_t s, r = -1;
		int rc;

		if (tmm_fit_check(&cp->an, &cp->fit, &cp->chosen))
			return 0;
		if (full)
			tmm_cands_new_round(&cp->cs);
		s = next_swap(cp, &trigger, &s_over);
		if (s < 0 || s_over > 0)
			r = tmm_msps_best_if(&cp->an, cp->fit.curve, &cp->cs,
					     recompute_ok, cp);
		if (s < 0 && r < 0)
			return 0; /* nothing left: the plan will not fit */
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
			if (rc == 0) {
				cp->recomps[cp->n_recomps++] = (uint32_t)r;
				rc = take(cp, (struct tmm_eviction){
						      .tensor = c->tensor,
						      .evict = c->evict,
						      .back = c->back,
						      .drop = true });
			}
		}
		if (rc < 0)
			return rc;
	}
}

/* The per-tensor swap chains, with the liveness swap-outs already in
 * `chosen`.  Each gap is chosen once at most (tmm_cands_retire_gap), so
 * `chosen` never holds more than those and two per candidate. */
static int index_swaps(struct capuchin *cp)
{
	uint32_t nt = cp->an.trace->n_tensors;
	uint32_t most = cp->chosen.n + 2 * cp->cs.n + 1;

	cp->swap_head = tmm_malloc(sizeof(uint32_t) * (nt + 1));
	cp->swap_next = tmm_malloc(sizeof(uint32_t) * most);
	cp->recomps = tmm_malloc(sizeof(uint32_t) * (cp->cs.n + 1));
	if (!cp->swap_head || !cp->swap_next || !cp->recomps)
		return -ENOMEM;
	memset(cp->swap_head, 0xff, sizeof(uint32_t) * (nt + 1));
	for (uint32_t j = 0; j < cp->chosen.n; j++) {
		const struct tmm_eviction *e = &cp->chosen.ev[j];

		if (e->drop)
			continue;
		cp->swap_next[j] = cp->swap_head[e->tensor];
		cp->swap_head[e->tensor] = j;
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
	tmm_analysis_one_margin(&cp.an);
	rc = tmm_liveness(&cp.an, &cp.chosen);
	if (rc == 0)
		rc = tmm_idle_state(&cp.an, &cp.chosen);
	if (rc == 0)
		rc = tmm_fit_init(&cp.an, &cp.fit, &cp.chosen);
	if (rc < 0)
		goto out;
	rc = tmm_cands_find(&cp.an, cp.fit.curve, &cp.cs);
	if (rc == 0) {
		tmm_cands_backward_only(&cp.an, &cp.cs);
		rc = index_swaps(&cp);
	}
	if (rc == 0)
		rc = hybrid(&cp);
	if (rc == 0)
		rc = tmm_emit(&cp.an, cp.chosen.ev, cp.chosen.n, out);
out:
	free(cp.swap_head);
	free(cp.swap_next);
	free(cp.recomps);
	tmm_cands_free(&cp.cs);
	tmm_fit_free(&cp.fit);
	tmm_eviction_set_free(&cp.chosen);
	tmm_analysis_free(&cp.an);
	return rc;
}
