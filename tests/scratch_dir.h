/* SPDX-License-Identifier: MIT */
/*
 * scratch_dir.h — a private directory for a test's files, and its removal.
 */
#ifndef TEST_SCRATCH_DIR_H
#define TEST_SCRATCH_DIR_H

#include <stddef.h>

/* Makes a fresh directory "$TMPDIR/tmm-<what>-XXXXXX" ("/tmp" without
 * TMPDIR) and writes its path into dir[0 .. len); asserts that it was
 * made. */
void scratch_dir_make(char *dir, size_t len, const char *what);

/* Removes dir and the plain files in it, asserting each step: a test
 * that left something else there is caught. */
void scratch_dir_remove(const char *dir);

#endif /* TEST_SCRATCH_DIR_H */
