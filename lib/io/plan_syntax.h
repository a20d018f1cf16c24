/* SPDX-License-Identifier: MIT */
/*
 * plan_syntax.h — the text of a plan file as its encoder (plan_encode.c)
 * and its decoder (plan_decode.c) both spell it; docs/plan-format.md has
 * it line by line.
 *
 * The format is line-oriented text so that a plan can be read, diffed and
 * reviewed.  Every value has exactly one spelling (decimal without leading
 * zeros, lowercase hex, single spaces), so encoding what was decoded gives
 * back the same bytes.  The last line carries a CRC-32 of every line
 * before it: a text file invites hand edits, and a plan that an edit or a
 * cut-short copy made subtly wrong would steer the runtime into stalls or
 * recomputations of the wrong tensor, so any change is refused and the run
 * measures again instead.
 *
 * Only lib/io/plan_*.c (and the plan file's tests) include this header;
 * callers use plan_file.h.  So its macros and inline helpers keep the
 * short names they had when the codec was one file; what is linked
 * carries the tmm_plan_ prefix.
 */
#ifndef TMM_PLAN_SYNTAX_H
#define TMM_PLAN_SYNTAX_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"

/* The newest format version this build reads and writes.  A plan with a
 * swap-out moved by migration is written as version 4, which added the
 * word "migrate"; one with a layer-synchronous action or a kept drop
 * (and no migration) as version 3, which added the words "sync" and
 * "keep"; one with a SPLIT (and none of those) as version 2, which added
 * SPLIT; any other plan as version 1, so that older builds still read
 * every plan that does not need what they lack. */
#define TMM_PLAN_FORMAT_VERSION 4u
#define TMM_PLAN_FORMAT_SPLIT 2u   /* the first version with SPLIT */
#define TMM_PLAN_FORMAT_SYNC 3u	   /* the first version with "sync" */
#define TMM_PLAN_FORMAT_MIGRATE 4u /* the first version with "migrate" */
#define SYNC_WORD "sync"	   /* an action's flag TMM_ACT_SYNC */
#define KEEP_WORD "keep"	   /* ... TMM_ACT_KEEP, also from version 3 */
#define MIGRATE_WORD "migrate"	   /* ... TMM_ACT_MIGRATE, from version 4 */

/*
 * The most accesses and actions a plan file may hold.  A damaged count is
 * refused before anything is allocated, and the writer refuses larger
 * plans, so it never writes what the reader would refuse.
 */
#define TMM_PLAN_FILE_MAX_ACCESSES (1u << 28)
#define TMM_PLAN_FILE_MAX_ACTIONS (1u << 28)

#define MAGIC "tensormm-plan"
#define END_PREFIX "end crc32 "
#define END_HEX 8 /* digits of the checksum */

/* A key of a tensor made outside iterations keeps its low 48 bits (slot
 * generation and index); bits 48..63 are the context serial. */
#define SERIAL_SHIFT 48
#define HANDLE_MASK ((UINT64_C(1) << SERIAL_SHIFT) - 1)
#define HANDLE_HEX 12 /* hex digits of 48 bits */
#define ORDINAL_MASK UINT64_C(0xffffffff)

#define POLICY_NONE "-" /* the policy line of a plan with no policy name */

/* The name of each advice, as an ADVISE line spells it (plan_syntax.c). */
extern const char *const tmm_plan_advice_names[TMM_PLAN_ADVICE_COUNT];

/* Writes a failing call's message into err, which may be NULL. */
__attribute__((format(printf, 3, 4)))
static inline void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Policy names are single words, so the policy line stays one token. */
static inline bool policy_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
	       c == '+';
}

#endif /* TMM_PLAN_SYNTAX_H */
