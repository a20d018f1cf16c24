/* SPDX-License-Identifier: MIT */
/*
 * trace_read.h — reading trace files: the one reader that planners and
 * tensormm-stat take iterations from, and the decoding of one record on
 * its own.  What a trace file is, and the error codes, are in
 * trace_file.h.
 */
#ifndef TMM_TRACE_READ_H
#define TMM_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "trace_file.h"

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
 * Decodes the record at the start of [buf, buf + len) into *t (zeroed
 * first; free it with tmm_trace_free) and sets *used to the record's
 * size, so records laid end to end can be decoded in turn.  Checks every
 * length and count before reading, then the checksum, then
 * tmm_trace_validate.  Returns 0 or -EBADMSG / -ENOMEM; byte offsets in
 * the message count from buf.
 */
int tmm_trace_decode(const uint8_t *buf, size_t len, struct tmm_trace *t,
		     size_t *used, char *err, size_t errlen);

#endif /* TMM_TRACE_READ_H */
