/* SPDX-License-Identifier: MIT */
/*
 * replan.h — when a plan is out of date (TENSILE §IV-E).
 *
 * A plan is made from the op latencies of one measured iteration; when
 * the latencies change (other work on the GPU, a changing workload) its
 * triggers no longer hide its copies.  After each guided iteration the
 * measured op latencies are folded into an exponentially weighted moving
 * average; when the smoothed sum s' has moved from the sum s the plan was
 * made with by more than a fraction (|s' - s| / s > replan_drift), the
 * planner runs again on the plan's trace with the smoothed latencies.
 *
 * Mechanism only: what the planner does with the new trace is its own
 * business.  No context here, so it is tested on hand-made traces.
 */
#ifndef TMM_REPLAN_H
#define TMM_REPLAN_H

#include <stdbool.h>

#include "lib/io/trace.h"

/*
 * The weight of the newest iteration in the average.  The paper cites
 * EWMA without a factor; 0.3 follows a lasting change within about three
 * iterations (0.7^3 = 0.34 of the old value left) while one noisy
 * iteration moves the average by less than a third of its noise.
 */
#define TMM_REPLAN_EWMA_ALPHA 0.3

struct tmm_replan;

/* A new, empty state into *rp.  Returns 0 or -ENOMEM. */
int tmm_replan_create(struct tmm_replan **rp);
void tmm_replan_destroy(struct tmm_replan *rp);

/*
 * A plan was made from trace t: its op latencies become both the average
 * and the baseline sum s.  Returns 0 or -ENOMEM.
 */
int tmm_replan_reset(struct tmm_replan *rp, const struct tmm_trace *t);

/*
 * A guided iteration that followed the plan ended with trace cur: folds
 * its op latencies into the average.  Returns true when the smoothed sum
 * has drifted from the baseline by more than `drift` (a fraction; 0
 * never drifts).  A trace with another op count starts the average
 * afresh from it and returns false.
 */
bool tmm_replan_observe(struct tmm_replan *rp, const struct tmm_trace *cur,
			double drift);

/* The relative change |s' - s| / s of the last observation. */
double tmm_replan_drift(const struct tmm_replan *rp);

/*
 * A copy of trace base (the one the plan was made from, with the same ops)
 * into *out, retimed with the smoothed latencies: each op lasts its
 * average, the gaps between ops are kept less the ops' stalls
 * (tmm_trace_without_stalls), and every other time (direct
 * accesses, tensor allocation and free) moves with the op it falls in or
 * after.  Returns 0, -EINVAL (another op count), or -ENOMEM.
 */
int tmm_replan_trace(const struct tmm_replan *rp,
		     const struct tmm_trace *base, struct tmm_trace *out);

/*
 * A copy of trace base into *out with its ops' waits for the memory
 * manager taken out: each op keeps its duration and the host's gap
 * before it, less the time it stalled (op->stall_ns), and the other times
 * move with it, as tmm_replan_trace does.  The first plan is made from
 * it, and tmm_replan_trace's copies leave the stalls out the same way.
 * Returns 0 or -ENOMEM.
 */
int tmm_trace_without_stalls(const struct tmm_trace *base,
			     struct tmm_trace *out);

/* A new plan was made from the smoothed latencies: their sum becomes the
 * baseline. */
void tmm_replan_planned(struct tmm_replan *rp);

#endif /* TMM_REPLAN_H */
