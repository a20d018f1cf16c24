/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c — the fault tunable's grammar and counting
 * (lib/base/fault.h): which call of which site fails, the armed flag that
 * keeps the failure points free while none is set, and the host_alloc
 * site of the library's allocations (lib/base/xalloc.h).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "lib/base/fault.h"
#include "lib/base/xalloc.h"

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

START_TEST(calls_are_counted_per_named_site)
{
	ck_assert_int_eq(tmm_fault_set("a@100;b"), 0);
	for (int i = 0; i < 7; i++)
		(void)tmm_fault_hit("a");
	(void)tmm_fault_hit("c");
	ck_assert_uint_eq(tmm_fault_calls("a"), 7);
	ck_assert_uint_eq(tmm_fault_calls("b"), 0);
	ck_assert_uint_eq(tmm_fault_calls("c"), 0); /* not named: not counted */
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_uint_eq(tmm_fault_calls("a"), 0);
}
END_TEST

/* The armed flag is what keeps the failure points free in a real run:
 * it must be up exactly while a list is set. */
START_TEST(armed_only_while_a_list_is_set)
{
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(!tmm_fault_armed());
	ck_assert_int_eq(tmm_fault_set("a@3"), 0);
	ck_assert(tmm_fault_armed());
	ck_assert_int_eq(tmm_fault_set("a@"), -EINVAL); /* nothing changes */
	ck_assert(tmm_fault_armed());
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	ck_assert(!tmm_fault_armed());
}
END_TEST

/* host_alloc: the N-th host allocation of any kind fails, as the C
 * library's would (NULL, errno ENOMEM, a realloc'd block kept). */
START_TEST(host_alloc_fails_the_nth_allocation)
{
	char *a, *b, *c, *grown;

	ck_assert_int_eq(tmm_fault_set("host_alloc@3"), 0);
	a = tmm_malloc(16);
	b = tmm_strdup("kept");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	errno = 0;
	grown = tmm_realloc(b, 4096);
	ck_assert_ptr_null(grown);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_str_eq(b, "kept");
	c = tmm_calloc(4, 4);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(tmm_fault_calls("host_alloc"), 4);
	ck_assert_int_eq(tmm_fault_set("host_alloc@2+"), 0);
	free(tmm_aligned_alloc(64, 64));
	ck_assert_ptr_null(tmm_strndup("abc", 2));
	ck_assert_ptr_null(tmm_malloc(1));
	ck_assert_int_eq(tmm_fault_set(""), 0);
	free(a);
	free(b);
	free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("grammar");

	tcase_add_test(tc, the_nth_call_fails);
	tcase_add_test(tc, plus_fails_every_later_call);
	tcase_add_test(tc, bad_lists_are_refused_with_a_reason);
	tcase_add_test(tc, calls_are_counted_per_named_site);
	tcase_add_test(tc, armed_only_while_a_list_is_set);
	tcase_add_test(tc, host_alloc_fails_the_nth_allocation);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
