/* SPDX-License-Identifier: MIT */
/*
 * test_trace_file_io.c — the "files" case of the trace file suite
 * (test_trace_file.c): the writer (lib/io/trace_write.c) and the reader
 * (lib/io/trace_read.c) over real files.
 *
 * Hand-made traces are written to a temporary file and read back field
 * for field; then the file is cut at every byte length, has bytes
 * flipped, gets damaged or foreign headers, and the writer meets invalid
 * traces, unwritable paths and a file size limit.  Every error must name
 * the file and where in it things went wrong.
 */
#include "lib/io/trace.h"
#include "lib/io/trace_file.h"
#include "lib/io/trace_read.h"
#include "lib/io/trace_write.h"
#include "tensormm.h"
#include "test_trace_file.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static void fix_header_crc(uint8_t *h, uint32_t hlen)
{
	set_le(h + hlen - 4, ref_crc32(h, hlen - 4), 4);
}

static void make_info(struct tmm_trace_file_info *info)
{
	memset(info, 0, sizeof(*info));
	info->simulated = 1;
	strcpy(info->backend, "sim");
	strcpy(info->device, "a100-40g");
	strcpy(info->mode, "swap");
	strcpy(info->policy, "capuchin");
	info->device_capacity = 40ull << 30;
	info->budget = 6ull << 30;
}

/* A fresh temporary file name (the file exists, empty). */
static void temp_path(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/tmm-trace-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* Writes `iters` iterations (1, 2, ...) to path; returns the file's bytes
 * and, in bounds[k], the offset where record k+1 ends. */
static uint8_t *write_trace_file(const char *path, int iters, size_t *size,
				 size_t *bounds)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w;
	char err[1024];
	uint8_t *data;
	FILE *f;
	long n;

	make_info(&info);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, 0, &w, err,
					       sizeof(err)), 0);
	for (int i = 1; i <= iters; i++) {
		struct tmm_trace t;
		uint8_t *rec;
		size_t len;

		make_trace(&t, (uint64_t)i);
		ck_assert_int_eq(tmm_trace_writer_append(w, &t, err,
							 sizeof(err)), 0);
		if (bounds) {
			ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
			bounds[i - 1] = len + (i == 1 ? HDR_LEN
						      : bounds[i - 2]);
			free(rec);
		}
		tmm_trace_free(&t);
	}
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);

	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	data = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return data;
}

static void put_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Opens path and reads every record: returns the return value of the call
 * that stopped (open's error, or next's 0 or error), with the count of
 * records read and the message.
 */
static int read_trace_file(const char *path, int *records, char *err,
			   size_t errlen)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace t;
	int ret;

	*records = 0;
	err[0] = '\0';
	ret = tmm_trace_reader_open(path, &r, &info, err, errlen);
	if (ret < 0) {
		ck_assert_ptr_null(r);
		return ret;
	}
	while ((ret = tmm_trace_reader_next(r, &t, err, errlen)) == 1) {
		(*records)++;
		ck_assert_uint_eq(t.iteration, (uint64_t)*records);
		tmm_trace_free(&t);
	}
	/* Nothing is left to free after an end or an error. */
	ck_assert_ptr_null(t.tensors);
	ck_assert_uint_eq(t.n_tensors, 0);
	tmm_trace_reader_close(r);
	return ret;
}

/* ------------------------------------------------------------------------
 * Files
 * ---------------------------------------------------------------------- */

START_TEST(test_file_round_trip)
{
	struct tmm_trace_file_info in, out;
	struct tmm_trace_reader *r;
	struct tmm_trace t, want;
	char path[512], err[1024];
	size_t size, bounds[3];
	uint8_t *data;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 3, &size, bounds);
	ck_assert_uint_eq(size, bounds[2]);
	ck_assert(memcmp(data, "TMMTRACE", 8) == 0);
	ck_assert_uint_eq(le(data + 8, 4), 3);
	ck_assert_uint_eq(le(data + 12, 4), HDR_LEN);
	ck_assert_uint_eq(le(data + HDR_LEN - 4, 4),
			  ref_crc32(data, HDR_LEN - 4));
	ck_assert_str_eq((char *)data + 36, "a100-40g");

	make_info(&in);
	memset(&out, 0xa5, sizeof(out));
	ck_assert_int_eq(tmm_trace_reader_open(path, &r, &out, err,
					       sizeof(err)), 0);
	ck_assert_uint_eq(out.version, TMM_TRACE_FORMAT_VERSION);
	ck_assert_uint_eq(out.simulated, in.simulated);
	ck_assert_str_eq(out.backend, in.backend);
	ck_assert_str_eq(out.device, in.device);
	ck_assert_str_eq(out.mode, in.mode);
	ck_assert_str_eq(out.policy, in.policy);
	ck_assert_uint_eq(out.device_capacity, in.device_capacity);
	ck_assert_uint_eq(out.budget, in.budget);
	for (uint64_t i = 1; i <= 3; i++) {
		ck_assert_int_eq(tmm_trace_reader_next(r, &t, err,
						       sizeof(err)), 1);
		make_trace(&want, i);
		assert_trace_eq(&want, &t);
		tmm_trace_free(&want);
		tmm_trace_free(&t);
	}
	ck_assert_int_eq(tmm_trace_reader_next(r, &t, err, sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_reader_next(r, &t, err, sizeof(err)), 0);
	tmm_trace_reader_close(r);
	tmm_trace_reader_close(NULL);
	free(data);

	/* Opening again truncates: one iteration now. */
	data = write_trace_file(path, 1, &size, bounds);
	ck_assert_uint_eq(size, bounds[0]);
	free(data);
	unlink(path);
}
END_TEST

START_TEST(test_truncation_at_every_length)
{
	char path[512], err[1024];
	size_t size, bounds[2];
	uint8_t *data;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 2, &size, bounds);
	for (size_t cut = 0; cut < size; cut++) {
		int records, ret, complete = 0;

		while (complete < 2 && bounds[complete] <= cut)
			complete++;
		put_file(path, data, cut);
		ret = read_trace_file(path, &records, err, sizeof(err));
		if (cut == HDR_LEN || cut == bounds[0]) {
			/* At a record boundary: the records before it. */
			REQUIRE(ret == 0 && records == complete,
				"cut at boundary %zu: %d after %d records: %s",
				cut, ret, records, err);
			continue;
		}
		REQUIRE(ret == -EBADMSG, "cut at %zu: returned %d after %d "
			"records", cut, ret, records);
		REQUIRE(records == complete, "cut at %zu: %d records, not %d",
			cut, records, complete);
		HAS(err, path);
		HAS(err, "truncated");
		HAS(err, "TENSORMM_TRACE");
		if (cut > HDR_LEN) {
			char rec[32];

			snprintf(rec, sizeof(rec), "record %d", complete + 1);
			HAS(err, rec);
			HAS(err, "at byte");
		}
	}
	free(data);
	unlink(path);
}
END_TEST

START_TEST(test_byte_flips_in_a_file_are_rejected)
{
	char path[512], err[1024];
	size_t size, bounds[2];
	uint8_t *data;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 2, &size, bounds);
	/* Every header byte and a sample of the records' bytes. */
	for (size_t i = 0; i < size; i += i < HDR_LEN ? 1 : 7) {
		int records, ret;

		data[i] ^= 0x20;
		put_file(path, data, size);
		data[i] ^= 0x20;
		ret = read_trace_file(path, &records, err, sizeof(err));
		REQUIRE(ret < 0, "flipping byte %zu was accepted", i);
		REQUIRE(records == (i < bounds[0] ? 0 : 1),
			"flipping byte %zu: %d records read", i, records);
		HAS(err, path);
	}
	/* A flipped payload byte in record 2: the checksum, with where. */
	data[bounds[0] + REC_HEAD + PAY_FIXED + 1] ^= 0x01;
	put_file(path, data, size);
	{
		struct tmm_trace_reader *r;
		struct tmm_trace t;
		char again[1024];

		ck_assert_int_eq(tmm_trace_reader_open(path, &r, NULL, err,
						       sizeof(err)), 0);
		ck_assert_int_eq(tmm_trace_reader_next(r, &t, err,
						       sizeof(err)), 1);
		tmm_trace_free(&t);
		ck_assert_int_eq(tmm_trace_reader_next(r, &t, err,
						       sizeof(err)), -EBADMSG);
		HAS(err, "record 2 (after iteration 1)");
		HAS(err, "checksum");
		HAS(err, "corrupt");
		HAS(err, "re-record");
		/* Errors stick. */
		ck_assert_int_eq(tmm_trace_reader_next(r, &t, again,
						       sizeof(again)),
				 -EBADMSG);
		ck_assert_str_eq(again, err);
		tmm_trace_reader_close(r);
	}
	free(data);
	unlink(path);
}
END_TEST

START_TEST(test_header_problems)
{
	char path[512], err[1024];
	size_t size;
	uint8_t *data, *longer;
	int records;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 1, &size, NULL);

	/* Not a trace at all. */
	put_file(path, (const uint8_t *)"#!/bin/sh\necho hello, world\n", 28);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "not a libtensormm trace file");
	HAS(err, path);

	/* A newer version, properly checksummed: the message names both
	 * versions and says what to update. */
	ck_assert_uint_eq(TMM_TRACE_FORMAT_VERSION, 3);
	set_le(data + 8, 4, 4);
	fix_header_crc(data, HDR_LEN);
	put_file(path, data, size);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -ENOTSUP);
	HAS(err, "version 4");
	HAS(err, "reads versions 1 to 3");
	HAS(err, "update tensormm-stat");
	HAS(err, path);
	set_le(data + 8, 3, 4);
	fix_header_crc(data, HDR_LEN);

	/* A header from a later version with 8 more bytes of fields. */
	longer = malloc(size + 8);
	ck_assert_ptr_nonnull(longer);
	memcpy(longer, data, HDR_LEN - 4);
	memset(longer + HDR_LEN - 4, 0x5a, 8);
	memcpy(longer + HDR_LEN + 8, data + HDR_LEN, size - HDR_LEN);
	set_le(longer + 12, HDR_LEN + 8, 4);
	fix_header_crc(longer, HDR_LEN + 8);
	put_file(path, longer, size + 8);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 0);
	ck_assert_int_eq(records, 1);
	free(longer);

	/* A header length too short for version 1. */
	set_le(data + 12, 100, 4);
	fix_header_crc(data, 100);
	put_file(path, data, size);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "header length");
	set_le(data + 12, HDR_LEN, 4);
	fix_header_crc(data, HDR_LEN);

	/* A damaged device name: the header's checksum. */
	data[40] ^= 0x04;
	put_file(path, data, size);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "header's checksum");
	data[40] ^= 0x04;

	/* A string field without its NUL, checksum fixed. */
	memset(data + 84, 'm', 8);
	fix_header_crc(data, HDR_LEN);
	put_file(path, data, size);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "mode field");

	/* Missing files and bad arguments. */
	unlink(path);
	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -ENOENT);
	HAS(err, path);
	HAS(err, strerror(ENOENT));
	ck_assert_int_eq(tmm_trace_reader_open(NULL, NULL, NULL, err,
					       sizeof(err)), -EINVAL);
	free(data);
}
END_TEST

START_TEST(test_info_strings_are_cut_to_fit)
{
	struct tmm_trace_file_info in, out;
	struct tmm_trace_writer *w;
	struct tmm_trace_reader *r;
	char path[512], err[1024];

	temp_path(path, sizeof(path));
	make_info(&in);
	memset(in.device, 'd', sizeof(in.device)); /* no NUL at all */
	ck_assert_int_eq(tmm_trace_writer_open(path, &in, 0, &w, err,
					       sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_reader_open(path, &r, &out, err,
					       sizeof(err)), 0);
	ck_assert_uint_eq(strlen(out.device), sizeof(out.device) - 1);
	ck_assert_str_eq(out.policy, "capuchin");
	tmm_trace_reader_close(r);
	unlink(path);
}
END_TEST

START_TEST(test_writer_refuses_invalid_trace)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w;
	struct tmm_trace t;
	char path[512], err[1024];
	int records;

	temp_path(path, sizeof(path));
	make_info(&info);
	ck_assert_int_eq(tmm_trace_writer_open(path, &info, 0, &w, err,
					       sizeof(err)), 0);
	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)), 0);
	tmm_trace_free(&t);

	make_trace(&t, 2);
	t.accesses[5].op = 3;
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 -EINVAL);
	HAS(err, path);
	HAS(err, "refusing to write iteration 2");
	HAS(err, "access 5: op 3");
	/* Nothing was written: the writer carries on. */
	t.accesses[5].op = TMM_TRACE_NONE;
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)), 0);
	tmm_trace_free(&t);
	ck_assert_int_eq(tmm_trace_writer_append(w, NULL, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(tmm_trace_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_writer_close(NULL, err, sizeof(err)), 0);

	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 0);
	ck_assert_int_eq(records, 2);
	unlink(path);
}
END_TEST

START_TEST(test_writer_reports_open_and_write_errors)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w = (void *)1;
	char err[1024];

	make_info(&info);
	ck_assert_int_eq(tmm_trace_writer_open("/nonexistent-tmm-dir/t", &info,
					       0, &w, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(w);
	HAS(err, "/nonexistent-tmm-dir/t");
	HAS(err, strerror(ENOENT));
	ck_assert_int_eq(tmm_trace_writer_open("", &info, 0, &w, err,
					       sizeof(err)), -EINVAL);

	/* /dev/full would take the open and fail every write with ENOSPC;
	 * it is a device, refused before a write (a failed write is the
	 * next test's). */
	if (access("/dev/full", W_OK) == 0) {
		w = (void *)1;
		ck_assert_int_eq(tmm_trace_writer_open("/dev/full", &info, 0,
						       &w, err, sizeof(err)),
				 -EINVAL);
		ck_assert_ptr_null(w);
		HAS(err, "/dev/full");
		HAS(err, "not a regular file");
	}
}
END_TEST

/* A file size limit makes a write fail partway through the second record:
 * the error must name it, stick, and leave the first record readable. */
START_TEST(test_failed_append_sticks_and_keeps_the_prefix)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_writer *w;
	struct tmm_trace t;
	struct rlimit saved, small;
	char path[512], err[1024];
	void (*old)(int);
	int records, ret;

	temp_path(path, sizeof(path));
	make_info(&info);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
	small = saved;
	small.rlim_cur = 1000; /* the header and one record fit, not two */
	old = signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);

	ck_assert_int_eq(tmm_trace_writer_open(path, &info, 0, &w, err,
					       sizeof(err)), 0);
	make_trace(&t, 1);
	ret = tmm_trace_writer_append(w, &t, err, sizeof(err));
	tmm_trace_free(&t);
	make_trace(&t, 2);
	ck_assert_int_eq(ret, 0);
	ret = tmm_trace_writer_append(w, &t, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &saved);
	ck_assert_int_eq(ret, -EFBIG);
	HAS(err, path);
	HAS(err, "iteration 2 (record 2");
	HAS(err, strerror(EFBIG));
	ck_assert_int_eq(tmm_trace_writer_append(w, &t, err, sizeof(err)),
			 -EFBIG);
	HAS(err, "an earlier write failed");
	tmm_trace_free(&t);
	tmm_trace_writer_close(w, err, sizeof(err));
	signal(SIGXFSZ, old);

	ck_assert_int_eq(read_trace_file(path, &records, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_int_eq(records, 1);
	HAS(err, "record 2 (after iteration 1)");
	HAS(err, "truncated");
	unlink(path);
}
END_TEST

/*
 * The file at path says format `version` and reads back as the two
 * iterations write_trace_file wrote; version 1, which had no net_bytes,
 * reads 0 for every op's.
 */
static void reads_back_as_written(const char *path, unsigned version)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace t, want;
	char err[1024];

	ck_assert_int_eq(tmm_trace_reader_open(path, &r, &info, err,
					       sizeof(err)), 0);
	ck_assert_uint_eq(info.version, version);
	for (uint64_t i = 1; i <= 2; i++) {
		ck_assert_msg(tmm_trace_reader_next(r, &t, err,
						    sizeof(err)) == 1,
			      "%s", err);
		make_trace(&want, i);
		assert_trace_eq(&want, &t);
		for (uint32_t k = 0; version == 1 && k < t.n_ops; k++)
			ck_assert(t.ops[k].net_bytes == 0);
		tmm_trace_free(&want);
		tmm_trace_free(&t);
	}
	ck_assert_int_eq(tmm_trace_reader_next(r, &t, err, sizeof(err)), 0);
	tmm_trace_reader_close(r);
}

/*
 * A version-1 file (written before ops had net_bytes) still reads: the
 * file this build writes, rewritten as version 1 wrote it (ops 8 bytes
 * shorter, the version 1, lengths and checksums fixed), reads back as the
 * same iterations with net_bytes 0.
 */
START_TEST(test_reads_version_1)
{
	char path[512];
	size_t size, at, out = HDR_LEN;
	uint8_t *data, *v1;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 2, &size, NULL);
	v1 = malloc(size);
	ck_assert_ptr_nonnull(v1);
	memcpy(v1, data, HDR_LEN);
	set_le(v1 + 8, 1, 4);
	fix_header_crc(v1, HDR_LEN);
	for (at = HDR_LEN; at < size;) {
		const uint8_t *pay = data + at + REC_HEAD;
		uint64_t plen = le(data + at + 4, 8);
		uint64_t nt = le(pay + PAY_COUNTS, 4), no = le(pay + 28, 4);
		size_t ops = PAY_FIXED + nt * TENSOR_LEN;
		size_t rest = plen - ops - no * OP_LEN;
		uint8_t *o = v1 + out, *q = o + REC_HEAD;

		memcpy(o, data + at, REC_HEAD);
		memcpy(q, pay, ops);
		q += ops;
		for (uint64_t k = 0; k < no; k++, q += OP_LEN_V1)
			memcpy(q, pay + ops + k * OP_LEN, OP_LEN_V1);
		memcpy(q, pay + ops + no * OP_LEN, rest);
		q += rest;
		set_le(o + 4, plen - no * (OP_LEN - OP_LEN_V1), 8);
		set_le(q, ref_crc32(o + REC_HEAD, (size_t)(q - o - REC_HEAD)),
		       4);
		out = (size_t)(q + 4 - v1);
		at += REC_HEAD + plen + 4;
	}
	put_file(path, v1, out);

	reads_back_as_written(path, 1);
	free(v1);
	free(data);
	unlink(path);
}
END_TEST

/*
 * A version-2 file still reads: version 3 kept its layout and only
 * defined more tensor flags, so the file this build writes, its header
 * saying version 2, reads back as the same iterations, the flags
 * version 2 knew included.
 */
START_TEST(test_reads_version_2)
{
	char path[512];
	size_t size;
	uint8_t *data;

	temp_path(path, sizeof(path));
	data = write_trace_file(path, 2, &size, NULL);
	set_le(data + 8, 2, 4);
	fix_header_crc(data, HDR_LEN);
	put_file(path, data, size);
	reads_back_as_written(path, 2);
	free(data);
	unlink(path);
}
END_TEST

void add_trace_file_io_tests(Suite *suite)
{
	TCase *files = tcase_create("files");

	/* Valgrind slows the every-length loops well past Check's 4 s. */
	tcase_set_timeout(files, 120);
	tcase_add_test(files, test_file_round_trip);
	tcase_add_test(files, test_truncation_at_every_length);
	tcase_add_test(files, test_byte_flips_in_a_file_are_rejected);
	tcase_add_test(files, test_header_problems);
	tcase_add_test(files, test_reads_version_1);
	tcase_add_test(files, test_reads_version_2);
	tcase_add_test(files, test_info_strings_are_cut_to_fit);
	tcase_add_test(files, test_writer_refuses_invalid_trace);
	tcase_add_test(files, test_writer_reports_open_and_write_errors);
	tcase_add_test(files, test_failed_append_sticks_and_keeps_the_prefix);
	suite_add_tcase(suite, files);
}
