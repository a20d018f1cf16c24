/* SPDX-License-Identifier: MIT */
/*
 * plan_forecast.h — what a plan will cost, judged the same way for every
 * planner.
 *
 * Each planner predicts its own plan's peak with its own model (margins,
 * what it leaves to liveness), and none predicts time in a common unit.
 * The `auto` policy must compare plans from all of them, so this replays
 * any plan against the trace it was made for with one model: the memory
 * curve of hints/analysis.c under the plan's evictions, and a timeline of
 * the compute engine and the two copy engines (one transfer at a time per
 * direction, as the runtime's copy streams run them), and no shorter than
 * either engine's transfers: iterations repeat, so what one engine cannot
 * move within an iteration delays every next one.  A planner's own
 * `fits` stays its claim; the forecast is the referee.
 */
#ifndef TMM_PLAN_FORECAST_H
#define TMM_PLAN_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"
#include "lib/io/plan.h"

struct tmm_forecast {
	uint64_t peak;	       /* device bytes at the curve's peak */
	uint32_t peak_at;      /* the access where it is */
	uint64_t compute_ns;   /* the ops' own time: the ideal iteration */
	uint64_t stall_ns;     /* compute waiting for copies to land, and
				* the steady state's wait for an engine with
				* more to move than an iteration lasts */
	uint64_t recompute_ns; /* ops run again for dropped tensors */
	uint64_t split_ns;     /* launch overhead of micro-ops (TSPLIT) */
	uint64_t copier_ns;    /* compute slowed by copies that are kernels
				* beside it (an->copy_compute_share) */
	uint64_t passive_ns;   /* estimate: what passive mode pays where the
				* curve is over the budget */
	uint64_t total_ns;     /* the iteration, all of the above */
	bool fits;	       /* peak within the budget */
	/* The least time by which a prefetched tensor landed before its
	 * use: 0 where one was late, UINT64_MAX where none was waited
	 * for.  What the forecast's optimism may cost before it shows. */
	uint64_t least_lead_ns;
};

/*
 * Forecasts plan p, made for an->trace, on an->dev with an->budget.  The
 * plan must be valid for that trace (tmm_plan_validate); actions it cannot
 * pair (a prefetch with no eviction before it in this or the previous
 * iteration) are costed as they stand.  Returns 0 or -ENOMEM.
 */
int tmm_forecast_plan(const struct tmm_analysis *an, const struct tmm_plan *p,
		      struct tmm_forecast *f);

/*
 * The evictions a plan's actions amount to (analysis.h's model), into
 * *ev (from malloc; NULL when *n is 0).  A swap-out is paired with the
 * prefetch for the same back-access; a prefetch with no swap-out in the
 * iteration is one across iterations; a swap-out with no back-access and
 * a prefetch at or after it for the first access is a wrap-around.
 * Returns 0 or -ENOMEM.
 */
int tmm_plan_evictions(const struct tmm_analysis *an,
		       const struct tmm_plan *p, struct tmm_eviction **ev,
		       uint32_t *n);

#endif /* TMM_PLAN_FORECAST_H */
