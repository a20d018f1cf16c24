/*
 * test_fault.c — the fault tunable's grammar and counting
 * (lib/base/fault.h): which call of which site fails.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/fault.h"

START_TEST(the_nth_call_fails)
{
	ck_assert_int_eq(tmm_fault_set("a@2;b"), 0);
	ck_assert(!tmm_fault_hit("a"));
	ck_assert(tmm_fault_hit("a"));
	ck_assert(!tmm_fault_hit("a"));
	ck_assert(tmm_fault_hit("b")); /* @1 when left out */
	ck_assert(!tmm_fault_hit("b"));
	ck_assert(!tmm_fault_hit("c")); /* not named */
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(!tmm_fault_hit("b"));
}
END_TEST

START_TEST(plus_fails_every_later_call)
{
	ck_assert_int_eq(tmm_fault_set("x.y@3+"), 0);
	ck_assert(!tmm_fault_hit("x.y"));
	ck_assert(!tmm_fault_hit("x.y"));
	for (int i = 0; i < 5; i++)
		ck_assert(tmm_fault_hit("x.y"));
	/* Setting again counts from zero. */
	ck_assert_int_eq(tmm_fault_set("x.y@3+"), 0);
	ck_assert(!tmm_fault_hit("x.y"));
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
}
END_TEST

START_TEST(bad_lists_are_refused_with_a_reason)
{
	static const char *const bad[] = {
		"a@0", "a@", "a@x", "@1", "a;", "a,b", "a b", ";a",
		"a@1-",
	};
	char why[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(!tmm_fault_valid(bad[i], why, sizeof(why)),
			      "\"%s\" accepted", bad[i]);
		ck_assert_msg(why[0], "\"%s\": no reason", bad[i]);
		ck_assert_int_eq(tmm_fault_set(bad[i]), -EINVAL);
	}
	ck_assert(tmm_fault_valid("", why, sizeof(why)));
	ck_assert(tmm_fault_valid("cudaMalloc@12+;hostmem.get", why,
				  sizeof(why)));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("grammar");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, the_nth_call_fails);
	tcase_add_test(tc, plus_fails_every_later_call);
	tcase_add_test(tc, bad_lists_are_refused_with_a_reason);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
