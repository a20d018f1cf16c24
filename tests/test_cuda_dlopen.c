/*
 * test_cuda_dlopen.c — CUPTI, which libtensormm loads where first used
 * rather than links (lib/base/dynlib.h, the dl_path tunable), on the
 * CUDA test double and its stand-in library (tests/cudafake/stand_in.h):
 *  - loaded from dl_path's directory, it times ops;
 *  - missing (dl_path names an empty directory), or failed at its
 *    dlopen or a dlsym by the fault tunable, op times fall back to
 *    cudaEvents, and the context says why at log=info: the library's
 *    file name, the dynamic linker's reason and what to do;
 *  - the outcome is the process's: a later context that could find it
 *    gets the same answer.
 * Each test runs in a process of its own (Check's fork), so that each
 * is the process's first load.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "scratch_dir.h"
#include "tensormm.h"

/* A context on the double, with `extra` keys; asserts it is made. */
static tmm_ctx *make_ctx(const char *extra)
{
	char cfg[1024];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=64MiB,"
		 "stats_shm=off,%s", extra);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s: %s", cfg,
		      tmm_last_error(NULL));
	return ctx;
}

#define expect_in(text, part)                                              \
	ck_assert_msg(strstr(text, part), "\"%s\" is not in: %s", part, text)

#ifdef TMM_HAVE_CUPTI

static void records(void)
{
	cudafake_cupti_mode(CUDAFAKE_CUPTI_RECORDS);
}

START_TEST(cupti_is_loaded_from_dl_path)
{
	tmm_ctx *ctx = make_ctx("cupti=on,dl_path=" STAND_IN_DIR);

	ck_assert_msg(strcmp(ctx->be.info.timing, "cupti") == 0, "%s",
		      ctx->be.info.timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Creates a context with `extra` keys and log=info, its stderr in a
 * file; returns that file's text (static), and the timing in timing.
 */
static const char *create_and_log(const char *extra, char *timing,
				  size_t len)
{
	static char text[4096];
	char dir[256], path[300], cfg[600];
	tmm_ctx *ctx;
	FILE *f;
	size_t n;
	int saved;

	scratch_dir_make(dir, sizeof(dir), "dlopen-log");
	snprintf(path, sizeof(path), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert_ptr_nonnull(freopen(path, "w", stderr));
	snprintf(cfg, sizeof(cfg), "log=info,%s", extra);
	ctx = make_ctx(cfg);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	snprintf(timing, len, "%s", ctx->be.info.timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	scratch_dir_remove(dir);
	return text;
}

START_TEST(missing_cupti_falls_back_to_events_and_says_why)
{
	char empty[256], extra[400], timing[600], line[700];
	const char *log;
	tmm_ctx *ctx;

	scratch_dir_make(empty, sizeof(empty), "dlopen-empty");
	snprintf(extra, sizeof(extra), "cupti=on,dl_path=%s", empty);
	log = create_and_log(extra, timing, sizeof(timing));
	printf("without CUPTI, op timing by %s\n", timing);
	expect_in(timing, "events (CUPTI could not be loaded: ");
	expect_in(timing, TMM_CUPTI_SONAME ": cannot open shared object");
	expect_in(timing, empty);
	expect_in(timing, "cupti=off");
	/* Said once, at info level, when the context is made. */
	snprintf(line, sizeof(line), "tensormm[info]: op times measured by "
		 "%s\n", timing);
	expect_in(log, line);
	ck_assert_ptr_null(strstr(strstr(log, line) + strlen(line),
				  "CUPTI could not"));

	/* Missing for the process: where it is now is not looked at. */
	ctx = make_ctx("cupti=on,dl_path=" STAND_IN_DIR);
	ck_assert_str_eq(ctx->be.info.timing, timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	scratch_dir_remove(empty);
}
END_TEST

START_TEST(a_failed_dlopen_falls_back_to_events)
{
	tmm_ctx *ctx = make_ctx("cupti=on,fault=dlopen");

	expect_in(ctx->be.info.timing, "events (CUPTI could not be loaded: "
		  "injected failure (fault site dlopen)");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_missing_entry_point_falls_back_to_events)
{
	/* The third of TMM_CUPTI_CALLS. */
	tmm_ctx *ctx = make_ctx("cupti=on,fault=dlsym@3");

	expect_in(ctx->be.info.timing, "events (CUPTI could not be loaded: "
		  "it has no cuptiGetDeviceId");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST


#endif /* TMM_HAVE_CUPTI */

/* Whatever the build: no CUPTI is looked for where it is not wanted. */
START_TEST(cupti_off_does_not_load_it)
{
	tmm_ctx *ctx = make_ctx("cupti=off,fault=dlopen@1000");

	ck_assert_str_eq(ctx->be.info.timing, "events");
	ck_assert_uint_eq(tmm_fault_calls("dlopen"), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *dlopen_suite(void)
{
	Suite *s = suite_create("cuda_dlopen");
	TCase *tc = tcase_create("cupti");

#ifdef TMM_HAVE_CUPTI
	tcase_add_checked_fixture(tc, records, NULL);
	tcase_add_test(tc, cupti_is_loaded_from_dl_path);
	tcase_add_test(tc, missing_cupti_falls_back_to_events_and_says_why);
	tcase_add_test(tc, a_failed_dlopen_falls_back_to_events);
	tcase_add_test(tc, a_missing_entry_point_falls_back_to_events);
#endif
	tcase_add_test(tc, cupti_off_does_not_load_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dlopen_suite());
	int failed;

	/* A process per test, even where CK_FORK=no asks otherwise: the
	 * loaded or missing library is the process's. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
