/* SPDX-License-Identifier: MIT */
/*
 * link_share.c — a plan's copies kept off collectives on a shared link;
 * see link_share.h.
 *
 * A copy fired after access k runs from k's end for its swap time (the
 * analysis' link model, latency + bytes / bandwidth) on the trace's ideal
 * timeline, which is where the trace's collectives also sit.  Candidate
 * triggers are tried nearest first, later before earlier at the same
 * distance, so a moved copy changes its plan as little as it can.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "analysis.h"
#include "link_share.h"
#include "lib/base/xalloc.h"
#include "tensormm.h"

/* The collectives' intervals on the ideal timeline, in op order. */
struct busy {
	uint64_t *start, *end;
	uint32_t n;
};

/*
 * When collective o holds the link.  Its traced time is its arithmetic
 * on the compute stream; its bytes then cross the network beside the ops
 * that follow (lib/exec/run.c), for latency + net_bytes / net_gbps.
 * Where the device does not say its network (net_gbps 0), the traced
 * time stands for it.
 */
static void held(const struct tmm_planner_device *d,
		 const struct tmm_trace_op *o, uint64_t *start, uint64_t *end)
{
	if (d->net_gbps > 0 && o->net_bytes > 0) {
		*start = o->end_ns;
		*end = o->end_ns + d->net_latency_ns +
		       (uint64_t)(o->net_bytes / d->net_gbps);
	} else {
		*start = o->begin_ns;
		*end = o->end_ns;
	}
}

static int collect(const struct tmm_planner_device *d,
		   const struct tmm_trace *t, struct busy *b)
{
	uint32_t n = 0;
	uint64_t from, to;

	for (uint32_t i = 0; i < t->n_ops; i++)
		if (t->ops[i].kind == TMM_OP_COLLECTIVE) {
			held(d, &t->ops[i], &from, &to);
			n += to > from;
		}
	b->n = 0;
	b->start = b->end = NULL;
	if (!n)
		return 0;
	b->start = tmm_calloc(n, sizeof(*b->start));
	b->end = tmm_calloc(n, sizeof(*b->end));
	if (!b->start || !b->end) {
		free(b->start);
		free(b->end);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->n_ops; i++) {
		if (t->ops[i].kind != TMM_OP_COLLECTIVE)
			continue;
		held(d, &t->ops[i], &from, &to);
		if (to > from) {
			b->start[b->n] = from;
			b->end[b->n++] = to;
		}
	}
	return 0;
}

/* Whether [from, to) meets a collective. */
static bool meets(const struct busy *b, uint64_t from, uint64_t to)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->start[i] < to && from < b->end[i])
			return true;
	return false;
}

/* The trace tensor of key `key`, or TMM_TRACE_NONE. */
static uint32_t tensor_of(const struct tmm_trace *t, uint64_t key)
{
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].key == key)
			return i;
	return TMM_TRACE_NONE;
}

/* The trigger of p's action of `type` on `key` for back-access `back`,
 * or TMM_TRACE_NONE. */
static uint32_t partner(const struct tmm_plan *p, uint32_t type,
			uint64_t key, uint32_t back)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == type && p->actions[i].key == key &&
		    p->actions[i].back_access == back)
			return p->actions[i].trigger;
	return TMM_TRACE_NONE;
}

/*
 * The plan's memory curve (tmm_curve) into curve[]: its evictions, each
 * swap back when its prefetch fires (or just before its back-access
 * without one), and the prefetches of tensors out since before the
 * iteration.  Returns 0 or -ENOMEM.
 */
static int plan_curve(const struct tmm_analysis *an,
		      const struct tmm_plan *p, uint64_t *curve)
{
	const struct tmm_trace *t = an->trace;
	struct tmm_eviction *ev = tmm_calloc(p->n_actions + 1, sizeof(*ev));
	uint32_t n = 0;

	if (!ev)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t tensor = tensor_of(t, a->key), pt;
		bool drop = a->type == TMM_ACT_EVICT_DROP;

		if (tensor == TMM_TRACE_NONE || a->trigger >= t->n_accesses ||
		    (a->back_access != TMM_PLAN_NONE &&
		     a->back_access >= t->n_accesses))
			continue;
		if ((drop && a->back_access == TMM_PLAN_NONE) ||
		    (a->type != TMM_ACT_EVICT_SWAP && !drop &&
		     a->type != TMM_ACT_PREFETCH))
			continue;
		if (a->type == TMM_ACT_PREFETCH) {
			/* Out since before the iteration: no swap-out. */
			if (partner(p, TMM_ACT_EVICT_SWAP, a->key,
				    a->back_access) != TMM_TRACE_NONE)
				continue;
			ev[n++] = (struct tmm_eviction){
				.tensor = tensor, .evict = TMM_TRACE_NONE,
				.back = a->back_access,
				.in_trigger = a->trigger };
			continue;
		}
		pt = drop || a->back_access == TMM_PLAN_NONE
			     ? TMM_TRACE_NONE
			     : partner(p, TMM_ACT_PREFETCH, a->key,
				       a->back_access);
		ev[n++] = (struct tmm_eviction){
			.tensor = tensor, .evict = a->trigger,
			.back = a->back_access, .drop = drop,
			.in_trigger = pt != TMM_TRACE_NONE ? pt
				      : a->back_access > 0 &&
						!drop &&
						a->back_access !=
							TMM_PLAN_NONE
					      ? a->back_access - 1
					      : a->trigger };
	}
	tmm_curve(an, ev, n, curve, NULL);
	free(ev);
	return 0;
}

/* What one copy may do: fire after an access in [lo, hi], finish by
 * `due`, and hold its tensor's `bytes` on the device longer (a prefetch
 * moved earlier, a swap-out moved later) only where the plan's curve
 * has room for them under the target. */
struct span {
	uint32_t lo, hi;
	uint64_t due, ns, bytes;
	bool in; /* a prefetch */
	const uint64_t *curve;
};

/* Whether the plan's curve has room for the tensor over accesses
 * (lo, hi]. */
static bool room(const struct tmm_analysis *an, const struct span *s,
		 uint32_t lo, uint32_t hi)
{
	for (uint32_t k = lo + 1; k <= hi; k++)
		if (s->curve[k] + s->bytes > an->target)
			return false;
	return true;
}

static bool fits(const struct tmm_analysis *an, const struct busy *b,
		 const struct span *s, uint32_t was, uint32_t k)
{
	uint64_t from = tmm_access_end(an, k), to = from + s->ns;

	if (k < s->lo || k > s->hi || to > s->due || meets(b, from, to))
		return false;
	if (s->in)
		return k > was || room(an, s, k, was);
	return k < was || room(an, s, was, k);
}

/* The nearest trigger to `was` that fits, or `was`. */
static uint32_t nearest(const struct tmm_analysis *an, const struct busy *b,
			const struct span *s, uint32_t was)
{
	for (uint32_t d = 1; d <= s->hi - s->lo; d++) {
		if (was + d <= s->hi && fits(an, b, s, was, was + d))
			return was + d;
		if (was >= s->lo + d && fits(an, b, s, was, was - d))
			return was - d;
	}
	return was;
}

/* The room of action a, into *s; false when it has none to move in. */
static bool span_of(const struct tmm_analysis *an, const struct tmm_plan *p,
		    const struct tmm_plan_action *a, uint32_t tensor,
		    struct span *s)
{
	const struct tmm_trace *t = an->trace;
	uint64_t bytes = t->tensors[tensor].bytes;
	uint32_t before, after, other;
	bool in = a->type == TMM_ACT_PREFETCH;

	if (a->back_access == TMM_PLAN_NONE || a->back_access <= a->trigger)
		return false; /* no back-access, or a wrap-around */
	s->ns = tmm_swap_ns(an, bytes, in);
	s->in = in;
	s->bytes = an->life[tensor].bytes;
	tmm_accesses_around(an, tensor, a->back_access, &before, &after);
	if (in) {
		/* After its swap-out, before its back-access; landing no
		 * later than it did. */
		other = partner(p, TMM_ACT_EVICT_SWAP, a->key, a->back_access);
		s->lo = other != TMM_TRACE_NONE	   ? other
			: before != TMM_TRACE_NONE ? before
						   : 0;
		s->hi = tmm_last_in_trigger(an, s->lo, a->back_access);
		s->due = tmm_access_begin(an, a->back_access);
		if (tmm_access_end(an, a->trigger) + s->ns > s->due)
			s->due = tmm_access_end(an, a->trigger) + s->ns;
	} else {
		/* Only later: it cannot leave before its last use; before
		 * its prefetch fires. */
		other = partner(p, TMM_ACT_PREFETCH, a->key, a->back_access);
		s->lo = a->trigger;
		s->hi = other == TMM_TRACE_NONE ? a->back_access - 1
			: other > a->trigger	? other - 1
						: a->trigger;
		s->due = UINT64_MAX;
	}
	return s->lo <= a->trigger && a->trigger <= s->hi;
}

int tmm_link_share_avoid(const struct tmm_planner_input *in,
			 struct tmm_plan *p)
{
	const struct tmm_trace *t = in->trace;
	struct tmm_analysis an;
	struct busy b;
	uint64_t *curve = NULL;
	int rc, moved = 0;

	if (!in->device.net_shares_link || !t || p->n_actions == 0)
		return 0;
	rc = collect(&in->device, t, &b);
	if (rc < 0 || b.n == 0)
		return rc;
	rc = tmm_analysis_init(&an, in);
	if (rc < 0) {
		free(b.start);
		free(b.end);
		return rc;
	}
	curve = tmm_calloc(t->n_accesses + 1, sizeof(*curve));
	if (!curve)
		rc = -ENOMEM;
	for (uint32_t i = 0; rc == 0 && i < p->n_actions; i++) {
		struct tmm_plan_action *a = &p->actions[i];
		uint32_t tensor, k;
		struct span s;

		if ((a->type != TMM_ACT_PREFETCH &&
		     a->type != TMM_ACT_EVICT_SWAP) ||
		    (a->flags & TMM_ACT_SYNC) || a->trigger >= t->n_accesses ||
		    (a->back_access != TMM_PLAN_NONE &&
		     a->back_access >= t->n_accesses))
			continue;
		tensor = tensor_of(t, a->key);
		if (tensor == TMM_TRACE_NONE || !span_of(&an, p, a, tensor, &s))
			continue;
		if (!meets(&b, tmm_access_end(&an, a->trigger),
			   tmm_access_end(&an, a->trigger) + s.ns))
			continue;
		/* The curve as the moves so far left it. */
		rc = plan_curve(&an, p, curve);
		if (rc < 0)
			break;
		s.curve = curve;
		k = nearest(&an, &b, &s, a->trigger);
		if (k != a->trigger) {
			a->trigger = k;
			moved++;
		}
	}
	tmm_analysis_free(&an);
	free(curve);
	free(b.start);
	free(b.end);
	return rc < 0 ? rc : moved;
}
