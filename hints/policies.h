/* SPDX-License-Identifier: MIT */
/*
 * policies.h — the planners by policy name, and the one way each is run.
 */
#ifndef TMM_POLICIES_H
#define TMM_POLICIES_H

#include <stddef.h>

#include "planners.h"

/*
 * Runs planner `make` for policy `policy`, and sorts its plan.  Returns 0,
 * or its error with a message in err (out is freed then).
 */
int tmm_policy_run(tmm_planner_fn *make, const char *policy,
		   const struct tmm_planner_input *in, struct tmm_plan *out,
		   char *err, size_t errlen);

/*
 * tmm_planner_make for every policy but `auto` (which runs these):
 * returns 0, -EINVAL for an unknown policy (message in err), or -ENOMEM.
 */
int tmm_policy_make(const char *policy, const struct tmm_planner_input *in,
		    struct tmm_plan *out, char *err, size_t errlen);

#endif /* TMM_POLICIES_H */
