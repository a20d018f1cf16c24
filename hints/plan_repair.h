/* SPDX-License-Identifier: MIT */
/*
 * plan_repair.h — scheduling what passive mode had to do under a plan.
 *
 * Ours, beyond the papers.  A plan whose trial (lib/twin/trial.h) still needed
 * passive evictions was made from a model that filled the budget too
 * closely; the trial says exactly which tensors had to leave and for
 * which op.  Each such eviction, done by passive mode, is a synchronous
 * swap-out at the moment of need and an on-demand swap-in that the
 * program waits for.  Scheduled instead — swapped out after the tensor's
 * previous access, prefetched a swap time before its next (Capuchin §4.4's
 * in-trigger), but not before the op that needed the room has run — the
 * same bytes move while compute runs.  Repairing a plan adds those
 * actions; whether the result is better is for a trial to say.
 */
#ifndef TMM_PLAN_REPAIR_H
#define TMM_PLAN_REPAIR_H

#include "analysis.h"
#include "planner_input.h"

/*
 * Copies plan p (made for an->trace) into *out with a scheduled swap for
 * each of the trial's passive evictions ev[0..n) that can be scheduled,
 * or with the plan's own prefetch of it delayed past the op that needed
 * the room (plan_repair.c says which).  *added receives how many actions
 * were added or delayed: 0 means the repair changed nothing.  The copy
 * keeps p's predicted peak and its claim to fit.
 * Returns 0 or -ENOMEM.
 */
int tmm_plan_repair(const struct tmm_analysis *an, const struct tmm_plan *p,
		    const struct tmm_trial_eviction *ev, uint32_t n,
		    struct tmm_plan *out, uint32_t *added);

#endif /* TMM_PLAN_REPAIR_H */
