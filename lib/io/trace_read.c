/* SPDX-License-Identifier: MIT */
/*
 * trace_read.c — reading trace files (docs/trace-format.md): one record
 * decoded into an iteration, and the reader that takes records from a
 * file.  The bytes are laid out in trace_layout.h, the same for the
 * writer (trace_write.c).
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/crc32.h"
#include "trace.h"
#include "trace_layout.h"
#include "trace_read.h"
#include "lib/base/xalloc.h"

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

struct tmm_trace_reader {
	FILE *f;
	char *path;
	uint64_t offset;	 /* of the next record */
	uint64_t records;	 /* read */
	uint64_t last_iteration; /* of the last record read */
	uint32_t version;	 /* the file's format version */
	uint8_t *buf;		 /* the record being read */
	size_t cap;
	int at_end;
	int error; /* sticky: returned again with msg */
	char msg[1024];
};

/* ------------------------------------------------------------------------
 * Decoding
 * ---------------------------------------------------------------------- */

/*
 * Checks the payload's lengths and counts, from the record header at buf
 * (len bytes available, buf at byte `base` of the file): returns 0 with
 * the payload length and counts, or -EBADMSG with a message.
 */
static int check_lengths(const uint8_t *buf, size_t len, uint64_t base,
			 const struct tmm_trace_array *arrays,
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
			    arrays[i].count, c[i],
			    TMM_TRACE_MAX_ELEMS);
			return -EBADMSG;
		}
	}
	if (tmm_trace_payload_size(arrays, c, &need) < 0 || need != plen) {
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

/* tmm_trace_decode of a record of format `version`, with byte offsets in
 * messages counted from `base`. */
static int decode_at(const uint8_t *buf, size_t len, uint64_t base,
		     uint32_t version, struct tmm_trace *t, size_t *used,
		     char *err, size_t errlen)
{
	const struct tmm_trace_array *arrays = tmm_trace_arrays_of(version);
	const uint8_t *p;
	void *arr[6];
	uint32_t c[6], want, got;
	uint64_t plen;
	char why[512];
	int ok = 1, ret;

	memset(t, 0, sizeof(*t));
	ret = check_lengths(buf, len, base, arrays, &plen, c, err, errlen);
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
		const struct tmm_trace_array *ta = &arrays[a];

		arr[a] = c[a] ? tmm_calloc(c[a], ta->size) : NULL;
		if (c[a] && !arr[a])
			ok = 0;
		for (uint32_t i = 0; ok && i < c[a]; i++)
			p = tmm_trace_get_elem(p, (uint8_t *)arr[a] +
							  (size_t)i * ta->size,
					       ta);
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
	return decode_at(buf, len, 0, TMM_TRACE_FORMAT_VERSION, t,
			 used ? used : &dummy, err, errlen);
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
		    "update tensormm-stat (and libtensormm) to a release "
		    "that reads format %u", path, version,
		    TMM_TRACE_FORMAT_VERSION, version);
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
	h = tmm_malloc(hlen);
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
	r = tmm_calloc(1, sizeof(*r));
	if (r)
		r->path = tmm_strdup(path);
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
	if (!info)
		info = &dummy;
	ret = read_header(r->f, path, info, &r->offset, err, errlen);
	if (ret < 0) {
		tmm_trace_reader_close(r);
		return ret;
	}
	r->version = info->version;
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
			uint8_t *nb = tmm_realloc(r->buf, got + want);

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
	ret = decode_at(r->buf, len, r->offset, r->version, t, &used, why,
			sizeof(why));
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
