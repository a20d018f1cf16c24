/* SPDX-License-Identifier: MIT */
/*
 * plan.c — the plan container and its check against a trace.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

const char *tmm_action_name(enum tmm_action_type type)
{
	static const char *const names[TMM_ACT_TYPE_COUNT] = {
		[TMM_ACT_EVICT_SWAP] = "EVICT_SWAP",
		[TMM_ACT_EVICT_DROP] = "EVICT_DROP",
		[TMM_ACT_PREFETCH] = "PREFETCH",
		[TMM_ACT_ADVISE] = "ADVISE",
		[TMM_ACT_SPLIT] = "SPLIT",
	};

	return (unsigned)type < TMM_ACT_TYPE_COUNT ? names[type] : "INVALID";
}

int tmm_plan_init(struct tmm_plan *p, const struct tmm_trace *t,
		  const char *policy)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->policy, sizeof(p->policy), "%s", policy ? policy : "");
	if (t->n_accesses) {
		p->access_keys = tmm_malloc(sizeof(uint64_t) * t->n_accesses);
		if (!p->access_keys)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->n_accesses; i++)
		p->access_keys[i] = t->tensors[t->accesses[i].tensor].key;
	p->n_accesses = t->n_accesses;
	return 0;
}

int tmm_plan_add(struct tmm_plan *p, enum tmm_action_type type,
		 uint32_t trigger, uint64_t key, uint32_t back_access,
		 enum tmm_plan_advice advice)
{
	if (p->n_actions == p->cap_actions) {
		uint32_t cap = p->cap_actions ? 2 * p->cap_actions : 64;
		void *n = tmm_realloc(p->actions, sizeof(*p->actions) * cap);

		if (!n)
			return -ENOMEM;
		p->actions = n;
		p->cap_actions = cap;
	}
	p->actions[p->n_actions++] = (struct tmm_plan_action){
		.type = type, .trigger = trigger, .key = key,
		.back_access = back_access, .advice = advice,
	};
	return 0;
}

int tmm_plan_add_split(struct tmm_plan *p, uint32_t first_access,
		       uint64_t key, uint32_t parts)
{
	int rc = tmm_plan_add(p, TMM_ACT_SPLIT, first_access, key,
			      TMM_PLAN_NONE, 0);

	if (rc == 0)
		p->actions[p->n_actions - 1].parts = parts;
	return rc;
}

/* Insertion sort: stable, and fast on the nearly sorted lists that
 * feedback leaves (a few actions moved a few places). */
static void insertion_sort(struct tmm_plan_action *a, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct tmm_plan_action v = a[i];
		uint32_t j = i;

		while (j > 0 && a[j - 1].trigger > v.trigger) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

void tmm_plan_sort(struct tmm_plan *p)
{
	struct tmm_plan_action *a = p->actions, *tmp;
	uint32_t n = p->n_actions, inversions = 0;

	for (uint32_t i = 1; i < n; i++)
		inversions += a[i - 1].trigger > a[i].trigger;
	if (inversions == 0)
		return;
	tmp = inversions > 16 ? tmm_malloc(sizeof(*tmp) * n) : NULL;
	if (!tmp) {
		insertion_sort(a, n);
		return;
	}
	/* Planners emit actions by tensor, not by trigger: a bottom-up
	 * merge sort, stable, O(n log n). */
	for (uint32_t width = 1; width < n; width *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * width) {
			uint32_t mid = lo + width < n ? lo + width : n;
			uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint32_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = a[j].trigger < a[i].trigger ? a[j++]
								       : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		memcpy(a, tmp, sizeof(*a) * n);
	}
	free(tmp);
}

/* The trace index of the tensor with `key`, or TMM_TRACE_NONE. */
static uint32_t tensor_of_key(const struct tmm_trace *t, uint64_t key)
{
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].key == key)
			return i;
	return TMM_TRACE_NONE;
}

static int bad(char *err, size_t errlen, const struct tmm_plan *p,
	       uint32_t i, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int bad(char *err, size_t errlen, const struct tmm_plan *p,
	       uint32_t i, const char *fmt, ...)
{
	const struct tmm_plan_action *a = &p->actions[i];
	size_t n;
	va_list ap;

	n = (size_t)snprintf(err, errlen, "plan action %" PRIu32 " (%s at "
			     "access %" PRIu32 ", tensor key %#" PRIx64 "): ",
			     i, tmm_action_name(a->type), a->trigger, a->key);
	if (n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

enum tmm_drop_verdict tmm_plan_droppable(const struct tmm_trace *t,
					 uint32_t tensor, uint32_t after,
					 uint32_t *writer)
{
	const struct tmm_trace_access *w = NULL;
	uint32_t k = after < t->n_accesses ? after + 1 : t->n_accesses;

	/* Backwards: the last write is usually a few accesses before. */
	while (k-- > 0)
		if (t->accesses[k].tensor == tensor &&
		    (t->accesses[k].flags & TMM_TA_WRITE)) {
			w = &t->accesses[k];
			break;
		}
	if (writer)
		*writer = w ? (uint32_t)(w - t->accesses) : TMM_TRACE_NONE;
	if (!w || w->op == TMM_TRACE_NONE)
		return TMM_DROP_NO_PRODUCER;
	if (!(t->ops[w->op].flags & TMM_OP_PURE))
		return TMM_DROP_NOT_PURE;
	if (w->flags & TMM_TA_READ)
		return TMM_DROP_IN_PLACE;
	return TMM_DROP_OK;
}

/* A SPLIT names an op that can be split by its first access, into 2 or
 * more parts and at most its rows. */
static int check_split(const struct tmm_plan *p, uint32_t i,
		       const struct tmm_trace *t, char *err, size_t errlen)
{
	const struct tmm_plan_action *a = &p->actions[i];
	const struct tmm_trace_access *acc = &t->accesses[a->trigger];
	uint32_t rows;

	if (acc->op == TMM_TRACE_NONE)
		return bad(err, errlen, p, i,
			   "the trigger is a direct access, not an op's");
	if (a->trigger > 0 && t->accesses[a->trigger - 1].op == acc->op)
		return bad(err, errlen, p, i,
			   "the trigger is not the first access of op %" PRIu32,
			   acc->op);
	if (t->tensors[acc->tensor].key != a->key)
		return bad(err, errlen, p, i,
			   "the key is not that of the trigger's tensor");
	if (a->back_access != TMM_PLAN_NONE)
		return bad(err, errlen, p, i, "a SPLIT has no back-access");
	rows = tmm_trace_op_slices(t, a->trigger);
	if (rows < 2)
		return bad(err, errlen, p, i,
			   "op %" PRIu32 " cannot be split (it has %" PRIu32
			   " rows)", acc->op, rows);
	if (a->parts < 2 || a->parts > rows)
		return bad(err, errlen, p, i,
			   "%" PRIu32 " parts: a split needs 2 to %" PRIu32,
			   a->parts, rows);
	return 0;
}

static int check_droppable(const struct tmm_plan *p, uint32_t i,
			   const struct tmm_trace *t, uint32_t tensor,
			   char *err, size_t errlen)
{
	const char *name = tmm_trace_str(t, t->tensors[tensor].name);
	uint32_t w;
	enum tmm_drop_verdict v =
		tmm_plan_droppable(t, tensor, p->actions[i].trigger, &w);
	const char *op = v == TMM_DROP_NO_PRODUCER
		? "" : tmm_trace_str(t, t->ops[t->accesses[w].op].name);

	switch (v) {
	case TMM_DROP_OK:
		return 0;
	case TMM_DROP_NO_PRODUCER:
		return bad(err, errlen, p, i,
			   "tensor '%s' is not produced by an op in the "
			   "iteration before the drop, so it could not be "
			   "recomputed; swap it instead", name);
	case TMM_DROP_NOT_PURE:
		return bad(err, errlen, p, i,
			   "tensor '%s' is produced by op '%s', which is not "
			   "flagged TMM_OP_PURE, so it cannot be dropped and "
			   "recomputed; swap it instead", name, op);
	case TMM_DROP_IN_PLACE:
	default:
		return bad(err, errlen, p, i,
			   "tensor '%s' is updated in place by op '%s' (read "
			   "and written), which cannot be re-run to recover "
			   "it; swap it instead", name, op);
	}
}

/*
 * A wrap-around prefetch (back-access at or before its trigger) brings
 * its tensor back for the next iteration: its back-access must be the
 * tensor's first access and its trigger at or after the tensor's last.
 */
static int check_wrap(const struct tmm_plan *p, uint32_t i,
		      const struct tmm_trace *t, uint32_t tensor, char *err,
		      size_t errlen)
{
	const struct tmm_plan_action *a = &p->actions[i];

	if (t->accesses[a->back_access].tensor != tensor)
		return bad(err, errlen, p, i,
			   "the back-access %" PRIu32 " is to another "
			   "tensor", a->back_access);
	for (uint32_t k = 0; k < a->back_access; k++)
		if (t->accesses[k].tensor == tensor)
			return bad(err, errlen, p, i,
				   "a wrap-around prefetch must be for the "
				   "tensor's first access, but access %" PRIu32
				   " comes before %" PRIu32, k, a->back_access);
	for (uint32_t k = a->trigger + 1; k < t->n_accesses; k++)
		if (t->accesses[k].tensor == tensor)
			return bad(err, errlen, p, i,
				   "a wrap-around prefetch must fire after the "
				   "tensor's last access, but access %" PRIu32
				   " comes after its trigger", k);
	return 0;
}

int tmm_plan_validate(const struct tmm_plan *p, const struct tmm_trace *t,
		      char *err, size_t errlen)
{
	if (p->n_accesses != t->n_accesses) {
		snprintf(err, errlen,
			 "the plan is for an iteration of %" PRIu32 " tensor "
			 "accesses, but the trace has %" PRIu32,
			 p->n_accesses, t->n_accesses);
		return -EINVAL;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		uint64_t key = t->tensors[t->accesses[k].tensor].key;

		if (p->access_keys[k] != key) {
			snprintf(err, errlen,
				 "access %" PRIu32 " of the plan is to tensor "
				 "key %#" PRIx64 ", but in the trace it is to "
				 "key %#" PRIx64 ": the plan was made for "
				 "another iteration",
				 k, p->access_keys[k], key);
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t tensor;

		if (a->type >= TMM_ACT_TYPE_COUNT)
			return bad(err, errlen, p, i, "unknown action type %u",
				   a->type);
		if (i > 0 && a->trigger < p->actions[i - 1].trigger)
			return bad(err, errlen, p, i,
				   "actions are not sorted by trigger "
				   "(tmm_plan_sort)");
		if (a->trigger >= t->n_accesses)
			return bad(err, errlen, p, i,
				   "the trigger is past the iteration's %" PRIu32
				   " accesses", t->n_accesses);
		if (a->flags & ~TMM_ACT_FLAGS_KNOWN)
			return bad(err, errlen, p, i, "unknown flags %#x",
				   a->flags & ~TMM_ACT_FLAGS_KNOWN);
		if ((a->flags & TMM_ACT_SYNC) &&
		    a->type != TMM_ACT_EVICT_SWAP &&
		    a->type != TMM_ACT_PREFETCH)
			return bad(err, errlen, p, i, "only a swap-out or a "
				   "prefetch can be layer-synchronous");
		if ((a->flags & TMM_ACT_KEEP) &&
		    a->type != TMM_ACT_EVICT_DROP)
			return bad(err, errlen, p, i, "only a drop can keep "
				   "what is regenerated");
		if ((a->flags & TMM_ACT_MIGRATE) &&
		    a->type != TMM_ACT_EVICT_SWAP)
			return bad(err, errlen, p, i, "only a swap-out can "
				   "move by migration");
		/* vDNN's layer-synchronous transfer is a copy, which is
		 * what a migration is there to avoid. */
		if ((a->flags & TMM_ACT_MIGRATE) && (a->flags & TMM_ACT_SYNC))
			return bad(err, errlen, p, i, "a swap-out cannot be "
				   "both layer-synchronous and moved by "
				   "migration");
		tensor = tensor_of_key(t, a->key);
		if (tensor == TMM_TRACE_NONE)
			return bad(err, errlen, p, i,
				   "no tensor of the iteration has this key");
		if (a->type == TMM_ACT_SPLIT) {
			int rc = check_split(p, i, t, err, errlen);

			if (rc < 0)
				return rc;
			continue;
		}
		if (a->parts != 0)
			return bad(err, errlen, p, i,
				   "only a SPLIT has parts");
		if (a->type == TMM_ACT_ADVISE) {
			if (a->advice >= TMM_PLAN_ADVICE_COUNT)
				return bad(err, errlen, p, i,
					   "unknown advice %u", a->advice);
			continue;
		}
		if (a->back_access == TMM_PLAN_NONE &&
		    a->type == TMM_ACT_EVICT_SWAP) {
			/* A dead tensor's memory back: nothing of the
			 * iteration may touch it again. */
			for (uint32_t k = a->trigger + 1; k < t->n_accesses;
			     k++)
				if (t->accesses[k].tensor == tensor)
					return bad(err, errlen, p, i,
						   "a swap-out with no "
						   "back-access, but access "
						   "%" PRIu32 " reads the "
						   "tensor again", k);
			continue;
		}
		if (a->type == TMM_ACT_PREFETCH &&
		    a->back_access != TMM_PLAN_NONE &&
		    a->back_access <= a->trigger &&
		    a->back_access < t->n_accesses) {
			int rc = check_wrap(p, i, t, tensor, err, errlen);

			if (rc < 0)
				return rc;
			continue;
		}
		if (a->back_access == TMM_PLAN_NONE ||
		    a->back_access <= a->trigger ||
		    a->back_access >= t->n_accesses)
			return bad(err, errlen, p, i,
				   "the back-access %" PRIu32 " must be an "
				   "access after the trigger",
				   a->back_access);
		if (t->accesses[a->back_access].tensor != tensor)
			return bad(err, errlen, p, i,
				   "the back-access %" PRIu32 " is to another "
				   "tensor", a->back_access);
		if (a->type == TMM_ACT_EVICT_DROP) {
			int rc = check_droppable(p, i, t, tensor, err, errlen);

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

struct kept {
	const struct tmm_trace *t;
	const uint32_t *last; /* per tensor: its last access */
	uint32_t trigger;     /* of the drop being listed */
	struct tmm_kept_source *keys;
	uint32_t n, cap;
};

/* The freed sources of `tensor`'s producer before access `after`, for a
 * recomputation at access `back`. */
static int keep_sources(struct kept *k, uint32_t tensor, uint32_t after,
			uint32_t back, unsigned depth)
{
	const struct tmm_trace *t = k->t;
	const struct tmm_trace_op *op;
	uint32_t w;

	if (depth > 8 ||
	    tmm_plan_droppable(t, tensor, after, &w) != TMM_DROP_OK ||
	    t->accesses[w].op >= t->n_ops)
		return 0;
	op = &t->ops[t->accesses[w].op];
	for (uint32_t i = 0; i < op->n_inputs; i++) {
		uint32_t x = t->op_tensors[op->first + i];

		if (!(t->tensors[x].flags & TMM_TT_FREED_INSIDE) ||
		    k->last[x] >= back)
			continue; /* alive at the back-access */
		if (k->n == k->cap) {
			uint32_t cap = k->cap ? 2 * k->cap : 64;
			void *p = tmm_realloc(k->keys, sizeof(*k->keys) * cap);

			if (!p)
				return -ENOMEM;
			k->keys = p;
			k->cap = cap;
		}
		k->keys[k->n++] = (struct tmm_kept_source){
			.key = t->tensors[x].key, .until = k->trigger };
		if (keep_sources(k, x, k->last[x], back, depth + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct tmm_kept_source *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

int tmm_plan_kept_sources(const struct tmm_plan *p, const struct tmm_trace *t,
			  struct tmm_kept_source **keys, uint32_t *n)
{
	struct kept k = { .t = t };
	uint32_t *last = tmm_calloc(t->n_tensors + 1, sizeof(uint32_t));
	uint32_t m = 0;

	*keys = NULL;
	*n = 0;
	if (!last)
		return -ENOMEM;
	for (uint32_t a = 0; a < t->n_accesses; a++)
		last[t->accesses[a].tensor] = a;
	k.last = last;
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t tensor;

		if (a->type != TMM_ACT_EVICT_DROP)
			continue;
		tensor = tensor_of_key(t, a->key);
		k.trigger = a->trigger;
		if (tensor != TMM_TRACE_NONE &&
		    keep_sources(&k, tensor, a->trigger, a->back_access, 0) <
			    0) {
			free(k.keys);
			free(last);
			return -ENOMEM;
		}
	}
	free(last);
	if (k.n)
		qsort(k.keys, k.n, sizeof(*k.keys), by_key);
	for (uint32_t i = 0; i < k.n; i++) {
		if (m && k.keys[m - 1].key == k.keys[i].key) {
			if (k.keys[m - 1].until < k.keys[i].until)
				k.keys[m - 1].until = k.keys[i].until;
			continue;
		}
		k.keys[m++] = k.keys[i];
	}
	*keys = k.keys;
	*n = m;
	return 0;
}

int tmm_plan_copy(struct tmm_plan *dst, const struct tmm_plan *src)
{
	*dst = *src;
	dst->access_keys = NULL;
	dst->actions = NULL;
	dst->cap_actions = src->n_actions;
	if (src->n_accesses) {
		dst->access_keys = tmm_malloc(sizeof(uint64_t) *
					      src->n_accesses);
		if (!dst->access_keys)
			goto fail;
		memcpy(dst->access_keys, src->access_keys,
		       sizeof(uint64_t) * src->n_accesses);
	}
	if (src->n_actions) {
		dst->actions = tmm_malloc(sizeof(*dst->actions) *
					  src->n_actions);
		if (!dst->actions)
			goto fail;
		memcpy(dst->actions, src->actions,
		       sizeof(*dst->actions) * src->n_actions);
	}
	return 0;
fail:
	tmm_plan_free(dst);
	return -ENOMEM;
}

void tmm_plan_free(struct tmm_plan *p)
{
	free(p->access_keys);
	free(p->actions);
	memset(p, 0, sizeof(*p));
}
