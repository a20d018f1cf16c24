/* SPDX-License-Identifier: MIT */
/*
 * version.c — the library's version, as the header it was built with
 * says it (tmm_version in tensormm.h).
 */
#include "tensormm.h"

const char *tmm_version(void)
{
	return TMM_VERSION_STRING;
}
