/* SPDX-License-Identifier: MIT */
/*
 * plan_decode.h — the text of a plan file made back into a plan, every
 * line checked.  What the file is, how its keys are made portable and the
 * error codes are in plan_file.h; how the text is spelt, in
 * plan_syntax.h.
 */
#ifndef TMM_PLAN_DECODE_H
#define TMM_PLAN_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

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
 * tmm_plan_text_decode for the text of the file `name`, read whole by
 * tmm_plan_file_read: the messages name the file where
 * tmm_plan_text_decode says "plan text".  text is not NULL.
 */
int tmm_plan_text_decode_named(const char *name, const char *text,
			       size_t len, struct tmm_plan *out,
			       uint16_t serial, char *err, size_t errlen);

#endif /* TMM_PLAN_DECODE_H */
