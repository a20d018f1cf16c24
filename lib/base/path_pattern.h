/* SPDX-License-Identifier: MIT */
/*
 * path_pattern.h — a file path that names the process and the context it
 * is written by: "%p" and "%n" in it, as the trace tunable takes them, so
 * that processes, and contexts of one process, each get a file of their
 * own from one setting.
 */
#ifndef TMM_PATH_PATTERN_H
#define TMM_PATH_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Writes `pattern` into out[0 .. outlen) with "%p" replaced by `pid`,
 * "%n" by `n` and "%%" by "%".  Returns 0; -EINVAL for any other '%'
 * (a '%' is always the start of one of the three), with why saying which;
 * or -ENAMETOOLONG when the result does not fit.
 */
int tmm_path_expand(const char *pattern, long pid, unsigned long n,
		    char *out, size_t outlen, char *why, size_t whylen);

/* Whether tmm_path_expand takes `pattern`; else why (a tunable's
 * validator, so a bad pattern is refused when the tunables load). */
bool tmm_path_pattern_valid(const char *pattern, char *why, size_t whylen);

#endif /* TMM_PATH_PATTERN_H */
