/* SPDX-License-Identifier: MIT */
/*
 * plan_syntax.c — the names of the advices in a plan file (plan_syntax.h),
 * held to the plan vocabulary of plan.h by the asserts below.
 */
#include "plan.h"
#include "plan_syntax.h"

/* Adding an action type or an advice changes what a file may contain, so
 * it needs a name below, a new format version and docs/plan-format.md. */
_Static_assert(TMM_ACT_TYPE_COUNT == 5, "plan format 1 has 4 action types, "
	       "format 2 adds SPLIT");
_Static_assert(TMM_PLAN_ADVICE_COUNT == 6, "plan format 1 has 6 advices");

const char *const tmm_plan_advice_names[TMM_PLAN_ADVICE_COUNT] = {
	[TMM_PLAN_ADVICE_PREFER_HOST] = "PREFER_HOST",
	[TMM_PLAN_ADVICE_PREFER_DEVICE] = "PREFER_DEVICE",
	[TMM_PLAN_ADVICE_UNSET_PREFERRED] = "UNSET_PREFERRED",
	[TMM_PLAN_ADVICE_READ_MOSTLY] = "READ_MOSTLY",
	[TMM_PLAN_ADVICE_UNSET_READ_MOSTLY] = "UNSET_READ_MOSTLY",
	[TMM_PLAN_ADVICE_ACCESSED_BY_DEVICE] = "ACCESSED_BY_DEVICE",
};
