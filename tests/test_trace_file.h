/* SPDX-License-Identifier: MIT */
/*
 * test_trace_file.h — what the two files of the trace file suite share
 * (test_trace_file.c, test_trace_file_io.c): the layout documented in
 * docs/trace-format.md, the assertion macros, the byte helpers and the
 * hand-made trace.
 */
#ifndef TEST_TRACE_FILE_H
#define TEST_TRACE_FILE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/io/trace.h"

/* The documented layout (docs/trace-format.md). */
#define HDR_LEN 144
#define REC_HEAD 12
#define PAY_FIXED 48
#define TENSOR_LEN 48
#define OP_LEN 64 /* version 2: net_bytes at 56 */
#define OP_LEN_V1 56
#define ACCESS_LEN 40
#define EVENT_LEN 24
#define PAY_COUNTS 24 /* payload offset of n_tensors */

#define REQUIRE(cond, ...)                                                 \
	do {                                                               \
		if (!(cond))                                               \
			ck_abort_msg(__VA_ARGS__);                         \
	} while (0)

#define HAS(msg, part)                                                     \
	REQUIRE(strstr((msg), (part)), "message \"%s\" lacks \"%s\"",      \
		(msg), (part))

/* CRC-32 bit by bit, straight from the definition: a check on the table. */
static inline uint32_t ref_crc32(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

static inline uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void set_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The hand-made trace of iteration `iter` and a field-by-field comparison
 * (test_trace_file.c). */
void make_trace(struct tmm_trace *t, uint64_t iter);
void assert_trace_eq(const struct tmm_trace *a,
		     const struct tmm_trace *b);

/* Adds the "files" case: the writer and the reader over real files
 * (test_trace_file_io.c). */
void add_trace_file_io_tests(Suite *suite);

/* Adds the "safety" case: what the writer agrees to open, and a size cap
 * on what it writes (test_trace_file_safety.c). */
void add_trace_file_safety_tests(Suite *suite);

#endif /* TEST_TRACE_FILE_H */
