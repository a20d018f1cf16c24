/* SPDX-License-Identifier: MIT */
/*
 * tunables_value.h — one tunable's value, read from text by its row of
 * the table (tunables_table.h), before the loader (tunables.c) stores it.
 */
#ifndef TMM_TUNABLES_VALUE_H
#define TMM_TUNABLES_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tunables_table.h"

/* A value parsed by its row's type, before it is stored. */
union tmm_tunable_value {
	size_t choice; /* index into the row's choices */
	struct tmm_size_spec size;
	uint64_t u64;
	long long i;
	double d;
	const char *str;
};

/* Parses trimmed text by the row's type.  Returns false with a reason. */
bool tmm_tunable_parse(const struct tmm_tunable *row, const char *s,
		       union tmm_tunable_value *v, char *why, size_t whylen);

#endif /* TMM_TUNABLES_VALUE_H */
