/* SPDX-License-Identifier: MIT */
/*
 * test_trace_file_safety.c — the "safety" case of the trace file suite
 * (test_trace_file.c): what the writer (lib/io/trace_write.c) opens.
 *
 * A trace is written only to a regular file, reached without following
 * a symbolic link: a link planted at the path must be refused with its
 * target untouched, and a FIFO must be refused at once, whether or not a
 * reader holds it (it used to block the program in open until one came),
 * as must a device.  A regular file that is there is emptied and written.
 * A size cap (trace_max) stops the file at its last whole record, which
 * the reader reads to a clean end.
 */
#include "lib/io/trace.h"
#include "lib/io/trace_file.h"
#include "lib/io/trace_read.h"
#include "lib/io/trace_write.h"
#include "test_trace_file.h"
#include "scratch_dir.h"

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
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, 0, &w, err,
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

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	put_text(victim, "precious\n");
	ck_assert_int_eq(symlink(victim, path), 0);
	refused(path, -ELOOP, "is a symbolic link");
	require_text(victim, "precious\n");
	scratch_dir_remove(dir);
}
END_TEST

/* A FIFO that no one reads: the open used to wait for a reader, here
 * forever (the case's timeout fails it). */
START_TEST(test_fifo_without_reader_is_refused_at_once)
{
	char dir[256], path[300];

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	refused(path, -ENXIO, "not a regular file");
	scratch_dir_remove(dir);
}
END_TEST

/* A FIFO with a reader: opened, then refused before a byte goes in. */
START_TEST(test_fifo_with_reader_is_refused)
{
	char dir[256], path[300], byte;
	int reader;

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	reader = open(path, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(reader, 0);
	refused(path, -EINVAL, "is a FIFO, not a regular file");
	ck_assert_int_eq(read(reader, &byte, 1), 0); /* nothing, no writer */
	close(reader);
	scratch_dir_remove(dir);
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

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	put_text(path, "an older trace, longer than a header would be if "
		 "the file were not emptied first: ................"
		 "..............................................."
		 "..............................................."
		 ".....................................\n");
	info_of(&info);
	ck_assert_msg(tmm_trace_writer_open(path, &info, 0, &w, err,
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
	scratch_dir_remove(dir);
}
END_TEST

/* The records of a whole trace file (a damaged one fails the test). */
static int whole_records(const char *path)
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
	ck_assert_msg(rc == 0, "the capped file is not a whole trace: %s",
		      err);
	tmm_trace_reader_close(r);
	return n;
}

/*
 * A cap of the header and two records and a byte short of a third: two
 * records go in, the third is refused whole (not cut), every later one
 * too, and the reader reads the file to a clean end.
 */
START_TEST(test_cap_keeps_a_whole_trace)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w;
	struct tmm_trace t;
	char dir[256], path[300], err[1024];
	uint8_t *rec;
	size_t len;
	uint64_t cap;
	struct stat st;

	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	free(rec);
	cap = HDR_LEN + 3 * (uint64_t)len - 1;

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	info_of(&info);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, cap, &w, err,
					       sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 -EFBIG);
	HAS(err, path);
	HAS(err, "trace_max=");
	HAS(err, "TENSORMM_TRACE_MAX");
	HAS(err, "keeps its 2 whole records");
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 -EFBIG);
	HAS(err, "takes no more records");
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, HDR_LEN + 2 * (uint64_t)len);
	ck_assert_uint_le((uint64_t)st.st_size, cap);
	ck_assert_int_eq(whole_records(path), 2);

	/* A byte more and the third fits; 0 is no cap at all. */
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, cap + 1, &w, err,
					       sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tmm_trace_writer_append(w, &t, err,
							 sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 -EFBIG);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(whole_records(path), 3);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, 0, &w, err,
					       sizeof(err)), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(tmm_trace_writer_append(w, &t, err,
							 sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(whole_records(path), 20);
	tmm_trace_free(&t);
	scratch_dir_remove(dir);
}
END_TEST

/* A cap with no room for the header is refused before the file at the
 * path is emptied. */
START_TEST(test_cap_below_header_refused)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w = (struct tmm_trace_writer *)1;
	char dir[256], path[300], err[512];

	scratch_dir_make(dir, sizeof(dir), "trace-safety");
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	put_text(path, "an older trace\n");
	info_of(&info);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, HDR_LEN - 1, &w,
					       err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(w);
	HAS(err, "trace_max=143 leaves no room");
	HAS(err, "144-byte header");
	HAS(err, "TENSORMM_TRACE_MAX");
	require_text(path, "an older trace\n");
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, HDR_LEN, &w, err,
					       sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(whole_records(path), 0);
	scratch_dir_remove(dir);
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
	tcase_add_test(tc, test_cap_keeps_a_whole_trace);
	tcase_add_test(tc, test_cap_below_header_refused);
	suite_add_tcase(suite, tc);
}
