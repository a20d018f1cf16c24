/* SPDX-License-Identifier: MIT */
/*
 * msps.h — eviction candidates and recomputation by memory saving per
 * second (Capuchin §4.4, Algorithm 2), shared by the planners that end
 * with MSPS recomputation (capuchin, tensile).
 *
 * A candidate is one gap of one tensor: out of device memory between two
 * consecutive accesses.  Each keeps what a swap planner ranks it by (free
 * time) and what MSPS needs: the tensors its recomputation reads, its own
 * recomputation time and the extra time its choice adds to the
 * recomputations already chosen.  Choosing a candidate updates the
 * others' sources and times, as Algorithm 2's lines 5-34 do.
 */
#ifndef TMM_MSPS_H
#define TMM_MSPS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"

struct tmm_cand {
	uint32_t tensor, evict, back;
	int64_t ft;		/* free time of a swap in this gap */
	bool taken;		/* chosen, or its gap taken by another choice:
				 * for good */
	/* Recomputation, when recomputable: */
	bool recomputable;
	uint32_t op;		/* its producer */
	uint32_t *srcs, n_srcs, cap_srcs; /* tensors it is recomputed from */
	double rp_time, ext_time;
	bool is_recomp;		/* chosen for recomputation */
	uint32_t over_at;	/* the first access of the gap found over the
				 * target, `back` when none was (0: not looked
				 * for yet).  The accesses before it were not
				 * over; while the curve only comes down that
				 * stays true, so the next look starts there.
				 * tmm_cands_new_round forgets it. */
};

struct tmm_cands {
	struct tmm_cand *c;
	uint32_t n;
};

/* Does any access of [from, to) hold more than the target in curve? */
bool tmm_over_target(const struct tmm_analysis *an, const uint64_t *curve,
		     uint32_t from, uint32_t to);

/*
 * Fills cs with the gaps between consecutive accesses of every tensor
 * (two accesses by one op are one use) that hold an access over the target
 * in curve, with their free time and recomputation sources (Algorithm 2,
 * line 1: InitMSPS), sorted by free time, largest first.  Returns 0 or
 * -ENOMEM.
 */
int tmm_cands_find(const struct tmm_analysis *an, const uint64_t *curve,
		   struct tmm_cands *cs);
void tmm_cands_free(struct tmm_cands *cs);

/*
 * Capuchin recomputes in the backward pass only (§4.4: the recomputation
 * serves a back-access of the backward propagation, from tensors the
 * forward pass left): candidates whose back-access is in the forward pass
 * are no longer recomputable.  A trace that flags no op TMM_OP_BACKWARD
 * (a program that does not say) is left as it is.
 */
void tmm_cands_backward_only(const struct tmm_analysis *an,
			     struct tmm_cands *cs);

/*
 * A new round: the curve may have gone up since the candidates last
 * looked at it (a full tmm_curve counts what tmm_fit_add leaves out), so
 * what they learnt of it (over_at) is forgotten.  Their choices (taken,
 * is_recomp) stay.
 */
void tmm_cands_new_round(struct tmm_cands *cs);

/* Memory saving per second of recomputing candidate c. */
double tmm_msps(const struct tmm_analysis *an, const struct tmm_cand *c);

/*
 * The index of the recomputable candidate of largest MSPS whose gap still
 * holds an access over the target in curve, or -1 when none is left.  A
 * candidate that would not lower the peak is passed over, not retired:
 * after tmm_cands_new_round it is looked at again.
 */
int64_t tmm_msps_best(const struct tmm_analysis *an, const uint64_t *curve,
		      struct tmm_cands *cs);

/* The same, among the candidates for which ok(arg, cs, i) holds too (asked
 * only of a candidate that would be the best so far). */
int64_t tmm_msps_best_if(const struct tmm_analysis *an,
			 const uint64_t *curve, struct tmm_cands *cs,
			 bool (*ok)(void *arg, const struct tmm_cands *cs,
				    uint32_t i),
			 void *arg);

/*
 * Algorithm 2, lines 5-34: candidate i is chosen for recomputation; the
 * sources and times of the others are updated.  Does not touch the plan:
 * the caller adds the drop.  Returns 0 or -ENOMEM.
 */
int tmm_msps_choose(struct tmm_cands *cs, uint32_t i);

/* Once a gap of a tensor is taken, its other candidates for that gap
 * go. */
void tmm_cands_retire_gap(struct tmm_cands *cs, const struct tmm_cand *c);

#endif /* TMM_MSPS_H */
