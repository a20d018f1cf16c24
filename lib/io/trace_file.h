/*
 * trace_file.h — the trace file: a header saying what recorded it, then
 * one record per training iteration (struct tmm_trace).
 *
 * The runtime writes it when TENSORMM_TRACE names a file; planners and
 * tensormm-stat read it back through the one reader here, so every
 * consumer gets the same checks.  The layout, byte by byte, and the
 * versioning policy are in docs/trace-format.md.
 *
 * Every function that can fail returns 0 (or 1, see reader_next) or a
 * negative errno and writes a message into err (errlen bytes; err may be
 * NULL) that names the file, the record, the byte offset, what was
 * expected, what was found and what to do.  The codes:
 *   -EBADMSG   the file is truncated, corrupt, or not a trace file
 *   -ENOTSUP   the file has a newer format version than this build reads
 *   -EINVAL    a bad argument, or a trace that fails tmm_trace_validate
 *   -ENOMEM    out of memory
 *   others     the errno of a failed open, read or write (-ENOENT,
 *              -ENOSPC, -EIO, ...)
 */
#ifndef TMM_TRACE_FILE_H
#define TMM_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* The format version this build writes and the newest it reads. */
#define TMM_TRACE_FORMAT_VERSION 1u

/* What recorded a trace file (its header). */
struct tmm_trace_file_info {
	uint32_t version;   /* format version of the file */
	uint32_t simulated; /* 1: times are simulated */
	char backend[16];   /* "sim" or "cuda" */
	char device[48];    /* profile or GPU name */
	char mode[8];	    /* "swap" or "uvm" */
	char policy[32];
	uint64_t device_capacity, budget; /* bytes */
};

struct tmm_trace_writer;

/*
 * Creates (or truncates) the file at `path` and writes its header from
 * *info; info->version is ignored (the file gets
 * TMM_TRACE_FORMAT_VERSION).  Strings longer than their field are cut to
 * fit, always NUL-terminated.  Returns 0 and sets *out, or a negative
 * errno with *out NULL and nothing left to close.
 */
int tmm_trace_writer_open(const char *path,
			  const struct tmm_trace_file_info *info,
			  struct tmm_trace_writer **out, char *err,
			  size_t errlen);

/*
 * Validates *t and appends it as one record, then flushes, so a crash
 * leaves every earlier record readable.  An invalid trace is refused with
 * -EINVAL and nothing is written (the writer stays usable).  After a
 * write error the file ends in a partial record and every later call
 * fails.
 */
int tmm_trace_writer_append(struct tmm_trace_writer *w,
			    const struct tmm_trace *t, char *err,
			    size_t errlen);

/* Closes the file and frees the writer (NULL is fine).  Returns 0, or the
 * error of the final flush or close (the data may not all be written). */
int tmm_trace_writer_close(struct tmm_trace_writer *w, char *err,
			   size_t errlen);

struct tmm_trace_reader;

/*
 * Opens a trace file, checks its header and fills *info (may be NULL).
 * Returns 0 and sets *out, or a negative errno with *out NULL: -EBADMSG
 * for a file that is empty, truncated inside its header, corrupt, or not
 * a trace file; -ENOTSUP for a newer format version.
 */
int tmm_trace_reader_open(const char *path, struct tmm_trace_reader **out,
			  struct tmm_trace_file_info *info, char *err,
			  size_t errlen);

/*
 * Reads the next iteration.  Returns 1 with *t filled (free it with
 * tmm_trace_free); 0 at a clean end of file, which is a record boundary;
 * or a negative errno with a message.  *t is overwritten, not freed, and
 * is zeroed unless 1 is returned.  A file whose last record is cut off
 * is an error (-EBADMSG, "truncated"), not an end.  After an error every
 * later call returns the same error.
 */
int tmm_trace_reader_next(struct tmm_trace_reader *r, struct tmm_trace *t,
			  char *err, size_t errlen);

/* Closes the file and frees the reader (NULL is fine). */
void tmm_trace_reader_close(struct tmm_trace_reader *r);

/*
 * Encodes one iteration as a complete record (record header, payload,
 * checksum) into a buffer from malloc, which the caller frees.  Returns
 * 0, -EINVAL for a trace that fails tmm_trace_validate, or -ENOMEM.
 */
int tmm_trace_encode(const struct tmm_trace *t, uint8_t **buf, size_t *len);

/*
 * Decodes the record at the start of [buf, buf + len) into *t (zeroed
 * first; free it with tmm_trace_free) and sets *used to the record's
 * size, so records laid end to end can be decoded in turn.  Checks every
 * length and count before reading, then the checksum, then
 * tmm_trace_validate.  Returns 0 or -EBADMSG / -ENOMEM; byte offsets in
 * the message count from buf.
 */
int tmm_trace_decode(const uint8_t *buf, size_t len, struct tmm_trace *t,
		     size_t *used, char *err, size_t errlen);

#endif /* TMM_TRACE_FILE_H */
