/* SPDX-License-Identifier: MIT */
/*
 * test_plan_file.h — what the two files of the plan file suite share
 * (test_plan_file.c, test_plan_file_damage.c): the assertion macros, the
 * checksum written here and sealing a text with it, and the example plan
 * of docs/plan-format.md.
 */
#ifndef TEST_PLAN_FILE_H
#define TEST_PLAN_FILE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/io/plan.h"

#define REQUIRE(cond, ...)                                                 \
	do {                                                               \
		if (!(cond))                                               \
			ck_abort_msg(__VA_ARGS__);                         \
	} while (0)

#define HAS(msg, part)                                                     \
	REQUIRE(strstr((msg), (part)), "message \"%s\" lacks \"%s\"",      \
		(msg), (part))

/* The limit on a plan file's size the suite reads and writes with: the
 * default of the hints_max tunable. */
#define PLAN_LIMIT (64ull << 20)

/* The key of handle `low` of the context with `serial`
 * (lib/core/tensor_table.c). */
#define HANDLE(serial, low) ((uint64_t)(serial) << 48 | (uint64_t)(low))

/* CRC-32 bit by bit, straight from the definition: a check on the table. */
static inline uint32_t ref_crc32(const char *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint8_t)p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

/* body + its end line, from malloc. */
static inline char *seal(const char *body)
{
	size_t n = strlen(body);
	char *t = malloc(n + 32);

	ck_assert_ptr_nonnull(t);
	snprintf(t, n + 32, "%send crc32 %08x\n", body, ref_crc32(body, n));
	return t;
}

/* The example in docs/plan-format.md, byte for byte. */
static const char doc_example[] =
	"tensormm-plan 1\n"
	"# A libtensormm plan (docs/plan-format.md); an edit breaks the "
	"checksum.\n"
	"policy capuchin\n"
	"accesses 5\n"
	"0 p:0x1000001\n"
	"1 i:0\n"
	"2 i:1\n"
	"3 i:0\n"
	"4 p:0x1000001\n"
	"actions 4\n"
	"EVICT_SWAP 0 p:0x1000001 4 -\n"
	"EVICT_DROP 1 i:0 3 -\n"
	"ADVISE 2 i:1 - READ_MOSTLY\n"
	"PREFETCH 2 p:0x1000001 4 -\n"
	"end crc32 25555f59\n";

/* The plan of doc_example, for the context `serial` (test_plan_file.c). */
void make_doc_plan(struct tmm_plan *p, uint16_t serial);

/* Adds the "damage" case: texts cut, flipped and written wrong, each
 * refused with the line and the rule it breaks (test_plan_file_damage.c). */
void add_plan_file_damage_tests(Suite *suite);

/* Adds the "safety" case: the temporary a plan is written through, in a
 * directory others may write too (test_plan_file_safety.c). */
void add_plan_file_safety_tests(Suite *suite);

#endif /* TEST_PLAN_FILE_H */
