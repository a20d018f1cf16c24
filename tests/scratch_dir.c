/* SPDX-License-Identifier: MIT */
/*
 * scratch_dir.c — a private directory for a test's files (see
 * scratch_dir.h).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch_dir.h"

void scratch_dir_make(char *dir, size_t len, const char *what)
{
	const char *base = getenv("TMPDIR");

	snprintf(dir, len, "%s/tmm-%s-XXXXXX", base && *base ? base : "/tmp",
		 what);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void scratch_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(path), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}
