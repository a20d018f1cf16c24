/* SPDX-License-Identifier: MIT */
/*
 * number_text.c — decimals and sizes read from text, and doubles and
 * sizes written back, the same in every locale.
 *
 * Numbers are parsed by hand rather than with strtod() and strtoull():
 * the application may have called setlocale(), and "0.5" must mean the
 * same in every locale; strtoull() also accepts "-1" and signs we refuse.
 */
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "number_text.h"
#include "text.h"

/*
 * Scans a decimal at s into *d.  Returns the character after it, or NULL
 * when s does not start with one.  Digits are required on both sides of a
 * point, so "5." and ".5" are refused rather than guessed at.
 */
const char *tmm_decimal_scan(const char *s, bool allow_exponent,
			     struct tmm_decimal *d)
{
	memset(d, 0, sizeof(*d));
	if (*s == '-') {
		d->negative = true;
		s++;
	}
	d->whole = s;
	while (tmm_ascii_is_digit(*s))
		s++;
	d->n_whole = (size_t)(s - d->whole);
	if (!d->n_whole)
		return NULL;
	if (*s == '.') {
		d->frac = ++s;
		while (tmm_ascii_is_digit(*s))
			s++;
		d->n_frac = (size_t)(s - d->frac);
		if (!d->n_frac)
			return NULL;
	}
	if (allow_exponent && (*s == 'e' || *s == 'E')) {
		bool negative = false;

		s++;
		if (*s == '+' || *s == '-')
			negative = *s++ == '-';
		if (!tmm_ascii_is_digit(*s))
			return NULL;
		for (; tmm_ascii_is_digit(*s); s++)
			if (d->exp10 < 100000)
				d->exp10 = d->exp10 * 10 + (*s - '0');
		if (negative)
			d->exp10 = -d->exp10;
	}
	return s;
}

/*
 * The double nearest to *d.  Up to 15 significant digits and exponents
 * within +-22 are exact (the mantissa and the power of ten are both exact
 * doubles, so one division or product rounds once); beyond that the value
 * is within an ulp or so, which is plenty for a tunable.
 */
double tmm_decimal_to_double(const struct tmm_decimal *d)
{
	static const double exact_pow10[] = {
		1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,
		1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
		1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	uint64_t mantissa = 0;
	long exponent = d->exp10;
	int significant = 0;
	long double v;
	size_t i;

	/* Keep 19 significant digits: the most a uint64_t always holds. */
	for (i = 0; i < d->n_whole + d->n_frac; i++) {
		bool in_frac = i >= d->n_whole;
		char c = in_frac ? d->frac[i - d->n_whole] : d->whole[i];

		if (significant < 19) {
			mantissa = mantissa * 10 + (uint64_t)(c - '0');
			if (mantissa)
				significant++;
			if (in_frac)
				exponent--;
		} else if (!in_frac) {
			exponent++;
		}
	}
	if (!mantissa)
		return 0;
	if (mantissa <= (1ull << 53) && exponent >= -22 && exponent <= 22) {
		double m = (double)mantissa;

		m = exponent < 0 ? m / exact_pow10[-exponent] :
				   m * exact_pow10[exponent];
		return d->negative ? -m : m;
	}
	v = (long double)mantissa;
	for (; exponent > 0 && v <= DBL_MAX; exponent--)
		v *= 10;
	for (; exponent < 0 && v > 0; exponent++)
		v /= 10;
	if (v > DBL_MAX)
		v = (long double)DBL_MAX * 2; /* infinity, without <math.h> */
	return d->negative ? (double)-v : (double)v;
}

/*
 * The whole part of *d times 2^shift, plus the fraction times 2^shift
 * rounded down to whole bytes.  Returns false when it exceeds 64 bits.
 */
static bool decimal_to_bytes(const struct tmm_decimal *d, unsigned shift,
			     uint64_t *bytes)
{
	uint64_t whole = 0, frac = 0, scale = 1, part = 0;
	size_t i;

	for (i = 0; i < d->n_whole; i++) {
		unsigned digit = (unsigned)(d->whole[i] - '0');

		if (whole > (UINT64_MAX - digit) / 10)
			return false;
		whole = whole * 10 + digit;
	}
	if (shift && whole > UINT64_MAX >> shift)
		return false;
	whole <<= shift;

	/*
	 * frac / scale * 2^shift by binary long division, exact for the
	 * first 18 fraction digits; later digits move the result by less
	 * than a byte and are ignored.
	 */
	for (i = 0; i < d->n_frac && i < 18; i++) {
		frac = frac * 10 + (uint64_t)(d->frac[i] - '0');
		scale *= 10;
	}
	for (i = 0; i < shift; i++) {
		frac <<= 1;
		part <<= 1;
		if (frac >= scale) {
			frac -= scale;
			part |= 1;
		}
	}
	if (whole > UINT64_MAX - part)
		return false;
	*bytes = whole + part;
	return true;
}

/*
 * Parses a unit of a size, after optional blanks, up to the end of the
 * text: nothing or B (bytes), K, KB, KiB, M, MB, MiB, G, ..., TiB, in any
 * case.  All are powers of 1024: nobody sizes GPU memory in powers of 10.
 */
static bool parse_size_unit(const char *s, unsigned *shift)
{
	static const char prefixes[] = "kmgt";
	const char *p;
	const char *unit;
	char lead;

	s = tmm_ascii_skip_blanks(s);
	unit = s;
	lead = tmm_ascii_lower(*s);
	p = lead ? strchr(prefixes, lead) : NULL;
	if (p) {
		*shift = 10 * (unsigned)(p - prefixes + 1);
		s++;
		if (tmm_ascii_lower(s[0]) == 'i' &&
		    tmm_ascii_lower(s[1]) == 'b')
			s += 2;
		else if (tmm_ascii_lower(s[0]) == 'b')
			s++;
	} else {
		*shift = 0;
		if (tmm_ascii_lower(*s) == 'b')
			s++;
	}
	if (*unit && s == unit)
		return false;
	return !*tmm_ascii_skip_blanks(s);
}

enum tmm_size_error tmm_size_from_text(const char *s, uint64_t *bytes)
{
	struct tmm_decimal d;
	unsigned shift;
	const char *end;

	end = tmm_decimal_scan(tmm_ascii_skip_blanks(s), false, &d);
	if (!end || !parse_size_unit(end, &shift))
		return TMM_SIZE_GARBAGE;
	if (d.negative)
		return TMM_SIZE_NEGATIVE;
	if (!decimal_to_bytes(&d, shift, bytes))
		return TMM_SIZE_OVERFLOW;
	return TMM_SIZE_OK;
}

/*
 * Writes a double so that it reads back the same, in any locale: the
 * shortest of 15 or 17 significant digits that round-trips, with the
 * locale's decimal separator (which printf obeys) put back to '.'.
 */
void tmm_text_add_double(struct tmm_text *t, double v)
{
	char buf[64];
	struct tmm_decimal d;
	int precision;

	for (precision = 15; precision <= 17; precision += 2) {
		const char *end;
		char *src, *dst;
		bool in_separator = false;

		snprintf(buf, sizeof(buf), "%.*g", precision, v);
		for (src = dst = buf; *src; src++) {
			bool ours = tmm_ascii_is_digit(*src) || *src == 'e' ||
				    *src == '-' || *src == '+';

			if (ours)
				*dst++ = *src;
			else if (!in_separator)
				*dst++ = '.';
			in_separator = !ours;
		}
		*dst = '\0';
		end = tmm_decimal_scan(buf, true, &d);
		if (end && !*end && tmm_decimal_to_double(&d) == v)
			break;
	}
	tmm_text_add(t, "%s", buf);
}

/* Writes a size in the largest unit that keeps it whole. */
void tmm_text_add_size(struct tmm_text *t, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	unsigned i;

	for (i = 4; bytes && i-- > 0;) {
		unsigned shift = 10 * (i + 1);

		if (!(bytes & ((1ull << shift) - 1))) {
			tmm_text_add(t, "%" PRIu64 "%s", bytes >> shift,
				     units[i]);
			return;
		}
	}
	tmm_text_add(t, "%" PRIu64, bytes);
}
