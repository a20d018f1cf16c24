/* SPDX-License-Identifier: MIT */
/*
 * test_gpu_goals.c — bench_gpu_train's table of issue #19's goals
 * (bench/gpu_goals.c), judged from runs made up here: each goal met and
 * missed at its limit, a failed or missing run giving no figure, auto
 * judged against its peers of the same shape, mode and budget only, a
 * run left out for want of memory (fault injection), and the count of
 * missed goals the table ends with.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "bench/gpu_goals.h"
#include "lib/base/fault.h"

/* What the table printed, for the checks. */
static char printed[16384];
static size_t used;

static void capture(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(printed + used, sizeof(printed) - used, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	ck_assert_uint_lt(used + (size_t)n, sizeof(printed));
	used += (size_t)n;
}

static void add(struct goal_book *b, const char *shape, const char *mode,
		const char *policy, double budget, double ms, double base_ms,
		bool ok)
{
	struct goal_run r = { shape, mode, policy, budget, ms, ms / base_ms,
			      ok };

	ck_assert_int_eq(goal_book_add(b, &r), 0);
}

static unsigned print(const struct goal_book *b)
{
	used = 0;
	printed[0] = 0;
	return goal_book_print(b, "Goals", capture);
}

/* The table's row of `goal`, or NULL. */
static const char *row_of(const char *goal)
{
	char key[256];

	snprintf(key, sizeof(key), "\n| %s |", goal);
	return strstr(printed, key);
}

static unsigned count(const char *text)
{
	unsigned n = 0;

	for (const char *p = strstr(printed, text); p;
	     p = strstr(p + 1, text))
		n++;
	return n;
}

/* Whether that row ends with `met`. */
static bool row_says(const char *goal, const char *met)
{
	const char *r = row_of(goal), *end;
	char tail[32];

	if (!r)
		return false;
	end = strchr(r + 1, '\n');
	snprintf(tail, sizeof(tail), "| %s |", met);
	return end && (size_t)(end - r) > strlen(tail) &&
	       !strncmp(end - strlen(tail), tail, strlen(tail));
}

/*
 * Compute-bound at 40% (unconstrained 50 ms): swap+auto at exactly
 * 1.15x meets its goal, uvm+auto at 1.26x misses 1.25x; uvm+auto is
 * 9.6% over swap+auto (met).  Transfer-bound at 30% (40 ms): swap+auto
 * 1.5x (met), uvm+auto 1.51x (missed), 0.7% over swap (met).
 */
START_TEST(each_named_goal_is_met_at_its_limit_and_missed_past_it)
{
	struct goal_book b = { 0 };
	unsigned missed;

	add(&b, "compute-bound", "swap", "auto", 0.4, 57.5, 50, true);
	add(&b, "compute-bound", "uvm", "auto", 0.4, 63.0, 50, true);
	add(&b, "transfer-bound", "swap", "auto", 0.3, 60.0, 40, true);
	add(&b, "transfer-bound", "uvm", "auto", 0.3, 60.4, 40, true);
	missed = print(&b);
	ck_assert_msg(row_says("compute-bound 40%: swap+auto", "yes"), "%s",
		      printed);
	ck_assert_msg(row_says("compute-bound 40%: uvm+auto", "**no**"), "%s",
		      printed);
	ck_assert(row_says("transfer-bound 30%: swap+auto", "yes"));
	ck_assert(row_says("transfer-bound 30%: uvm+auto", "**no**"));
	ck_assert(row_says("compute-bound 40%: uvm+auto over swap+auto",
			   "yes"));
	ck_assert(row_says("transfer-bound 30%: uvm+auto over swap+auto",
			   "yes"));
	ck_assert(row_says("every run bit-identical to the unconstrained one", "yes"));
	ck_assert(strstr(printed, "1.26x (63.0 ms)"));
	/* No peer ran: auto is not judged against any. */
	ck_assert_ptr_null(strstr(printed, "against the best of"));
	ck_assert_uint_eq(missed, 2);
	ck_assert(strstr(printed, "\n2 goal(s) missed or not measured.\n"));
	goal_book_free(&b);
}
END_TEST

/*
 * auto by the copy way (uvm-copy) meets uvm's limits where auto's own
 * way (uvm) misses them: its row says so below the table, and the
 * missed count is the goals' alone.  A way that failed, or is within
 * the cell's limit but over swap+auto by more than 10%, is not within.
 */
START_TEST(other_ways_are_held_to_uvms_limits_but_not_counted)
{
	struct goal_book b = { 0 };
	unsigned missed;

	add(&b, "compute-bound", "swap", "auto", 0.4, 55.0, 50, true);
	add(&b, "compute-bound", "uvm", "auto", 0.4, 75.0, 50, true);
	add(&b, "compute-bound", "uvm-copy", "auto", 0.4, 53.5, 50, true);
	add(&b, "compute-bound", "uvm-nocupti", "auto", 0.4, 61.0, 50, true);
	missed = print(&b);
	/* uvm+auto 1.5x and 1.36x over swap: two goals missed, no more. */
	ck_assert_uint_eq(missed, 2);
	ck_assert_msg(strstr(printed, "| compute-bound 40% | uvm-copy | "
				      "1.07x (53.5 ms) | 0.97x | yes |"),
		      "%s", printed);
	/* 1.22x is within 1.25x, but 1.11x swap+auto is not within 1.10. */
	ck_assert_msg(strstr(printed, "| compute-bound 40% | uvm-nocupti | "
				      "1.22x (61.0 ms) | 1.11x | **no** |"),
		      "%s", printed);
	ck_assert_ptr_nonnull(strstr(printed, "Not goals:"));
	/* Its failure gives no figure and is not within. */
	add(&b, "compute-bound", "uvm-copy", "auto", 0.4, 53.5, 50, false);
	missed = print(&b);
	ck_assert_msg(strstr(printed, "| compute-bound 40% | uvm-copy | "
				      "failed (row above) | — | **no** |"),
		      "%s", printed);
	/* The failed run counts against bit-identity only. */
	ck_assert_uint_eq(missed, 3);
	goal_book_free(&b);
}
END_TEST

/* Without other ways there is no such table. */
START_TEST(no_other_way_no_table)
{
	struct goal_book b = { 0 };

	add(&b, "compute-bound", "uvm", "auto", 0.4, 55.0, 50, true);
	print(&b);
	ck_assert_ptr_null(strstr(printed, "Not goals:"));
	goal_book_free(&b);
}
END_TEST

/* uvm+auto 10.2% slower than swap+auto misses; a failed uvm run gives no
 * figure for either of its goals, and counts against bit-identity. */
START_TEST(uvm_over_swap_and_a_failed_run)
{
	struct goal_book b = { 0 };

	add(&b, "compute-bound", "swap", "auto", 0.4, 50.0, 50, true);
	add(&b, "compute-bound", "uvm", "auto", 0.4, 55.1, 50, true);
	add(&b, "transfer-bound", "swap", "auto", 0.3, 40.0, 40, true);
	add(&b, "transfer-bound", "uvm", "auto", 0.3, 0, 40, false);
	ck_assert_uint_eq(print(&b), 4);
	ck_assert(row_says("compute-bound 40%: uvm+auto", "yes"));
	ck_assert(row_says("compute-bound 40%: uvm+auto over swap+auto",
			   "**no**"));
	ck_assert(row_says("transfer-bound 30%: uvm+auto", "—"));
	ck_assert(row_says("transfer-bound 30%: uvm+auto over swap+auto",
			   "—"));
	ck_assert(strstr(row_of("transfer-bound 30%: uvm+auto"), "failed"));
	ck_assert(row_says("every run bit-identical to the unconstrained one", "**no**"));
	ck_assert(strstr(printed, "| 3 of 4 |"));
	goal_book_free(&b);
}
END_TEST

/*
 * Auto against the best peer of its own shape, mode and budget: 2.9%
 * behind tensile meets, 3.4% behind misses; a faster peer in another
 * mode, at another budget, or that was not bit-identical does not count;
 * more than four peers are counted rather than named.
 */
START_TEST(auto_is_judged_against_its_own_cells_peers)
{
	struct goal_book b = { 0 };

	add(&b, "compute-bound", "swap", "auto", 0.4, 102.9, 50, true);
	add(&b, "compute-bound", "swap", "tensile", 0.4, 100.0, 50, true);
	add(&b, "compute-bound", "swap", "capuchin", 0.4, 120.0, 50, true);
	add(&b, "compute-bound", "swap", "tsplit", 0.4, 90.0, 50, false);
	add(&b, "compute-bound", "uvm", "tensile", 0.4, 60.0, 50, true);
	add(&b, "compute-bound", "swap", "tensile", 0.3, 60.0, 50, true);
	add(&b, "custom", "uvm", "auto", 0.3, 103.4, 50, true);
	add(&b, "custom", "uvm", "capuchin", 0.3, 100.0, 50, true);
	print(&b);
	ck_assert_msg(row_says("compute-bound 40%, swap: auto against the "
			       "best of tensile, capuchin",
			       "yes"),
		      "%s", printed);
	ck_assert(strstr(printed, "+2.9% (102.9 ms; tensile 100.0 ms)"));
	ck_assert(row_says("custom 30%, uvm: auto against the best of "
			   "capuchin",
			   "**no**"));
	/* Five peers are counted, not named. */
	add(&b, "transfer-bound", "swap", "auto", 0.4, 40.0, 40, true);
	add(&b, "transfer-bound", "swap", "none", 0.4, 41.0, 40, true);
	add(&b, "transfer-bound", "swap", "passive", 0.4, 90.0, 40, true);
	add(&b, "transfer-bound", "swap", "tensile", 0.4, 40.0, 40, true);
	add(&b, "transfer-bound", "swap", "tsplit", 0.4, 39.9, 40, true);
	add(&b, "transfer-bound", "swap", "stream", 0.4, 45.0, 40, true);
	print(&b);
	ck_assert_msg(row_says("transfer-bound 40%, swap: auto against the "
			       "best of the 5 other policies",
			       "yes"),
		      "%s", printed);
	ck_assert(strstr(printed, "+0.3% (40.0 ms; tsplit 39.9 ms)"));
	/* No auto at compute-bound 30%: no row for it. */
	ck_assert_ptr_null(strstr(printed, "| compute-bound 30%"));
	/* The named cell without uvm+auto says so. */
	ck_assert(row_says("compute-bound 40%: uvm+auto", "—"));
	ck_assert(strstr(row_of("compute-bound 40%: uvm+auto"), "not run"));
	/* A custom shape has no named goals. */
	ck_assert_ptr_null(row_of("custom 30%: uvm+auto |"));
	goal_book_free(&b);
}
END_TEST

/* mode=uvm with no pressure: 1.05x meets, 1.06x misses; swap mode or
 * another policy at 200% is not this goal. */
START_TEST(no_pressure_is_uvm_none_above_the_peak)
{
	struct goal_book b = { 0 };

	add(&b, "compute-bound", "uvm", "none", 2.0, 52.5, 50, true);
	add(&b, "transfer-bound", "uvm", "none", 2.0, 42.4, 40, true);
	add(&b, "transfer-bound", "swap", "none", 2.0, 80.0, 40, true);
	add(&b, "transfer-bound", "uvm", "auto", 2.0, 80.0, 40, true);
	print(&b);
	ck_assert_msg(row_says("compute-bound, uvm with no pressure (none, "
			       "200%)",
			       "yes"),
		      "%s", printed);
	ck_assert(row_says("transfer-bound, uvm with no pressure (none, "
			   "200%)",
			   "**no**"));
	ck_assert(strstr(printed, "1.06x (42.4 ms)"));
	/* Only the two runs of uvm+none above the peak. */
	ck_assert_uint_eq(count("with no pressure"), 2);
	goal_book_free(&b);
}
END_TEST

/* Runs whose bytes were not compared (the simulator's phantom memory):
 * no bit-identity goal; a run that failed still gives no figure. */
START_TEST(runs_without_bytes_have_no_identity_goal)
{
	struct goal_book b = { .no_bytes = true };

	add(&b, "compute-bound", "swap", "auto", 0.4, 50.0, 50, true);
	add(&b, "compute-bound", "uvm", "auto", 0.4, 0, 50, false);
	ck_assert_uint_eq(print(&b), 2);
	ck_assert_ptr_null(strstr(printed, "bit-identical"));
	ck_assert(row_says("compute-bound 40%: swap+auto", "yes"));
	ck_assert(row_says("compute-bound 40%: uvm+auto", "—"));
	ck_assert(row_says("compute-bound 40%: uvm+auto over swap+auto",
			   "—"));
	goal_book_free(&b);
}
END_TEST

/* No memory to note a run (the fault site host_alloc): the run is left
 * out and counted, the runs noted before stay, and bit-identity is
 * missed, saying so. */
START_TEST(a_run_not_noted_is_counted)
{
	struct goal_book b = { 0 };
	struct goal_run r = { "compute-bound", "swap", "auto", 0.4, 50, 1,
			      true };

	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(goal_book_add(&b, &r), 0);
	/* The 17th grows the book: its allocation fails. */
	ck_assert_int_eq(tmm_fault_set("host_alloc@1"), 0);
	ck_assert_int_eq(goal_book_add(&b, &r), -ENOMEM);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_uint_eq(b.n, 16);
	ck_assert_uint_eq(b.lost, 1);
	print(&b);
	ck_assert(row_says("compute-bound 40%: swap+auto", "yes"));
	ck_assert(row_says("every run bit-identical to the unconstrained one",
			   "**no**"));
	ck_assert(strstr(printed, "| 16 of 17 (some not noted: no memory) |"));
	goal_book_free(&b);
}
END_TEST

/* No run at all: only the bit-identity goal, missed (nothing ran). */
START_TEST(an_empty_book_measures_nothing)
{
	struct goal_book b = { 0 };

	ck_assert_uint_eq(print(&b), 1);
	ck_assert(row_says("every run bit-identical to the unconstrained one", "**no**"));
	ck_assert(strstr(printed, "| 0 of 0 |"));
	ck_assert_ptr_null(strstr(printed, "| compute-bound"));
	goal_book_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpu_goals");
	TCase *tc = tcase_create("gpu_goals");

	tcase_add_test(tc,
		       each_named_goal_is_met_at_its_limit_and_missed_past_it);
	tcase_add_test(tc, uvm_over_swap_and_a_failed_run);
	tcase_add_test(tc, other_ways_are_held_to_uvms_limits_but_not_counted);
	tcase_add_test(tc, no_other_way_no_table);
	tcase_add_test(tc, auto_is_judged_against_its_own_cells_peers);
	tcase_add_test(tc, no_pressure_is_uvm_none_above_the_peak);
	tcase_add_test(tc, runs_without_bytes_have_no_identity_goal);
	tcase_add_test(tc, a_run_not_noted_is_counted);
	tcase_add_test(tc, an_empty_book_measures_nothing);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
