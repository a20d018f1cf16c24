/* SPDX-License-Identifier: MIT */
/*
 * plan_encode.c — a plan made into the text of a plan file
 * (docs/plan-format.md), after a check that the decoder (plan_decode.c)
 * will take back exactly what is written.  Both spell the text through
 * plan_syntax.h.
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
#include "plan_encode.h"
#include "plan_syntax.h"
#include "lib/base/xalloc.h"

/* Why `key` cannot be written for the context `serial`, or NULL. */
static const char *key_fault(uint64_t key, uint16_t serial)
{
	if (key & TMM_KEY_IN_ITERATION) {
		if (key & ~TMM_KEY_IN_ITERATION & ~ORDINAL_MASK)
			return "it is flagged as made in the iteration, but "
			       "its ordinal does not fit 32 bits";
		return NULL;
	}
	if ((key >> SERIAL_SHIFT) != serial)
		return "it is a handle of another context (its serial is "
		       "not the one the plan is written for), which cannot "
		       "be made portable";
	if (!(key & HANDLE_MASK))
		return "it is the zero handle, which names no tensor";
	return NULL;
}

__attribute__((format(printf, 5, 6)))
static int refuse_action(char *err, size_t errlen,
			 const struct tmm_plan *p, uint32_t i,
			 const char *fmt, ...)
{
	const struct tmm_plan_action *a = &p->actions[i];
	size_t n;
	va_list ap;

	if (!err || !errlen)
		return -EINVAL;
	n = (size_t)snprintf(err, errlen, "action %" PRIu32 " (%s at access "
			     "%" PRIu32 ", tensor key %#" PRIx64 "): ", i,
			     tmm_action_name(a->type), a->trigger, a->key);
	if (n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int tmm_plan_text_check(const struct tmm_plan *p, uint16_t serial, char *err,
			size_t errlen)
{
	size_t plen;
	const char *why;

	if (serial & 0x8000u) {
		say(err, errlen, "context serial %u has bit 15 set, so its "
		    "handles cannot be told from in-iteration keys",
		    (unsigned)serial);
		return -EINVAL;
	}
	plen = strnlen(p->policy, sizeof(p->policy));
	if (plen == sizeof(p->policy)) {
		say(err, errlen, "the policy name is not NUL-terminated");
		return -EINVAL;
	}
	for (size_t k = 0; k < plen; k++)
		if (!policy_char(p->policy[k]))
			goto bad_policy;
	if (strcmp(p->policy, POLICY_NONE) == 0)
		goto bad_policy;
	if (p->n_accesses > TMM_PLAN_FILE_MAX_ACCESSES ||
	    p->n_actions > TMM_PLAN_FILE_MAX_ACTIONS) {
		say(err, errlen, "the plan has %" PRIu32 " accesses and %"
		    PRIu32 " actions; a plan file holds at most %u of each",
		    p->n_accesses, p->n_actions, TMM_PLAN_FILE_MAX_ACCESSES);
		return -EINVAL;
	}
	if ((p->n_accesses && !p->access_keys) ||
	    (p->n_actions && !p->actions)) {
		say(err, errlen, "the plan counts accesses or actions but has "
		    "no array for them");
		return -EINVAL;
	}
	for (uint32_t k = 0; k < p->n_accesses; k++) {
		why = key_fault(p->access_keys[k], serial);
		if (why) {
			say(err, errlen, "access %" PRIu32 " has tensor key %#"
			    PRIx64 ", which cannot be written: %s", k,
			    p->access_keys[k], why);
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];

		if (a->type >= TMM_ACT_TYPE_COUNT)
			return refuse_action(err, errlen, p, i,
					     "unknown action type %" PRIu32,
					     a->type);
		/* The file spells a SPLIT's parts where an advice goes,
		 * and nothing else has parts. */
		if (a->type == TMM_ACT_SPLIT &&
		    (a->parts < 2 || a->back_access != TMM_PLAN_NONE))
			return refuse_action(err, errlen, p, i, "a SPLIT needs "
					     "2 parts or more and no back-"
					     "access (it has %" PRIu32
					     " parts)", a->parts);
		if (a->type != TMM_ACT_SPLIT && a->parts != 0)
			return refuse_action(err, errlen, p, i, "%" PRIu32
					     " parts on an action that is not "
					     "SPLIT", a->parts);
		if (a->trigger >= p->n_accesses)
			return refuse_action(err, errlen, p, i, "the trigger "
					     "is past the plan's %" PRIu32
					     " accesses", p->n_accesses);
		if (i > 0 && a->trigger < p->actions[i - 1].trigger)
			return refuse_action(err, errlen, p, i, "actions are "
					     "not sorted by trigger "
					     "(tmm_plan_sort)");
		why = key_fault(a->key, serial);
		if (why)
			return refuse_action(err, errlen, p, i, "%s", why);
		if (a->back_access != TMM_PLAN_NONE &&
		    a->back_access >= p->n_accesses)
			return refuse_action(err, errlen, p, i, "the back-"
					     "access %" PRIu32 " is past the "
					     "plan's %" PRIu32 " accesses",
					     a->back_access, p->n_accesses);
		if (a->type == TMM_ACT_ADVISE &&
		    a->advice >= TMM_PLAN_ADVICE_COUNT)
			return refuse_action(err, errlen, p, i,
					     "unknown advice %" PRIu32,
					     a->advice);
		if (a->flags & ~TMM_ACT_FLAGS_KNOWN)
			return refuse_action(err, errlen, p, i, "unknown "
					     "flags %#" PRIx32,
					     a->flags & ~TMM_ACT_FLAGS_KNOWN);
		if ((a->flags & TMM_ACT_SYNC) &&
		    a->type != TMM_ACT_EVICT_SWAP &&
		    a->type != TMM_ACT_PREFETCH)
			return refuse_action(err, errlen, p, i, "only a "
					     "swap-out or a prefetch can be "
					     "layer-synchronous");
		if ((a->flags & TMM_ACT_KEEP) &&
		    (a->type != TMM_ACT_EVICT_DROP ||
		     (a->flags & TMM_ACT_SYNC)))
			return refuse_action(err, errlen, p, i, "only a drop "
					     "can keep what is regenerated");
		if ((a->flags & TMM_ACT_MIGRATE) &&
		    a->type != TMM_ACT_EVICT_SWAP)
			return refuse_action(err, errlen, p, i, "only a "
					     "swap-out can move by "
					     "migration");
		/* The line has room for one last word, and a SYNC copy
		 * is no migration anyway. */
		if ((a->flags & TMM_ACT_MIGRATE) && (a->flags & TMM_ACT_SYNC))
			return refuse_action(err, errlen, p, i, "a swap-out "
					     "cannot be both layer-"
					     "synchronous and moved by "
					     "migration");
		/* The file spells a non-ADVISE advice "-", read back as 0. */
		if (a->type != TMM_ACT_ADVISE && a->advice != 0)
			return refuse_action(err, errlen, p, i, "advice %"
					     PRIu32 " on an action that is "
					     "not ADVISE", a->advice);
	}
	return 0;
bad_policy:
	say(err, errlen, "the policy name \"%s\" is not a word of letters, "
	    "digits and _-.+", p->policy);
	return -EINVAL;
}

/* A growing text buffer; `failed` sticks at the first error. */
struct out {
	char *buf;
	size_t len, cap;
	int failed;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->failed = -EINVAL;
		return;
	}
	if ((size_t)n >= o->cap - o->len) {
		size_t need = o->len + (size_t)n + 1;
		size_t cap = o->cap;
		char *b;

		while (cap < need) {
			if (cap > SIZE_MAX / 2) {
				o->failed = -ENOMEM;
				return;
			}
			cap *= 2;
		}
		b = tmm_realloc(o->buf, cap);
		if (!b) {
			o->failed = -ENOMEM;
			return;
		}
		o->buf = b;
		o->cap = cap;
		va_start(ap, fmt);
		vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
	}
	o->len += (size_t)n;
}

/* " p:0x<handle>" or " i:<ordinal>"; the key passed tmm_plan_text_check. */
static void put_key(struct out *o, uint64_t key)
{
	if (key & TMM_KEY_IN_ITERATION)
		put(o, " i:%" PRIu32, (uint32_t)(key & ORDINAL_MASK));
	else
		put(o, " p:0x%" PRIx64, key & HANDLE_MASK);
}

/* The oldest format version that can hold plan p: old readers keep
 * reading every plan that does not need what they lack. */
static unsigned version_for(const struct tmm_plan *p)
{
	unsigned v = 1;

	for (uint32_t i = 0; i < p->n_actions; i++) {
		if (p->actions[i].flags & TMM_ACT_MIGRATE)
			return TMM_PLAN_FORMAT_MIGRATE;
		if (p->actions[i].flags & (TMM_ACT_SYNC | TMM_ACT_KEEP))
			v = TMM_PLAN_FORMAT_SYNC;
		else if (p->actions[i].type == TMM_ACT_SPLIT &&
			 v < TMM_PLAN_FORMAT_SPLIT)
			v = TMM_PLAN_FORMAT_SPLIT;
	}
	return v;
}

int tmm_plan_text_encode(const struct tmm_plan *p, uint16_t serial,
			 char **text, size_t *len)
{
	struct out o = { .cap = 4096 };

	if (!p || !text || !len)
		return -EINVAL;
	*text = NULL;
	*len = 0;
	if (tmm_plan_text_check(p, serial, NULL, 0) < 0)
		return -EINVAL;
	o.buf = tmm_malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	put(&o, MAGIC " %u\n", version_for(p));
	put(&o, "# A libtensormm plan (docs/plan-format.md); an edit breaks "
	    "the checksum.\n");
	put(&o, "policy %s\n", p->policy[0] ? p->policy : POLICY_NONE);
	put(&o, "accesses %" PRIu32 "\n", p->n_accesses);
	for (uint32_t k = 0; k < p->n_accesses; k++) {
		put(&o, "%" PRIu32, k);
		put_key(&o, p->access_keys[k]);
		put(&o, "\n");
	}
	put(&o, "actions %" PRIu32 "\n", p->n_actions);
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];

		put(&o, "%s %" PRIu32, tmm_action_name(a->type), a->trigger);
		put_key(&o, a->key);
		if (a->back_access == TMM_PLAN_NONE)
			put(&o, " -");
		else
			put(&o, " %" PRIu32, a->back_access);
		if (a->type == TMM_ACT_SPLIT)
			put(&o, " %" PRIu32, a->parts);
		else
			put(&o, " %s", a->type == TMM_ACT_ADVISE
			    ? tmm_plan_advice_names[a->advice] : "-");
		/* At most one word: the check lets no action carry two
		 * of these flags. */
		put(&o, "%s\n", a->flags & TMM_ACT_SYNC      ? " " SYNC_WORD
				 : a->flags & TMM_ACT_KEEP    ? " " KEEP_WORD
				 : a->flags & TMM_ACT_MIGRATE ? " " MIGRATE_WORD
							      : "");
	}
	if (!o.failed)
		put(&o, END_PREFIX "%08" PRIx32 "\n",
		    tmm_crc32(0, o.buf, o.len));
	if (o.failed) {
		free(o.buf);
		return o.failed;
	}
	*text = o.buf;
	*len = o.len;
	return 0;
}
