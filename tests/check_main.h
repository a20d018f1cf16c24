/* SPDX-License-Identifier: MIT */
/*
 * check_main.h — the end of every Check test program's main(), written
 * once: run the suite, free the runner, turn the count of failed tests
 * into the exit status automake reads.  Each program used to spell these
 * lines out again (with small differences), and every new test copied
 * them.  A program whose main() only runs its suite ends with
 * `return check_main(its_suite);`; one that builds the suite in main(),
 * sets the runner's fork status, or frees what its tests shared after the
 * run makes the runner itself and hands it to check_run_all().  GPU tests,
 * which skip without a device and run in-process, use cuda_main.h.
 */
#ifndef CHECK_MAIN_H
#define CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

/*
 * Runs every test of sr's suite, frees sr, and returns main()'s status:
 * EXIT_FAILURE when a test failed or erred, else EXIT_SUCCESS.  Whether
 * each test has a process of its own is sr's fork status: Check's
 * default (the CK_FORK environment variable, forking unless it says
 * "no") unless the caller set it on sr first.
 */
static inline int check_run_all(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* main() of a test program whose suite make() builds: its exit status. */
static inline int check_main(Suite *(*make)(void))
{
	return check_run_all(srunner_create(make()));
}

#endif /* CHECK_MAIN_H */
