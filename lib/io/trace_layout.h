/* SPDX-License-Identifier: MIT */
/*
 * trace_layout.h — the bytes of a trace file, laid out the same for its
 * writer (trace_write.c) and its reader (trace_read.c); the layout, byte
 * by byte, is in docs/trace-format.md.
 *
 * Everything is encoded byte by byte, little-endian, with shifts: never by
 * writing a struct, whose padding and byte order belong to one compiler on
 * one machine.  A file is a header and then one self-contained record per
 * iteration, each with its own length and CRC-32, so the runtime can
 * append a record and flush it at the end of every iteration and a crash
 * leaves a readable prefix.
 *
 * Only lib/io/trace_*.c include this header: callers use trace_write.h
 * and trace_read.h.  So its macros and inline helpers keep the short
 * names they had when the codec was one file; what is linked carries the
 * tmm_trace_ prefix.
 */
#ifndef TMM_TRACE_LAYOUT_H
#define TMM_TRACE_LAYOUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

/* File header, version 1.  magic, version and header length are where they
 * are in every version; fields are added before the CRC, which is last. */
#define FH_MAGIC "TMMTRACE"
#define FH_MAGIC_LEN 8
#define FH_FIXED 16	   /* magic, version, header length */
#define FH_LEN_V1 144	   /* bytes of a version-1 header */
#define FH_LEN_MAX 65536u  /* larger is damage, not a future version */

/* Record: tag, payload length, payload, CRC-32 of the payload. */
#define REC_TAG "ITER"
#define REC_HEAD 12
#define REC_CRC 4
#define PAY_FIXED 48	   /* iteration, times, the six counts */
#define TENSOR_LEN 48
#define OP_LEN 64	   /* version 2: net_bytes added */
#define OP_LEN_V1 56
#define OPT_LEN 4
#define ACCESS_LEN 40
#define EVENT_LEN 24

/* The largest payload that respects TMM_TRACE_MAX_ELEMS (~46 GB). */
#define PAY_MAX                                                           \
	(PAY_FIXED + (uint64_t)TMM_TRACE_MAX_ELEMS *                      \
			     (TENSOR_LEN + OP_LEN + OPT_LEN + ACCESS_LEN + \
			      EVENT_LEN + 1))

static inline uint8_t *put_le(uint8_t *p, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + size;
}

static inline uint64_t get_le(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#define put32(p, v) put_le((p), (v), 4)
#define put64(p, v) put_le((p), (v), 8)
#define get32(p) ((uint32_t)get_le((p), 4))
#define get64(p) get_le((p), 8)

struct tmm_trace_field; /* one field of an element (trace_layout.c) */

/* How one array of a record is laid out. */
struct tmm_trace_array {
	const char *count; /* its count, for messages */
	size_t size;	   /* in memory */
	size_t wire;	   /* in the file */
	const struct tmm_trace_field *fields;
	size_t nfields;
};

/* The arrays of a record, in payload order, as this build writes them. */
extern const struct tmm_trace_array tmm_trace_arrays[6];

/* The arrays of a record of format `version` (1 up to
 * TMM_TRACE_FORMAT_VERSION), as a reader reads them. */
const struct tmm_trace_array *tmm_trace_arrays_of(uint32_t version);

/* Writes the element at `elem` of array *a at p, field by field; returns
 * the byte after it. */
uint8_t *tmm_trace_put_elem(uint8_t *p, const void *elem,
			    const struct tmm_trace_array *a);

/* Reads an element of array *a from p into `elem`; returns the byte after
 * it.  The element is zeroed already (calloc), reserved fields included. */
const uint8_t *tmm_trace_get_elem(const uint8_t *p, void *elem,
				  const struct tmm_trace_array *a);

/* The payload length for the six counts c[] (in payload order) of arrays
 * laid out as `arrays` says, or -1 if it would pass 2^64: each step checks
 * n + c * wire <= UINT64_MAX. */
int tmm_trace_payload_size(const struct tmm_trace_array *arrays,
			   const uint32_t c[6], uint64_t *out);

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

#endif /* TMM_TRACE_LAYOUT_H */
