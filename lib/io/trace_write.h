/* SPDX-License-Identifier: MIT */
/*
 * trace_write.h — writing trace files: the writer the runtime appends one
 * record per iteration with, and the encoding of one record on its own.
 * What a trace file is, and the error codes, are in trace_file.h.
 */
#ifndef TMM_TRACE_WRITE_H
#define TMM_TRACE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "trace_file.h"

struct tmm_trace_writer;

/*
 * Creates (or truncates) the file at `path` and writes its header from
 * *info; info->version is ignored (the file gets
 * TMM_TRACE_FORMAT_VERSION).  Strings longer than their field are cut to
 * fit, always NUL-terminated.  Only a regular file is written: a path
 * that is a symbolic link is refused (-ELOOP), and so is a FIFO, a device
 * or a socket (-ENXIO when no one reads it, else -EINVAL), at once and
 * before anything is truncated.  A file another writer of this process
 * holds open is refused too (-EBUSY), found by device and inode whatever
 * path names it, rather than truncated under that writer.  `max` caps
 * the file's size in bytes (the trace_max tunable; 0: no cap); a cap
 * below the header's size is refused (-EINVAL) before the file is
 * touched.  Returns 0 and sets *out, or a negative errno with *out NULL
 * and nothing left to close.
 */
int tmm_trace_writer_open(const char *path,
			  const struct tmm_trace_file_info *info,
			  uint64_t max, struct tmm_trace_writer **out,
			  char *err, size_t errlen);

/*
 * Validates *t and appends it as one record, then flushes, so a crash
 * leaves every earlier record readable.  An invalid trace is refused with
 * -EINVAL and nothing is written (the writer stays usable).  A record
 * that would take the file past its cap is not written at all: -EFBIG,
 * with a message naming trace_max, and every later call is refused the
 * same way, so the file ends with its last whole record and stays a
 * valid trace.  After a write error the file ends in a partial record and
 * every later call fails.
 */
int tmm_trace_writer_append(struct tmm_trace_writer *w,
			    const struct tmm_trace *t, char *err,
			    size_t errlen);

/* Closes the file and frees the writer (NULL is fine).  Returns 0, or the
 * error of the final flush or close (the data may not all be written). */
int tmm_trace_writer_close(struct tmm_trace_writer *w, char *err,
			   size_t errlen);

/*
 * Encodes one iteration as a complete record (record header, payload,
 * checksum) into a buffer from malloc, which the caller frees.  Returns
 * 0, -EINVAL for a trace that fails tmm_trace_validate, or -ENOMEM.
 */
int tmm_trace_encode(const struct tmm_trace *t, uint8_t **buf, size_t *len);

#endif /* TMM_TRACE_WRITE_H */
