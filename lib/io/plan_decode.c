/* SPDX-License-Identifier: MIT */
/*
 * plan_decode.c — the text of a plan file made back into a plan
 * (docs/plan-format.md).  The text is spelt through plan_syntax.h, the
 * same as the encoder (plan_encode.c) writes it.
 *
 * The decoder trusts nothing.  It works on (pointer, length), never on
 * NUL-terminated strings; it checks the first line and the version first,
 * so that another kind of file or a newer format is named as such rather
 * than as damage; then the end line and the checksum; then every line
 * against the grammar, bounding each count by the bytes left before
 * allocating anything for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/crc32.h"
#include "plan.h"
#include "plan_decode.h"
#include "plan_syntax.h"
#include "lib/base/xalloc.h"

/* Lower bounds on the bytes of one line, newline included, to refuse a
 * count before allocating for it: "0 i:0" and "X 0 i:0 0 -" (shorter than
 * any real action line, so a new action name cannot break the bound). */
#define MIN_ACCESS_LINE 6
#define MIN_ACTION_LINE 12

#define ADVICE_REPLAN                                                       \
	"delete the file to re-plan (the next run measures and writes a new " \
	"one)"
#define ADVICE_TRUNC                                                        \
	"the file is truncated (a write or a copy was cut short); "         \
	ADVICE_REPLAN
#define ADVICE_CORRUPT                                                      \
	"the file was damaged or edited (the checksum on its end line "     \
	"covers every line before it); " ADVICE_REPLAN
#define ADVICE_INVALID                                                      \
	"its checksum matches, so the program that wrote it made an "       \
	"invalid plan file: please report this as a bug, and "              \
	ADVICE_REPLAN

struct dec {
	const char *name;	/* the file, for messages */
	const char *text, *end; /* all of it */
	const char *at;		/* the next line to read */
	const char *stop;	/* the end line, where the body stops */
	size_t line;		/* the number of the line read last */
	size_t end_line;	/* the number of the end line */
	uint16_t serial;
	uint32_t version;	/* the file's format version */
	char *err;
	size_t errlen;
};

/* One space-separated word of a line. */
struct word {
	const char *s;
	size_t n;
};

__attribute__((format(printf, 3, 4)))
static int fail(const struct dec *d, size_t line, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (!d->err || !d->errlen)
		return -EINVAL;
	n = (size_t)snprintf(d->err, d->errlen, "%s: line %zu: ", d->name,
			     line);
	if (n < d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err + n, d->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * [s, e) as a quoted C-like string for a message, non-printing bytes
 * escaped and long text cut with "...", in buf (at least 64 bytes).
 */
static const char *shown(char *buf, size_t size, const char *s,
			 const char *e)
{
	size_t n = 0;

	buf[n++] = '"';
	for (; s < e; s++) {
		unsigned char c = (unsigned char)*s;

		/* Room for an escape now, or "...", '"' and NUL later. */
		if (n + 10 > size) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			buf[n++] = (char)c;
		} else {
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
		}
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}

static bool is(const struct word *w, const char *lit)
{
	return w->n == strlen(lit) && memcmp(w->s, lit, w->n) == 0;
}

/*
 * Splits [s, e) at single spaces into at most `max` words.  Returns how
 * many, or -1 for an empty word (an empty line, a leading, trailing or
 * doubled space) or for more than `max` words.
 */
static int split(const char *s, const char *e, struct word *w, int max)
{
	int n = 0;

	for (;;) {
		const char *sp = memchr(s, ' ', (size_t)(e - s));
		const char *we = sp ? sp : e;

		if (we == s || n == max)
			return -1;
		w[n++] = (struct word){ s, (size_t)(we - s) };
		if (!sp)
			return n;
		s = sp + 1;
	}
}

/* The first word of [s, e), whatever else is on the line. */
static struct word first_word(const char *s, const char *e)
{
	const char *sp = memchr(s, ' ', (size_t)(e - s));

	return (struct word){ s, (size_t)((sp ? sp : e) - s) };
}

enum num { NUM_OK, NUM_NOT, NUM_RANGE };

/* A decimal number as the encoder spells it: digits, no leading zero. */
static enum num parse_dec(const struct word *w, uint32_t max, uint32_t *v)
{
	uint64_t x = 0;

	if (w->n == 0 || (w->s[0] == '0' && w->n > 1))
		return NUM_NOT;
	for (size_t k = 0; k < w->n; k++)
		if (w->s[k] < '0' || w->s[k] > '9')
			return NUM_NOT;
	if (w->n > 10) /* more than UINT32_MAX; also keeps x from overflow */
		return NUM_RANGE;
	for (size_t k = 0; k < w->n; k++)
		x = 10 * x + (uint64_t)(w->s[k] - '0');
	if (x > max)
		return NUM_RANGE;
	*v = (uint32_t)x;
	return NUM_OK;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Reads a key word; returns NULL, or why it is not one. */
static const char *parse_key(const struct word *w, uint16_t serial,
			     uint64_t *key)
{
	uint64_t x = 0;
	uint32_t ordinal;

	if (w->n > 2 && memcmp(w->s, "i:", 2) == 0) {
		struct word o = { w->s + 2, w->n - 2 };

		switch (parse_dec(&o, UINT32_MAX, &ordinal)) {
		case NUM_OK:
			*key = tmm_key_of_ordinal(ordinal);
			return NULL;
		case NUM_RANGE:
			return "the ordinal is more than 4294967295";
		default:
			break;
		}
	} else if (w->n > 4 && memcmp(w->s, "p:0x", 4) == 0) {
		const char *h = w->s + 4;
		size_t n = w->n - 4;

		for (size_t k = 0; k < n; k++)
			if (hex_digit(h[k]) < 0)
				goto not_a_key;
		if (n == 1 && h[0] == '0')
			return "the zero handle names no tensor";
		if (h[0] == '0')
			goto not_a_key;
		if (n > HANDLE_HEX)
			return "the handle is more than 48 bits";
		for (size_t k = 0; k < n; k++)
			x = x << 4 | (uint64_t)hex_digit(h[k]);
		*key = (uint64_t)serial << SERIAL_SHIFT | x;
		return NULL;
	}
not_a_key:
	return "a key is p:0x<handle in lowercase hex> or i:<ordinal>, "
	       "without leading zeros";
}

/*
 * Reads the next line before the end line that is not a comment: sets
 * [*s, *e) (*e is its newline) and returns true, or returns false at the
 * end line.
 */
static bool next_line(struct dec *d, const char **s, const char **e)
{
	while (d->at < d->stop) {
		/* Found: every line before the end line ends in '\n'. */
		const char *nl = memchr(d->at, '\n',
					(size_t)(d->stop - d->at));

		*s = d->at;
		*e = nl;
		d->at = nl + 1;
		d->line++;
		if (**s != '#')
			return true;
	}
	d->line = d->end_line;
	return false;
}

/* The section heads, in the order a file has them. */
enum { SEC_POLICY, SEC_ACCESSES, SEC_ACTIONS, SEC_COUNT };
static const char *const heads[SEC_COUNT] = { "policy", "accesses",
					      "actions" };

static int head_of(const struct word *w)
{
	for (int k = 0; k < SEC_COUNT; k++)
		if (is(w, heads[k]))
			return k;
	return -1;
}

/* Reads the line that opens section `sec` (its head and one value) into
 * w[0..1], or says which section is missing, repeated or misplaced. */
static int section(struct dec *d, int sec, struct word w[2])
{
	char q[80];
	const char *s, *e;
	struct word first;
	int k;

	if (!next_line(d, &s, &e))
		return fail(d, d->line, "the '%s' line is missing: the end "
			    "line comes first; " ADVICE_INVALID, heads[sec]);
	if (split(s, e, w, 2) == 2 && is(&w[0], heads[sec]))
		return 0;
	first = first_word(s, e);
	k = head_of(&first);
	if (k == sec)
		return fail(d, d->line, "expected '%s' and one value, found "
			    "%s; " ADVICE_INVALID, heads[sec],
			    shown(q, sizeof(q), s, e));
	if (k >= 0 && k < sec)
		return fail(d, d->line, "a second '%s' line: each section "
			    "appears once; " ADVICE_INVALID, heads[k]);
	if (k > sec)
		return fail(d, d->line, "the '%s' line is missing: found the "
			    "'%s' line first; " ADVICE_INVALID, heads[sec],
			    heads[k]);
	return fail(d, d->line, "expected the '%s' line, found %s; "
		    ADVICE_INVALID, heads[sec], shown(q, sizeof(q), s, e));
}

/* Reads the count of a section head, bounded by `max` and by the lines
 * of at least `min_line` bytes that fit before the end line. */
static int count(struct dec *d, const struct word *w, uint32_t max,
		 size_t min_line, uint32_t *n)
{
	char q[80];
	size_t room = (size_t)(d->stop - d->at) / min_line;

	switch (parse_dec(&w[1], max, n)) {
	case NUM_OK:
		break;
	case NUM_RANGE:
		return fail(d, d->line, "the %s count %s is more than the %"
			    PRIu32 " a plan file may hold; " ADVICE_INVALID,
			    heads[head_of(&w[0])],
			    shown(q, sizeof(q), w[1].s, w[1].s + w[1].n),
			    max);
	default:
		return fail(d, d->line, "the %s count %s is not a number; "
			    ADVICE_INVALID, heads[head_of(&w[0])],
			    shown(q, sizeof(q), w[1].s, w[1].s + w[1].n));
	}
	if (*n > room)
		return fail(d, d->line, "the %s count is %" PRIu32 ", but the "
			    "%zu bytes before the end line hold at most %zu "
			    "such lines; " ADVICE_INVALID,
			    heads[head_of(&w[0])], *n,
			    (size_t)(d->stop - d->at), room);
	return 0;
}

static int parse_policy(struct dec *d, struct tmm_plan *p)
{
	char q[80];
	struct word w[2];
	int ret = section(d, SEC_POLICY, w);

	if (ret < 0)
		return ret;
	if (is(&w[1], POLICY_NONE))
		return 0;
	for (size_t k = 0; k < w[1].n; k++)
		if (!policy_char(w[1].s[k]))
			goto bad;
	if (w[1].n >= sizeof(p->policy))
		goto bad;
	memcpy(p->policy, w[1].s, w[1].n);
	p->policy[w[1].n] = '\0';
	return 0;
bad:
	return fail(d, d->line, "the policy %s is not a word of at most %zu "
		    "letters, digits and _-.+; " ADVICE_INVALID,
		    shown(q, sizeof(q), w[1].s, w[1].s + w[1].n),
		    sizeof(p->policy) - 1);
}

static int parse_accesses(struct dec *d, struct tmm_plan *p)
{
	char q[80];
	struct word w[2];
	const char *s, *e, *why;
	uint32_t n, index;
	int ret = section(d, SEC_ACCESSES, w);

	if (ret < 0)
		return ret;
	ret = count(d, w, TMM_PLAN_FILE_MAX_ACCESSES, MIN_ACCESS_LINE, &n);
	if (ret < 0)
		return ret;
	if (n) {
		p->access_keys = tmm_malloc(sizeof(uint64_t) * n);
		if (!p->access_keys)
			return -ENOMEM;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct word first;

		if (!next_line(d, &s, &e))
			goto short_section;
		first = first_word(s, e);
		if (head_of(&first) >= 0)
			goto short_section;
		if (split(s, e, w, 2) != 2)
			return fail(d, d->line, "expected access %" PRIu32
				    " as '<index> <key>', found %s; "
				    ADVICE_INVALID, k,
				    shown(q, sizeof(q), s, e));
		if (parse_dec(&w[0], UINT32_MAX, &index) != NUM_OK ||
		    index != k)
			return fail(d, d->line, "expected access %" PRIu32
				    ", found %s: the access lines number "
				    "the accesses in order from 0; "
				    ADVICE_INVALID, k,
				    shown(q, sizeof(q), s, e));
		why = parse_key(&w[1], d->serial, &p->access_keys[k]);
		if (why)
			return fail(d, d->line, "access %" PRIu32 " has the "
				    "key %s: %s; " ADVICE_INVALID, k,
				    shown(q, sizeof(q), w[1].s,
					  w[1].s + w[1].n), why);
		p->n_accesses = k + 1;
	}
	return 0;
short_section:
	return fail(d, d->line, "the accesses section ends after %" PRIu32
		    " of its %" PRIu32 " lines; " ADVICE_INVALID,
		    p->n_accesses, n);
}

static int parse_action(struct dec *d, struct tmm_plan *p, const char *s,
			const char *e)
{
	char q[80];
	struct word w[6];
	struct tmm_plan_action a = { .back_access = TMM_PLAN_NONE };
	uint32_t i = p->n_actions, last = p->n_accesses - 1;
	const char *why;
	enum num r;
	int n_words = split(s, e, w, 6);

	if (n_words != 5 && n_words != 6)
		return fail(d, d->line, "expected an action as '<type> "
			    "<trigger> <key> <back-access or -> <advice or "
			    "->' and from version %u an optional '"
			    SYNC_WORD "' or '" KEEP_WORD "' (from version %u "
			    "also '" MIGRATE_WORD "'), found %s; "
			    ADVICE_INVALID, TMM_PLAN_FORMAT_SYNC,
			    TMM_PLAN_FORMAT_MIGRATE,
			    shown(q, sizeof(q), s, e));
	for (a.type = 0; a.type < TMM_ACT_TYPE_COUNT; a.type++)
		if (is(&w[0], tmm_action_name(a.type)))
			break;
	/* The caller checked the type name. */
	if (n_words == 6) {
		bool sync = is(&w[5], SYNC_WORD), keep = is(&w[5], KEEP_WORD);
		bool migrate = is(&w[5], MIGRATE_WORD);
		/* Each word only where its version and its type allow it:
		 * no writer made anything else, so anything else is damage
		 * or a bug. */
		bool v3 = d->version >= TMM_PLAN_FORMAT_SYNC;
		bool v4 = d->version >= TMM_PLAN_FORMAT_MIGRATE;

		if (!((v3 && sync && (a.type == TMM_ACT_EVICT_SWAP ||
				      a.type == TMM_ACT_PREFETCH)) ||
		      (v3 && keep && a.type == TMM_ACT_EVICT_DROP) ||
		      (v4 && migrate && a.type == TMM_ACT_EVICT_SWAP)))
			return fail(d, d->line, "action %" PRIu32 ": the last "
				    "word %s is neither '" SYNC_WORD "' on an "
				    "EVICT_SWAP or PREFETCH nor '" KEEP_WORD
				    "' on an EVICT_DROP in a file of version "
				    "%u or later, nor '" MIGRATE_WORD "' on an "
				    "EVICT_SWAP in one of version %u or later "
				    "(this one is version %" PRIu32 "); "
				    ADVICE_INVALID, i,
				    shown(q, sizeof(q), w[5].s,
					  w[5].s + w[5].n),
				    TMM_PLAN_FORMAT_SYNC,
				    TMM_PLAN_FORMAT_MIGRATE, d->version);
		a.flags = sync ? TMM_ACT_SYNC
			: keep ? TMM_ACT_KEEP
			       : TMM_ACT_MIGRATE;
	}
	r = p->n_accesses ? parse_dec(&w[1], last, &a.trigger) : NUM_RANGE;
	if (r != NUM_OK)
		return fail(d, d->line, "action %" PRIu32 ": the trigger %s is "
			    "not an access of the plan's %" PRIu32 "; "
			    ADVICE_INVALID, i,
			    shown(q, sizeof(q), w[1].s, w[1].s + w[1].n),
			    p->n_accesses);
	if (i > 0 && a.trigger < p->actions[i - 1].trigger)
		return fail(d, d->line, "action %" PRIu32 " fires at access %"
			    PRIu32 ", before the action above it (at %"
			    PRIu32 "): actions must be sorted by trigger; "
			    ADVICE_INVALID, i, a.trigger,
			    p->actions[i - 1].trigger);
	why = parse_key(&w[2], d->serial, &a.key);
	if (why)
		return fail(d, d->line, "action %" PRIu32 " has the key %s: "
			    "%s; " ADVICE_INVALID, i,
			    shown(q, sizeof(q), w[2].s, w[2].s + w[2].n),
			    why);
	if (!is(&w[3], "-") && parse_dec(&w[3], last, &a.back_access) !=
	    NUM_OK)
		return fail(d, d->line, "action %" PRIu32 ": the back-access "
			    "%s is neither '-' nor an access of the plan's %"
			    PRIu32 "; " ADVICE_INVALID, i,
			    shown(q, sizeof(q), w[3].s, w[3].s + w[3].n),
			    p->n_accesses);
	if (a.type == TMM_ACT_ADVISE) {
		for (a.advice = 0; a.advice < TMM_PLAN_ADVICE_COUNT;
		     a.advice++)
			if (is(&w[4], tmm_plan_advice_names[a.advice]))
				break;
		if (a.advice == TMM_PLAN_ADVICE_COUNT)
			return fail(d, d->line, "action %" PRIu32 ": unknown "
				    "advice %s (this build knows PREFER_HOST, "
				    "PREFER_DEVICE, UNSET_PREFERRED, "
				    "READ_MOSTLY, UNSET_READ_MOSTLY and "
				    "ACCESSED_BY_DEVICE); " ADVICE_INVALID, i,
				    shown(q, sizeof(q), w[4].s,
					  w[4].s + w[4].n));
	} else if (a.type == TMM_ACT_SPLIT) {
		if (a.back_access != TMM_PLAN_NONE)
			return fail(d, d->line, "action %" PRIu32 ": a SPLIT "
				    "has no back-access, but this one has %"
				    PRIu32 "; " ADVICE_INVALID, i,
				    a.back_access);
		if (parse_dec(&w[4], UINT32_MAX, &a.parts) != NUM_OK ||
		    a.parts < 2)
			return fail(d, d->line, "action %" PRIu32 ": a SPLIT's "
				    "parts must be a number from 2, found %s; "
				    ADVICE_INVALID, i,
				    shown(q, sizeof(q), w[4].s,
					  w[4].s + w[4].n));
	} else if (!is(&w[4], "-")) {
		return fail(d, d->line, "action %" PRIu32 ": only ADVISE "
			    "takes an advice, but this %s has %s; "
			    ADVICE_INVALID, i, tmm_action_name(a.type),
			    shown(q, sizeof(q), w[4].s, w[4].s + w[4].n));
	}
	p->actions[p->n_actions++] = a;
	return 0;
}

static int parse_actions(struct dec *d, struct tmm_plan *p)
{
	char q[80];
	struct word w[2];
	const char *s, *e;
	uint32_t n;
	int ret = section(d, SEC_ACTIONS, w);

	if (ret < 0)
		return ret;
	ret = count(d, w, TMM_PLAN_FILE_MAX_ACTIONS, MIN_ACTION_LINE, &n);
	if (ret < 0)
		return ret;
	if (n) {
		/* Only a 32-bit size_t can overflow here. */
		if ((uint64_t)n * sizeof(*p->actions) > SIZE_MAX)
			return -ENOMEM;
		p->actions = tmm_malloc(sizeof(*p->actions) * n);
		if (!p->actions)
			return -ENOMEM;
		p->cap_actions = n;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct word first;
		bool known = false;

		if (!next_line(d, &s, &e))
			return fail(d, d->line, "the actions section ends "
				    "after %" PRIu32 " of its %" PRIu32
				    " lines; " ADVICE_INVALID, i, n);
		first = first_word(s, e);
		for (uint32_t t = 0; t < TMM_ACT_TYPE_COUNT; t++)
			known = known || is(&first, tmm_action_name(t));
		if (!known)
			return fail(d, d->line, "action %" PRIu32 ": unknown "
				    "action type %s (this build knows "
				    "EVICT_SWAP, EVICT_DROP, PREFETCH, ADVISE "
				    "and SPLIT); " ADVICE_INVALID, i,
				    shown(q, sizeof(q), first.s,
					  first.s + first.n));
		if (is(&first, tmm_action_name(TMM_ACT_SPLIT)) &&
		    d->version < TMM_PLAN_FORMAT_SPLIT)
			return fail(d, d->line, "action %" PRIu32 ": a SPLIT "
				    "in a file of format version %" PRIu32
				    ", which has none (version %u added "
				    "it); " ADVICE_INVALID, i, d->version,
				    TMM_PLAN_FORMAT_SPLIT);
		ret = parse_action(d, p, s, e);
		if (ret < 0)
			return ret;
	}
	if (next_line(d, &s, &e))
		return fail(d, d->line, "unexpected line after the %" PRIu32
			    " actions: %s; " ADVICE_INVALID, n,
			    shown(q, sizeof(q), s, e));
	return 0;
}

/* Checks line 1, "tensormm-plan <version>", and moves d->at past it. */
static int check_first_line(struct dec *d)
{
	static const char magic[] = MAGIC " ";
	const size_t mlen = sizeof(magic) - 1;
	size_t len = (size_t)(d->end - d->text);
	const char *nl = memchr(d->text, '\n', len);
	const char *le = nl ? nl : d->end;
	struct word v;
	uint32_t version;
	char q[80];

	if (len == 0)
		return fail(d, 1, "the file is empty; " ADVICE_TRUNC);
	if ((size_t)(le - d->text) < mlen ||
	    memcmp(d->text, magic, mlen) != 0) {
		if (!nl && memcmp(d->text, magic, len < mlen ? len : mlen) ==
		    0)
			return fail(d, 1, "the file ends inside its first "
				    "line; " ADVICE_TRUNC);
		return fail(d, 1, "not a libtensormm plan file: it does not "
			    "begin with \"" MAGIC " <version>\"; check the "
			    "path TENSORMM_HINTS names, or " ADVICE_REPLAN);
	}
	v = (struct word){ d->text + mlen, (size_t)(le - d->text) - mlen };
	switch (parse_dec(&v, UINT32_MAX, &version)) {
	case NUM_OK:
		if (!nl)
			return fail(d, 1, "the file ends inside its first "
				    "line; " ADVICE_TRUNC);
		if (version == 0)
			break;
		if (version > TMM_PLAN_FORMAT_VERSION)
			return fail(d, 1, "the file has plan format version %"
				    PRIu32 ", but this build of libtensormm "
				    "reads versions 1 to %u: a newer build "
				    "wrote it; run that build, or "
				    ADVICE_REPLAN, version,
				    TMM_PLAN_FORMAT_VERSION);
		d->at = nl + 1;
		d->line = 1;
		d->version = version;
		return 0;
	case NUM_RANGE:
		if (!nl)
			return fail(d, 1, "the file ends inside its first "
				    "line; " ADVICE_TRUNC);
		return fail(d, 1, "the format version %s is too large for a "
			    "plan file; " ADVICE_CORRUPT,
			    shown(q, sizeof(q), v.s, v.s + v.n));
	default:
		if (!nl && v.n == 0)
			return fail(d, 1, "the file ends inside its first "
				    "line; " ADVICE_TRUNC);
		break;
	}
	return fail(d, 1, "expected a format version from 1 after \"" MAGIC
		    "\", found %s; " ADVICE_CORRUPT,
		    shown(q, sizeof(q), v.s, v.s + v.n));
}

/*
 * Finds the end line, the first line that is "end" or begins with "end ",
 * checks that nothing follows it, and checks the checksum it carries
 * against every byte before it.  Sets d->stop and d->end_line.
 */
static int check_end_line(struct dec *d)
{
	const char *s = d->at, *nl;
	size_t line = d->line + 1;
	uint32_t crc = 0, sum;
	char q[80];

	for (;; line++) {
		size_t n;

		if (s == d->end)
			return fail(d, line, "the file ends before its end "
				    "line; " ADVICE_TRUNC);
		nl = memchr(s, '\n', (size_t)(d->end - s));
		n = (size_t)((nl ? nl : d->end) - s);
		if ((n == 3 || (n > 3 && s[3] == ' ')) &&
		    memcmp(s, "end", 3) == 0)
			break;
		if (!nl)
			return fail(d, line, "the file ends inside a line, "
				    "before its end line; " ADVICE_TRUNC);
		s = nl + 1;
	}
	d->stop = s;
	d->end_line = line;
	if (!nl)
		return fail(d, line, "the file ends inside its end line; "
			    ADVICE_TRUNC);
	if ((size_t)(nl - s) != strlen(END_PREFIX) + END_HEX ||
	    memcmp(s, END_PREFIX, strlen(END_PREFIX)) != 0)
		goto malformed;
	for (const char *h = s + strlen(END_PREFIX); h < nl; h++) {
		if (hex_digit(*h) < 0)
			goto malformed;
		crc = crc << 4 | (uint32_t)hex_digit(*h);
	}
	if (nl + 1 != d->end)
		return fail(d, line + 1, "there is more after the end line: "
			    "%s; " ADVICE_CORRUPT,
			    shown(q, sizeof(q), nl + 1, d->end));
	sum = tmm_crc32(0, d->text, (size_t)(s - d->text));
	if (sum != crc)
		return fail(d, line, "the checksum on the end line is %08"
			    PRIx32 ", but the lines before it sum to %08"
			    PRIx32 "; " ADVICE_CORRUPT, crc, sum);
	return 0;
malformed:
	return fail(d, line, "expected the end line \"" END_PREFIX
		    "<8 lowercase hex digits>\", found %s; " ADVICE_CORRUPT,
		    shown(q, sizeof(q), s, nl));
}

static int decode(struct dec *d, struct tmm_plan *out)
{
	struct tmm_plan p;
	int ret;

	memset(&p, 0, sizeof(p));
	if (d->serial & 0x8000u) {
		say(d->err, d->errlen, "%s: context serial %u has bit 15 "
		    "set, so its handles cannot be told from in-iteration "
		    "keys; the plan cannot be applied to it", d->name,
		    (unsigned)d->serial);
		ret = -EINVAL;
		goto out;
	}
	ret = check_first_line(d);
	if (ret == 0)
		ret = check_end_line(d);
	if (ret == 0)
		ret = parse_policy(d, &p);
	if (ret == 0)
		ret = parse_accesses(d, &p);
	if (ret == 0)
		ret = parse_actions(d, &p);
	if (ret == 0) {
		*out = p;
		return 0;
	}
	if (ret == -ENOMEM)
		say(d->err, d->errlen, "%s: out of memory for a plan of the "
		    "size line %zu gives", d->name, d->line);
out:
	tmm_plan_free(&p);
	memset(out, 0, sizeof(*out));
	return ret;
}

int tmm_plan_text_decode(const char *text, size_t len, struct tmm_plan *out,
			 uint16_t serial, char *err, size_t errlen)
{
	struct dec d = {
		.name = "plan text", .serial = serial, .err = err,
		.errlen = errlen,
	};

	if (!out || (!text && len)) {
		say(err, errlen, "tmm_plan_text_decode: no text or no plan");
		if (out)
			memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	/* An empty text may come as NULL; NULL + 0 is undefined in C. */
	d.text = text ? text : "";
	d.end = d.text + len;
	return decode(&d, out);
}

int tmm_plan_text_decode_named(const char *name, const char *text,
			       size_t len, struct tmm_plan *out,
			       uint16_t serial, char *err, size_t errlen)
{
	struct dec d = { .name = name, .serial = serial, .err = err,
			 .errlen = errlen };

	d.text = text;
	d.end = text + len;
	return decode(&d, out);
}
