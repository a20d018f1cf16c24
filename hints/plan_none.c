/* SPDX-License-Identifier: MIT */
/*
 * plan_none.c — the two plans that plan nothing ahead, the baselines every
 * policy is measured against.
 *
 * `passive` leaves every shortage to passive mode; `none` adds the
 * liveness frees and nothing else: the runtime keeps every tensor where
 * passive mode leaves it.  The paper planners are in the other plan_*.c.
 */
#include "analysis.h"
#include "idle_state.h"
#include "planners.h"

/* passive: no plan at all, the baseline every policy is measured
 * against: passive mode in swap mode, the driver alone in uvm mode.  The
 * plan still carries the access sequence, for the divergence check. */
int tmm_plan_passive(const struct tmm_planner_input *in,
		     struct tmm_plan *out)
{
	struct tmm_analysis an;
	int rc = tmm_plan_init(out, in->trace, "passive");

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_emit(&an, NULL, 0, out);
	tmm_analysis_free(&an);
	return rc;
}

/* none: liveness only.  The plan still carries the access sequence, so
 * guided iterations are checked for divergence all the same. */
int tmm_plan_none(const struct tmm_planner_input *in, struct tmm_plan *out)
{
	struct tmm_analysis an;
	struct tmm_eviction_set set = { 0 };
	int rc = tmm_plan_init(out, in->trace, "none");

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&an, &set);
	if (rc == 0)
		rc = tmm_idle_state(&an, &set);
	if (rc == 0)
		rc = tmm_emit(&an, set.ev, set.n, out);
	tmm_eviction_set_free(&set);
	tmm_analysis_free(&an);
	return rc;
}
