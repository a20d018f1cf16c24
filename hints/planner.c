/*
 * planner.c — the planners by name.
 *
 * `none` plans nothing ahead: the runtime keeps every tensor where passive
 * mode leaves it.  The paper planners are in plan_*.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "planner.h"
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
		rc = tmm_emit(&an, set.ev, set.n, out);
	tmm_eviction_set_free(&set);
	tmm_analysis_free(&an);
	return rc;
}

static const struct {
	const char *name;
	int (*make)(const struct tmm_planner_input *in, struct tmm_plan *out);
} planners[] = {
	{ "passive", tmm_plan_passive },
	{ "none", tmm_plan_none },
	{ "vdnn-conv", tmm_plan_vdnn_conv },
	{ "vdnn-all", tmm_plan_vdnn_all },
	{ "checkpoint", tmm_plan_checkpoint },
	{ "superneurons", tmm_plan_superneurons },
	{ "capuchin", tmm_plan_capuchin },
	{ "tensile", tmm_plan_tensile },
	{ "tsplit", tmm_plan_tsplit },
	{ "auto", tmm_plan_auto },
};

int tmm_planner_make(const char *policy, const struct tmm_planner_input *in,
		     struct tmm_plan *out, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(planners) / sizeof(planners[0]); i++) {
		int rc;

		if (strcmp(planners[i].name, policy) != 0)
			continue;
		rc = planners[i].make(in, out);
		if (rc < 0) {
			tmm_plan_free(out);
			snprintf(err, errlen, "planner '%s': %s", policy,
				 rc == -ENOMEM ? "out of memory"
					       : "could not make a plan");
			return rc;
		}
		tmm_plan_sort(out);
		return 0;
	}
	snprintf(err, errlen, "unknown policy '%s'", policy);
	return -EINVAL;
}
