/*
 * plan_file.h — the plan file: a plan (plan.h) saved as versioned text,
 * so that a rerun can start guided by the plan an earlier run measured.
 *
 * The runtime writes it at the end of measured execution and reads it at
 * start when TENSORMM_HINTS names a file.  The format, line by line, the
 * versioning rule and how tensor keys are made portable between runs are
 * in docs/plan-format.md.
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
 *   -ENOMEM   out of memory
 *   others    the errno of a failed open, read, write, fsync or rename
 */
#ifndef TMM_PLAN_FILE_H
#define TMM_PLAN_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* The newest format version this build reads and writes.  A plan with a
 * SPLIT is written as version 2, which added it; any other plan as
 * version 1, so that builds from before SPLIT still read it. */
#define TMM_PLAN_FORMAT_VERSION 2u
#define TMM_PLAN_FORMAT_SPLIT 2u /* the first version with SPLIT */

/*
 * The most accesses and actions a plan file may hold.  A damaged count is
 * refused before anything is allocated, and the writer refuses larger
 * plans, so it never writes what the reader would refuse.
 */
#define TMM_PLAN_FILE_MAX_ACCESSES (1u << 28)
#define TMM_PLAN_FILE_MAX_ACTIONS (1u << 28)

/*
 * Encodes *p as the text of a plan file (NUL-terminated, from malloc; the
 * caller frees *text; *len does not count the NUL).  `serial` is the
 * context the plan's keys belong to: every key of a tensor made outside
 * iterations must carry it in bits 48..63, and loses it in the text.
 * Returns 0; -EINVAL for a plan the reader would refuse (more than the
 * maximum accesses or actions, an unknown type or advice, an advice on an
 * action that is not ADVISE, a trigger or back-access past the accesses,
 * actions not sorted by trigger, a key of another context or no tensor's
 * key, a policy name that is not a word), or for a serial with bit 15 set
 * (its handles would look like in-iteration keys); or -ENOMEM.  Nothing is
 * allocated unless 0 is returned.
 */
int tmm_plan_text_encode(const struct tmm_plan *p, uint16_t serial,
			 char **text, size_t *len);

/*
 * Decodes the len bytes at `text` (need not be NUL-terminated) into *out,
 * giving the keys of tensors made outside iterations `serial`.  *out is
 * overwritten, not freed; free it with tmm_plan_free.  Checks the first
 * line and version, the end line and its checksum, then every line
 * strictly.  Returns 0, or -EINVAL / -ENOMEM with *out zeroed and a
 * message naming the line ("plan text" stands for the file name).
 */
int tmm_plan_text_decode(const char *text, size_t len, struct tmm_plan *out,
			 uint16_t serial, char *err, size_t errlen);

/*
 * Writes *p to `path` atomically: into "path.tmp.<pid>", which is synced
 * and then renamed over `path`, so a crash leaves either the old file or
 * the whole new one, never half a file.  On failure the temporary file is
 * removed and any old file at `path` is left as it was.  The temporary name
 * is per process, so two threads must not write the same path at once.
 * Returns 0, -EINVAL for a plan that cannot be written (as
 * tmm_plan_text_encode), -ENOMEM, or the errno of the failed create,
 * write, sync or rename.
 */
int tmm_plan_file_write(const char *path, const struct tmm_plan *p,
			uint16_t serial, char *err, size_t errlen);

/*
 * Reads the plan file at `path` into *out (overwritten, not freed), for the
 * context with `serial`.  Returns 0; -ENOENT when there is no file, which
 * is not an error for a caller that then measures; -EINVAL for a file that
 * is truncated, corrupt, not a plan file, of a newer format version or not
 * a regular file; -ENOMEM; or the errno of a failed open or read.  Unless 0
 * is returned, *out is zeroed and err says why.
 */
int tmm_plan_file_read(const char *path, struct tmm_plan *out,
		       uint16_t serial, char *err, size_t errlen);

#endif /* TMM_PLAN_FILE_H */
