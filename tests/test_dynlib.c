/* SPDX-License-Identifier: MIT */
/*
 * test_dynlib.c — libraries loaded on first use (lib/base/dynlib.h), on
 * the C library's libm, which every machine has:
 *  - a library is found by the first of its names that loads, on the
 *    dynamic linker's path or only in the directories named, and its
 *    table is filled with entry points that work;
 *  - a missing library, entry point, or an unusable version fails with
 *    -ENOSYS and a message naming the library, the names and places
 *    tried, the dynamic linker's reason and what to do;
 *  - the outcome is kept: no second dlopen, even from threads racing to
 *    the first load;
 *  - the fault sites dlopen and dlsym fail it as a missing one would.
 * Each test has its own struct tmm_dynlib, so each is a first load.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/base/dynlib.h"
#include "lib/base/fault.h"
#include "scratch_dir.h"

struct m_table {
	TMM_DYNLIB_FIELD(cos)
	TMM_DYNLIB_FIELD(sqrt)
};

static const struct tmm_dynlib_entry m_entries[] = {
	TMM_DYNLIB_ENTRY(struct m_table, cos)
	TMM_DYNLIB_ENTRY(struct m_table, sqrt)
};

#define ADVICE "install it, or so"

/* Where this process's libm is: its directory and its file name. */
static char m_dir[PATH_MAX], m_name[256];

static void find_libm(void)
{
	double (*volatile f)(double) = cos;
	Dl_info info;
	const char *slash;

	ck_assert(dladdr((void *)f, &info) && info.dli_fname);
	slash = strrchr(info.dli_fname, '/');
	ck_assert_ptr_nonnull(slash);
	snprintf(m_dir, sizeof(m_dir), "%.*s",
		 (int)(slash - info.dli_fname), info.dli_fname);
	snprintf(m_name, sizeof(m_name), "%s", slash + 1);
}

/* A struct tmm_dynlib over libm with these names and entries. */
static struct tmm_dynlib make_lib(const char *const *files,
				  const struct tmm_dynlib_entry *e, size_t n,
				  struct m_table *table)
{
	return (struct tmm_dynlib){
		.what = "TestLib", .files = files, .entries = e,
		.n_entries = n, .table = table, .advice = ADVICE,
		TMM_DYNLIB_UNLOADED,
	};
}

static void expect_in(const char *text, const char *part)
{
	ck_assert_msg(strstr(text, part), "\"%s\" is not in: %s", part, text);
}

START_TEST(the_first_name_that_loads_is_used)
{
	const char *files[] = { "libtmm-no-such.so.1", m_name, NULL };
	struct m_table t = { 0 };
	struct tmm_dynlib lib = make_lib(files, m_entries, 2, &t);
	char err[TMM_DYNLIB_WHY] = "";

	find_libm();
	ck_assert_msg(tmm_dynlib_load(&lib, NULL, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_double_eq(t.cos(0.0), 1.0);
	ck_assert_double_eq(t.sqrt(16.0), 4.0);
	/* "" searches as NULL does; loaded, it answers at once. */
	ck_assert_int_eq(tmm_dynlib_load(&lib, "", err, sizeof(err)), 0);
}
END_TEST

START_TEST(a_missing_library_says_what_was_tried_and_what_to_do)
{
	const char *files[] = { "libtmm-no-such.so.1", "libtmm-no-such.so",
				NULL };
	struct m_table t = { 0 };
	struct tmm_dynlib lib = make_lib(files, m_entries, 2, &t);
	char err[TMM_DYNLIB_WHY], again[TMM_DYNLIB_WHY];

	ck_assert_int_eq(tmm_dynlib_load(&lib, NULL, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, "TestLib could not be loaded: ");
	/* dlerror's reason, for the name wanted most. */
	expect_in(err, "libtmm-no-such.so.1: cannot open shared object");
	expect_in(err, "tried libtmm-no-such.so.1, libtmm-no-such.so on the "
		       "dynamic linker's search path");
	expect_in(err, ADVICE);
	ck_assert_ptr_null(t.cos);
	/* Kept: the same answer, without a second try. */
	ck_assert_int_eq(tmm_fault_set("dlopen@100"), 0);
	ck_assert_int_eq(tmm_dynlib_load(&lib, NULL, again, sizeof(again)),
			 -ENOSYS);
	ck_assert_str_eq(again, err);
	ck_assert_uint_eq(tmm_fault_calls("dlopen"), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

START_TEST(named_directories_are_the_only_ones_searched)
{
	const char *files[] = { NULL, NULL };
	struct m_table t1 = { 0 }, t2 = { 0 };
	struct tmm_dynlib lib1, lib2;
	char empty[256], full[256], target[PATH_MAX + 256], dirs[600];
	char err[TMM_DYNLIB_WHY];

	find_libm();
	files[0] = m_name;
	scratch_dir_make(empty, sizeof(empty), "dynlib-empty");
	scratch_dir_make(full, sizeof(full), "dynlib-full");
	/* full/ holds libm under its own name, as a link. */
	snprintf(target, sizeof(target), "%s/%s", m_dir, m_name);
	snprintf(dirs, sizeof(dirs), "%s/%s", full, m_name);
	ck_assert_int_eq(symlink(target, dirs), 0);

	/* libm is on the linker's path, but not in the directory named. */
	lib1 = make_lib(files, m_entries, 2, &t1);
	ck_assert_int_eq(tmm_dynlib_load(&lib1, empty, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, empty);
	expect_in(err, "in dl_path's ");

	/* Empty components are skipped; each directory is tried. */
	snprintf(dirs, sizeof(dirs), ":%s::%s:", empty, full);
	lib2 = make_lib(files, m_entries, 2, &t2);
	ck_assert_msg(tmm_dynlib_load(&lib2, dirs, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_double_eq(t2.sqrt(9.0), 3.0);

	scratch_dir_remove(empty);
	scratch_dir_remove(full);
}
END_TEST

START_TEST(a_missing_entry_point_is_named)
{
	static const struct tmm_dynlib_entry entries[] = {
		{ "cos", offsetof(struct m_table, cos) },
		{ "tmm_no_such_function", offsetof(struct m_table, sqrt) },
	};
	const char *files[] = { NULL, NULL };
	struct m_table t = { 0 };
	struct tmm_dynlib lib;
	char err[TMM_DYNLIB_WHY];

	find_libm();
	files[0] = m_name;
	lib = make_lib(files, entries, 2, &t);
	ck_assert_int_eq(tmm_dynlib_load(&lib, NULL, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, "TestLib could not be loaded: it has no "
		       "tmm_no_such_function (");
	expect_in(err, "not a version this library can use");
	expect_in(err, ADVICE);
}
END_TEST

static bool never_usable(const void *table, char *why, size_t whylen)
{
	const struct m_table *t = table;

	/* The table is filled when the check runs. */
	snprintf(why, whylen, "version %g is too old", t->sqrt(4.0));
	return false;
}

START_TEST(an_unusable_version_is_refused_with_its_reason)
{
	const char *files[] = { NULL, NULL };
	struct m_table t = { 0 };
	struct tmm_dynlib lib;
	char err[TMM_DYNLIB_WHY];

	find_libm();
	files[0] = m_name;
	lib = make_lib(files, m_entries, 2, &t);
	lib.usable = never_usable;
	ck_assert_int_eq(tmm_dynlib_load(&lib, NULL, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, "TestLib could not be used: version 2 is too old");
	expect_in(err, ADVICE);
}
END_TEST

START_TEST(the_fault_sites_fail_loading)
{
	const char *files[] = { NULL, NULL };
	struct m_table t1 = { 0 }, t2 = { 0 };
	struct tmm_dynlib lib1, lib2;
	char err[TMM_DYNLIB_WHY];

	find_libm();
	files[0] = m_name;
	lib1 = make_lib(files, m_entries, 2, &t1);
	ck_assert_int_eq(tmm_fault_set("dlopen"), 0);
	ck_assert_int_eq(tmm_dynlib_load(&lib1, NULL, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, "TestLib could not be loaded: injected failure "
		       "(fault site dlopen)");
	expect_in(err, ADVICE);

	/* dlsym counts each entry point: the second one fails. */
	lib2 = make_lib(files, m_entries, 2, &t2);
	ck_assert_int_eq(tmm_fault_set("dlsym@2"), 0);
	ck_assert_int_eq(tmm_dynlib_load(&lib2, NULL, err, sizeof(err)),
			 -ENOSYS);
	expect_in(err, "it has no sqrt (injected failure (fault site dlsym))");
	ck_assert_uint_eq(tmm_fault_calls("dlsym"), 2);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

#define RACERS 8

static void *race(void *arg)
{
	struct tmm_dynlib *lib = arg;
	char err[TMM_DYNLIB_WHY];

	return (void *)(intptr_t)tmm_dynlib_load(lib, NULL, err, sizeof(err));
}

START_TEST(threads_racing_to_the_first_load_load_once)
{
	const char *files[] = { NULL, NULL };
	struct m_table t = { 0 };
	struct tmm_dynlib lib;
	pthread_t th[RACERS];

	find_libm();
	files[0] = m_name;
	lib = make_lib(files, m_entries, 2, &t);
	/* A site named far past the run counts the calls and fails none. */
	ck_assert_int_eq(tmm_fault_set("dlopen@1000"), 0);
	for (int i = 0; i < RACERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race, &lib), 0);
	for (int i = 0; i < RACERS; i++) {
		void *rc;

		ck_assert_int_eq(pthread_join(th[i], &rc), 0);
		ck_assert_int_eq((int)(intptr_t)rc, 0);
	}
	ck_assert_uint_eq(tmm_fault_calls("dlopen"), 1);
	ck_assert_double_eq(t.cos(0.0), 1.0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

static Suite *dynlib_suite(void)
{
	Suite *s = suite_create("dynlib");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, the_first_name_that_loads_is_used);
	tcase_add_test(tc,
		       a_missing_library_says_what_was_tried_and_what_to_do);
	tcase_add_test(tc, named_directories_are_the_only_ones_searched);
	tcase_add_test(tc, a_missing_entry_point_is_named);
	tcase_add_test(tc, an_unusable_version_is_refused_with_its_reason);
	tcase_add_test(tc, the_fault_sites_fail_loading);
	tcase_add_test(tc, threads_racing_to_the_first_load_load_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(dynlib_suite);
}
