/* SPDX-License-Identifier: MIT */
/*
 * planner.c — the planners' interface: the policy by name, and the
 * unconstrained peak of an iteration.
 *
 * The named planners are run by policies.c; `auto`, which runs them, is
 * chosen here.
 */
#include <string.h>

#include "analysis.h"
#include "planner.h"
#include "policies.h"

int tmm_planner_make(const char *policy, const struct tmm_planner_input *in,
		     struct tmm_plan *out, char *err, size_t errlen)
{
	if (strcmp(policy, "auto") == 0)
		return tmm_policy_run(tmm_plan_auto, policy, in, out, err,
				      errlen);
	return tmm_policy_make(policy, in, out, err, errlen);
}

int tmm_planner_peak(const struct tmm_planner_input *in, uint64_t *peak)
{
	struct tmm_analysis an;
	int rc = tmm_analysis_init(&an, in);

	if (rc < 0)
		return rc;
	*peak = an.base_peak;
	tmm_analysis_free(&an);
	return 0;
}

bool tmm_planner_uvm_way_copy(const struct tmm_uvm_rates *r,
			      enum tmm_uvm_swap_path asked)
{
	return tmm_uvm_way_copy(r, asked);
}

struct tmm_auto_mode_choice
tmm_planner_auto_mode(const struct tmm_auto_mode_facts *f)
{
	return tmm_auto_mode_choose(f);
}
