/* SPDX-License-Identifier: MIT */
/*
 * path_pattern.c — see path_pattern.h.
 *
 * Only three sequences, and every other '%' refused: a path that means
 * something else than it says (a "%d" left as it is, or taken for
 * something new in a later version) would put a trace where no one looks
 * for it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "path_pattern.h"

int tmm_path_expand(const char *pattern, long pid, unsigned long n,
		    char *out, size_t outlen, char *why, size_t whylen)
{
	size_t used = 0;

	if (outlen == 0) {
		snprintf(why, whylen, "no room for the path");
		return -ENAMETOOLONG;
	}
	out[0] = '\0';
	for (const char *p = pattern; *p; p++) {
		char num[32];
		const char *piece = num;
		size_t len;

		if (*p != '%') {
			num[0] = *p;
			num[1] = '\0';
		} else if (p[1] == 'p') {
			snprintf(num, sizeof(num), "%ld", pid);
			p++;
		} else if (p[1] == 'n') {
			snprintf(num, sizeof(num), "%lu", n);
			p++;
		} else if (p[1] == '%') {
			piece = "%";
			p++;
		} else {
			if (p[1])
				snprintf(why, whylen, "\"%%%c\" is not a "
					 "pattern: %%p is the pid, %%n the "
					 "context's number, %%%% a '%%'",
					 p[1]);
			else
				snprintf(why, whylen, "a '%%' ends the path: "
					 "%%p is the pid, %%n the context's "
					 "number, %%%% a '%%'");
			return -EINVAL;
		}
		len = strlen(piece);
		if (len >= outlen - used) {
			snprintf(why, whylen, "the path is longer than %zu "
				 "bytes once expanded", outlen - 1);
			return -ENAMETOOLONG;
		}
		memcpy(out + used, piece, len + 1);
		used += len;
	}
	return 0;
}

bool tmm_path_pattern_valid(const char *pattern, char *why, size_t whylen)
{
	char out[8192];

	/* The tunable's value has at most 4095 characters; expanded with
	 * short numbers, only a bad sequence can fail here. */
	return tmm_path_expand(pattern, 1, 0, out, sizeof(out), why,
			       whylen) == 0;
}
