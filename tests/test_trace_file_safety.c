/*
 * test_trace_file_safety.c — the "safety" case of the trace file suite
 * (test_trace_file.c): what the writer (lib/io/trace_write.c) opens.
 *
 * A trace is written only to a regular file, reached without following
 * a symbolic link: a link planted at the path must be refused with its
 * target untouched, and a FIFO must be refused at once, whether or not a
 * reader holds it (it used to block the program in open until one came),
 * as must a device.  A regular file that is there is emptied and written.
 */
#include "lib/io/trace.h"
#include "lib/io/trace_file.h"
#include "lib/io/trace_read.h"
#include "lib/io/trace_write.h"
#include "test_trace_file.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static void info_of(struct tmm_trace_file_info *info)
{
	memset(info, 0, sizeof(*info));
	info->simulated = 1;
	strcpy(info->backend, "sim");
	strcpy(info->device, "p100-pcie3-16g");
	strcpy(info->mode, "swap");
	strcpy(info->policy, "none");
	info->device_capacity = 16ull << 30;
	info->budget = 1ull << 30;
}

static void make_dir(char *dir, size_t len)
{
	const char *base = getenv("TMPDIR");

	snprintf(dir, len, "%s/tmm-trace-safety-XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void empty_dir(const char *dir)
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

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
}

static void require_text(const char *path, const char *want)
{
	char buf[256] = { 0 };
	FILE *f = fopen(path, "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_le(fread(buf, 1, sizeof(buf) - 1, f), strlen(want));
	fclose(f);
	ck_assert_str_eq(buf, want);
}

/* Opening `path` must fail with `code` and a message with `part`. */
static void refused(const char *path, int code, const char *part)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w = (struct tmm_trace_writer *)1;
	char err[512];

	info_of(&info);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, &w, err,
					       sizeof(err)), code);
	ck_assert_ptr_null(w);
	HAS(err, path);
	HAS(err, part);
	HAS(err, "TENSORMM_TRACE");
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

START_TEST(test_link_is_refused)
{
	char dir[256], path[300], victim[300];

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	put_text(victim, "precious\n");
	ck_assert_int_eq(symlink(victim, path), 0);
	refused(path, -ELOOP, "is a symbolic link");
	require_text(victim, "precious\n");
	empty_dir(dir);
}
END_TEST

/* A FIFO that no one reads: the open used to wait for a reader, here
 * forever (the case's timeout fails it). */
START_TEST(test_fifo_without_reader_is_refused_at_once)
{
	char dir[256], path[300];

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	refused(path, -ENXIO, "not a regular file");
	empty_dir(dir);
}
END_TEST

/* A FIFO with a reader: opened, then refused before a byte goes in. */
START_TEST(test_fifo_with_reader_is_refused)
{
	char dir[256], path[300], byte;
	int reader;

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	reader = open(path, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(reader, 0);
	refused(path, -EINVAL, "is a FIFO, not a regular file");
	ck_assert_int_eq(read(reader, &byte, 1), 0); /* nothing, no writer */
	close(reader);
	empty_dir(dir);
}
END_TEST

START_TEST(test_device_is_refused)
{
	refused("/dev/null", -EINVAL, "is a character device");
}
END_TEST

/* A regular file that is there is emptied, then holds the trace. */
START_TEST(test_regular_file_is_replaced)
{
	struct tmm_trace_file_info info, got;
	struct tmm_trace_writer *w;
	struct tmm_trace_reader *r;
	struct tmm_trace t, back;
	char dir[256], path[300], err[512];

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	put_text(path, "an older trace, longer than a header would be if "
		 "the file were not emptied first: ................"
		 "..............................................."
		 "..............................................."
		 ".....................................\n");
	info_of(&info);
	ck_assert_msg(tmm_trace_writer_open(path, &info, &w, err,
					    sizeof(err)) == 0, "%s", err);
	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);

	ck_assert_msg(tmm_trace_reader_open(path, &r, &got, err,
					    sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tmm_trace_reader_next(r, &back, err, sizeof(err)),
			 1);
	assert_trace_eq(&back, &t);
	tmm_trace_free(&back);
	ck_assert_msg(tmm_trace_reader_next(r, &back, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_trace_reader_close(r);
	tmm_trace_free(&t);
	empty_dir(dir);
}
END_TEST

void add_trace_file_safety_tests(Suite *suite)
{
	TCase *tc = tcase_create("safety");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_link_is_refused);
	tcase_add_test(tc, test_fifo_without_reader_is_refused_at_once);
	tcase_add_test(tc, test_fifo_with_reader_is_refused);
	tcase_add_test(tc, test_device_is_refused);
	tcase_add_test(tc, test_regular_file_is_replaced);
	suite_add_tcase(suite, tc);
}
