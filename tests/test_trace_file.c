/* SPDX-License-Identifier: MIT */
/*
 * test_trace_file.c — Check suite for the trace file (lib/io/trace_write.c
 * and lib/io/trace_read.c) and the trace helpers (lib/io/trace.c).
 *
 * A hand-made trace with every kind of element and cross-reference goes
 * through the encoder, the decoder and a real file and must come back
 * field for field.  Then the reader is attacked: the file is cut at every
 * byte length, records get every byte flipped, and single fields are
 * changed with the checksum recomputed (by a bitwise CRC-32 written here,
 * independently of the library's table) so that the count and index
 * checks behind the checksum are reached.  Offsets come from the layout
 * documented in docs/trace-format.md, so the tests hold the code to the
 * document.  The cases on real files are in test_trace_file_io.c.
 */
#include "check_main.h"
#include "lib/base/crc32.h"
#include "lib/io/trace.h"
#include "lib/io/trace_file.h"
#include "lib/io/trace_read.h"
#include "lib/io/trace_write.h"
#include "tensormm.h"
#include "test_trace_file.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* Recomputes the checksum of the record at rec after a field changed. */
static void fix_record_crc(uint8_t *rec)
{
	uint64_t plen = le(rec + 4, 8);

	set_le(rec + REC_HEAD + plen, ref_crc32(rec + REC_HEAD, plen), 4);
}

/* A string table and the offset of each name in it. */
static const char names[] = "w\0x\0y\0loss\0conv1\0relu1";
enum { N_W = 0, N_X = 2, N_Y = 4, N_LOSS = 6, N_CONV = 11, N_RELU = 17 };

/*
 * A small trace with something of everything: four tensors (one unnamed,
 * one made and freed inside), two ops with inputs and outputs, a producer
 * link, accesses by ops and by acquire, events with and without a tensor.
 * Values depend on `iter` so records differ.
 */
void make_trace(struct tmm_trace *t, uint64_t iter)
{
	static const struct tmm_trace_tensor tensors[] = {
		{ 0x10001, 4096, TMM_PERSISTENT, TMM_TRACE_NONE, 0, N_W, 0, 0 },
		{ 0x10002, 2048, TMM_ACTIVATION, TMM_TRACE_NONE, 0, N_X, 0, 0 },
		{ TMM_KEY_IN_ITERATION | 0, 2048, TMM_ACTIVATION, 0,
		  TMM_TT_MADE_INSIDE, N_Y, 100, 0 },
		{ TMM_KEY_IN_ITERATION | 1, 8, TMM_SCRATCH, 1,
		  TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE, TMM_TRACE_NONE,
		  300, 900 },
	};
	static const uint32_t op_tensors[] = { 0, 1, 2, 2, 3 };
	static const struct tmm_trace_access accesses[] = {
		{ 0, 0, 100, 150, 4096, TMM_TA_READ, 0 },
		{ 1, 0, 100, 150, 6144, TMM_TA_READ, 0 },
		{ 2, 0, 100, 200, 8192, TMM_TA_WRITE, 0 },
		{ 2, 1, 300, 400, 8192, TMM_TA_READ, 0 },
		{ 3, 1, 300, 400, 8200, TMM_TA_READ | TMM_TA_WRITE, 0 },
		{ 0, TMM_TRACE_NONE, 500, 500, 8200, TMM_TA_READ, 0 },
	};
	static const struct tmm_trace_event events[] = {
		{ TMM_EV_SWAP_OUT, 1, 2, 0, 210 },
		{ TMM_EV_SWAP_IN, 1, 4, 0, 420 },
		{ TMM_EV_DIVERGED, TMM_TRACE_NONE, 6, 0, 999 },
	};
	struct tmm_trace_op ops[] = {
		{ N_CONV, TMM_OP_CONV, TMM_OP_PURE, 0, 2, 1, 100, 200, 0,
		  1.5e9, 3.25e6, 0 },
		{ N_RELU, TMM_OP_ACT, TMM_OP_PURE | TMM_OP_BACKWARD, 3, 1, 1,
		  300, 400, 77, 0.1, 16384.0, 0 },
	};

	memset(t, 0, sizeof(*t));
	t->iteration = iter;
	t->duration_ns = 1000 + iter;
	t->stall_ns = 77 * iter;
	ops[1].stall_ns = iter;
	ops[0].flops += (double)iter;

	t->tensors = malloc(sizeof(tensors));
	t->ops = malloc(sizeof(ops));
	t->op_tensors = malloc(sizeof(op_tensors));
	t->accesses = malloc(sizeof(accesses));
	t->events = malloc(sizeof(events));
	t->strings = malloc(sizeof(names));
	ck_assert(t->tensors && t->ops && t->op_tensors && t->accesses &&
		  t->events && t->strings);
	memcpy(t->tensors, tensors, sizeof(tensors));
	memcpy(t->ops, ops, sizeof(ops));
	memcpy(t->op_tensors, op_tensors, sizeof(op_tensors));
	memcpy(t->accesses, accesses, sizeof(accesses));
	memcpy(t->events, events, sizeof(events));
	memcpy(t->strings, names, sizeof(names));
	t->n_tensors = 4;
	t->n_ops = 2;
	t->n_op_tensors = 5;
	t->n_accesses = 6;
	t->n_events = 3;
	t->strings_len = sizeof(names);
	t->tensors[1].bytes += iter;
}

void assert_trace_eq(const struct tmm_trace *a,
		     const struct tmm_trace *b)
{
	ck_assert_uint_eq(a->iteration, b->iteration);
	ck_assert_uint_eq(a->duration_ns, b->duration_ns);
	ck_assert_uint_eq(a->stall_ns, b->stall_ns);
	ck_assert_uint_eq(a->n_tensors, b->n_tensors);
	ck_assert_uint_eq(a->n_ops, b->n_ops);
	ck_assert_uint_eq(a->n_op_tensors, b->n_op_tensors);
	ck_assert_uint_eq(a->n_accesses, b->n_accesses);
	ck_assert_uint_eq(a->n_events, b->n_events);
	ck_assert_uint_eq(a->strings_len, b->strings_len);
	for (uint32_t i = 0; i < a->n_tensors; i++) {
		const struct tmm_trace_tensor *x = &a->tensors[i],
					      *y = &b->tensors[i];

		ck_assert_uint_eq(x->key, y->key);
		ck_assert_uint_eq(x->bytes, y->bytes);
		ck_assert_uint_eq(x->kind, y->kind);
		ck_assert_uint_eq(x->producer, y->producer);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->name, y->name);
		ck_assert_uint_eq(x->alloc_ns, y->alloc_ns);
		ck_assert_uint_eq(x->free_ns, y->free_ns);
	}
	for (uint32_t i = 0; i < a->n_ops; i++) {
		const struct tmm_trace_op *x = &a->ops[i], *y = &b->ops[i];

		ck_assert_uint_eq(x->name, y->name);
		ck_assert_uint_eq(x->kind, y->kind);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->first, y->first);
		ck_assert_uint_eq(x->n_inputs, y->n_inputs);
		ck_assert_uint_eq(x->n_outputs, y->n_outputs);
		ck_assert_uint_eq(x->begin_ns, y->begin_ns);
		ck_assert_uint_eq(x->end_ns, y->end_ns);
		ck_assert_uint_eq(x->stall_ns, y->stall_ns);
		/* Bit for bit: doubles travel as their IEEE bits. */
		ck_assert(memcmp(&x->flops, &y->flops, sizeof(double)) == 0);
		ck_assert(memcmp(&x->bytes, &y->bytes, sizeof(double)) == 0);
		ck_assert(memcmp(&x->net_bytes, &y->net_bytes,
				 sizeof(double)) == 0);
	}
	for (uint32_t i = 0; i < a->n_op_tensors; i++)
		ck_assert_uint_eq(a->op_tensors[i], b->op_tensors[i]);
	for (uint32_t i = 0; i < a->n_accesses; i++) {
		const struct tmm_trace_access *x = &a->accesses[i],
					      *y = &b->accesses[i];

		ck_assert_uint_eq(x->tensor, y->tensor);
		ck_assert_uint_eq(x->op, y->op);
		ck_assert_uint_eq(x->begin_ns, y->begin_ns);
		ck_assert_uint_eq(x->end_ns, y->end_ns);
		ck_assert_uint_eq(x->device_in_use, y->device_in_use);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->slices, y->slices);
	}
	for (uint32_t i = 0; i < a->n_events; i++) {
		const struct tmm_trace_event *x = &a->events[i],
					     *y = &b->events[i];

		ck_assert_uint_eq(x->kind, y->kind);
		ck_assert_uint_eq(x->tensor, y->tensor);
		ck_assert_uint_eq(x->access, y->access);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->at_ns, y->at_ns);
	}
	ck_assert(a->strings_len == 0 ||
		  memcmp(a->strings, b->strings, a->strings_len) == 0);
}

/* ------------------------------------------------------------------------
 * CRC, validation, copy
 * ---------------------------------------------------------------------- */

START_TEST(test_crc32_known_values)
{
	uint8_t buf[1000];

	/* The standard check value of CRC-32/ISO-HDLC. */
	ck_assert_uint_eq(tmm_crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(tmm_crc32(0, "", 0), 0);
	ck_assert_uint_eq(tmm_crc32(tmm_crc32(0, "1234", 4), "56789", 5),
			  0xcbf43926u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 3));
	ck_assert_uint_eq(tmm_crc32(0, buf, sizeof(buf)),
			  ref_crc32(buf, sizeof(buf)));
}
END_TEST

START_TEST(test_validate_accepts_good_traces)
{
	struct tmm_trace t = { 0 };
	char err[256] = "untouched";

	/* The empty trace is valid. */
	ck_assert_int_eq(tmm_trace_validate(&t, err, sizeof(err)), 0);
	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_validate(&t, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(tmm_trace_validate(&t, NULL, 0), 0);
	/* Edge values that are allowed: NONE, and an event after the last
	 * access. */
	t.events[0].access = t.n_accesses;
	t.tensors[1].name = TMM_TRACE_NONE;
	t.ops[0].begin_ns = t.ops[0].end_ns;
	ck_assert_int_eq(tmm_trace_validate(&t, err, sizeof(err)), 0);
	tmm_trace_free(&t);
	ck_assert_int_eq(tmm_trace_validate(NULL, err, sizeof(err)), -EINVAL);
}
END_TEST

struct mutation {
	const char *what; /* expected in the message */
	void (*apply)(struct tmm_trace *t);
};

static void bad_producer(struct tmm_trace *t) { t->tensors[2].producer = 2; }
static void bad_tkind(struct tmm_trace *t) { t->tensors[0].kind = 4; }
static void bad_tflags(struct tmm_trace *t) { t->tensors[0].flags = 0x10; }
static void bad_tname(struct tmm_trace *t)
{
	t->tensors[1].name = t->strings_len;
}
static void bad_op_range(struct tmm_trace *t) { t->ops[1].n_outputs = 2; }
static void bad_okind(struct tmm_trace *t)
{
	t->ops[0].kind = TMM_OP_KIND_COUNT;
}
static void bad_oflags(struct tmm_trace *t) { t->ops[0].flags = 0x8; }
static void bad_otime(struct tmm_trace *t) { t->ops[1].begin_ns = 401; }
static void bad_oname(struct tmm_trace *t) { t->ops[0].name = 1000; }
static void bad_onet(struct tmm_trace *t) { t->ops[1].net_bytes = 64; }
static void bad_optensor(struct tmm_trace *t) { t->op_tensors[4] = 4; }
static void bad_atensor(struct tmm_trace *t) { t->accesses[3].tensor = 9; }
static void bad_aop(struct tmm_trace *t) { t->accesses[0].op = 2; }
static void bad_aflags(struct tmm_trace *t) { t->accesses[0].flags = 7; }
static void bad_atime(struct tmm_trace *t) { t->accesses[0].end_ns = 99; }
static void bad_ekind(struct tmm_trace *t)
{
	t->events[0].kind = TMM_EV_KIND_COUNT;
}
static void bad_etensor(struct tmm_trace *t) { t->events[1].tensor = 4; }
static void bad_eaccess(struct tmm_trace *t) { t->events[2].access = 7; }
static void bad_strings(struct tmm_trace *t)
{
	t->strings[t->strings_len - 1] = 'x';
}
static void bad_count(struct tmm_trace *t)
{
	t->n_op_tensors = TMM_TRACE_MAX_ELEMS + 1;
}
static void bad_null(struct tmm_trace *t)
{
	free(t->events);
	t->events = NULL;
}

static const struct mutation mutations[] = {
	{ "producer 2 is not an op", bad_producer },
	{ "kind 4 is not a tensor kind", bad_tkind },
	{ "tensor 0 (\"w\"): flags 0x10", bad_tflags },
	{ "tensor 1: name offset", bad_tname },
	{ "run past the 5 entries", bad_op_range },
	{ "is not an op kind", bad_okind },
	{ "op 0 (\"conv1\"): flags 0x8", bad_oflags },
	{ "op 1 (\"relu1\"): begins at 401", bad_otime },
	{ "op 0: name offset 1000", bad_oname },
	{ "op 1 (\"relu1\"): net_bytes 64, but only a collective", bad_onet },
	{ "op_tensors[4] is 4", bad_optensor },
	{ "access 3: tensor 9", bad_atensor },
	{ "access 0: op 2", bad_aop },
	{ "access 0: flags 0x7", bad_aflags },
	{ "access 0: begins at 100", bad_atime },
	{ "is not an event kind", bad_ekind },
	{ "event 1: tensor 4", bad_etensor },
	{ "event 2: follows access 7", bad_eaccess },
	{ "does not end with a NUL", bad_strings },
	{ "more than the 268435456", bad_count },
	{ "array is NULL", bad_null },
};

START_TEST(test_validate_rejects_each_bad_reference)
{
	const struct mutation *m = &mutations[_i];
	struct tmm_trace t;
	char err[256];
	uint8_t *buf = (uint8_t *)"x";
	size_t len = 5;

	make_trace(&t, 1);
	m->apply(&t);
	ck_assert_int_eq(tmm_trace_validate(&t, err, sizeof(err)), -EINVAL);
	HAS(err, m->what);
	ck_assert_int_eq(tmm_trace_validate(&t, NULL, 0), -EINVAL);
	/* The encoder refuses it too, and leaves nothing to free. */
	ck_assert_int_eq(tmm_trace_encode(&t, &buf, &len), -EINVAL);
	ck_assert_ptr_null(buf);
	ck_assert_uint_eq(len, 0);
	if (m->apply == bad_count)
		t.n_op_tensors = 5; /* so that free sees the real array */
	tmm_trace_free(&t);
}
END_TEST

START_TEST(test_copy_is_deep_and_free_zeroes)
{
	struct tmm_trace a, b, zero;

	memset(&zero, 0, sizeof(zero));
	make_trace(&a, 3);
	memset(&b, 0xa5, sizeof(b));
	ck_assert_int_eq(tmm_trace_copy(&b, &a), 0);
	assert_trace_eq(&a, &b);
	ck_assert_ptr_ne(a.tensors, b.tensors);
	ck_assert_ptr_ne(a.strings, b.strings);

	b.tensors[0].bytes = 1;
	b.ops[1].end_ns = 12345;
	b.op_tensors[0] = 3;
	b.accesses[2].device_in_use = 1;
	b.events[0].at_ns = 5;
	b.strings[0] = 'Q';
	ck_assert_uint_eq(a.tensors[0].bytes, 4096);
	ck_assert_uint_eq(a.ops[1].end_ns, 400);
	ck_assert_uint_eq(a.op_tensors[0], 0);
	ck_assert_uint_eq(a.accesses[2].device_in_use, 8192);
	ck_assert_uint_eq(a.events[0].at_ns, 210);
	ck_assert_str_eq(tmm_trace_str(&a, N_W), "w");

	tmm_trace_free(&b);
	ck_assert(memcmp(&b, &zero, sizeof(b)) == 0);
	tmm_trace_free(&a);
	ck_assert(memcmp(&a, &zero, sizeof(a)) == 0);
	tmm_trace_free(&a); /* twice is harmless */
	tmm_trace_free(NULL);

	/* An empty trace copies to an empty trace. */
	memset(&b, 0xa5, sizeof(b));
	ck_assert_int_eq(tmm_trace_copy(&b, &a), 0);
	ck_assert(memcmp(&b, &zero, sizeof(b)) == 0);
	ck_assert_int_eq(tmm_trace_copy(NULL, &a), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Encoding
 * ---------------------------------------------------------------------- */

START_TEST(test_encode_decode_round_trip)
{
	struct tmm_trace a, b, back;
	uint8_t *ra, *rb, *both;
	size_t la, lb, used;
	char err[512];

	make_trace(&a, 1);
	make_trace(&b, 2);
	ck_assert_int_eq(tmm_trace_encode(&a, &ra, &la), 0);
	ck_assert_int_eq(tmm_trace_encode(&b, &rb, &lb), 0);
	/* The documented size: header, fixed part, arrays, strings, CRC. */
	ck_assert_uint_eq(la, REC_HEAD + PAY_FIXED + 4 * TENSOR_LEN +
				      2 * OP_LEN + 5 * 4 + 6 * ACCESS_LEN +
				      3 * EVENT_LEN + sizeof(names) + 4);
	ck_assert(memcmp(ra, "ITER", 4) == 0);
	ck_assert_uint_eq(le(ra + 4, 8), la - REC_HEAD - 4);
	ck_assert_uint_eq(le(ra + REC_HEAD, 8), 1);	      /* iteration */
	ck_assert_uint_eq(le(ra + REC_HEAD + 8, 8), 1001); /* duration */
	ck_assert_uint_eq(le(ra + REC_HEAD + PAY_COUNTS, 4), 4); /* tensors */
	ck_assert_uint_eq(le(ra + la - 4, 4),
			  ref_crc32(ra + REC_HEAD, la - REC_HEAD - 4));
	/* Tensor 2's key and producer, where the document puts them. */
	ck_assert_uint_eq(le(ra + REC_HEAD + PAY_FIXED + 2 * TENSOR_LEN, 8),
			  TMM_KEY_IN_ITERATION);
	ck_assert_uint_eq(le(ra + REC_HEAD + PAY_FIXED + 2 * TENSOR_LEN + 20,
			     4), 0);

	/* Two records end to end decode in turn. */
	both = malloc(la + lb);
	ck_assert_ptr_nonnull(both);
	memcpy(both, ra, la);
	memcpy(both + la, rb, lb);
	ck_assert_int_eq(tmm_trace_decode(both, la + lb, &back, &used, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(used, la);
	assert_trace_eq(&a, &back);
	tmm_trace_free(&back);
	ck_assert_int_eq(tmm_trace_decode(both + la, lb, &back, &used, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(used, lb);
	assert_trace_eq(&b, &back);
	tmm_trace_free(&back);

	free(both);
	free(ra);
	free(rb);
	tmm_trace_free(&a);
	tmm_trace_free(&b);
}
END_TEST

START_TEST(test_empty_trace_round_trip)
{
	struct tmm_trace t = { .iteration = 9, .duration_ns = 5 }, back;
	uint8_t *rec;
	size_t len, used;
	char err[512];

	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	ck_assert_uint_eq(len, REC_HEAD + PAY_FIXED + 4);
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(used, len);
	assert_trace_eq(&t, &back);
	ck_assert_ptr_null(back.tensors);
	ck_assert_ptr_null(back.strings);
	free(rec);
	ck_assert_int_eq(tmm_trace_encode(&t, NULL, &len), -EINVAL);
}
END_TEST

/* Every byte of every field must travel: values that fill their types. */
START_TEST(test_extreme_values_round_trip)
{
	static char strings[] = "n";
	uint32_t op_tensors[301] = { 0 };
	struct tmm_trace_tensor tensor = {
		UINT64_MAX, UINT64_MAX - 1, TMM_SCRATCH, 0, 0x3, 0,
		UINT64_MAX - 2, UINT64_MAX - 3,
	};
	struct tmm_trace_op op = {
		TMM_TRACE_NONE, TMM_OP_COLLECTIVE, 0x3, 0, 300, 1,
		0x0123456789abcdefull, UINT64_MAX, 0xfedcba9876543210ull,
		-0.0, 1e308, /* -0.0: the sign bit alone must survive */
		4.9e-324, /* the least denormal: the low bit alone */
	};
	struct tmm_trace_access access = {
		0, TMM_TRACE_NONE, 1, 1, UINT64_MAX, 0x3, 0,
	};
	/* The highest kind a file holds (TMM_EV_FREED stays in memory). */
	struct tmm_trace_event event = {
		TMM_EV_DIVERGED, TMM_TRACE_NONE, 1, 0, UINT64_MAX,
	};
	struct tmm_trace t = {
		.iteration = UINT64_MAX, .duration_ns = 1ull << 63,
		.stall_ns = 0x8000000000000001ull,
		.tensors = &tensor, .n_tensors = 1, .ops = &op, .n_ops = 1,
		.op_tensors = op_tensors, .n_op_tensors = 301,
		.accesses = &access, .n_accesses = 1,
		.events = &event, .n_events = 1,
		.strings = strings, .strings_len = sizeof(strings),
	}, back;
	uint8_t *rec;
	size_t len, used;
	char err[512];

	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), 0);
	assert_trace_eq(&t, &back);
	ck_assert_uint_eq(back.ops[0].n_inputs, 300);
	tmm_trace_free(&back);
	free(rec);
}
END_TEST

START_TEST(test_every_byte_flip_of_a_record_is_rejected)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xff };
	struct tmm_trace t, back;
	uint8_t *rec;
	size_t len, used;
	char err[512];

	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	for (size_t i = 0; i < len; i++)
		for (size_t f = 0; f < sizeof(flips); f++) {
			int ret;

			rec[i] ^= flips[f];
			ret = tmm_trace_decode(rec, len, &back, &used, err,
					       sizeof(err));
			rec[i] ^= flips[f];
			REQUIRE(ret == -EBADMSG, "flipping byte %zu with 0x%x "
				"was accepted (%d)", i, flips[f], ret);
			REQUIRE(back.tensors == NULL && back.n_tensors == 0,
				"a failed decode left a trace behind");
			REQUIRE(strstr(err, "at byte") ||
				strstr(err, "record at byte"),
				"no offset in \"%s\"", err);
		}
	/* Payload bytes are caught by the checksum (or the count check). */
	rec[REC_HEAD + PAY_FIXED + 3] ^= 0x10;
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), -EBADMSG);
	HAS(err, "checksum");
	HAS(err, "corrupt");
	/* Untouched, it still decodes. */
	rec[REC_HEAD + PAY_FIXED + 3] ^= 0x10;
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), 0);
	tmm_trace_free(&back);
	free(rec);
	tmm_trace_free(&t);
}
END_TEST

/* Encodes make_trace(1), changes 4 bytes at payload offset `at` to v,
 * fixes the checksum and returns the decoder's verdict. */
static int decode_with(size_t at, uint32_t v, char *err, size_t errlen)
{
	struct tmm_trace t, back;
	uint8_t *rec;
	size_t len, used;
	int ret;

	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	set_le(rec + REC_HEAD + at, v, 4);
	fix_record_crc(rec);
	ret = tmm_trace_decode(rec, len, &back, &used, err, errlen);
	ck_assert_ptr_null(back.tensors);
	free(rec);
	tmm_trace_free(&t);
	return ret;
}

START_TEST(test_counts_beyond_the_payload_are_rejected)
{
	char err[512];

	/* One tensor more than the payload holds. */
	ck_assert_int_eq(decode_with(PAY_COUNTS, 5, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "the counts (5 tensors");
	HAS(err, "at byte 36");
	/* A count past the cap is refused before any arithmetic. */
	ck_assert_int_eq(decode_with(PAY_COUNTS + 12, 0xffffffffu, err,
				     sizeof(err)), -EBADMSG);
	HAS(err, "n_accesses is 4294967295, more than");
	/* Fewer strings than the payload holds is as wrong as more. */
	ck_assert_int_eq(decode_with(PAY_COUNTS + 20, 1, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "need a");
}
END_TEST

START_TEST(test_bad_index_behind_a_good_checksum_is_rejected)
{
	char err[512];
	size_t tensor2 = PAY_FIXED + 2 * TENSOR_LEN;

	/* Tensor 2's producer (offset 20 in a tensor): op 7 of 2. */
	ck_assert_int_eq(decode_with(tensor2 + 20, 7, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "producer 7 is not an op");
	HAS(err, "inconsistent");
	HAS(err, "iteration 1");
	/* Tensor 0's name (offset 28): one past the string table. */
	ck_assert_int_eq(decode_with(PAY_FIXED + 28, sizeof(names), err,
				     sizeof(err)), -EBADMSG);
	HAS(err, "name offset 23 is outside");
	/* An op_tensors entry past the tensors. */
	ck_assert_int_eq(decode_with(PAY_FIXED + 4 * TENSOR_LEN + 2 * OP_LEN,
				     4, err, sizeof(err)), -EBADMSG);
	HAS(err, "op_tensors[0] is 4");
	/* Event 0's kind. */
	ck_assert_int_eq(decode_with(PAY_FIXED + 4 * TENSOR_LEN + 2 * OP_LEN +
					     5 * 4 + 6 * ACCESS_LEN,
				     TMM_EV_KIND_COUNT, err, sizeof(err)),
			 -EBADMSG);
	HAS(err, "event 0: kind");
}
END_TEST

START_TEST(test_string_table_without_nul_is_rejected)
{
	struct tmm_trace t, back;
	uint8_t *rec;
	size_t len, used;
	char err[512];

	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	rec[len - 5] = 'x'; /* the string table's last byte */
	fix_record_crc(rec);
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), -EBADMSG);
	HAS(err, "does not end with a NUL");
	free(rec);
	tmm_trace_free(&t);
}
END_TEST

START_TEST(test_unknown_tag_and_short_buffers)
{
	struct tmm_trace t, back;
	uint8_t *rec;
	size_t len, used;
	char err[512];

	make_trace(&t, 1);
	ck_assert_int_eq(tmm_trace_encode(&t, &rec, &len), 0);
	memcpy(rec, "ITEX", 4);
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), -EBADMSG);
	HAS(err, "expected the record tag \"ITER\"");
	memcpy(rec, "ITER", 4);
	for (size_t cut = 0; cut < len; cut++) {
		int ret = tmm_trace_decode(rec, cut, &back, &used, err,
					   sizeof(err));

		REQUIRE(ret == -EBADMSG, "a record cut to %zu bytes was "
			"accepted", cut);
		REQUIRE(strstr(err, "truncated"), "cut to %zu: \"%s\"", cut,
			err);
	}
	/* A payload length of 2^63 is refused without reading on. */
	set_le(rec + 4, 1ull << 63, 8);
	ck_assert_int_eq(tmm_trace_decode(rec, len, &back, &used, err,
					  sizeof(err)), -EBADMSG);
	HAS(err, "claims a 9223372036854775808-byte payload");
	free(rec);
	tmm_trace_free(&t);
}
END_TEST

static Suite *trace_file_suite(void)
{
	Suite *suite = suite_create("trace_file");
	TCase *trace = tcase_create("trace");
	TCase *encoding = tcase_create("encoding");

	tcase_add_test(trace, test_crc32_known_values);
	tcase_add_test(trace, test_validate_accepts_good_traces);
	tcase_add_loop_test(trace, test_validate_rejects_each_bad_reference,
			    0, (int)(sizeof(mutations) / sizeof(mutations[0])));
	tcase_add_test(trace, test_copy_is_deep_and_free_zeroes);
	suite_add_tcase(suite, trace);

	tcase_add_test(encoding, test_encode_decode_round_trip);
	tcase_add_test(encoding, test_empty_trace_round_trip);
	tcase_add_test(encoding, test_extreme_values_round_trip);
	tcase_add_test(encoding, test_every_byte_flip_of_a_record_is_rejected);
	tcase_add_test(encoding, test_counts_beyond_the_payload_are_rejected);
	tcase_add_test(encoding,
		       test_bad_index_behind_a_good_checksum_is_rejected);
	tcase_add_test(encoding, test_string_table_without_nul_is_rejected);
	tcase_add_test(encoding, test_unknown_tag_and_short_buffers);
	suite_add_tcase(suite, encoding);

	add_trace_file_io_tests(suite);
	add_trace_file_safety_tests(suite);
	return suite;
}

int main(void)
{
	return check_main(trace_file_suite);
}
