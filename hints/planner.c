/*
 * planner.c — the planners by name.
 *
 * `none` plans nothing ahead: the runtime keeps every tensor where passive
 * mode leaves it.  The paper planners (issue #4) register here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "planner.h"

/* none: an empty plan that still carries the access sequence, so guided
 * iterations are checked for divergence all the same. */
static int plan_none(const struct tmm_planner_input *in, struct tmm_plan *out)
{
	return tmm_plan_init(out, in->trace, "none");
}

static const struct {
	const char *name;
	int (*make)(const struct tmm_planner_input *in, struct tmm_plan *out);
} planners[] = {
	{ "none", plan_none },
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
