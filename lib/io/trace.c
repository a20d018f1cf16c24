/* SPDX-License-Identifier: MIT */
/*
 * trace.c — freeing, copying and checking a struct tmm_trace.
 *
 * A trace is plain arrays joined by indices, so one wrong index (a recorder
 * bug, or a damaged file that still passes its checksum) would make a
 * planner read past an array.  tmm_trace_validate() checks every index
 * against the length of the array it points into, once, so that code
 * reading a validated trace may index without checking.  The writer and
 * the decoder both call it: a recorder bug is caught when the trace is
 * written, not when someone reads it weeks later.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensormm.h"
#include "trace.h"
#include "lib/base/xalloc.h"

#define TT_FLAGS \
	(TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE | TMM_TT_READ_AFTER_LAST | \
	 TMM_TT_FIRST_BYTES_BY_OP)
#define OP_FLAGS (TMM_OP_PURE | TMM_OP_BACKWARD | TMM_TRACE_OP_SPLIT)
#define TA_FLAGS (TMM_TA_READ | TMM_TA_WRITE)

void tmm_trace_free(struct tmm_trace *t)
{
	if (!t)
		return;
	free(t->tensors);
	free(t->ops);
	free(t->op_tensors);
	free(t->accesses);
	free(t->events);
	free(t->strings);
	memset(t, 0, sizeof(*t));
}

/* A copy of n elements of `size` bytes, or NULL for none; *ok is cleared
 * when memory runs out (NULL alone cannot tell failure from "empty"). */
static void *dup_array(const void *src, size_t n, size_t size, int *ok)
{
	void *p;

	if (n == 0 || !src)
		return NULL;
	if (n > SIZE_MAX / size) {
		*ok = 0;
		return NULL;
	}
	p = tmm_malloc(n * size);
	if (!p) {
		*ok = 0;
		return NULL;
	}
	memcpy(p, src, n * size);
	return p;
}

int tmm_trace_copy(struct tmm_trace *dst, const struct tmm_trace *src)
{
	int ok = 1;

	if (!dst || !src)
		return -EINVAL;
	memset(dst, 0, sizeof(*dst));
	dst->iteration = src->iteration;
	dst->duration_ns = src->duration_ns;
	dst->stall_ns = src->stall_ns;
	dst->tensors = dup_array(src->tensors, src->n_tensors,
				 sizeof(*src->tensors), &ok);
	dst->ops = dup_array(src->ops, src->n_ops, sizeof(*src->ops), &ok);
	dst->op_tensors = dup_array(src->op_tensors, src->n_op_tensors,
				    sizeof(*src->op_tensors), &ok);
	dst->accesses = dup_array(src->accesses, src->n_accesses,
				  sizeof(*src->accesses), &ok);
	dst->events = dup_array(src->events, src->n_events,
				sizeof(*src->events), &ok);
	dst->strings = dup_array(src->strings, src->strings_len, 1, &ok);
	if (!ok) {
		tmm_trace_free(dst);
		return -ENOMEM;
	}
	/* Counts only for what was copied: a NULL array stays empty. */
	dst->n_tensors = dst->tensors ? src->n_tensors : 0;
	dst->n_ops = dst->ops ? src->n_ops : 0;
	dst->n_op_tensors = dst->op_tensors ? src->n_op_tensors : 0;
	dst->n_accesses = dst->accesses ? src->n_accesses : 0;
	dst->n_events = dst->events ? src->n_events : 0;
	dst->strings_len = dst->strings ? src->strings_len : 0;
	return 0;
}

/* ------------------------------------------------------------------------
 * Validation
 * ---------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int invalid(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A name offset is valid if it is NONE or inside the (terminated) table. */
static int name_ok(const struct tmm_trace *t, uint32_t off)
{
	return off == TMM_TRACE_NONE || off < t->strings_len;
}

static int check_counts(const struct tmm_trace *t, char *err, size_t errlen)
{
	static const char *const what[] = {
		"tensors", "ops", "op_tensors", "accesses", "events",
		"strings_len",
	};
	const uint32_t n[] = {
		t->n_tensors, t->n_ops, t->n_op_tensors,
		t->n_accesses, t->n_events, t->strings_len,
	};
	const void *const arr[] = {
		t->tensors, t->ops, t->op_tensors,
		t->accesses, t->events, t->strings,
	};

	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		if (n[i] > TMM_TRACE_MAX_ELEMS)
			return invalid(err, errlen,
				       "%s is %u, more than the %u a trace "
				       "may hold",
				       what[i], n[i], TMM_TRACE_MAX_ELEMS);
		if (n[i] && !arr[i])
			return invalid(err, errlen,
				       "%s is %u but its array is NULL",
				       what[i], n[i]);
	}
	/* Every name must end inside the table: checked once, here. */
	if (t->strings_len && t->strings[t->strings_len - 1] != '\0')
		return invalid(err, errlen,
			       "the string table (%u bytes) does not end "
			       "with a NUL byte, so its last name is "
			       "unterminated", t->strings_len);
	return 0;
}

static int check_tensors(const struct tmm_trace *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		const struct tmm_trace_tensor *x = &t->tensors[i];

		if (!name_ok(t, x->name))
			return invalid(err, errlen,
				       "tensor %u: name offset %u is outside "
				       "the %u-byte string table", i, x->name,
				       t->strings_len);
		if (x->kind >= TMM_KIND_COUNT)
			return invalid(err, errlen,
				       "tensor %u (\"%s\"): kind %u is not a "
				       "tensor kind (0 to %d)", i,
				       tmm_trace_str(t, x->name), x->kind,
				       TMM_KIND_COUNT - 1);
		if (x->producer != TMM_TRACE_NONE && x->producer >= t->n_ops)
			return invalid(err, errlen,
				       "tensor %u (\"%s\"): producer %u is not "
				       "an op (the trace has %u ops)", i,
				       tmm_trace_str(t, x->name), x->producer,
				       t->n_ops);
		if (x->flags & ~TT_FLAGS)
			return invalid(err, errlen,
				       "tensor %u (\"%s\"): flags 0x%x have "
				       "bits outside the defined 0x%x", i,
				       tmm_trace_str(t, x->name), x->flags,
				       TT_FLAGS);
	}
	return 0;
}

static int check_ops(const struct tmm_trace *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->n_ops; i++) {
		const struct tmm_trace_op *o = &t->ops[i];
		/* In 64 bits: the sum of three 32-bit values cannot wrap. */
		uint64_t end = (uint64_t)o->first + o->n_inputs + o->n_outputs;

		if (!name_ok(t, o->name))
			return invalid(err, errlen,
				       "op %u: name offset %u is outside the "
				       "%u-byte string table", i, o->name,
				       t->strings_len);
		if (o->kind >= TMM_OP_KIND_COUNT)
			return invalid(err, errlen,
				       "op %u (\"%s\"): kind %u is not an op "
				       "kind (0 to %d)", i,
				       tmm_trace_str(t, o->name), o->kind,
				       TMM_OP_KIND_COUNT - 1);
		if (o->flags & ~OP_FLAGS)
			return invalid(err, errlen,
				       "op %u (\"%s\"): flags 0x%x have bits "
				       "outside the defined 0x%x", i,
				       tmm_trace_str(t, o->name), o->flags,
				       OP_FLAGS);
		if (end > t->n_op_tensors)
			return invalid(err, errlen,
				       "op %u (\"%s\"): its tensors "
				       "op_tensors[%u..%llu) run past the %u "
				       "entries", i, tmm_trace_str(t, o->name),
				       o->first, (unsigned long long)end,
				       t->n_op_tensors);
		if (o->begin_ns > o->end_ns)
			return invalid(err, errlen,
				       "op %u (\"%s\"): begins at %llu ns, "
				       "after it ends at %llu ns", i,
				       tmm_trace_str(t, o->name),
				       (unsigned long long)o->begin_ns,
				       (unsigned long long)o->end_ns);
		/* As tmm_run refuses: planners read it as link time. */
		if (o->net_bytes < 0 || o->net_bytes != o->net_bytes ||
		    (o->net_bytes > 0 && o->kind != TMM_OP_COLLECTIVE))
			return invalid(err, errlen,
				       "op %u (\"%s\"): net_bytes %g, but "
				       "only a collective (kind %d) moves "
				       "bytes on the network, never a "
				       "negative count", i,
				       tmm_trace_str(t, o->name), o->net_bytes,
				       TMM_OP_COLLECTIVE);
	}
	for (uint32_t i = 0; i < t->n_op_tensors; i++)
		if (t->op_tensors[i] >= t->n_tensors)
			return invalid(err, errlen,
				       "op_tensors[%u] is %u, not a tensor "
				       "(the trace has %u tensors)", i,
				       t->op_tensors[i], t->n_tensors);
	return 0;
}

static int check_accesses(const struct tmm_trace *t, char *err,
			  size_t errlen)
{
	for (uint32_t i = 0; i < t->n_accesses; i++) {
		const struct tmm_trace_access *a = &t->accesses[i];

		if (a->tensor >= t->n_tensors)
			return invalid(err, errlen,
				       "access %u: tensor %u is not a tensor "
				       "(the trace has %u tensors)", i,
				       a->tensor, t->n_tensors);
		if (a->op != TMM_TRACE_NONE && a->op >= t->n_ops)
			return invalid(err, errlen,
				       "access %u: op %u is not an op (the "
				       "trace has %u ops)", i, a->op, t->n_ops);
		if (a->flags & ~TA_FLAGS)
			return invalid(err, errlen,
				       "access %u: flags 0x%x have bits "
				       "outside the defined 0x%x", i, a->flags,
				       TA_FLAGS);
		if (a->begin_ns > a->end_ns)
			return invalid(err, errlen,
				       "access %u: begins at %llu ns, after "
				       "it ends at %llu ns", i,
				       (unsigned long long)a->begin_ns,
				       (unsigned long long)a->end_ns);
	}
	return 0;
}

static int check_events(const struct tmm_trace *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->n_events; i++) {
		const struct tmm_trace_event *e = &t->events[i];

		if (e->kind >= TMM_EV_KIND_COUNT)
			return invalid(err, errlen,
				       "event %u: kind %u is not an event "
				       "kind (0 to %d)", i, e->kind,
				       TMM_EV_KIND_COUNT - 1);
		if (e->tensor != TMM_TRACE_NONE && e->tensor >= t->n_tensors)
			return invalid(err, errlen,
				       "event %u: tensor %u is not a tensor "
				       "(the trace has %u tensors)", i,
				       e->tensor, t->n_tensors);
		/* A count of accesses before it: n_accesses itself is fine. */
		if (e->access > t->n_accesses)
			return invalid(err, errlen,
				       "event %u: follows access %u, but the "
				       "trace has only %u accesses", i,
				       e->access, t->n_accesses);
	}
	return 0;
}

int tmm_trace_validate(const struct tmm_trace *t, char *err, size_t errlen)
{
	int ret;

	if (!t)
		return invalid(err, errlen, "no trace (NULL)");
	ret = check_counts(t, err, errlen);
	if (!ret)
		ret = check_tensors(t, err, errlen);
	if (!ret)
		ret = check_ops(t, err, errlen);
	if (!ret)
		ret = check_accesses(t, err, errlen);
	if (!ret)
		ret = check_events(t, err, errlen);
	if (!ret && err && errlen)
		err[0] = '\0';
	return ret;
}
