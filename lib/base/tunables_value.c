/* SPDX-License-Identifier: MIT */
/*
 * tunables_value.c — one tunable's value read from text by its row: the
 * row's type says how to read it, its range, choices and validator what
 * to accept.
 *
 * A refused value comes back with the reason, which the loader
 * (tunables.c) turns into "key=value (origin): why; accepted: ...".
 */
#include <stdio.h>
#include <string.h>

#include "number_text.h"
#include "text.h"
#include "tunables_table.h"
#include "tunables_value.h"

/* Writes the reason a number is out of its row's range. */
static void range_reason(const struct tmm_tunable *row, char *why,
			 size_t whylen)
{
	if (row->max >= TMM_TUNABLE_NO_LIMIT)
		snprintf(why, whylen, "too small: the least accepted value "
			 "is %.0f", row->min);
	else
		snprintf(why, whylen, "out of range [%.17g, %.17g]", row->min,
			 row->max);
}

static bool in_range(const struct tmm_tunable *row, double v)
{
	return v >= row->min && v <= row->max;
}

static bool parse_choice(const struct tmm_tunable *row, const char *s,
			 union tmm_tunable_value *v, char *why, size_t whylen)
{
	size_t i;

	for (i = 0; row->choices[i]; i++) {
		if (tmm_ascii_equal_nocase(s, row->choices[i])) {
			v->choice = i;
			return true;
		}
	}
	snprintf(why, whylen, "not one of the choices");
	return false;
}

/*
 * Why a budget's bare number is refused, and what to write instead: the
 * same number as a percentage where it can be one, with a unit, or in
 * bytes where it is whole.  `s` is the number as written (digits, sign,
 * point and blanks only: the scan accepted it).
 */
static void bare_number_reason(const struct tmm_decimal *d, const char *s,
			       char *why, size_t whylen)
{
	double value = tmm_decimal_to_double(d);
	struct tmm_text t;

	tmm_text_init(&t, why, whylen);
	tmm_text_add(&t, "a bare number has no unit; write ");
	if (d->negative || !(value > 0))
		tmm_text_add(&t, "a percentage of the device such as 50%%, "
			     "or a size with its unit such as 6GiB");
	else if (value <= 100)
		tmm_text_add(&t, "%s%% for a percentage of the device, or a "
			     "size with its unit, such as %sMiB%s%s%s", s, s,
			     d->n_frac ? "" : ", or ", d->n_frac ? "" : s,
			     d->n_frac ? "" : "B for bytes");
	else if (!d->n_frac)
		tmm_text_add(&t, "%sB for bytes, a size in a larger unit "
			     "such as 6GiB, or a percentage of the device "
			     "such as 50%%", s);
	else
		tmm_text_add(&t, "a size with its unit such as %sMiB, or a "
			     "percentage of the device such as 50%%", s);
}

static bool parse_size_value(const struct tmm_tunable *row, const char *s,
			     union tmm_tunable_value *v, char *why,
			     size_t whylen)
{
	bool percent_too = row->type == TMM_TYPE_SIZE_OR_PERCENT;
	struct tmm_decimal d;
	const char *end;

	memset(&v->size, 0, sizeof(v->size));
	end = tmm_decimal_scan(s, false, &d);
	if (percent_too && end && *tmm_ascii_skip_blanks(end) == '%') {
		const char *rest = tmm_ascii_skip_blanks(
			tmm_ascii_skip_blanks(end) + 1);
		double percent = tmm_decimal_to_double(&d);

		/* "40%peak": of the program's own peak, measured by its
		 * first iteration (lib/exec/peak_budget.c). */
		if (!strncmp(rest, "peak", 4)) {
			v->size.of_peak = true;
			rest = tmm_ascii_skip_blanks(rest + 4);
		}
		if (*rest) {
			snprintf(why, whylen, "only \"peak\" may follow the "
				 "%% of a percentage (\"40%%\" of the "
				 "device, \"40%%peak\" of the first "
				 "iteration's peak)");
			return false;
		}
		if (!(percent > 0 && percent <= 100)) {
			snprintf(why, whylen, "a percentage must be more "
				 "than 0 and at most 100");
			return false;
		}
		v->size.percent = percent;
		v->size.is_percent = true;
		return true;
	}
	/*
	 * A budget is a percentage or a size, so a bare number is
	 * ambiguous: budget=100 read as bytes once left no room for
	 * anything while its writer meant 100%.  It must carry its unit,
	 * "B" for plain bytes.  Other sizes keep bare bytes (0 there
	 * means "the default", not a mistake).
	 */
	if (percent_too && end && !*tmm_ascii_skip_blanks(end)) {
		bare_number_reason(&d, s, why, whylen);
		return false;
	}
	switch (tmm_size_from_text(s, &v->size.bytes)) {
	case TMM_SIZE_OK:
		break;
	case TMM_SIZE_GARBAGE:
		snprintf(why, whylen, percent_too ?
			 "not a size or percentage" : "not a size");
		return false;
	case TMM_SIZE_NEGATIVE:
		snprintf(why, whylen, "a size cannot be negative");
		return false;
	case TMM_SIZE_OVERFLOW:
		snprintf(why, whylen, "too large: a size must fit in 64 bits "
			 "(less than 16 EiB)");
		return false;
	}
	if (!in_range(row, (double)v->size.bytes)) {
		range_reason(row, why, whylen);
		return false;
	}
	return true;
}

static bool parse_int_value(const struct tmm_tunable *row, const char *s,
			    union tmm_tunable_value *v, char *why,
			    size_t whylen)
{
	struct tmm_decimal d;
	const char *end = tmm_decimal_scan(s, false, &d);
	long long magnitude = 0;
	size_t i;

	if (!end || *end || d.n_frac) {
		snprintf(why, whylen, "not an integer");
		return false;
	}
	/* Saturate: anything past 2^53 is out of every int row's range. */
	for (i = 0; i < d.n_whole; i++)
		if (magnitude < (1ll << 53))
			magnitude = magnitude * 10 + (d.whole[i] - '0');
	v->i = d.negative ? -magnitude : magnitude;
	if (!in_range(row, (double)v->i)) {
		range_reason(row, why, whylen);
		return false;
	}
	return true;
}

static bool parse_uint64_value(const struct tmm_tunable *row, const char *s,
			       union tmm_tunable_value *v, char *why,
			       size_t whylen)
{
	struct tmm_decimal d;
	const char *end = tmm_decimal_scan(s, false, &d);
	uint64_t value = 0;
	size_t i;

	if (!end || *end || d.n_frac || d.negative) {
		snprintf(why, whylen, "not an unsigned integer");
		return false;
	}
	for (i = 0; i < d.n_whole; i++) {
		unsigned digit = (unsigned)(d.whole[i] - '0');

		if (value > (UINT64_MAX - digit) / 10) {
			snprintf(why, whylen, "too large for 64 bits");
			return false;
		}
		value = value * 10 + digit;
	}
	if (!in_range(row, (double)value)) {
		range_reason(row, why, whylen);
		return false;
	}
	v->u64 = value;
	return true;
}

static bool parse_double_value(const struct tmm_tunable *row, const char *s,
			       union tmm_tunable_value *v, char *why,
			       size_t whylen)
{
	struct tmm_decimal d;
	const char *end = tmm_decimal_scan(s, true, &d);

	/* No "nan", "inf" or hex floats: they are never meant. */
	if (!end || *end) {
		snprintf(why, whylen, "not a number");
		return false;
	}
	v->d = tmm_decimal_to_double(&d);
	if (!in_range(row, v->d)) {
		range_reason(row, why, whylen);
		return false;
	}
	return true;
}

/* Parses trimmed text by the row's type.  Returns false with a reason. */
bool tmm_tunable_parse(const struct tmm_tunable *row, const char *s,
		       union tmm_tunable_value *v, char *why, size_t whylen)
{
	if (!*s && row->type != TMM_TYPE_STRING) {
		snprintf(why, whylen, "empty value");
		return false;
	}
	switch (row->type) {
	case TMM_TYPE_CHOICE:
		return parse_choice(row, s, v, why, whylen);
	case TMM_TYPE_SIZE:
	case TMM_TYPE_SIZE_OR_PERCENT:
		return parse_size_value(row, s, v, why, whylen);
	case TMM_TYPE_INT:
		return parse_int_value(row, s, v, why, whylen);
	case TMM_TYPE_UINT64:
		return parse_uint64_value(row, s, v, why, whylen);
	case TMM_TYPE_DOUBLE:
		return parse_double_value(row, s, v, why, whylen);
	case TMM_TYPE_STRING:
		v->str = s;
		return !row->validate || row->validate(s, why, whylen);
	}
	snprintf(why, whylen, "the table has no type for this tunable");
	return false;
}
