/* SPDX-License-Identifier: MIT */
/*
 * trace_file.h — the trace file: a header saying what recorded it, then
 * one record per training iteration (struct tmm_trace).
 *
 * The runtime writes it when TENSORMM_TRACE names a file (trace_write.h);
 * planners and tensormm-stat read it back through the one reader
 * (trace_read.h), so every consumer gets the same checks.  The layout,
 * byte by byte, and the versioning policy are in docs/trace-format.md.
 * This header holds what the writer and the reader both show their
 * callers: the format version and the file header's fields.
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

#include <stdint.h>

/* The format version this build writes and the newest it reads; it reads
 * every older one too (version 2 added an op's net_bytes; version 3 the
 * tensor flags TMM_TT_READ_AFTER_LAST and TMM_TT_FIRST_BYTES_BY_OP,
 * which a reader of version 2 refuses as undefined bits: it refuses the
 * version instead, with a message that says to update it). */
#define TMM_TRACE_FORMAT_VERSION 3u

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

#endif /* TMM_TRACE_FILE_H */
