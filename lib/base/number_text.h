/* SPDX-License-Identifier: MIT */
/*
 * number_text.h — numbers read from text and written back as text, the
 * same in every locale.
 *
 * The tunables' values (tunables_value.c) are read with these, and a
 * configuration (tunables.c) is written back with them so that it reads
 * back the same.
 */
#ifndef TMM_NUMBER_TEXT_H
#define TMM_NUMBER_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text.h"

/* A decimal number as written: [-]digits[.digits][e[+-]digits]. */
struct tmm_decimal {
	bool negative;
	const char *whole; /* the digits before the point */
	size_t n_whole;
	const char *frac;  /* the digits after it */
	size_t n_frac;
	long exp10;	   /* the exponent, clamped to +-100000 */
};

/* Scans a decimal at s into *d; returns the char after it, or NULL. */
const char *tmm_decimal_scan(const char *s, bool allow_exponent,
			     struct tmm_decimal *d);

/* The double nearest to *d (exact up to 15 digits and 1e+-22). */
double tmm_decimal_to_double(const struct tmm_decimal *d);

/* Why a size was refused, for the messages. */
enum tmm_size_error {
	TMM_SIZE_OK,
	TMM_SIZE_GARBAGE,
	TMM_SIZE_NEGATIVE,
	TMM_SIZE_OVERFLOW
};

/* Parses a size with an optional unit (4096, 1.5G, 64KiB) into *bytes. */
enum tmm_size_error tmm_size_from_text(const char *s, uint64_t *bytes);

/* Writes a double so that it reads back the same, in any locale. */
void tmm_text_add_double(struct tmm_text *t, double v);

/* Writes a size in the largest unit that keeps it whole. */
void tmm_text_add_size(struct tmm_text *t, uint64_t bytes);

#endif /* TMM_NUMBER_TEXT_H */
