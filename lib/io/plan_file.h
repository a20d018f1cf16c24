/* SPDX-License-Identifier: MIT */
/*
 * plan_file.h — the plan file: a plan (plan.h) saved as versioned text,
 * so that a rerun can start guided by the plan an earlier run measured.
 *
 * The runtime writes it at the end of measured execution and reads it at
 * start when TENSORMM_HINTS names a file.  The format, line by line, the
 * versioning rule and how tensor keys are made portable between runs are
 * in docs/plan-format.md.  The text is made by tmm_plan_text_encode
 * (plan_encode.h) and read back by tmm_plan_text_decode (plan_decode.h);
 * this module puts it on disk and takes it back.
 *
 * Keys travel without the context serial: a tensor made outside iterations
 * is written as the low 48 bits of its handle (slot generation and index,
 * which repeat when a program makes its tensors in the same order) and
 * gets the reading context's serial back; a tensor made inside an
 * iteration is written as its ordinal, which needs no translation.
 *
 * The functions that can fail return 0 or a negative errno and, given err
 * (errlen bytes; err may be NULL), write a message that names the file,
 * the line, what is wrong and what to do.  The codes:
 *   -ENOENT   no file at the path (read: the caller measures instead)
 *   -EINVAL   the file is truncated, corrupt, not a plan file or of a newer
 *             format version; or a bad argument, or a plan that cannot be
 *             written (see tmm_plan_text_encode)
 *   -EFBIG    the file, or the plan to write, is larger than the limit
 *             the caller gives (the hints_max tunable, TENSORMM_HINTS_MAX)
 *   -ENOMEM   out of memory
 *   others    the errno of a failed open, read, write, fsync or rename
 */
#ifndef TMM_PLAN_FILE_H
#define TMM_PLAN_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/*
 * Writes *p to `path` atomically: into a temporary in the same directory,
 * "path.tmp.<pid>.<count>.<random>", which is synced and then renamed over
 * `path`, so a crash leaves either the old file or the whole new one,
 * never half a file.  The temporary is created with O_EXCL|O_NOFOLLOW and
 * mode 0600, so nothing already at its name (a symbolic link planted in a
 * shared directory) is ever opened; a taken name is passed over, 16 times
 * at most (then -EEXIST).  The new file keeps the permission bits of the
 * regular file it replaces; a new plan file is 0600.  On failure the
 * temporary file is removed and any old file at `path` is left as it was.
 * Threads may write the same path at once: the last rename wins.  A
 * text of more than `limit` bytes is not written (-EFBIG): a reader with
 * the same limit would refuse it, so it must not replace a file that one
 * reads.  Returns 0, -EINVAL for a plan that cannot be written (as
 * tmm_plan_text_encode), -EFBIG, -ENOMEM, or the errno of the failed
 * create, write, sync or rename.
 */
int tmm_plan_file_write(const char *path, const struct tmm_plan *p,
			uint16_t serial, uint64_t limit, char *err,
			size_t errlen);

/*
 * Reads the plan file at `path` into *out (overwritten, not freed), for the
 * context with `serial`.  The file is read whole into memory, so one of
 * more than `limit` bytes is refused before a byte of it is read.
 * Returns 0; -ENOENT when there is no file, which is not an error for a
 * caller that then measures; -EINVAL for a file that is truncated,
 * corrupt, not a plan file, of a newer format version or not a regular
 * file; -EFBIG for a file larger than `limit`; -ENOMEM; or the errno of a
 * failed open or read.  Unless 0 is returned, *out is zeroed and err says
 * why.
 */
int tmm_plan_file_read(const char *path, struct tmm_plan *out,
		       uint16_t serial, uint64_t limit, char *err,
		       size_t errlen);

#endif /* TMM_PLAN_FILE_H */
