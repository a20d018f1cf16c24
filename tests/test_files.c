/*
 * test_files.c — the files a context reads and writes, seen from the API
 * (tensormm(7), RELIABILITY, Files): the plan file (hints), its size
 * limit, and running out of memory while it is loaded; the trace file
 * (trace) and what may stand at its path.
 *
 * Each test makes its own directory and its own contexts, and reads what
 * the library said on stderr, since a file the run cannot use is a
 * warning there, not a failed context.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/api/lifecycle.h"
#include "lib/io/plan.h"
#include "lib/io/plan_file.h"
#include "tensormm.h"

#define HAS(msg, part)                                                     \
	ck_assert_msg(strstr((msg), (part)), "\"%s\" lacks \"%s\"", (msg), \
		      (part))

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static void make_dir(char *dir, size_t len)
{
	const char *base = getenv("TMPDIR");

	snprintf(dir, len, "%s/tmm-files-XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Removes dir and the files in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(path), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}

/* stderr goes to a file between capture_begin and capture_end, which
 * returns what was written (from malloc). */
static int saved_stderr = -1;
static FILE *captured;

static void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	ck_assert_ptr_nonnull(captured);
	saved_stderr = dup(2);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_ge(dup2(fileno(captured), 2), 0);
}

static char *capture_end(void)
{
	char *text = calloc(1, 1 << 16);
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	ck_assert_ptr_nonnull(text);
	rewind(captured);
	n = fread(text, 1, (1 << 16) - 1, captured);
	text[n] = '\0';
	fclose(captured);
	return text;
}

/* An empty plan file at path: as small as a valid plan file gets. */
static void write_plan(const char *path)
{
	struct tmm_plan p;
	char err[512];

	memset(&p, 0, sizeof(p));
	ck_assert_msg(tmm_plan_file_write(path, &p, 1, 64ull << 20, err,
					  sizeof(err)) == 0, "%s", err);
}

/* ------------------------------------------------------------------------
 * The plan file
 * ---------------------------------------------------------------------- */

/* A plan file over hints_max is not read: the context is made, measures,
 * and the warning names the knob to turn. */
START_TEST(test_hints_over_limit_warns)
{
	char dir[256], path[300], config[512];
	struct stat st;
	tmm_ctx *ctx;
	char *said;
	int rc;

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	write_plan(path);
	ck_assert_int_eq(stat(path, &st), 0);

	snprintf(config, sizeof(config), "backend=sim,hints=%s,log=warn,"
		 "hints_max=%lld", path, (long long)st.st_size - 1);
	capture_begin();
	rc = tmm_ctx_create(&ctx, config);
	said = capture_end();
	ck_assert_msg(rc == 0, "%s", tmm_last_error(NULL));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	HAS(said, path);
	HAS(said, "hints_max=");
	HAS(said, "TENSORMM_HINTS_MAX");
	HAS(said, "measured instead");
	free(said);

	/* At the limit it is read, and nothing is said at level warn. */
	snprintf(config, sizeof(config), "backend=sim,hints=%s,log=warn,"
		 "hints_max=%lld", path, (long long)st.st_size);
	capture_begin();
	rc = tmm_ctx_create(&ctx, config);
	said = capture_end();
	ck_assert_msg(rc == 0, "%s", tmm_last_error(NULL));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_msg(!strstr(said, "hints_max"), "%s", said);
	free(said);
	remove_dir(dir);
}
END_TEST

/*
 * Out of memory while the plan file is loaded: the creation fails with
 * -ENOMEM and leaves nothing behind, not even its entry in the registry
 * of live contexts, which used to keep the freed context (and the
 * registry's array, reachable from a static, so no leak checker saw it).
 */
START_TEST(test_hints_out_of_memory_leaves_no_context)
{
	char dir[256], path[300], config[512];
	size_t before = tmm_ctx_registered();
	tmm_ctx *ctx = (tmm_ctx *)&ctx;
	int rc;

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	write_plan(path);
	snprintf(config, sizeof(config), "backend=sim,hints=%s,log=error,"
		 "fault=plan_file_alloc", path);
	rc = tmm_ctx_create(&ctx, config);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_null(ctx);
	HAS(tmm_last_error(NULL), "out of memory reading the plan file");
	HAS(tmm_last_error(NULL), "TENSORMM_HINTS");
	ck_assert_uint_eq(tmm_ctx_registered(), before);

	/* The next context (whose creation clears the fault) is counted
	 * and taken back as usual. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim"), 0);
	ck_assert_uint_eq(tmm_ctx_registered(), before + 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_uint_eq(tmm_ctx_registered(), before);
	remove_dir(dir);
}
END_TEST

/* ------------------------------------------------------------------------
 * Traces
 * ---------------------------------------------------------------------- */

/* A FIFO as the trace: the context is refused at once, saying why (the
 * program used to hang in tmm_ctx_create until a reader came). */
START_TEST(test_trace_fifo_refused)
{
	char dir[256], path[300], config[512];
	tmm_ctx *ctx;

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(config, sizeof(config), "backend=sim,trace=%s", path);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), -ENXIO);
	HAS(tmm_last_error(NULL), path);
	HAS(tmm_last_error(NULL), "not a regular file");
	HAS(tmm_last_error(NULL), "TENSORMM_TRACE");
	remove_dir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("files");
	TCase *hints = tcase_create("hints");
	TCase *traces = tcase_create("traces");
	SRunner *sr;
	int failed;

	tcase_add_test(hints, test_hints_over_limit_warns);
	tcase_add_test(hints, test_hints_out_of_memory_leaves_no_context);
	suite_add_tcase(s, hints);
	tcase_set_timeout(traces, 20);
	tcase_add_test(traces, test_trace_fifo_refused);
	suite_add_tcase(s, traces);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
