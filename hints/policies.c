/* SPDX-License-Identifier: MIT */
/*
 * policies.c — the planners that make a plan from the trace alone, by
 * name, and the one way each is run.
 *
 * `auto` is not among them: it runs these (plan_auto.c) and is chosen by
 * the planners' interface (planner.c), so that no planner calls back into
 * the function that chose it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "link_share.h"
#include "read_mostly.h"
#include "uvm_mix.h"
#include "policies.h"

static const struct {
	const char *name;
	tmm_planner_fn *make;
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
	{ "stream", tmm_plan_stream },
};

int tmm_policy_run(tmm_planner_fn *make, const char *policy,
		   const struct tmm_planner_input *in, struct tmm_plan *out,
		   char *err, size_t errlen)
{
	int rc;

	/* A planner initialises *out, but one that fails before it (auto,
	 * out of memory in its analysis) leaves it as it was, often an
	 * uninitialised local of the caller: empty, it frees safely. */
	memset(out, 0, sizeof(*out));
	rc = make(in, out);
	if (rc < 0) {
		tmm_plan_free(out);
		snprintf(err, errlen, "planner '%s': %s", policy,
			 rc == -ENOMEM ? "out of memory"
				       : "could not make a plan");
		return rc;
	}
	/* Every policy's copies keep off a link a collective holds, and
	 * by prefetch its frozen tensors leave with no copy. */
	rc = tmm_link_share_avoid(in, out);
	if (rc == 0)
		rc = tmm_read_mostly_advise(in, out);
	if (rc >= 0) {
		/* Where copies hold the host, the swaps that fit go by
		 * migration beside them: of a plan sorted by trigger. */
		tmm_plan_sort(out);
		rc = tmm_uvm_mix(in, out);
	}
	if (rc < 0) {
		tmm_plan_free(out);
		snprintf(err, errlen, "planner '%s': out of memory", policy);
		return rc;
	}
	return 0;
}

int tmm_policy_make(const char *policy, const struct tmm_planner_input *in,
		    struct tmm_plan *out, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(planners) / sizeof(planners[0]); i++)
		if (strcmp(planners[i].name, policy) == 0)
			return tmm_policy_run(planners[i].make, policy, in, out,
					      err, errlen);
	snprintf(err, errlen, "unknown policy '%s'", policy);
	return -EINVAL;
}
