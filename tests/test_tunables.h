/* SPDX-License-Identifier: MIT */
/*
 * test_tunables.h — what the two files of the tunables suite share
 * (test_tunables.c, test_tunables_table.c): the size units, the config
 * every test loads into, and the helpers that load it and check what
 * came of it, defined in test_tunables.c.
 */
#ifndef TEST_TUNABLES_H
#define TEST_TUNABLES_H

#include <check.h>

#include "lib/base/tunables.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)

/* The config the tests load into; its error message is kept in
 * test_tunables.c, for err_has() and err_lacks() to look at. */
extern struct tmm_config cfg;

/* Loads a config string, which must be accepted, or refused with
 * -EINVAL and a message. */
void load_ok(const char *config);
void load_fails(const char *config);

/* The last error message has `want`, or lacks `unwanted`. */
void err_has(const char *want);
void err_lacks(const char *unwanted);

/* The table's row of id; id formats as `want`; every tunable came from
 * `want`. */
const struct tmm_tunable *row_of(enum tmm_tunable_id id);
void check_format(enum tmm_tunable_id id, const char *want);
void check_sources(enum tmm_source want);

/* A case of s whose tests start and end with no TENSORMM_* variable. */
TCase *new_case(Suite *s, const char *name);

/* Adds the "precedence", "keys" and "table" cases
 * (test_tunables_table.c). */
void add_tunables_table_tests(Suite *s);

#endif /* TEST_TUNABLES_H */
