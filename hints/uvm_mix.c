/* SPDX-License-Identifier: MIT */
/*
 * uvm_mix.c — which swaps go by migration beside mode=uvm's copy way; see
 * uvm_mix.h.
 *
 * Each candidate is tried in turn against the migrate engine's queue as
 * the candidates taken so far leave it: their moves out and back, each
 * asked for as its action's trigger's op ends, are sorted by that time
 * over three iterations (a swap across the iteration's end comes back in
 * the next) and run one after the other.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "key_index.h"
#include "lib/base/xalloc.h"
#include "uvm_mix.h"

/* Access positions of one tensor, ascending (a slice of a shared array). */
struct positions {
	const uint32_t *at;
	uint32_t n;
};

/* Per trace tensor: the accesses that write it and the triggers of the
 * plan's swaps of it, each ascending, as slices of two arrays. */
struct per_tensor {
	uint32_t *write_at, *write_first;
	uint32_t *evict_at, *evict_first;
};

/* A tensor's first and last access in the iteration. */
struct life_span {
	uint32_t first, last;
};

struct moves;
struct move;

struct mix {
	const struct tmm_trace *tr;
	const struct tmm_plan *p;
	double out_ns_per_byte, in_ns_per_byte;
	uint64_t latency_ns;
	uint64_t period;	   /* the iteration, ops back to back, ns */
	uint64_t *need, *fire;	   /* per access (pack_ops) */
	struct tmm_key_index keys; /* the trace's tensors by key */
	uint32_t *tensor;	   /* per action: its trace tensor, or
				    * TMM_TRACE_NONE */
	struct life_span *span; /* per trace tensor */
	struct moves *moves;	   /* per candidate EVICT_SWAP */
	bool *candidate;	   /* per action: a swap that may migrate */
	bool *taken;		   /* ... and does */
	struct move *queue;	   /* queue_lateness's */
};

static struct positions slice(const uint32_t *at, const uint32_t *first,
			      uint32_t t)
{
	return (struct positions){ .at = at + first[t],
				   .n = first[t + 1] - first[t] };
}

/* Counts then fills a per-tensor index of the n positions tensor_at
 * gives: tensor t's are at[first[t] .. first[t + 1]), in the order
 * given (first has n_tensors + 2 entries, the last one spare). */
static int index_positions(uint32_t n_tensors, uint32_t n,
			   uint32_t (*tensor_at)(const void *, uint32_t,
						 uint32_t *),
			   const void *arg, uint32_t **at_out,
			   uint32_t **first_out)
{
	uint32_t *first = tmm_calloc((size_t)n_tensors + 2, sizeof(*first));
	uint32_t *at = tmm_calloc(n ? n : 1, sizeof(*at));
	uint32_t pos, t;

	if (!first || !at) {
		free(first);
		free(at);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		if ((t = tensor_at(arg, i, &pos)) < n_tensors)
			first[t + 2]++;
	for (uint32_t t2 = 0; t2 < n_tensors; t2++)
		first[t2 + 2] += first[t2 + 1];
	/* first[t + 1] is now where t's slice starts: fill it in order,
	 * which keeps each slice ascending. */
	for (uint32_t i = 0; i < n; i++)
		if ((t = tensor_at(arg, i, &pos)) < n_tensors)
			at[first[t + 1]++] = pos;
	*at_out = at;
	*first_out = first;
	return 0;
}

/* The tensor access i writes, or TMM_TRACE_NONE. */
static uint32_t write_of(const void *arg, uint32_t i, uint32_t *pos)
{
	const struct tmm_trace *tr = arg;

	*pos = i;
	return (tr->accesses[i].flags & TMM_TA_WRITE) ? tr->accesses[i].tensor
						      : TMM_TRACE_NONE;
}

/* The tensor action i swaps out, or TMM_TRACE_NONE. */
static uint32_t swap_of(const void *arg, uint32_t i, uint32_t *pos)
{
	const struct mix *m = arg;
	const struct tmm_plan_action *a = &m->p->actions[i];

	*pos = a->trigger;
	return a->type == TMM_ACT_EVICT_SWAP ? m->tensor[i] : TMM_TRACE_NONE;
}

/* The last position before x (at or before it with `at_too`), or, with
 * none, the last one of the iteration before (less n).  s is not empty. */
static int64_t before(struct positions s, uint32_t x, bool at_too, uint32_t n)
{
	int64_t best = (int64_t)s.at[s.n - 1] - n;

	for (uint32_t i = 0; i < s.n && (s.at[i] < x || (at_too &&
							  s.at[i] == x));
	     i++)
		best = s.at[i];
	return best;
}

/* The first position after x, or, with none, the first one of the next
 * iteration (plus n).  s is not empty. */
static int64_t after(struct positions s, uint32_t x, uint32_t n)
{
	for (uint32_t i = 0; i < s.n; i++)
		if (s.at[i] > x)
			return s.at[i];
	return (int64_t)s.at[0] + n;
}

/* Whether the swap at trigger e moves bytes by copy and its tensor is
 * written again before it next leaves (uvm_mix.h). */
static bool dirty_both_ways(struct positions writes, struct positions evicts,
			    uint32_t e, uint32_t n)
{
	if (writes.n == 0 || evicts.n == 0)
		return false;
	/* A write at the eviction's trigger access comes before it. */
	return before(writes, e, true, n) > before(evicts, e, false, n) &&
	       after(writes, e, n) <= after(evicts, e, n);
}

/*
 * The ops back to back, each for its measured duration: the trace's own
 * start times are the host's, and its iteration may have waited for held
 * copies or faults (the first guided one follows a passive one), which
 * the plan is to take away.  Access k is needed as its op begins
 * (need[k]) and fires its actions as the op ends (fire[k]); one outside
 * an op sits where the ops before it ended.  Returns the iteration's
 * length.
 */
static uint64_t pack_ops(const struct tmm_trace *tr, uint64_t *need,
			 uint64_t *fire)
{
	uint64_t now = 0;
	uint32_t op = TMM_TRACE_NONE;

	for (uint32_t k = 0; k < tr->n_accesses; k++) {
		const struct tmm_trace_access *a = &tr->accesses[k];
		const struct tmm_trace_op *o;

		if (a->op >= tr->n_ops) {
			need[k] = fire[k] = now;
			continue;
		}
		o = &tr->ops[a->op];
		if (a->op != op) { /* an op's accesses are consecutive */
			op = a->op;
			need[k] = now;
			now += o->end_ns > o->begin_ns ? o->end_ns - o->begin_ns
						       : 0;
		} else {
			need[k] = need[k - 1];
		}
		fire[k] = now;
	}
	return now;
}

/* Whether an EVICT_SWAP of `key` prepares access `back`. */
static bool evicted_for(const struct tmm_plan *p, uint64_t key, uint32_t back)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == TMM_ACT_EVICT_SWAP &&
		    p->actions[i].key == key &&
		    p->actions[i].back_access == back)
			return true;
	return false;
}

/* A candidate's moves on the migrate engine, in ns on the trace's ideal
 * timeline, an iteration lasting `period`. */
struct moves {
	uint64_t out_at; /* its eviction's trigger's op ends */
	uint64_t in_at;	 /* its prefetch's does (+ period: the next
			  * iteration's) */
	uint64_t due;	 /* its back-access's op begins (+ period) */
	uint64_t bytes;
};

/*
 * The PREFETCH that brings back the swap at action i (not SYNC), with its
 * moves into *mv; TMM_PLAN_NONE where there is none.  In the iteration:
 * the same back-access, fired at or after the eviction.  Across its end
 * (no back-access): one for the tensor's first access, fired after the
 * eviction and wrapping around, or early in the next iteration where no
 * eviction in it prepares that access (plan.h).
 */
static uint32_t prefetch_of(const struct mix *m, uint32_t i, uint64_t period,
			    struct moves *mv)
{
	const struct tmm_plan *p = m->p;
	const struct tmm_plan_action *e = &p->actions[i];
	const struct life_span *life = &m->span[m->tensor[i]];
	uint32_t j;

	mv->out_at = m->fire[e->trigger];
	mv->bytes = m->tr->tensors[m->tensor[i]].bytes;
	if (e->back_access != TMM_PLAN_NONE) {
		for (j = i + 1; j < p->n_actions; j++) {
			const struct tmm_plan_action *a = &p->actions[j];

			if (a->trigger >= e->back_access)
				return TMM_PLAN_NONE;
			if (a->type == TMM_ACT_PREFETCH && a->key == e->key &&
			    a->back_access == e->back_access &&
			    !(a->flags & TMM_ACT_SYNC))
				break;
		}
		if (j == p->n_actions)
			return TMM_PLAN_NONE;
		mv->in_at = m->fire[p->actions[j].trigger];
		mv->due = m->need[e->back_access];
		return j;
	}
	if (life->last > e->trigger)
		return TMM_PLAN_NONE;
	for (j = 0; j < p->n_actions; j++) {
		const struct tmm_plan_action *a = &p->actions[j];
		bool wraps = a->back_access <= a->trigger;

		if (a->type != TMM_ACT_PREFETCH || a->key != e->key ||
		    a->back_access != life->first ||
		    (a->flags & TMM_ACT_SYNC))
			continue;
		if (wraps && a->trigger >= e->trigger) {
			mv->in_at = m->fire[a->trigger];
			break;
		}
		if (!wraps && !evicted_for(p, a->key, life->first)) {
			mv->in_at = m->fire[a->trigger] + period;
			break;
		}
	}
	if (j == p->n_actions)
		return TMM_PLAN_NONE;
	mv->due = m->need[life->first] + period;
	return j;
}

static uint64_t move_ns(const struct mix *m, uint64_t bytes, bool in)
{
	return m->latency_ns +
	       (uint64_t)((double)bytes *
			  (in ? m->in_ns_per_byte : m->out_ns_per_byte));
}

/* One move on the migrate engine: out or in, when asked, when due. */
struct move {
	uint64_t at, due, bytes;
	bool in;
};

static int by_time(const void *a, const void *b)
{
	const struct move *x = a, *y = b;

	if (x->at != y->at)
		return (x->at > y->at) - (x->at < y->at);
	/* An eviction fired with a prefetch goes first: it holds room. */
	return (int)x->in - (int)y->in;
}

/*
 * Replays the migrate engine's queue for the swaps taken, over three
 * iterations so that the last sees what the others left queued: how long,
 * in all, compute would wait for them at their back-accesses in the
 * last.  m->queue has room for 6 moves a swap.
 */
static uint64_t queue_lateness(const struct mix *m)
{
	uint64_t free_at = 0, late = 0, end;
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->p->n_actions; i++) {
		const struct moves *mv = &m->moves[i];

		if (!m->taken[i])
			continue;
		for (uint64_t k = 0; k < 3; k++) {
			m->queue[n++] = (struct move){
				.at = mv->out_at + k * m->period,
				.bytes = mv->bytes };
			m->queue[n++] = (struct move){
				.at = mv->in_at + k * m->period,
				.due = mv->due + k * m->period,
				.bytes = mv->bytes, .in = true };
		}
	}
	qsort(m->queue, n, sizeof(*m->queue), by_time);
	for (uint32_t q = 0; q < n; q++) {
		const struct move *mv = &m->queue[q];

		end = (mv->at > free_at ? mv->at : free_at) +
		      move_ns(m, mv->bytes, mv->in);
		free_at = end;
		if (mv->in && mv->due >= 2 * m->period &&
		    mv->due < 3 * m->period && end > mv->due)
			late += end - mv->due;
	}
	return late;
}

/* Fills per-tensor positions, the candidates' partners and moves. */
static int prepare(struct mix *m, struct per_tensor *pt)
{
	const struct tmm_trace *tr = m->tr;
	const struct tmm_plan *p = m->p;
	int rc;

	for (uint32_t i = 0; i < p->n_actions; i++)
		m->tensor[i] = tmm_key_index_tensor(&m->keys,
						    p->actions[i].key);
	rc = index_positions(tr->n_tensors, tr->n_accesses, write_of, tr,
			     &pt->write_at, &pt->write_first);
	if (rc == 0)
		rc = index_positions(tr->n_tensors, p->n_actions, swap_of, m,
				     &pt->evict_at, &pt->evict_first);
	if (rc < 0)
		return rc;
	for (uint32_t k = 0; k < tr->n_accesses; k++) {
		struct life_span *l = &m->span[tr->accesses[k].tensor];

		if (l->first == TMM_PLAN_NONE)
			l->first = k;
		l->last = k;
	}
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t t = m->tensor[i], j;

		if (a->type != TMM_ACT_EVICT_SWAP || t >= tr->n_tensors ||
		    m->span[t].first == TMM_PLAN_NONE ||
		    (a->flags & TMM_ACT_SYNC) ||
		    (a->back_access != TMM_PLAN_NONE &&
		     a->back_access <= a->trigger) ||
		    !dirty_both_ways(slice(pt->write_at, pt->write_first, t),
				     slice(pt->evict_at, pt->evict_first, t),
				     a->trigger, tr->n_accesses))
			continue;
		j = prefetch_of(m, i, m->period, &m->moves[i]);
		if (j != TMM_PLAN_NONE)
			m->candidate[i] = true;
	}
	return 0;
}

/* What the swap of `bytes` by copy holds the host for: its copy out and
 * its copy back, at the link's rates. */
static uint64_t held_ns(const struct tmm_planner_input *in, uint64_t bytes)
{
	const struct tmm_planner_device *d = &in->device;
	uint64_t ns = 2 * d->copy_latency_ns;

	if (d->d2h_gbps > 0)
		ns += (uint64_t)((double)bytes / d->d2h_gbps);
	if (d->h2d_gbps > 0)
		ns += (uint64_t)((double)bytes / d->h2d_gbps);
	return ns;
}

static void mix_free(struct mix *m, struct per_tensor *pt)
{
	free(pt->write_at);
	free(pt->write_first);
	free(pt->evict_at);
	free(pt->evict_first);
	free(m->need);
	free(m->fire);
	tmm_key_index_free(&m->keys);
	free(m->tensor);
	free(m->span);
	free(m->moves);
	free(m->candidate);
	free(m->taken);
	free(m->queue);
}

/*
 * Tries the candidates not taken yet, in the order of their evictions:
 * each is kept where the waits it adds to *late are none (`free_only`)
 * or cost less than the host time its copies would have held.  Returns
 * how many it took.
 */
static int take(struct mix *m, const struct tmm_planner_input *in,
		bool free_only, uint64_t *late)
{
	int taken = 0;

	for (uint32_t i = 0; i < m->p->n_actions; i++) {
		uint64_t now;

		if (!m->candidate[i] || m->taken[i])
			continue;
		m->taken[i] = true;
		now = queue_lateness(m);
		if (free_only ? now == *late
			      : now - *late < held_ns(in, m->moves[i].bytes)) {
			*late = now;
			taken++;
		} else {
			m->taken[i] = false;
		}
	}
	return taken;
}

int tmm_uvm_mix(const struct tmm_planner_input *in, struct tmm_plan *p)
{
	const struct tmm_trace *tr = in->trace;
	struct mix m = { .tr = tr, .p = p };
	struct per_tensor pt = { 0 };
	uint32_t n = p->n_actions;
	uint64_t late = 0;
	int rc, taken = 0;

	if (!(in->migrate_d2h_gbps > 0) || !(in->migrate_h2d_gbps > 0) ||
	    !tr || n == 0 || tr->n_ops == 0)
		return 0;
	m.out_ns_per_byte = 1.0 / in->migrate_d2h_gbps;
	m.in_ns_per_byte = 1.0 / in->migrate_h2d_gbps;
	m.latency_ns = in->device.copy_latency_ns;
	m.need = tmm_calloc(tr->n_accesses + 1, sizeof(*m.need));
	m.fire = tmm_calloc(tr->n_accesses + 1, sizeof(*m.fire));
	m.tensor = tmm_calloc(n, sizeof(*m.tensor));
	m.span = tmm_calloc(tr->n_tensors + 1, sizeof(*m.span));
	m.moves = tmm_calloc(n, sizeof(*m.moves));
	m.candidate = tmm_calloc(n, sizeof(*m.candidate));
	m.taken = tmm_calloc(n, sizeof(*m.taken));
	m.queue = tmm_calloc(6 * (size_t)n, sizeof(*m.queue));
	rc = m.need && m.fire && m.tensor && m.span && m.moves &&
			     m.candidate && m.taken && m.queue
		     ? tmm_key_index_init(&m.keys, tr)
		     : -ENOMEM;
	if (rc == 0)
		m.period = pack_ops(tr, m.need, m.fire);
	for (uint32_t t = 0; rc == 0 && t < tr->n_tensors; t++)
		m.span[t].first = TMM_PLAN_NONE;
	if (rc == 0)
		rc = prepare(&m, &pt);
	/* First the swaps that make no one wait, then those whose waits
	 * cost less than the host time their copies would hold. */
	for (int pass = 0; rc == 0 && pass < 2; pass++)
		taken += take(&m, in, pass == 0, &late);
	if (rc == 0)
		for (uint32_t i = 0; i < n; i++) {
			p->actions[i].flags &= ~TMM_ACT_MIGRATE;
			if (m.taken[i])
				p->actions[i].flags |= TMM_ACT_MIGRATE;
		}
	mix_free(&m, &pt);
	return rc < 0 ? rc : taken;
}
