/* SPDX-License-Identifier: MIT */
/*
 * test_plan.h — what the two files of the plan suite share (test_plan.c,
 * test_plan_rules.c): making a context.
 */
#ifndef TEST_PLAN_H
#define TEST_PLAN_H

#include <check.h>

#include "tensormm.h"

static inline tmm_ctx *make_ctx(const char *config)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

/* Adds the "rules" case: plans the guide must refuse, and recomputation
 * driven directly (test_plan_rules.c). */
void add_plan_rules_tests(Suite *s);

#endif /* TEST_PLAN_H */
