/* SPDX-License-Identifier: MIT */
/*
 * test_files.c — the files a context reads and writes, seen from the API
 * (tensormm(7), RELIABILITY, Files): the plan file (hints), its size
 * limit, and running out of memory while it is loaded; the trace file
 * (trace), what may stand at its path, the patterns in it that give
 * each process and each context a file of its own, and its size cap.
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

#include "check_main.h"
#include "lib/api/lifecycle.h"
#include "lib/base/path_pattern.h"
#include "lib/io/plan.h"
#include "lib/io/plan_file.h"
#include "lib/io/trace_read.h"
#include "tensormm.h"
#include "toy_ops.h"
#include "scratch_dir.h"

#define HAS(msg, part)                                                     \
	ck_assert_msg(strstr((msg), (part)), "\"%s\" lacks \"%s\"", (msg), \
		      (part))

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

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

/* One iteration: a = fill(w), then a is destroyed. */
static void one_iteration(tmm_ctx *ctx, tmm_tensor w)
{
	tmm_tensor a;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "a",
					   &a), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &a, 1);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/* The number of records of a whole trace file; fails the test on a
 * damaged one. */
static int records_of(const char *path)
{
	struct tmm_trace_reader *r;
	struct tmm_trace t;
	char err[512];
	int n = 0, rc;

	ck_assert_msg(tmm_trace_reader_open(path, &r, NULL, err,
					    sizeof(err)) == 0, "%s", err);
	while ((rc = tmm_trace_reader_next(r, &t, err, sizeof(err))) == 1) {
		tmm_trace_free(&t);
		n++;
	}
	ck_assert_msg(rc == 0, "%s", err);
	tmm_trace_reader_close(r);
	return n;
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

	scratch_dir_make(dir, sizeof(dir), "files");
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
	scratch_dir_remove(dir);
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

	scratch_dir_make(dir, sizeof(dir), "files");
	snprintf(path, sizeof(path), "%s/plan", dir);
	write_plan(path);
	snprintf(config, sizeof(config), "backend=sim,hints=%s,log=error,"
		 "fault=plan_file_alloc", path);
	rc = tmm_ctx_create(&ctx, config);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_null(ctx);
	HAS(tmm_last_error(NULL), "out of host memory reading the plan file");
	HAS(tmm_last_error(NULL), "TENSORMM_HINTS");
	ck_assert_uint_eq(tmm_ctx_registered(), before);

	/* The next context (whose creation clears the fault) is counted
	 * and taken back as usual. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim"), 0);
	ck_assert_uint_eq(tmm_ctx_registered(), before + 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_uint_eq(tmm_ctx_registered(), before);
	scratch_dir_remove(dir);
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

	scratch_dir_make(dir, sizeof(dir), "files");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(config, sizeof(config), "backend=sim,trace=%s", path);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), -ENXIO);
	HAS(tmm_last_error(NULL), path);
	HAS(tmm_last_error(NULL), "not a regular file");
	HAS(tmm_last_error(NULL), "TENSORMM_TRACE");
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_path_patterns)
{
	char out[64], why[256];

	ck_assert_int_eq(tmm_path_expand("/t/run.%p.%n.trace", 4242, 7, out,
					 sizeof(out), why, sizeof(why)), 0);
	ck_assert_str_eq(out, "/t/run.4242.7.trace");
	ck_assert_int_eq(tmm_path_expand("%n%n-100%%", 1, 0, out,
					 sizeof(out), why, sizeof(why)), 0);
	ck_assert_str_eq(out, "00-100%");
	ck_assert_int_eq(tmm_path_expand("", 1, 0, out, sizeof(out), why,
					 sizeof(why)), 0);
	ck_assert_str_eq(out, "");

	ck_assert_int_eq(tmm_path_expand("/t/%d.trace", 1, 0, out,
					 sizeof(out), why, sizeof(why)),
			 -EINVAL);
	HAS(why, "\"%d\" is not a pattern");
	HAS(why, "%n the context's number");
	ck_assert_int_eq(tmm_path_expand("/t/50%", 1, 0, out, sizeof(out),
					 why, sizeof(why)), -EINVAL);
	HAS(why, "a '%' ends the path");
	/* 8 bytes and the NUL fit in 9, not in 8. */
	ck_assert_int_eq(tmm_path_expand("%p%p", 1234, 0, out, 9, why,
					 sizeof(why)), 0);
	ck_assert_int_eq(tmm_path_expand("%p%p", 1234, 0, out, 8, why,
					 sizeof(why)), -ENAMETOOLONG);
	HAS(why, "longer than 7 bytes");
}
END_TEST

/* A pattern the library does not know is refused with the tunables, not
 * written as it stands. */
START_TEST(test_trace_bad_pattern_refused)
{
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,"
					"trace=/tmp/run.%d.trace"), -EINVAL);
	HAS(tmm_last_error(NULL), "trace=/tmp/run.%d.trace (config string)");
	HAS(tmm_last_error(NULL), "\"%d\" is not a pattern");
	HAS(tmm_last_error(NULL), "%p is the pid");
}
END_TEST

/*
 * Two contexts alive at once with %p and %n in the trace path: a file
 * each, each whole with its own iterations.  Without the patterns the
 * second context used to truncate the file of the first.
 */
START_TEST(test_trace_per_context)
{
	char dir[256], config[512], prefix[64];
	tmm_ctx *a, *b;
	tmm_tensor wa, wb;
	struct dirent *e;
	int files = 0, records[2] = { 0 };
	DIR *d;

	scratch_dir_make(dir, sizeof(dir), "files");
	snprintf(config, sizeof(config), "backend=sim,log=error,"
		 "trace=%s/run.%%p.%%n.trace", dir);
	ck_assert_msg(tmm_ctx_create(&a, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_msg(tmm_ctx_create(&b, config) == 0, "%s",
		      tmm_last_error(NULL));
	wa = toy_weight(a, 1);
	wb = toy_weight(b, 2);
	one_iteration(a, wa);
	one_iteration(b, wb);
	one_iteration(b, wb);
	ck_assert_int_eq(tmm_ctx_destroy(a), 0);
	ck_assert_int_eq(tmm_ctx_destroy(b), 0);

	snprintf(prefix, sizeof(prefix), "run.%ld.", (long)getpid());
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char path[600];

		if (e->d_name[0] == '.')
			continue;
		ck_assert_msg(!strncmp(e->d_name, prefix, strlen(prefix)),
			      "%s does not start with %s", e->d_name, prefix);
		ck_assert_int_lt(files, 2);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		records[files++] = records_of(path);
	}
	closedir(d);
	ck_assert_int_eq(files, 2);
	/* One file per context: one iteration in one, two in the other. */
	ck_assert_int_eq(records[0] + records[1], 3);
	ck_assert_int_eq(records[0] * records[1], 2);
	scratch_dir_remove(dir);
}
END_TEST

/* One path for two live contexts: the second is refused, naming %n, and
 * the first one's trace is untouched; once the first is gone the path is
 * free again. */
START_TEST(test_trace_shared_path_refused)
{
	char dir[256], path[300], config[512];
	tmm_ctx *a, *b;
	tmm_tensor w;

	scratch_dir_make(dir, sizeof(dir), "files");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	snprintf(config, sizeof(config), "backend=sim,log=error,trace=%s",
		 path);
	ck_assert_msg(tmm_ctx_create(&a, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(a, 1);
	one_iteration(a, w);
	ck_assert_int_eq(tmm_ctx_create(&b, config), -EBUSY);
	HAS(tmm_last_error(NULL), path);
	HAS(tmm_last_error(NULL), "another context of this process");
	HAS(tmm_last_error(NULL), "%n");
	HAS(tmm_last_error(NULL), "TENSORMM_TRACE");
	one_iteration(a, w);
	ck_assert_int_eq(tmm_ctx_destroy(a), 0);
	ck_assert_int_eq(records_of(path), 2);

	ck_assert_msg(tmm_ctx_create(&b, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_ctx_destroy(b), 0);
	ck_assert_int_eq(records_of(path), 0);
	scratch_dir_remove(dir);
}
END_TEST

/*
 * trace_max at work: the trace stops at a whole record below the cap,
 * the run goes on, and the library says so once, naming the knob.
 */
START_TEST(test_trace_max_warns_once)
{
	char dir[256], path[300], config[512];
	struct stat st;
	tmm_ctx *ctx;
	tmm_tensor w;
	const char *p;
	char *said;
	int warnings = 0, records;
	long long one;

	scratch_dir_make(dir, sizeof(dir), "files");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	/* The size of the file of one iteration, with no cap. */
	snprintf(config, sizeof(config), "backend=sim,log=warn,trace=%s,"
		 "trace_max=0", path);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(ctx, 1);
	one_iteration(ctx, w);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	one = (long long)st.st_size;

	/* Room for about one and a half of them: six iterations run. */
	snprintf(config, sizeof(config), "backend=sim,log=warn,trace=%s,"
		 "trace_max=%lld", path, one + one / 2);
	capture_begin();
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	w = toy_weight(ctx, 1);
	for (int i = 0; i < 6; i++)
		one_iteration(ctx, w);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	said = capture_end();

	for (p = said; (p = strstr(p, "trace_max=")); p++)
		warnings++;
	ck_assert_msg(warnings == 1, "%d warnings naming trace_max, not "
		      "one: %s", warnings, said);
	HAS(said, "TENSORMM_TRACE_MAX");
	HAS(said, "stays readable");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_le(st.st_size, one + one / 2);
	records = records_of(path);
	ck_assert_int_ge(records, 1);
	ck_assert_int_lt(records, 6);
	free(said);
	scratch_dir_remove(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("files");
	TCase *hints = tcase_create("hints");
	TCase *traces = tcase_create("traces");

	tcase_add_test(hints, test_hints_over_limit_warns);
	tcase_add_test(hints, test_hints_out_of_memory_leaves_no_context);
	suite_add_tcase(s, hints);
	tcase_set_timeout(traces, 20);
	tcase_add_test(traces, test_trace_fifo_refused);
	tcase_add_test(traces, test_path_patterns);
	tcase_add_test(traces, test_trace_bad_pattern_refused);
	tcase_add_test(traces, test_trace_per_context);
	tcase_add_test(traces, test_trace_shared_path_refused);
	tcase_add_test(traces, test_trace_max_warns_once);
	suite_add_tcase(s, traces);
	return check_run_all(srunner_create(s));
}
