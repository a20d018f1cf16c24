/* SPDX-License-Identifier: MIT */
/*
 * plan_encode.h — a plan made into the text of a plan file.  What the
 * file is, how its keys are made portable and the error codes are in
 * plan_file.h; how the text is spelt, in plan_syntax.h.
 */
#ifndef TMM_PLAN_ENCODE_H
#define TMM_PLAN_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

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
 * Checks that *p can be written and read back exactly (everything the
 * decoder refuses, the encoder refuses first).  Returns 0, or -EINVAL with
 * a message in err (may be NULL), which tmm_plan_file_write passes on.
 */
int tmm_plan_text_check(const struct tmm_plan *p, uint16_t serial, char *err,
			size_t errlen);

#endif /* TMM_PLAN_ENCODE_H */
