/* SPDX-License-Identifier: MIT */
/*
 * trace_layout.c — the fields of the six arrays of a trace record (as
 * this build writes them, and as each older version laid them out), and
 * one element of them written and read field by field (trace_layout.h).
 * The writer and the reader go through these same tables, so the two
 * cannot disagree about where a field is.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace.h"
#include "trace_layout.h"

/* ------------------------------------------------------------------------
 * Little-endian fields
 *
 * An array element is written field by field in struct order, each field
 * as many bytes as its type (a double as its IEEE-754 bits), so the wire
 * size of an element is the sum of its fields: the structs have no
 * padding, which the asserts below hold them to.
 * ---------------------------------------------------------------------- */

struct tmm_trace_field {
	uint8_t off, size;
};

#define FIELD(type, m) { offsetof(type, m), sizeof(((type *)0)->m) }
#define TF(m) FIELD(struct tmm_trace_tensor, m)
#define OF(m) FIELD(struct tmm_trace_op, m)
#define AF(m) FIELD(struct tmm_trace_access, m)
#define EF(m) FIELD(struct tmm_trace_event, m)

static const struct tmm_trace_field tensor_fields[] = {
	TF(key), TF(bytes), TF(kind), TF(producer), TF(flags), TF(name),
	TF(alloc_ns), TF(free_ns),
};
static const struct tmm_trace_field op_fields[] = {
	OF(name), OF(kind), OF(flags), OF(first), OF(n_inputs),
	OF(n_outputs), OF(begin_ns), OF(end_ns), OF(stall_ns), OF(flops),
	OF(bytes), OF(net_bytes),
};
/* Version 1's op had no net_bytes: it reads as 0, no collective. */
static const struct tmm_trace_field op_fields_v1[] = {
	OF(name), OF(kind), OF(flags), OF(first), OF(n_inputs),
	OF(n_outputs), OF(begin_ns), OF(end_ns), OF(stall_ns), OF(flops),
	OF(bytes),
};
/* The access's slices and the event's flags were once reserved, written
 * as 0: readers that predate them read them and ignore them
 * (docs/trace-format.md, Versioning). */
static const struct tmm_trace_field access_fields[] = {
	AF(tensor), AF(op), AF(begin_ns), AF(end_ns), AF(device_in_use),
	AF(flags), AF(slices),
};
static const struct tmm_trace_field event_fields[] = {
	EF(kind), EF(tensor), EF(access), EF(flags), EF(at_ns),
};
static const struct tmm_trace_field u32_field[] = { { 0, 4 } };
static const struct tmm_trace_field byte_field[] = { { 0, 1 } };

#define ARRAY(count, type, wire, f)                                       \
	{ count, sizeof(type), wire, f, sizeof(f) / sizeof((f)[0]) }
#define ARRAYS(ops, op_len)                                               \
	{                                                                 \
		ARRAY("n_tensors", struct tmm_trace_tensor, TENSOR_LEN,   \
		      tensor_fields),                                     \
		ARRAY("n_ops", struct tmm_trace_op, op_len, ops),         \
		ARRAY("n_op_tensors", uint32_t, OPT_LEN, u32_field),      \
		ARRAY("n_accesses", struct tmm_trace_access, ACCESS_LEN,  \
		      access_fields),                                     \
		ARRAY("n_events", struct tmm_trace_event, EVENT_LEN,      \
		      event_fields),                                      \
		ARRAY("strings_len", char, 1, byte_field),                \
	}
const struct tmm_trace_array tmm_trace_arrays[6] =
	ARRAYS(op_fields, OP_LEN);
static const struct tmm_trace_array arrays_v1[6] =
	ARRAYS(op_fields_v1, OP_LEN_V1);
#undef ARRAYS
#undef ARRAY

const struct tmm_trace_array *tmm_trace_arrays_of(uint32_t version)
{
	return version == 1 ? arrays_v1 : tmm_trace_arrays;
}

/* Every member is in its table, so no padding means wire == sizeof. */
_Static_assert(sizeof(struct tmm_trace_tensor) == TENSOR_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_op) == OP_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_access) == ACCESS_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_event) == EVENT_LEN, "padding");
_Static_assert(sizeof(double) == 8, "doubles travel as 64 bits");

uint8_t *tmm_trace_put_elem(uint8_t *p, const void *elem,
			    const struct tmm_trace_array *a)
{
	for (size_t i = 0; i < a->nfields; i++) {
		const struct tmm_trace_field *f = &a->fields[i];
		const uint8_t *src = (const uint8_t *)elem + f->off;
		uint16_t v16;
		uint32_t v32;
		uint64_t v = 0;

		if (f->size == 1)
			v = *src;
		else if (f->size == 2)
			v = (memcpy(&v16, src, 2), v16);
		else if (f->size == 4)
			v = (memcpy(&v32, src, 4), v32);
		else
			memcpy(&v, src, 8);
		p = put_le(p, v, f->size);
	}
	return p;
}

const uint8_t *tmm_trace_get_elem(const uint8_t *p, void *elem,
				  const struct tmm_trace_array *a)
{
	for (size_t i = 0; i < a->nfields; p += a->fields[i++].size) {
		const struct tmm_trace_field *f = &a->fields[i];
		uint8_t *dst = (uint8_t *)elem + f->off;
		uint64_t v = get_le(p, f->size);
		uint16_t v16 = (uint16_t)v;
		uint32_t v32 = (uint32_t)v;

		if (f->size == 1)
			*dst = (uint8_t)v;
		else if (f->size == 2)
			memcpy(dst, &v16, 2);
		else if (f->size == 4)
			memcpy(dst, &v32, 4);
		else
			memcpy(dst, &v, 8);
	}
	return p;
}

/* ------------------------------------------------------------------------
 * Sizes, with overflow checked rather than assumed away
 * ---------------------------------------------------------------------- */

int tmm_trace_payload_size(const struct tmm_trace_array *arrays,
			   const uint32_t c[6], uint64_t *out)
{
	uint64_t n = PAY_FIXED;

	for (int i = 0; i < 6; i++) {
		if (c[i] > (UINT64_MAX - n) / arrays[i].wire)
			return -1;
		n += (uint64_t)c[i] * arrays[i].wire;
	}
	*out = n;
	return 0;
}
