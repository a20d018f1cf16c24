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
 * (then the plan does not fit, and says so).  Planning is O(evictions x
 * tensors held): each eviction scans the tensors for the furthest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "copy_engine.h"
#include "planners.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

#define FAR UINT64_MAX /* the distance of a tensor never needed again */

struct stream {
	struct tmm_analysis an;
	struct tmm_eviction_set set;
	struct tmm_fit fit;
	struct tmm_copy_engine h2d;
	/* Per tensor, its evictions in set: a chain through next[]. */
	uint32_t *head, *next;
	uint32_t cap_next;
};

/* Whether the curve holds tensor t at access k: alive there and not out
 * by one of its evictions. */
static bool held_at(const struct stream *s, uint32_t t, uint32_t k)
{
	const struct tmm_life *l = &s->an.life[t];

	if (l->from > k || l->to < k || !l->bytes)
		return false;
	for (uint32_t i = s->head[t]; i != TMM_TRACE_NONE; i = s->next[i]) {
		uint32_t gone, returns;

		tmm_eviction_span(&s->an, &s->set.ev[i], &gone, &returns);
		if (gone <= k && k < returns)
			return false;
	}
	return true;
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

	if (i == s->cap_next) {
		uint32_t cap = s->cap_next ? 2 * s->cap_next : 64;
		uint32_t *p = tmm_realloc(s->next, sizeof(*p) * cap);

		if (!p)
			return -ENOMEM;
		s->next = p;
		s->cap_next = cap;
	}
	rc = tmm_eviction_add(&s->set, e);
	if (rc < 0)
		return rc;
	s->next[i] = s->head[e.tensor];
	s->head[e.tensor] = i;
	tmm_fit_add(&s->an, &s->fit, &s->set.ev[i]);
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
 * that op at the earliest.  Returns 1 when there was one, 0 when not,
 * -ENOMEM.
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

/*
 * Lowers the curve at access k by one eviction: the held tensor that the
 * op of k does not touch and that is needed furthest ahead.  Returns 1
 * when one was taken, 0 when none is left, or -ENOMEM.
 */
static int relieve(struct stream *s, uint32_t k)
{
	const struct tmm_analysis *an = &s->an;
	uint32_t k0 = an->op_start[k], k1 = an->op_end[k];
	uint32_t best = TMM_TRACE_NONE, b_before = 0, b_after = 0;
	uint64_t best_far = 0;

	for (uint32_t t = 0; t < an->trace->n_tensors; t++) {
		uint32_t before, after;
		uint64_t far;

		if (!held_at(s, t, k))
			continue;
		far = next_use(an, t, k0, k1, &before, &after);
		/* Touched by the op, or made before the step and freed in it
		 * (not there to be out at its start). */
		if (!far || (before == TMM_TRACE_NONE && !outlives_step(an, t)))
			continue;
		if (best != TMM_TRACE_NONE &&
		    (far < best_far ||
		     (far == best_far &&
		      an->life[t].bytes <= an->life[best].bytes)))
			continue;
		best = t;
		best_far = far;
		b_before = before;
		b_after = after;
	}
	if (best == TMM_TRACE_NONE)
		return 0;
	return evict(s, best, k1, b_before, b_after) < 0 ? -ENOMEM : 1;
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
		if (rc == 0)
			k = an->op_end[k]; /* the op alone does not fit */
	}
	return 0;
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
	s.head = tmm_malloc(sizeof(uint32_t) * (tr->n_tensors + 1));
	rc = s.head ? 0 : -ENOMEM;
	if (rc == 0) {
		memset(s.head, 0xff, sizeof(uint32_t) * (tr->n_tensors + 1));
		rc = tmm_fit_init(&s.an, &s.fit, &s.set);
	}
	if (rc == 0)
		rc = walk(&s);
	if (rc == 0)
		rc = tmm_emit(&s.an, s.set.ev, s.set.n, out);
	tmm_fit_free(&s.fit);
	tmm_copy_engine_free(&s.h2d);
	tmm_eviction_set_free(&s.set);
	free(s.head);
	free(s.next);
	tmm_analysis_free(&s.an);
	return rc;
}
