/* SPDX-License-Identifier: MIT */
/*
 * trace_write.c — writing trace files (docs/trace-format.md): one
 * iteration encoded as a record, and the writer that appends records to
 * a file.  The bytes are laid out in trace_layout.h, the same for the
 * reader (trace_read.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/crc32.h"
#include "lib/base/number_text.h"
#include "trace.h"
#include "trace_layout.h"
#include "trace_write.h"
#include "lib/base/fault.h"
#include "lib/base/xalloc.h"

struct tmm_trace_writer {
	FILE *f;
	char *path;
	uint64_t records; /* written */
	uint64_t offset;  /* bytes written */
	uint64_t max;	  /* the file's cap in bytes (trace_max); 0: none */
	bool full;	  /* a record was refused for the cap: no more */
	int error;	  /* a failed write: every later append fails */
	dev_t dev;	  /* the file, whatever path named it */
	ino_t ino;
	struct tmm_trace_writer *next; /* in `writers` */
};

/*
 * The writers of this process, by the file they write.  A second context
 * tracing to the file of a first would truncate it under the first one's
 * records and then interleave its own, so the second is refused.  Device
 * and inode know a file by whatever path (a link, "./", a relative path)
 * names it.
 */
static pthread_mutex_t writers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tmm_trace_writer *writers;

/* Adds w, unless a writer has its file already. */
static bool claim(struct tmm_trace_writer *w)
{
	bool taken = false;

	pthread_mutex_lock(&writers_lock);
	for (struct tmm_trace_writer *o = writers; o; o = o->next)
		taken |= o->dev == w->dev && o->ino == w->ino;
	if (!taken) {
		w->next = writers;
		writers = w;
	}
	pthread_mutex_unlock(&writers_lock);
	return !taken;
}

static void unclaim(struct tmm_trace_writer *w)
{
	pthread_mutex_lock(&writers_lock);
	for (struct tmm_trace_writer **o = &writers; *o; o = &(*o)->next) {
		if (*o == w) {
			*o = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&writers_lock);
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
	if (tmm_trace_payload_size(tmm_trace_arrays, c, &plen) < 0 ||
	    plen > SIZE_MAX - REC_HEAD - REC_CRC)
		return -ENOMEM;
	out = tmm_malloc((size_t)plen + REC_HEAD + REC_CRC);
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
		const struct tmm_trace_array *ta = &tmm_trace_arrays[a];
		uint32_t n = a == 4 ? t->n_events : c[a];

		for (uint32_t i = 0; i < n; i++)
			if (a != 4 || !freed_event(&t->events[i]))
				p = tmm_trace_put_elem(
					p, (const uint8_t *)arr[a] +
						   (size_t)i * ta->size,
					ta);
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
	/* The site file_write (fault.h): as a full disk would fail it. */
	if (tmm_fault_now(TMM_SITE_FILE_WRITE))
		return -ENOSPC;
	errno = 0;
	if (fwrite(buf, 1, len, f) != len || fflush(f) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

/* What a file that is not a regular file is, for messages. */
static const char *kind_of(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISDIR(mode))
		return "a directory";
	return "not a regular file";
}

/*
 * Opens the trace file for writing into w->f.  O_NOFOLLOW: a symbolic
 * link planted at the path in a shared directory must not turn the
 * truncation on the file it names.  O_NONBLOCK: opening a FIFO for
 * writing waits for a reader, forever if none comes; with it the open
 * returns at once, and whatever it opened is refused unless it is a
 * regular file (for which the flag changes nothing; it is cleared all
 * the same).  The file is truncated only once it is known to be regular.
 */
static int open_file(struct tmm_trace_writer *w, char *err, size_t errlen)
{
	const char *path = w->path;
	struct stat st;
	int fd, flags, ret;

	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC, 0666);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP)
			say(err, errlen, "%s is a symbolic link: a trace is "
			    "not written through one, since a link planted in "
			    "a shared directory would make the run overwrite "
			    "the file it names; set TENSORMM_TRACE to the "
			    "file itself", path);
		else if (ret == -ENXIO)
			say(err, errlen, "%s is a FIFO or a device with no "
			    "reader, not a regular file: a trace is written "
			    "only to a regular file; set TENSORMM_TRACE to "
			    "one", path);
		else
			say(err, errlen, "cannot create the trace file %s: "
			    "%s; check that its directory exists and is "
			    "writable, or set TENSORMM_TRACE to another path",
			    path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		say(err, errlen, "cannot stat the trace file %s: %s", path,
		    strerror(-ret));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		say(err, errlen, "%s is %s, not a regular file: a trace is "
		    "written only to a regular file; set TENSORMM_TRACE to "
		    "one", path, kind_of(st.st_mode));
		goto fail;
	}
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	if (!claim(w)) {
		ret = -EBUSY;
		say(err, errlen, "%s: another context of this process is "
		    "writing this trace file; put %%n (the context's number) "
		    "in TENSORMM_TRACE to give each context its own", path);
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
	    ftruncate(fd, 0) < 0) {
		ret = -errno;
		say(err, errlen, "cannot empty the trace file %s: %s; set "
		    "TENSORMM_TRACE to another path", path, strerror(-ret));
		goto fail_claimed;
	}
	w->f = fdopen(fd, "wb");
	if (!w->f) {
		ret = -errno;
		say(err, errlen, "%s: out of memory opening a trace writer",
		    path);
		goto fail_claimed;
	}
	return 0;
fail_claimed:
	unclaim(w);
fail:
	close(fd);
	return ret;
}

/* A cap as the tunables spell it ("256MiB"), for messages. */
static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	struct tmm_text t;

	tmm_text_init(&t, buf, len);
	tmm_text_add_size(&t, bytes);
	return buf;
}

int tmm_trace_writer_open(const char *path,
			  const struct tmm_trace_file_info *info,
			  uint64_t max, struct tmm_trace_writer **out,
			  char *err, size_t errlen)
{
	struct tmm_trace_writer *w;
	uint8_t h[FH_LEN_V1];
	char cap[32];
	int ret;

	if (out)
		*out = NULL;
	if (!path || !*path || !info || !out) {
		say(err, errlen, "tmm_trace_writer_open: a path, an info and "
		    "an out pointer are required");
		return -EINVAL;
	}
	/* Refused before the file is touched: a cap that leaves no room for
	 * the header would leave no trace at all, only an emptied file. */
	if (max && max < FH_LEN_V1) {
		say(err, errlen, "%s: trace_max=%s leaves no room for the "
		    "trace file's %u-byte header; raise trace_max "
		    "(TENSORMM_TRACE_MAX), or set it to 0 for no cap", path,
		    size_text(max, cap, sizeof(cap)), FH_LEN_V1);
		return -EINVAL;
	}
	w = tmm_calloc(1, sizeof(*w));
	if (w)
		w->path = tmm_strdup(path);
	if (!w || !w->path) {
		free(w);
		say(err, errlen, "%s: out of memory opening a trace writer",
		    path);
		return -ENOMEM;
	}
	ret = open_file(w, err, errlen);
	if (ret < 0)
		goto fail;
	encode_header(h, info);
	ret = write_flush(w->f, h, sizeof(h));
	if (ret < 0) {
		say(err, errlen, "cannot write the header of the trace file "
		    "%s: %s; free space on its file system or set "
		    "TENSORMM_TRACE to another path", path, strerror(-ret));
		unclaim(w);
		fclose(w->f);
		goto fail;
	}
	w->offset = sizeof(h);
	w->max = max;
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
	char why[512], cap[32];
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
	if (w->full) {
		say(err, errlen, "%s: trace_max=%s (TENSORMM_TRACE_MAX) was "
		    "reached: the file takes no more records", w->path,
		    size_text(w->max, cap, sizeof(cap)));
		return -EFBIG;
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
	/* A record that does not fit is not begun: the file ends where the
	 * last whole record does, so it stays a trace every reader reads. */
	if (w->max && len > w->max - w->offset) {
		free(rec);
		w->full = true;
		say(err, errlen, "%s: trace_max=%s (TENSORMM_TRACE_MAX) "
		    "reached: iteration %llu (%zu bytes) would take the file "
		    "past it, so it keeps its %llu whole records (%llu bytes) "
		    "and stays readable; raise trace_max, or set it to 0 for "
		    "no cap", w->path, size_text(w->max, cap, sizeof(cap)),
		    (unsigned long long)t->iteration, len,
		    (unsigned long long)w->records,
		    (unsigned long long)w->offset);
		return -EFBIG;
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
	unclaim(w);
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
