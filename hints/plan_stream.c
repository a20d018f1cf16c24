/* SPDX-License-Identifier: MIT */
/*
 * plan_stream.c — `stream`: what does not fit streams through the device,
 * the tensor needed furthest ahead leaving first.
 *
 * Ours, not a paper's.  The paper planners choose among feature maps:
 * which activation to offload or recompute between its forward and its
 * backward use.  When the weights and optimizer state alone exceed the
 * budget (a data-parallel rank whose share of the batch is small, a model
 * larger than its device: ZeRO-Offload's case), none of them plans the
 * weights, and passive mode, which evicts the least recently used, loads
 * each layer's weights for the forward pass and again for the backward:
 * 1593 MiB a step for the 4-rank MLP of bench/bench_scaling on the H100
 * profile at 30%, where no plan can load fewer than 856
 * (hints/swap_bound.h; simulated).
 *
 * The plan walks the iteration's memory curve (hints/analysis.h) under
 * liveness.  At each access where the curve is over the target it
 * evicts, of the tensors held there that the running op does not touch,
 * the one whose next access is furthest: Belady's rule, which loads the
 * fewest bytes (the argument of hints/swap_bound.c, point 2).  A tensor
 * that outlives the step is needed again at its first access of the next
 * one; a tensor no access needs again leaves first (liveness: with
 * liveness=discard its bytes are not even copied).  Ties go to the
 * larger tensor, then the earlier one.
 *
 * The evicted tensor leaves after its last access before the shortage
 * and is prefetched for its next access.  The prefetch is booked on a
 * model of the host-to-device engine, one copy at a time
 * (copy_engine.h), as late as it can still land in time: the room it
 * takes early is room that another tensor would have to leave for.
 * Where the engine has no such gap (the link is the bottleneck), it is
 * booked at the first gap after the shortage and the back-access waits
 * for it.  Never before the shortage: it would not lower the curve there.
 * Across the step boundary, a tensor that outlives the step:
 *   - out at the step's start, needed before it is next touched: out
 *     after its last access of the step before (an EVICT_SWAP with no
 *     back-access) and prefetched for its first access (plan.h);
 *   - out after its last access, needed at its first access of the next
 *     step: prefetched late in this step when the gap to the end lets the
 *     copy land in time (a wrap-around), else early in the next.
 *
 * What it leaves out: recomputation (every eviction is a swap), the
 * device-to-host engine's time (an eviction frees its room when its copy
 * ends; weights the step only read leave without a copy, their host
 * bytes still current), and splitting an op whose own tensors do not fit
 * (then the plan does not fit, and says so).
 *
 * Planning time: each shortage looks once at the tensors alive there
 * (a list kept as the walk advances), with a tensor's gap found by
 * bisection.  On the 10,000-access trace of bench/bench_planners it
 * plans in about 18 ms on these 2-core machines, DenseNet-121 in about
 * 40 ms (it took 1.2 s when each eviction scanned every tensor).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "copy_engine.h"
#include "planners.h"
#include "tensormm.h"
#include "lib/base/grow.h"
#include "lib/base/xalloc.h"

#define FAR UINT64_MAX /* the distance of a tensor never needed again */

/*
 * The walk's accesses only grow, and every eviction it takes leaves at or
 * before the access it is taken for, except the one out after a tensor's
 * last access that goes with one out since the step began.  So whether a
 * tensor is out at the walk's access is two numbers: the latest return
 * of its evictions that have left (out_to), and when that step-end one
 * leaves (end_gone).  The tensors alive at the walk's access are kept in
 * a list (live), so that a shortage scans them, not the trace's.
 */
/* A tensor that may leave for a shortage, and how far ahead it is next
 * needed. */
struct candidate {
	uint64_t far, bytes;
	uint32_t t, before, after;
};

struct stream {
	struct tmm_analysis an;
	struct tmm_eviction_set set;
	struct tmm_fit fit;
	struct tmm_copy_engine h2d;
	/* Per tensor, its evictions in set: a chain through next[]. */
	uint32_t *head, *next;
	uint32_t cap_next;
	uint32_t *out_to, *end_gone; /* per tensor (see above) */
	uint32_t *by_from;	     /* tensors with bytes, by life.from */
	uint32_t n_by_from, joined;  /* ... of which joined are in live */
	uint32_t *live, n_live;
	uint32_t at; /* the walk's access */
	struct candidate *cand; /* scratch for a shortage, per tensor */
};

/* Whether the curve holds live tensor t at the walk's access k. */
static bool held_at(const struct stream *s, uint32_t t, uint32_t k)
{
	return k >= s->out_to[t] && k < s->end_gone[t];
}

/* Brings the live list to access k: tensors whose life has begun join,
 * those whose life has ended leave. */
static void live_at(struct stream *s, uint32_t k)
{
	const struct tmm_life *life = s->an.life;

	while (s->joined < s->n_by_from &&
	       life[s->by_from[s->joined]].from <= k)
		s->live[s->n_live++] = s->by_from[s->joined++];
	for (uint32_t i = 0; i < s->n_live;)
		if (life[s->live[i]].to < k)
			s->live[i] = s->live[--s->n_live];
		else
			i++;
}

/* Notes eviction e of the set in out_to or end_gone. */
static void note_out(struct stream *s, const struct tmm_eviction *e,
		     uint32_t k)
{
	uint32_t gone, returns, t = e->tensor;

	tmm_eviction_span(&s->an, e, &gone, &returns);
	if (gone >= returns)
		return;
	if (gone > k)
		s->end_gone[t] = gone < s->end_gone[t] ? gone : s->end_gone[t];
	else if (returns > s->out_to[t])
		s->out_to[t] = returns;
}

/* Whether tensor t outlives the step (weights, optimizer state): its
 * bytes are needed again by the next one. */
static bool outlives_step(const struct tmm_analysis *an, uint32_t t)
{
	return !(an->trace->tensors[t].flags &
		 (TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE));
}

/*
 * How far ahead tensor t, held at the op of accesses [s, e), is next
 * needed, in accesses (FAR: never), with the gap around the op into
 * *before and *after (TMM_TRACE_NONE where there is no access in the
 * step).  Returns 0 when the op itself touches t.
 */
static uint64_t next_use(const struct tmm_analysis *an, uint32_t t,
			 uint32_t s, uint32_t e, uint32_t *before,
			 uint32_t *after)
{
	uint32_t n = an->trace->n_accesses;

	tmm_accesses_around(an, t, s, before, after);
	if (*after != TMM_TRACE_NONE)
		return *after < e ? 0 : *after - s;
	if (!outlives_step(an, t))
		return FAR;
	return (uint64_t)(n - s) + an->life[t].first;
}

static int take(struct stream *s, struct tmm_eviction e)
{
	uint32_t i = s->set.n;
	int rc;

	if (!tmm_grow((void **)&s->next, &s->cap_next, (uint64_t)i + 1,
		      sizeof(*s->next)))
		return -ENOMEM;
	rc = tmm_eviction_add(&s->set, e);
	if (rc < 0)
		return rc;
	s->next[i] = s->head[e.tensor];
	s->head[e.tensor] = i;
	tmm_fit_add(&s->an, &s->fit, &s->set.ev[i]);
	note_out(s, &s->set.ev[i], s->at);
	return 0;
}

/* The latest access in [lo, hi) that ends by `ns`, or lo. */
static uint32_t trigger_by(const struct tmm_analysis *an, uint32_t lo,
			   uint32_t hi, uint64_t ns)
{
	for (uint32_t k = hi; k-- > lo + 1;)
		if (tmm_access_end(an, k) <= ns)
			return k;
	return lo;
}

/* A prefetch on the host-to-device engine: when its copy starts, and
 * whether it lands in time. */
struct slot {
	uint64_t start, ns;
	bool in_time;
};

/* The slot of a prefetch of tensor t that must land by `due` ns, fired
 * after access `lo` at the earliest (see the file comment). */
static struct slot find_slot(const struct stream *s, uint32_t t,
			     uint32_t lo, uint64_t due)
{
	const struct tmm_analysis *an = &s->an;
	struct slot sl = { .ns = tmm_swap_ns(an, an->life[t].bytes, true) };
	uint64_t from = tmm_access_end(an, lo);

	sl.in_time = tmm_copy_engine_latest(&s->h2d, from, due, sl.ns,
					    &sl.start);
	if (!sl.in_time)
		sl.start = tmm_copy_engine_slot(&s->h2d, from, sl.ns);
	return sl;
}

/* Books slot sl and returns its trigger in [lo, hi): the latest access
 * that ends by its start, or lo for a late one; TMM_TRACE_NONE without
 * memory. */
static uint32_t book(struct stream *s, struct slot sl, uint32_t lo,
		     uint32_t hi)
{
	if (tmm_copy_engine_take(&s->h2d, sl.start, sl.ns) < 0)
		return TMM_TRACE_NONE;
	return sl.in_time ? trigger_by(&s->an, lo, hi, sl.start) : lo;
}

/* When the copy of a wrap-around prefetch of t must land: its first
 * access in the next step, on this step's clock. */
static uint64_t wrap_due(const struct stream *s, uint32_t t)
{
	const struct tmm_analysis *an = &s->an;

	return tmm_access_end(an, an->trace->n_accesses - 1) +
	       tmm_access_begin(an, an->life[t].first) -
	       tmm_access_begin(an, 0);
}

/* Books a prefetch of t for access `back`, fired in [lo, back). */
static uint32_t book_prefetch(struct stream *s, uint32_t t, uint32_t lo,
			      uint32_t back)
{
	return book(s, find_slot(s, t, lo, tmm_access_begin(&s->an, back)),
		    lo, back);
}

/*
 * An eviction of t already taken out of access `from` (TMM_TRACE_NONE:
 * since the step began) whose prefetch brings it back before the op that
 * ends before k1: a second one out of the same gap would count its bytes
 * twice, so this one is kept out longer instead, its prefetch fired after
 * that op at the earliest.  (Its first copy stays booked on the engine
 * model, which so errs toward a busier link.)  Returns 1 when there was
 * one, 0 when not, -ENOMEM.
 */
static int extend(struct stream *s, uint32_t t, uint32_t from, uint32_t k1)
{
	for (uint32_t i = s->head[t]; i != TMM_TRACE_NONE; i = s->next[i]) {
		struct tmm_eviction *e = &s->set.ev[i];
		struct tmm_eviction more;
		uint32_t back = e->back, trig;

		if (e->evict != from || back == TMM_TRACE_NONE ||
		    e->drop || e->in_trigger >= k1 - 1)
			continue;
		trig = back > k1 - 1 ? book_prefetch(s, t, k1 - 1, back)
				     : book(s, find_slot(s, t, k1 - 1,
							 wrap_due(s, t)),
					    k1 - 1, s->an.trace->n_accesses);
		if (trig == TMM_TRACE_NONE)
			return -ENOMEM;
		/* Out from its old return to its new one. */
		more = (struct tmm_eviction){ .tensor = t,
					      .evict = e->in_trigger,
					      .back = back,
					      .in_trigger = trig };
		e->in_trigger = trig;
		tmm_fit_add(&s->an, &s->fit, &more);
		note_out(s, e, s->at);
		return 1;
	}
	return 0;
}

/* Whether t already has the step-end eviction an across-step gap needs. */
static bool out_at_end(const struct stream *s, uint32_t t)
{
	uint32_t last = s->an.life[t].last;

	for (uint32_t i = s->head[t]; i != TMM_TRACE_NONE; i = s->next[i])
		if (s->set.ev[i].evict == last &&
		    (s->set.ev[i].back == TMM_TRACE_NONE ||
		     s->set.ev[i].back <= last))
			return true;
	return false;
}

/*
 * Evicts tensor t for the shortage at the op whose accesses end before
 * k1, the gap around it being (before, after): the cases of the file
 * comment.  Its prefetch fires after that op at the earliest.
 */
static int evict(struct stream *s, uint32_t t, uint32_t k1,
		 uint32_t before, uint32_t after)
{
	const struct tmm_analysis *an = &s->an;
	const struct tmm_life *l = &an->life[t];
	uint32_t n = an->trace->n_accesses, trig;
	struct slot sl;
	int rc;

	rc = extend(s, t, before, k1);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (after == TMM_TRACE_NONE && !outlives_step(an, t))
		return take(s, (struct tmm_eviction){ .tensor = t,
						      .evict = before,
						      .back = TMM_TRACE_NONE });
	if (before == TMM_TRACE_NONE) {
		/* Out since the step began. */
		trig = book_prefetch(s, t, k1 - 1, after);
		if (trig == TMM_TRACE_NONE)
			return -ENOMEM;
		rc = take(s, (struct tmm_eviction){ .tensor = t,
						    .evict = TMM_TRACE_NONE,
						    .back = after,
						    .in_trigger = trig });
		if (rc == 0 && !out_at_end(s, t))
			rc = take(s, (struct tmm_eviction){
					     .tensor = t, .evict = l->last,
					     .back = TMM_TRACE_NONE });
		return rc;
	}
	if (after != TMM_TRACE_NONE) {
		trig = book_prefetch(s, t, k1 - 1, after);
		if (trig == TMM_TRACE_NONE)
			return -ENOMEM;
		return take(s, (struct tmm_eviction){ .tensor = t,
						      .evict = before,
						      .back = after,
						      .in_trigger = trig });
	}
	/* Needed again at its first access of the next step: from late in
	 * this one if the copy lands in time, else early in the next. */
	sl = find_slot(s, t, k1 - 1, wrap_due(s, t));
	if (!sl.in_time && l->first > 0) {
		struct slot next = find_slot(s, t, 0,
					     tmm_access_begin(an, l->first));

		if (next.in_time) {
			trig = book(s, next, 0, l->first);
			if (trig == TMM_TRACE_NONE)
				return -ENOMEM;
			rc = take(s, (struct tmm_eviction){
					     .tensor = t, .evict = before,
					     .back = TMM_TRACE_NONE });
			if (rc == 0)
				rc = take(s, (struct tmm_eviction){
						     .tensor = t,
						     .evict = TMM_TRACE_NONE,
						     .back = l->first,
						     .in_trigger = trig });
			return rc;
		}
	}
	trig = book(s, sl, k1 - 1, n);
	if (trig == TMM_TRACE_NONE)
		return -ENOMEM;
	return take(s, (struct tmm_eviction){ .tensor = t, .evict = before,
					      .back = l->first,
					      .in_trigger = trig });
}

/* Whether x leaves before y: the furthest first; then the larger; then
 * the earlier tensor. */
static bool before_in_line(const struct candidate *x,
			   const struct candidate *y)
{
	if (x->far != y->far)
		return x->far > y->far;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes;
	return x->t < y->t;
}

static int by_far(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	return before_in_line(x, y) ? -1 : before_in_line(y, x);
}

/*
 * Lowers the curve at access k to the target: of the held tensors the
 * op of k does not touch, the one needed furthest ahead leaves, then the
 * next, until it fits.  Each leaves for good at k (its eviction covers
 * k), and the others' distances do not change, so one look at the
 * live tensors serves the whole shortage.  Returns 1 when the curve at
 * k fits, 0 when no candidate is left and it does not, or -ENOMEM.
 */
static int relieve(struct stream *s, uint32_t k)
{
	const struct tmm_analysis *an = &s->an;
	uint32_t k0 = an->op_start[k], k1 = an->op_end[k], n = 0;

	s->at = k;
	live_at(s, k);
	for (uint32_t i = 0; i < s->n_live; i++) {
		struct candidate c = { .t = s->live[i] };

		if (!held_at(s, c.t, k))
			continue;
		c.far = next_use(an, c.t, k0, k1, &c.before, &c.after);
		/* Touched by the op, or made before the step and freed in it
		 * (not there to be out at its start). */
		if (!c.far ||
		    (c.before == TMM_TRACE_NONE && !outlives_step(an, c.t)))
			continue;
		c.bytes = an->life[c.t].bytes;
		s->cand[n++] = c;
	}
	/* Most shortages take a few evictions: those are picked by a scan
	 * each; one that takes more than 8 (a DenseNet block's maps), at
	 * about a sort's cost in scans by then, sorts the rest. */
	for (uint32_t taken = 0; n && s->fit.curve[k] > an->target; taken++) {
		struct candidate c;
		uint32_t best = 0;

		if (taken == 8) {
			qsort(s->cand, n, sizeof(*s->cand), by_far);
			for (uint32_t i = 0;
			     i < n && s->fit.curve[k] > an->target; i++)
				if (evict(s, s->cand[i].t, k1, s->cand[i].before,
					  s->cand[i].after) < 0)
					return -ENOMEM;
			break;
		}
		for (uint32_t i = 1; i < n; i++)
			if (before_in_line(&s->cand[i], &s->cand[best]))
				best = i;
		c = s->cand[best];
		s->cand[best] = s->cand[--n];
		if (evict(s, c.t, k1, c.before, c.after) < 0)
			return -ENOMEM;
	}
	return s->fit.curve[k] <= an->target;
}

/* Walks the curve, relieving each access over the target in turn: an
 * eviction only lowers the curve, so what is under stays under. */
static int walk(struct stream *s)
{
	const struct tmm_analysis *an = &s->an;
	uint32_t n = an->trace->n_accesses;

	for (uint32_t k = 0; k < n;) {
		uint32_t b = k / TMM_FIT_BLOCK;
		int rc;

		if (k % TMM_FIT_BLOCK == 0 &&
		    s->fit.block_max[b] <= an->target) {
			k += TMM_FIT_BLOCK;
			continue;
		}
		if (s->fit.curve[k] <= an->target) {
			k++;
			continue;
		}
		rc = relieve(s, k);
		if (rc < 0)
			return rc;
		/* Fits now, or the op's own tensors alone do not. */
		k = rc ? k + 1 : an->op_end[k];
	}
	return 0;
}

/* The per-tensor state of the walk, and the tensors by the start of
 * their life (a counting sort: lives start at accesses).  Returns 0 or
 * -ENOMEM. */
static int walk_init(struct stream *s)
{
	const struct tmm_trace *tr = s->an.trace;
	uint32_t nt = tr->n_tensors, na = tr->n_accesses, *at;

	s->head = tmm_malloc(sizeof(uint32_t) * (nt + 1));
	s->out_to = tmm_calloc(nt + 1, sizeof(uint32_t));
	s->end_gone = tmm_malloc(sizeof(uint32_t) * (nt + 1));
	s->by_from = tmm_malloc(sizeof(uint32_t) * (nt + 1));
	s->live = tmm_malloc(sizeof(uint32_t) * (nt + 1));
	s->cand = tmm_malloc(sizeof(*s->cand) * (nt + 1));
	at = tmm_calloc(na + 1, sizeof(uint32_t));
	if (!s->head || !s->out_to || !s->end_gone || !s->by_from ||
	    !s->live || !s->cand || !at) {
		free(at);
		return -ENOMEM;
	}
	memset(s->head, 0xff, sizeof(uint32_t) * (nt + 1));
	memset(s->end_gone, 0xff, sizeof(uint32_t) * (nt + 1));
	for (uint32_t t = 0; t < nt; t++) {
		const struct tmm_life *l = &s->an.life[t];

		if (l->bytes && l->from <= l->to && l->from < na)
			at[l->from + 1]++;
	}
	for (uint32_t k = 0; k < na; k++)
		at[k + 1] += at[k];
	for (uint32_t t = 0; t < nt; t++) {
		const struct tmm_life *l = &s->an.life[t];

		if (l->bytes && l->from <= l->to && l->from < na) {
			s->by_from[at[l->from]++] = t;
			s->n_by_from++;
		}
	}
	free(at);
	return tmm_fit_init(&s->an, &s->fit, &s->set);
}

int tmm_plan_stream(const struct tmm_planner_input *in, struct tmm_plan *out)
{
	struct stream s = { 0 };
	const struct tmm_trace *tr = in->trace;
	int rc = tmm_plan_init(out, tr, "stream");

	if (rc == 0)
		rc = tmm_analysis_init(&s.an, in);
	if (rc < 0)
		return rc;
	rc = walk_init(&s);
	if (rc == 0)
		rc = walk(&s);
	if (rc == 0)
		rc = tmm_emit(&s.an, s.set.ev, s.set.n, out);
	tmm_fit_free(&s.fit);
	tmm_copy_engine_free(&s.h2d);
	tmm_eviction_set_free(&s.set);
	free(s.head);
	free(s.next);
	free(s.out_to);
	free(s.end_gone);
	free(s.by_from);
	free(s.live);
	free(s.cand);
	tmm_analysis_free(&s.an);
	return rc;
}
