/*
 * trace_file.c — writing and reading trace files (docs/trace-format.md).
 *
 * Everything is encoded byte by byte, little-endian, with shifts: never by
 * writing a struct, whose padding and byte order belong to one compiler on
 * one machine.  A file is a header and then one self-contained record per
 * iteration, each with its own length and CRC-32, so the runtime can
 * append a record and flush it at the end of every iteration and a crash
 * leaves a readable prefix.
 *
 * The reader trusts nothing it has not checked: a length against the bytes
 * that follow, the counts against the record's length (before allocating
 * anything), the checksum, and finally every index with
 * tmm_trace_validate(), so a planner never indexes out of an array because
 * a file was damaged.  Its messages say which file, which record, which
 * byte, what was expected and found, and what to do about it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/crc32.h"
#include "trace.h"
#include "trace_file.h"

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
#define OP_LEN 56
#define OPT_LEN 4
#define ACCESS_LEN 40
#define EVENT_LEN 24

/* The largest payload that respects TMM_TRACE_MAX_ELEMS (~46 GB). */
#define PAY_MAX                                                           \
	(PAY_FIXED + (uint64_t)TMM_TRACE_MAX_ELEMS *                      \
			     (TENSOR_LEN + OP_LEN + OPT_LEN + ACCESS_LEN + \
			      EVENT_LEN + 1))

#define READ_STEP ((size_t)1 << 20)

#define ADVICE_TRUNC                                                      \
	"the file is truncated: it may still be being written, or the run " \
	"was killed; re-record it with TENSORMM_TRACE"
#define ADVICE_CORRUPT                                                    \
	"the file is corrupt (damaged on disk or in a copy, or not written " \
	"by libtensormm); re-record it with TENSORMM_TRACE"
#define ADVICE_INVALID                                                    \
	"its checksum matches, so the program that wrote it recorded an "  \
	"inconsistent trace: please report this as a bug"

struct tmm_trace_writer {
	FILE *f;
	char *path;
	uint64_t records; /* written */
	uint64_t offset;  /* bytes written */
	int error;	  /* a failed write: every later append fails */
};

struct tmm_trace_reader {
	FILE *f;
	char *path;
	uint64_t offset;	 /* of the next record */
	uint64_t records;	 /* read */
	uint64_t last_iteration; /* of the last record read */
	uint8_t *buf;		 /* the record being read */
	size_t cap;
	int at_end;
	int error; /* sticky: returned again with msg */
	char msg[1024];
};

/* ------------------------------------------------------------------------
 * Little-endian fields
 *
 * An array element is written field by field in struct order, each field
 * as many bytes as its type (a double as its IEEE-754 bits), so the wire
 * size of an element is the sum of its fields: the structs have no
 * padding, which the asserts below hold them to.
 * ---------------------------------------------------------------------- */

static uint8_t *put_le(uint8_t *p, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + size;
}

static uint64_t get_le(const uint8_t *p, unsigned size)
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

struct field {
	uint8_t off, size;
	uint8_t reserved; /* written as 0, read as 0 */
};

#define FIELD(type, m) { offsetof(type, m), sizeof(((type *)0)->m), 0 }
#define RESERVED(type, m) { offsetof(type, m), sizeof(((type *)0)->m), 1 }
#define TF(m) FIELD(struct tmm_trace_tensor, m)
#define OF(m) FIELD(struct tmm_trace_op, m)
#define AF(m) FIELD(struct tmm_trace_access, m)
#define EF(m) FIELD(struct tmm_trace_event, m)

static const struct field tensor_fields[] = {
	TF(key), TF(bytes), TF(kind), TF(producer), TF(flags), TF(name),
	TF(alloc_ns), TF(free_ns),
};
static const struct field op_fields[] = {
	OF(name), OF(kind), OF(flags), OF(first), OF(n_inputs),
	OF(n_outputs), OF(begin_ns), OF(end_ns), OF(stall_ns), OF(flops),
	OF(bytes),
};
/* Reserved fields are written as 0, so a later version may give them a
 * meaning that version-1 readers ignore. */
static const struct field access_fields[] = {
	AF(tensor), AF(op), AF(begin_ns), AF(end_ns), AF(device_in_use),
	AF(flags), AF(slices),
};
static const struct field event_fields[] = {
	EF(kind), EF(tensor), EF(access),
	RESERVED(struct tmm_trace_event, reserved), EF(at_ns),
};
static const struct field u32_field[] = { { 0, 4, 0 } };
static const struct field byte_field[] = { { 0, 1, 0 } };

/* The arrays of a record, in payload order. */
static const struct array {
	const char *count; /* its count, for messages */
	size_t size;	   /* in memory */
	size_t wire;	   /* in the file */
	const struct field *fields;
	size_t nfields;
} arrays[6] = {
#define ARRAY(count, type, wire, f)                                       \
	{ count, sizeof(type), wire, f, sizeof(f) / sizeof((f)[0]) }
	ARRAY("n_tensors", struct tmm_trace_tensor, TENSOR_LEN,
	      tensor_fields),
	ARRAY("n_ops", struct tmm_trace_op, OP_LEN, op_fields),
	ARRAY("n_op_tensors", uint32_t, OPT_LEN, u32_field),
	ARRAY("n_accesses", struct tmm_trace_access, ACCESS_LEN,
	      access_fields),
	ARRAY("n_events", struct tmm_trace_event, EVENT_LEN, event_fields),
	ARRAY("strings_len", char, 1, byte_field),
#undef ARRAY
};

/* Every member is in its table, so no padding means wire == sizeof. */
_Static_assert(sizeof(struct tmm_trace_tensor) == TENSOR_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_op) == OP_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_access) == ACCESS_LEN, "padding");
_Static_assert(sizeof(struct tmm_trace_event) == EVENT_LEN, "padding");
_Static_assert(sizeof(double) == 8, "doubles travel as 64 bits");

static uint8_t *put_elem(uint8_t *p, const void *elem, const struct array *a)
{
	for (size_t i = 0; i < a->nfields; i++) {
		const struct field *f = &a->fields[i];
		const uint8_t *src = (const uint8_t *)elem + f->off;
		uint16_t v16;
		uint32_t v32;
		uint64_t v = 0;

		if (f->reserved)
			v = 0;
		else if (f->size == 1)
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

/* The element is zeroed already (calloc), reserved fields included. */
static const uint8_t *get_elem(const uint8_t *p, void *elem,
			       const struct array *a)
{
	for (size_t i = 0; i < a->nfields; p += a->fields[i++].size) {
		const struct field *f = &a->fields[i];
		uint8_t *dst = (uint8_t *)elem + f->off;
		uint64_t v = get_le(p, f->size);
		uint16_t v16 = (uint16_t)v;
		uint32_t v32 = (uint32_t)v;

		if (f->reserved)
			continue;
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

/* The payload length for the six counts c[] (in payload order), or -1
 * if it would pass 2^64: each step checks n + c * wire <= UINT64_MAX. */
static int payload_size(const uint32_t c[6], uint64_t *out)
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

__attribute__((format(printf, 3, 4)))
static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------------
 * Encoding
 * ---------------------------------------------------------------------- */

/* Destructions are events in memory only: a file orders them by the
 * tensors' free_ns, and version-1 readers know no such kind. */
static bool freed_event(const struct tmm_trace_event *ev)
{
	return ev->kind == TMM_EV_FREED;
}

/* tmm_trace_encode, for a trace known to be valid. */
static int encode_valid(const struct tmm_trace *t, uint8_t **buf, size_t *len)
{
	uint32_t c[6] = { t->n_tensors, t->n_ops, t->n_op_tensors,
			  t->n_accesses, 0, t->strings_len };
	const void *arr[6] = { t->tensors, t->ops, t->op_tensors,
			       t->accesses, t->events, t->strings };
	uint64_t plen;
	uint8_t *out, *p;

	for (uint32_t i = 0; i < t->n_events; i++)
		c[4] += !freed_event(&t->events[i]);
	/* Validated counts cannot overflow 64 bits, but size_t may be 32. */
	if (payload_size(c, &plen) < 0 ||
	    plen > SIZE_MAX - REC_HEAD - REC_CRC)
		return -ENOMEM;
	out = malloc((size_t)plen + REC_HEAD + REC_CRC);
	if (!out)
		return -ENOMEM;

	memcpy(out, REC_TAG, 4);
	p = put64(out + 4, plen);
	p = put64(p, t->iteration);
	p = put64(p, t->duration_ns);
	p = put64(p, t->stall_ns);
	for (int i = 0; i < 6; i++)
		p = put32(p, c[i]);
	for (int a = 0; a < 6; a++) {
		uint32_t n = a == 4 ? t->n_events : c[a];

		for (uint32_t i = 0; i < n; i++)
			if (a != 4 || !freed_event(&t->events[i]))
				p = put_elem(p, (const uint8_t *)arr[a] +
							(size_t)i *
								arrays[a].size,
					     &arrays[a]);
	}
	put32(p, tmm_crc32(0, out + REC_HEAD, (size_t)plen));

	*buf = out;
	*len = (size_t)plen + REC_HEAD + REC_CRC;
	return 0;
}

int tmm_trace_encode(const struct tmm_trace *t, uint8_t **buf, size_t *len)
{
	if (!buf || !len)
		return -EINVAL;
	*buf = NULL;
	*len = 0;
	if (tmm_trace_validate(t, NULL, 0) < 0)
		return -EINVAL;
	return encode_valid(t, buf, len);
}

/* ------------------------------------------------------------------------
 * Decoding
 * ---------------------------------------------------------------------- */

/*
 * Checks the payload's lengths and counts, from the record header at buf
 * (len bytes available, buf at byte `base` of the file): returns 0 with
 * the payload length and counts, or -EBADMSG with a message.
 */
static int check_lengths(const uint8_t *buf, size_t len, uint64_t base,
			 uint64_t *plen_out, uint32_t c[6], char *err,
			 size_t errlen)
{
	uint64_t plen, need = 0;

	if (len < REC_HEAD) {
		say(err, errlen, "at byte %llu: a record header needs %d bytes "
		    "but only %zu remain; " ADVICE_TRUNC,
		    (unsigned long long)base, REC_HEAD, len);
		return -EBADMSG;
	}
	if (memcmp(buf, REC_TAG, 4)) {
		say(err, errlen, "at byte %llu: expected the record tag "
		    "\"" REC_TAG "\" but found bytes %02x %02x %02x %02x; "
		    ADVICE_CORRUPT, (unsigned long long)base, buf[0], buf[1],
		    buf[2], buf[3]);
		return -EBADMSG;
	}
	plen = get64(buf + 4);
	if (plen > PAY_MAX || plen < PAY_FIXED) {
		say(err, errlen, "at byte %llu: the record claims a %llu-byte "
		    "payload, but a payload has %d to %llu bytes; "
		    ADVICE_CORRUPT, (unsigned long long)base + 4,
		    (unsigned long long)plen, PAY_FIXED,
		    (unsigned long long)PAY_MAX);
		return -EBADMSG;
	}
	/* plen <= PAY_MAX, so neither sum can wrap. */
	if (plen + REC_HEAD + REC_CRC > len) {
		say(err, errlen, "at byte %llu: the record claims %llu bytes "
		    "(with its header and checksum) but only %zu remain; "
		    ADVICE_TRUNC, (unsigned long long)base + 4,
		    (unsigned long long)(plen + REC_HEAD + REC_CRC), len);
		return -EBADMSG;
	}
	for (int i = 0; i < 6; i++) {
		c[i] = get32(buf + REC_HEAD + 24 + 4 * i);
		if (c[i] > TMM_TRACE_MAX_ELEMS) {
			say(err, errlen, "at byte %llu: %s is %u, more than "
			    "the %u a trace may hold; " ADVICE_CORRUPT,
			    (unsigned long long)base + REC_HEAD + 24 + 4 * i,
			    arrays[i].count, c[i], TMM_TRACE_MAX_ELEMS);
			return -EBADMSG;
		}
	}
	if (payload_size(c, &need) < 0 || need != plen) {
		say(err, errlen, "at byte %llu: the counts (%u tensors, %u "
		    "ops, %u op tensors, %u accesses, %u events, %u string "
		    "bytes) need a %llu-byte payload but the record header "
		    "says %llu; " ADVICE_CORRUPT,
		    (unsigned long long)base + REC_HEAD + 24, c[0], c[1], c[2],
		    c[3], c[4], c[5], (unsigned long long)need,
		    (unsigned long long)plen);
		return -EBADMSG;
	}
	*plen_out = plen;
	return 0;
}

/* tmm_trace_decode, with byte offsets in messages counted from `base`. */
static int decode_at(const uint8_t *buf, size_t len, uint64_t base,
		     struct tmm_trace *t, size_t *used, char *err,
		     size_t errlen)
{
	const uint8_t *p;
	void *arr[6];
	uint32_t c[6], want, got;
	uint64_t plen;
	char why[512];
	int ok = 1, ret;

	memset(t, 0, sizeof(*t));
	ret = check_lengths(buf, len, base, &plen, c, err, errlen);
	if (ret < 0)
		return ret;
	want = get32(buf + REC_HEAD + plen);
	got = tmm_crc32(0, buf + REC_HEAD, (size_t)plen);
	if (want != got) {
		say(err, errlen, "at byte %llu: the record's checksum is "
		    "0x%08x but its %llu-byte payload sums to 0x%08x; "
		    ADVICE_CORRUPT,
		    (unsigned long long)(base + REC_HEAD + plen), want,
		    (unsigned long long)plen, got);
		return -EBADMSG;
	}

	p = buf + REC_HEAD;
	t->iteration = get64(p);
	t->duration_ns = get64(p + 8);
	t->stall_ns = get64(p + 16);
	p += PAY_FIXED;
	for (int a = 0; a < 6; a++) {
		arr[a] = c[a] ? calloc(c[a], arrays[a].size) : NULL;
		if (c[a] && !arr[a])
			ok = 0;
		for (uint32_t i = 0; ok && i < c[a]; i++)
			p = get_elem(p, (uint8_t *)arr[a] +
						(size_t)i * arrays[a].size,
				     &arrays[a]);
	}
	t->tensors = arr[0];
	t->ops = arr[1];
	t->op_tensors = arr[2];
	t->accesses = arr[3];
	t->events = arr[4];
	t->strings = arr[5];
	t->n_tensors = c[0];
	t->n_ops = c[1];
	t->n_op_tensors = c[2];
	t->n_accesses = c[3];
	t->n_events = c[4];
	t->strings_len = c[5];
	if (!ok) {
		tmm_trace_free(t);
		say(err, errlen, "at byte %llu: out of memory for the arrays "
		    "of a %llu-byte record", (unsigned long long)base,
		    (unsigned long long)plen);
		return -ENOMEM;
	}
	if (tmm_trace_validate(t, why, sizeof(why)) < 0) {
		say(err, errlen, "the record at byte %llu (iteration %llu) is "
		    "inconsistent: %s; " ADVICE_INVALID,
		    (unsigned long long)base,
		    (unsigned long long)t->iteration, why);
		tmm_trace_free(t);
		return -EBADMSG;
	}
	*used = (size_t)plen + REC_HEAD + REC_CRC;
	return 0;
}

int tmm_trace_decode(const uint8_t *buf, size_t len, struct tmm_trace *t,
		     size_t *used, char *err, size_t errlen)
{
	size_t dummy;

	if (!t || (!buf && len)) {
		say(err, errlen, "tmm_trace_decode: no trace or no buffer");
		return -EINVAL;
	}
	return decode_at(buf, len, 0, t, used ? used : &dummy, err, errlen);
}

/* ------------------------------------------------------------------------
 * Writer
 * ---------------------------------------------------------------------- */

/* Copies a string into a fixed field: cut to fit, NUL-padded. */
static uint8_t *put_field(uint8_t *p, const char *s, size_t field)
{
	size_t n = strnlen(s, field - 1);

	memcpy(p, s, n);
	memset(p + n, 0, field - n);
	return p + field;
}

static void encode_header(uint8_t h[FH_LEN_V1],
			  const struct tmm_trace_file_info *info)
{
	uint8_t *p = h;

	memcpy(p, FH_MAGIC, FH_MAGIC_LEN);
	p = put32(p + FH_MAGIC_LEN, TMM_TRACE_FORMAT_VERSION);
	p = put32(p, FH_LEN_V1);
	p = put32(p, info->simulated);
	p = put_field(p, info->backend, sizeof(info->backend));
	p = put_field(p, info->device, sizeof(info->device));
	p = put_field(p, info->mode, sizeof(info->mode));
	p = put_field(p, info->policy, sizeof(info->policy));
	p = put64(p, info->device_capacity);
	p = put64(p, info->budget);
	put32(p, tmm_crc32(0, h, FH_LEN_V1 - 4));
}

/* Writes and flushes; 0 or a negative errno (never 0 on failure). */
static int write_flush(FILE *f, const void *buf, size_t len)
{
	errno = 0;
	if (fwrite(buf, 1, len, f) != len || fflush(f) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

int tmm_trace_writer_open(const char *path,
			  const struct tmm_trace_file_info *info,
			  struct tmm_trace_writer **out, char *err,
			  size_t errlen)
{
	struct tmm_trace_writer *w;
	uint8_t h[FH_LEN_V1];
	int ret;

	if (out)
		*out = NULL;
	if (!path || !*path || !info || !out) {
		say(err, errlen, "tmm_trace_writer_open: a path, an info and "
		    "an out pointer are required");
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (w)
		w->path = strdup(path);
	if (!w || !w->path) {
		free(w);
		say(err, errlen, "%s: out of memory opening a trace writer",
		    path);
		return -ENOMEM;
	}
	w->f = fopen(path, "wb");
	if (!w->f) {
		ret = -errno;
		say(err, errlen, "cannot create the trace file %s: %s; check "
		    "that its directory exists and is writable, or set "
		    "TENSORMM_TRACE to another path", path, strerror(-ret));
		goto fail;
	}
	encode_header(h, info);
	ret = write_flush(w->f, h, sizeof(h));
	if (ret < 0) {
		say(err, errlen, "cannot write the header of the trace file "
		    "%s: %s; free space on its file system or set "
		    "TENSORMM_TRACE to another path", path, strerror(-ret));
		fclose(w->f);
		goto fail;
	}
	w->offset = sizeof(h);
	*out = w;
	return 0;
fail:
	free(w->path);
	free(w);
	return ret;
}

int tmm_trace_writer_append(struct tmm_trace_writer *w,
			    const struct tmm_trace *t, char *err,
			    size_t errlen)
{
	char why[512];
	uint8_t *rec;
	size_t len;
	int ret;

	if (!w || !t) {
		say(err, errlen, "tmm_trace_writer_append: no writer or no "
		    "trace");
		return -EINVAL;
	}
	if (w->error) {
		say(err, errlen, "%s: an earlier write failed (%s), so the "
		    "file ends in a partial record; close it and re-record",
		    w->path, strerror(-w->error));
		return w->error;
	}
	if (tmm_trace_validate(t, why, sizeof(why)) < 0) {
		say(err, errlen, "%s: refusing to write iteration %llu: %s; "
		    "this is a bug in the code that recorded it", w->path,
		    (unsigned long long)t->iteration, why);
		return -EINVAL;
	}
	ret = encode_valid(t, &rec, &len);
	if (ret < 0) {
		say(err, errlen, "%s: out of memory encoding iteration %llu",
		    w->path, (unsigned long long)t->iteration);
		return ret;
	}
	ret = write_flush(w->f, rec, len);
	free(rec);
	if (ret < 0) {
		w->error = ret;
		say(err, errlen, "%s: cannot write iteration %llu (record "
		    "%llu, at byte %llu): %s; free space on its file system "
		    "or set TENSORMM_TRACE to another path", w->path,
		    (unsigned long long)t->iteration,
		    (unsigned long long)w->records + 1,
		    (unsigned long long)w->offset, strerror(-ret));
		return ret;
	}
	w->records++;
	w->offset += len;
	return 0;
}

int tmm_trace_writer_close(struct tmm_trace_writer *w, char *err,
			   size_t errlen)
{
	int ret = 0;

	if (!w)
		return 0;
	errno = 0;
	if (fclose(w->f) != 0) {
		ret = errno ? -errno : -EIO;
		say(err, errlen, "%s: closing the trace file failed: %s; its "
		    "last records may be missing", w->path, strerror(-ret));
	}
	free(w->path);
	free(w);
	return ret;
}

/* ------------------------------------------------------------------------
 * Reader
 * ---------------------------------------------------------------------- */

/* Reads up to len bytes: the count read (short only at end of file), or a
 * negative errno. */
static long long read_some(FILE *f, void *buf, size_t len)
{
	size_t n = fread(buf, 1, len, f);

	if (n < len && ferror(f))
		return errno ? -errno : -EIO;
	return (long long)n;
}

static int parse_header(const char *path, const uint8_t *h, uint32_t hlen,
			struct tmm_trace_file_info *info, char *err,
			size_t errlen)
{
	static const struct {
		const char *name;
		size_t at, size;
	} str[] = {
		{ "backend", 20, sizeof(info->backend) },
		{ "device", 36, sizeof(info->device) },
		{ "mode", 84, sizeof(info->mode) },
		{ "policy", 92, sizeof(info->policy) },
	};
	char *dst[] = { info->backend, info->device, info->mode,
			info->policy };
	uint32_t want = get32(h + hlen - 4), got = tmm_crc32(0, h, hlen - 4);

	if (want != got) {
		say(err, errlen, "%s: at byte %u: the header's checksum is "
		    "0x%08x but its bytes sum to 0x%08x; " ADVICE_CORRUPT,
		    path, hlen - 4, want, got);
		return -EBADMSG;
	}
	memset(info, 0, sizeof(*info));
	info->version = get32(h + 8);
	info->simulated = get32(h + 16);
	for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++) {
		if (!memchr(h + str[i].at, '\0', str[i].size)) {
			say(err, errlen, "%s: at byte %zu: the %s field of "
			    "the header has no terminating NUL in its %zu "
			    "bytes; " ADVICE_CORRUPT, path, str[i].at,
			    str[i].name, str[i].size);
			return -EBADMSG;
		}
		memcpy(dst[i], h + str[i].at, str[i].size);
	}
	info->device_capacity = get64(h + 124);
	info->budget = get64(h + 132);
	return 0;
}

/* Reads and checks the header; the file is positioned after it. */
static int read_header(FILE *f, const char *path,
		       struct tmm_trace_file_info *info, uint64_t *hlen_out,
		       char *err, size_t errlen)
{
	uint8_t fixed[FH_FIXED], *h;
	uint32_t version, hlen;
	long long n;
	int ret;

	n = read_some(f, fixed, sizeof(fixed));
	if (n < 0)
		goto read_error;
	if (n == 0) {
		say(err, errlen, "%s: the file is empty: truncated before its "
		    "header was written (the run may still be starting, or "
		    "was killed); re-record it with TENSORMM_TRACE", path);
		return -EBADMSG;
	}
	if (memcmp(fixed, FH_MAGIC, n < FH_MAGIC_LEN ? n : FH_MAGIC_LEN)) {
		say(err, errlen, "%s: not a libtensormm trace file: it does "
		    "not begin with \"" FH_MAGIC "\"; check the path (a trace "
		    "is what TENSORMM_TRACE names)", path);
		return -EBADMSG;
	}
	if (n < FH_FIXED) {
		say(err, errlen, "%s: at byte %lld: the file ends inside its "
		    "header, which is at least %d bytes; " ADVICE_TRUNC, path,
		    n, FH_LEN_V1);
		return -EBADMSG;
	}
	version = get32(fixed + 8);
	hlen = get32(fixed + 12);
	if (version > TMM_TRACE_FORMAT_VERSION) {
		say(err, errlen, "%s: the file has trace format version %u, "
		    "but this build of libtensormm reads versions 1 to %u; "
		    "read it with a newer tensormm-stat", path, version,
		    TMM_TRACE_FORMAT_VERSION);
		return -ENOTSUP;
	}
	if (version == 0 || hlen < FH_LEN_V1 || hlen > FH_LEN_MAX) {
		say(err, errlen, "%s: at byte 8: expected format version 1 to "
		    "%u and a header length of %d to %u bytes, but found "
		    "version %u and %u bytes; " ADVICE_CORRUPT, path,
		    TMM_TRACE_FORMAT_VERSION, FH_LEN_V1, FH_LEN_MAX, version,
		    hlen);
		return -EBADMSG;
	}
	h = malloc(hlen);
	if (!h) {
		say(err, errlen, "%s: out of memory for the header", path);
		return -ENOMEM;
	}
	memcpy(h, fixed, FH_FIXED);
	n = read_some(f, h + FH_FIXED, hlen - FH_FIXED);
	if (n < 0) {
		free(h);
		goto read_error;
	}
	if (n < hlen - FH_FIXED) {
		say(err, errlen, "%s: at byte %lld: the file ends inside its "
		    "%u-byte header; " ADVICE_TRUNC, path, FH_FIXED + n, hlen);
		free(h);
		return -EBADMSG;
	}
	/* Fields a later version added before the CRC are skipped. */
	ret = parse_header(path, h, hlen, info, err, errlen);
	free(h);
	*hlen_out = hlen;
	return ret;
read_error:
	say(err, errlen, "%s: cannot read the header: %s", path,
	    strerror((int)-n));
	return (int)n;
}

int tmm_trace_reader_open(const char *path, struct tmm_trace_reader **out,
			  struct tmm_trace_file_info *info, char *err,
			  size_t errlen)
{
	struct tmm_trace_file_info dummy;
	struct tmm_trace_reader *r;
	int ret;

	if (out)
		*out = NULL;
	if (info)
		memset(info, 0, sizeof(*info));
	if (!path || !*path || !out) {
		say(err, errlen, "tmm_trace_reader_open: a path and an out "
		    "pointer are required");
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		r->path = strdup(path);
	if (!r || !r->path) {
		free(r);
		say(err, errlen, "%s: out of memory opening a trace reader",
		    path);
		return -ENOMEM;
	}
	r->f = fopen(path, "rb");
	if (!r->f) {
		ret = -errno;
		say(err, errlen, "cannot open the trace file %s: %s; check "
		    "the path (a trace is what TENSORMM_TRACE names)", path,
		    strerror(-ret));
		tmm_trace_reader_close(r);
		return ret;
	}
	ret = read_header(r->f, path, info ? info : &dummy, &r->offset, err,
			  errlen);
	if (ret < 0) {
		tmm_trace_reader_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

__attribute__((format(printf, 3, 4)))
static int reader_fail(struct tmm_trace_reader *r, int code,
		       const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r->records)
		snprintf(r->msg, sizeof(r->msg), "%s: record %llu (after "
			 "iteration %llu): %s", r->path,
			 (unsigned long long)r->records + 1,
			 (unsigned long long)r->last_iteration, what);
	else
		snprintf(r->msg, sizeof(r->msg), "%s: record 1: %s", r->path,
			 what);
	r->error = code;
	return code;
}

/* The size of the record whose 12-byte header is at h, or just the header
 * when it is damaged: decode_at then says what is wrong with it. */
static size_t record_size(const uint8_t *h)
{
	uint64_t plen = get64(h + 4);

	if (memcmp(h, REC_TAG, 4) || plen > PAY_MAX ||
	    plen > SIZE_MAX - REC_HEAD - REC_CRC)
		return REC_HEAD;
	return (size_t)plen + REC_HEAD + REC_CRC;
}

/*
 * Reads the record at r->offset whole into r->buf: returns 1 and its
 * length (short if the file ends first), 0 at the end of the file, or an
 * error.  The buffer grows by at most a megabyte, or by what is already
 * read, per step, so a damaged length makes the reader find the end of
 * the file, not allocate what the length claims.
 */
static int read_record(struct tmm_trace_reader *r, size_t *len)
{
	size_t got = 0, total = REC_HEAD;
	long long n;

	while (got < total) {
		size_t step = got > READ_STEP ? got : READ_STEP;
		size_t want = total - got < step ? total - got : step;

		if (got + want > r->cap) {
			uint8_t *nb = realloc(r->buf, got + want);

			if (!nb)
				return reader_fail(
					r, -ENOMEM, "out of memory reading a "
					"%zu-byte record at byte %llu", total,
					(unsigned long long)r->offset);
			r->buf = nb;
			r->cap = got + want;
		}
		n = read_some(r->f, r->buf + got, want);
		if (n < 0)
			return reader_fail(r, (int)n, "cannot read at byte "
					   "%llu: %s",
					   (unsigned long long)r->offset + got,
					   strerror((int)-n));
		got += (size_t)n;
		if ((size_t)n < want)
			break;
		if (got == REC_HEAD)
			total = record_size(r->buf);
	}
	if (got == 0) {
		r->at_end = 1;
		return 0;
	}
	*len = got;
	return 1;
}

int tmm_trace_reader_next(struct tmm_trace_reader *r, struct tmm_trace *t,
			  char *err, size_t errlen)
{
	char why[768];
	size_t len = 0, used;
	int ret;

	if (t)
		memset(t, 0, sizeof(*t));
	if (!r || !t) {
		say(err, errlen, "tmm_trace_reader_next: no reader or no "
		    "trace");
		return -EINVAL;
	}
	if (r->error)
		goto fail;
	if (r->at_end)
		return 0;
	ret = read_record(r, &len);
	if (ret <= 0) {
		if (ret < 0)
			goto fail;
		return 0;
	}
	ret = decode_at(r->buf, len, r->offset, t, &used, why, sizeof(why));
	if (ret < 0) {
		reader_fail(r, ret, "%s", why);
		goto fail;
	}
	r->offset += used;
	r->records++;
	r->last_iteration = t->iteration;
	return 1;
fail:
	say(err, errlen, "%s", r->msg);
	return r->error;
}

void tmm_trace_reader_close(struct tmm_trace_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free(r->path);
	free(r);
}
