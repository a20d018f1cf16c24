/* SPDX-License-Identifier: MIT */
/*
 * plan_tensile.c — TENSILE's scheduling (Zhang et al., §IV-B to IV-D).
 *
 * Algorithm 3's loop: analyse the memory curve under the evictions chosen
 * so far for its peak (Algorithm 1); of the tensors held at the peak,
 * swap the largest one whose swap can be scheduled (Algorithm 2); when no
 * swap can be, recompute by memory saving per second (MSPS, §IV-D, shared
 * with capuchin in msps.c); stop when the curve is within the target.
 *
 * Swaps are scheduled on two copy engines, device-to-host and
 * host-to-device, each modelled as a queue that moves one tensor at a
 * time (§IV-C: a transfer occupies its PCIe direction).  A swap is
 * feasible only if its swap-out fits in the D2H engine's free time after
 * the evicted-access and ends before the peak, and its swap-in fits in the
 * H2D engine's free time before the back-access, starting after the
 * swap-out has ended and late enough to leave the tensor out at the peak.
 * The swap-out starts as early as it can, the swap-in as late as it can
 * (§IV-C).
 *
 * Across-iteration scheduling (§IV-C, Fig. 1(c)): a tensor made before
 * the iteration that the optimizer updates last, or that the iteration
 * touches once, may be swapped out after its last access, for the rest of
 * the iteration and the start of the next, and prefetched for its first
 * access: an EVICT_SWAP with no back-access and a PREFETCH whose trigger
 * precedes the first access (an eviction with evict = TMM_TRACE_NONE in
 * the analysis).
 *
 * Choices where the paper is vague, and ours:
 * - The peak's tensors (MPT): those the curve holds at the peak's access
 *   that the op running there does not use, in the gap of their accesses
 *   around the peak.  Largest first; ties go to the earlier tensor.
 * - Feasible intervals are searched in the one gap around the peak; when
 *   the swap does not fit there, the tensor is refused for that gap and
 *   the next largest is tried (the paper's retry with a later earliest
 *   time is the same search, since the swap-out already starts as early
 *   as the engine allows).
 * - Line 34 (swapping the tensor's later accesses too) is left to the
 *   loop: if a later gap holds the next peak, it is chosen then.
 * - The max swapping rate (MSR) is a multi-process limit; with one
 *   process it is 100% (§V-C), so it is not modelled here.
 * - A PREFETCH fires after its trigger access; its trigger is the latest
 *   access that ends by the start the engine schedule gives it.
 * - An across-iteration swap-out is modelled on the D2H engine like any
 *   other; copies running past the iteration's end are not checked
 *   against the next iteration's.  When the first access comes too early
 *   for any trigger before it and the peak lies after the last access,
 *   the prefetch wraps around: it fires late in this iteration for the
 *   next (plan.h).  With the peak before the first access, a tensor
 *   that cannot be brought back in time is refused.
 * - Recomputation (§IV-D) only for tensors this plan does not swap, so a
 *   recomputation never reads bytes the swap schedule has moved.
 * - When neither a hidden swap nor a recomputation is left, the paper
 *   stops (it allows no swap-in the computation waits for).  Our runtime
 *   would then evict passively, which waits for whole copies at the worst
 *   moment; so as a last resort we take the largest peak tensor's swap
 *   anyway, its swap-out queued on the D2H engine (an allocation waits
 *   for it) and its prefetch as late as the H2D engine allows or right
 *   after the peak, the stall coming at its back-access; or, for a
 *   tensor whose taken prefetch returns it before the peak, that
 *   prefetch moved after the peak.  Only for tensors made in the
 *   iteration (see schedule_swap).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "copy_engine.h"
#include "msps.h"
#include "planners.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

struct held;

struct tensile {
	struct tmm_analysis an;
	struct tmm_cands cs;	       /* for recomputation */
	struct tmm_eviction_set chosen;
	struct tmm_copy_engine d2h, h2d; /* copy_engine.h */
	uint64_t *curve;
	uint64_t peak;
	uint32_t peak_at;
	bool *swapped;		/* per tensor: a swap of it is taken */
	bool *out;		/* per tensor: out at the peak (mark_out) */
	uint32_t *refused_at;	/* per tensor: its swap did not fit for
				 * the peak at this access */
	uint32_t *refused_stall_at; /* ... nor a swap that stalls */
	struct held *held;	/* scratch: the tensors held at the peak */
};

/* The latest access in [lo, hi) that ends by `ns`, or TMM_TRACE_NONE. */
static uint32_t trigger_by(const struct tmm_analysis *an, uint32_t lo,
			   uint32_t hi, uint64_t ns)
{
	for (uint32_t k = hi; k-- > lo;)
		if (tmm_access_end(an, k) <= ns)
			return k;
	return TMM_TRACE_NONE;
}

static int take(struct tensile *ts, struct tmm_eviction e)
{
	const struct tmm_analysis *an = &ts->an;
	uint64_t bytes = an->life[e.tensor].bytes;
	uint32_t gone, returns;
	int rc = tmm_eviction_add(&ts->chosen, e);

	if (rc < 0)
		return rc;
	/* Incremental, as struct tmm_fit: over the eviction's own span,
	 * leaving out collective recomputation, which only raises the
	 * curve; so the full curve confirms a fit. */
	tmm_eviction_span(an, &e, &gone, &returns);
	for (uint32_t k = gone; k < returns; k++)
		ts->curve[k] -= bytes;
	ts->peak = 0;
	for (uint32_t k = 0; k < an->trace->n_accesses; k++)
		if (ts->curve[k] > ts->peak) {
			ts->peak = ts->curve[k];
			ts->peak_at = k;
		}
	if (ts->peak <= an->target)
		ts->peak = tmm_curve(an, ts->chosen.ev, ts->chosen.n,
				     ts->curve, &ts->peak_at);
	return 0;
}

/* Marks in out[] the tensors that an eviction of ts keeps off the
 * device at access k. */
static void mark_out(const struct tensile *ts, uint32_t k, bool *out)
{
	memset(out, 0, sizeof(bool) * ts->an.trace->n_tensors);
	for (uint32_t i = 0; i < ts->chosen.n; i++) {
		uint32_t gone, returns;

		tmm_eviction_span(&ts->an, &ts->chosen.ev[i], &gone, &returns);
		if (gone <= k && k < returns)
			out[ts->chosen.ev[i].tensor] = true;
	}
}

/* Does the curve hold tensor t at access k (out[] from mark_out)? */
static bool held_at(const struct tensile *ts, const bool *out, uint32_t t,
		    uint32_t k)
{
	const struct tmm_life *l = &ts->an.life[t];

	return l->first != TMM_TRACE_NONE && k >= l->from && k <= l->to &&
	       !out[t];
}

/* Does the op of access k use tensor t? */
static bool used_by_op_at(const struct tmm_analysis *an, uint32_t t,
			  uint32_t k)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t op = tr->accesses[k].op;

	for (uint32_t j = 0; j < an->life[t].n_acc; j++) {
		uint32_t a = tmm_access_of(an, t, j);

		if (a == k || (op != TMM_TRACE_NONE &&
			       tr->accesses[a].op == op))
			return true;
	}
	return false;
}

/* Across-iteration: made before the iteration, kept after it, and
 * updated last by the optimizer or touched once. */
static bool across_iteration(const struct tmm_analysis *an, uint32_t t)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_life *l = &an->life[t];
	const struct tmm_trace_access *last;

	if (tr->tensors[t].flags & (TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE))
		return false;
	if (l->n_acc == 1)
		return true;
	last = &tr->accesses[l->last];
	return (last->flags & TMM_TA_WRITE) && last->op < tr->n_ops &&
	       tr->ops[last->op].kind == TMM_OP_OPTIMIZER;
}

/*
 * A wrap-around prefetch for tensor t, out after its last access e and
 * needed at its first access b of the next iteration, when no trigger
 * before b can bring it back in time: the swap-in is booked as late as it
 * can end by b's time in the next iteration (this iteration's end plus
 * b's offset from its start), and fires after the latest access of this
 * iteration that ends by then, which must come after the peak.  Returns
 * whether it fits, with its start and trigger.
 */
static bool wrap_around(const struct tensile *ts, uint32_t e, uint32_t b,
			uint64_t out_end, uint64_t in_ns, uint64_t *in_at,
			uint32_t *trig)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t n = an->trace->n_accesses;
	uint64_t next_b = tmm_access_end(an, n - 1) +
			  (tmm_access_begin(an, b) - tmm_access_begin(an, 0));

	if (!tmm_copy_engine_latest(&ts->h2d, out_end, next_b, in_ns,
				    in_at))
		return false;
	*trig = trigger_by(an, e, n, *in_at);
	return *trig != TMM_TRACE_NONE && *trig >= ts->peak_at;
}

/*
 * Algorithm 2's scheduling_swap for tensor t at the peak p: tries to fit
 * its swap in the engines' free time.  On success the evictions are
 * taken and the transfers booked; returns 1, 0 when it does not fit, or
 * -ENOMEM.
 */
static int schedule_swap(struct tensile *ts, uint32_t t, bool stall)
{
	const struct tmm_analysis *an = &ts->an;
	const struct tmm_life *l = &an->life[t];
	uint32_t p = ts->peak_at, e, b;
	uint64_t bytes = l->bytes;
	uint64_t out_ns = tmm_swap_ns(an, bytes, false);
	uint64_t in_ns = tmm_swap_ns(an, bytes, true);
	uint64_t peak_ns = tmm_access_begin(an, p);
	uint64_t out_at, in_at = 0;
	bool wrap = false, around = false;
	uint32_t trig = TMM_TRACE_NONE;
	int rc;

	/* The gap around the peak: e < p <= b. */
	tmm_accesses_around(an, t, p, &e, &b);
	if (e == TMM_TRACE_NONE || (b == TMM_TRACE_NONE &&
				    across_iteration(an, t))) {
		/* Before the first access, only an across-iteration swap
		 * leaves it out; after the last, it also brings the
		 * tensor back for the next iteration. */
		if (!across_iteration(an, t) || stall)
			return 0;
		wrap = true;
		e = l->last;
		b = l->first;
	}
	/* A stall only for tensors made in the iteration: waiting for a
	 * weight at the op that reads it holds that op's other tensors
	 * pinned while the pool is at its fullest. */
	if (stall && !(an->trace->tensors[t].flags & TMM_TT_MADE_INSIDE))
		return 0;
	/* Made before the iteration, it must be back for the next one: a
	 * swap-out with no prefetch would leave it to a demand fetch that
	 * the curve does not count. */
	if (b == TMM_TRACE_NONE &&
	    !(an->trace->tensors[t].flags & TMM_TT_MADE_INSIDE))
		return 0;
	for (uint32_t i = 0; i < ts->chosen.n; i++) {
		struct tmm_eviction *x = &ts->chosen.ev[i];

		if (x->tensor != t || x->evict != (wrap ? TMM_TRACE_NONE : e))
			continue;
		/* That gap is taken already, and its prefetch brings the
		 * tensor back before this peak.  As a last resort, fire it
		 * after the peak instead (its H2D booking is left as it
		 * was: the copy only moves later). */
		if (!stall || x->drop || wrap || x->back == TMM_TRACE_NONE ||
		    x->in_trigger >= p || p >= x->back)
			return 0;
		x->in_trigger = p;
		ts->peak = tmm_curve(an, ts->chosen.ev, ts->chosen.n,
				     ts->curve, &ts->peak_at);
		return 1;
	}
	out_at = tmm_copy_engine_slot(&ts->d2h, tmm_access_end(an, e),
				      out_ns);
	if (p > e && out_at + out_ns > peak_ns && !stall)
		return 0; /* not out by the peak */
	if (b != TMM_TRACE_NONE) {
		/* In the iteration, the swap-in starts after the
		 * swap-out; across it, after the iteration begins. */
		uint64_t lo = wrap ? tmm_access_begin(an, 0)
				   : out_at + out_ns;
		bool ok = tmm_copy_engine_latest(&ts->h2d, lo,
						 tmm_access_begin(an, b),
						 in_ns, &in_at);

		if (ok)
			trig = trigger_by(an, wrap ? 0 : e, b, in_at);
		/* Brought back before the peak, it would not lower it. */
		if (ok && (trig == TMM_TRACE_NONE || (p < b && trig < p)))
			ok = false;
		if (!ok && wrap && p > e) {
			ok = wrap_around(ts, e, b, out_at + out_ns, in_ns,
					 &in_at, &trig);
			around = ok;
		}
		if (!ok && stall) {
			/* Back right after the peak, as soon as the engine
			 * is free: the back-access may wait for it. */
			uint64_t from = tmm_access_end(an, p);

			trig = p;
			if (from < out_at + out_ns)
				from = out_at + out_ns;
			in_at = tmm_copy_engine_slot(&ts->h2d, from, in_ns);
			ok = true;
		}
		if (!ok)
			return 0;
	}
	rc = tmm_copy_engine_take(&ts->d2h, out_at, out_ns);
	if (rc == 0 && trig != TMM_TRACE_NONE)
		rc = tmm_copy_engine_take(&ts->h2d, in_at, in_ns);
	if (rc < 0)
		return rc;
	ts->swapped[t] = true;
	if (around) {
		/* One eviction: out after its last access, back before the
		 * iteration ends (tmm_emit makes the prefetch wrap). */
		rc = take(ts, (struct tmm_eviction){ .tensor = t, .evict = e,
						     .back = b,
						     .in_trigger = trig });
	} else if (wrap) {
		rc = take(ts, (struct tmm_eviction){ .tensor = t,
						     .evict = e,
						     .back = TMM_TRACE_NONE });
		if (rc == 0)
			rc = take(ts, (struct tmm_eviction){
					      .tensor = t,
					      .evict = TMM_TRACE_NONE,
					      .back = b,
					      .in_trigger = trig });
	} else {
		rc = take(ts, (struct tmm_eviction){ .tensor = t, .evict = e,
						     .back = b,
						     .in_trigger = trig });
	}
	return rc < 0 ? rc : 1;
}

/* A tensor held at the peak, ordered by size. */
struct held {
	uint64_t bytes;
	uint32_t tensor;
};

/* Whether x comes before y: larger first, equal sizes by index, as a
 * scan would meet them (a total order: no two tensors tie). */
static bool before(const struct held *x, const struct held *y)
{
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes;
	return x->tensor < y->tensor;
}

/* Restores the heap of h[0..n) below i (the first in order on top). */
static void sift_down(struct held *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, top = i;
		struct held tmp;

		if (l < n && before(&h[l], &h[top]))
			top = l;
		if (r < n && before(&h[r], &h[top]))
			top = r;
		if (top == i)
			return;
		tmp = h[i];
		h[i] = h[top];
		h[top] = tmp;
		i = top;
	}
}

/* Takes the first in order out of the heap h[0..*n). */
static struct held pop_first(struct held *h, uint32_t *n)
{
	struct held first = h[0];

	h[0] = h[--*n];
	sift_down(h, *n, 0);
	return first;
}

/*
 * Algorithm 1's MPT and Algorithm 2's outer loop: swaps the largest
 * tensor held at the peak whose swap fits.  Returns 1 when one was
 * taken, 0 when none fits, or -ENOMEM.
 *
 * The tensors are tried in order of size, and most often the first
 * fits: a heap gives them in that order at the cost of the few tried,
 * where sorting all of them cost more than the rest of the planner.
 */
static int swap_one(struct tensile *ts, bool stall)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t n = an->trace->n_tensors, p = ts->peak_at, m = 0;
	uint32_t *refused = stall ? ts->refused_stall_at : ts->refused_at;

	mark_out(ts, p, ts->out);
	/* The tensors that cause the peak, largest first: each refusal
	 * leaves the peak and the others as they were. */
	for (uint32_t t = 0; t < n; t++)
		if (refused[t] != p && held_at(ts, ts->out, t, p) &&
		    !used_by_op_at(an, t, p))
			ts->held[m++] = (struct held){ an->life[t].bytes, t };
	for (uint32_t i = m / 2; i-- > 0;)
		sift_down(ts->held, m, i);
	while (m > 0) {
		struct held h = pop_first(ts->held, &m);
		int rc = schedule_swap(ts, h.tensor, stall);

		if (rc == 1 || rc == -ENOMEM)
			return rc;
		refused[h.tensor] = p;
	}
	return 0;
}

/* §IV-D: the largest MSPS among tensors not swapped, for the peak. */
static int recompute_one(struct tensile *ts)
{
	for (;;) {
		int64_t r = tmm_msps_best(&ts->an, ts->curve, &ts->cs);
		struct tmm_cand *c;
		int rc;

		if (r < 0)
			return 0;
		c = &ts->cs.c[r];
		if (ts->swapped[c->tensor]) {
			c->taken = true;
			continue;
		}
		tmm_cands_retire_gap(&ts->cs, c);
		rc = tmm_msps_choose(&ts->cs, (uint32_t)r);
		if (rc == 0)
			rc = take(ts, (struct tmm_eviction){
					      .tensor = c->tensor,
					      .evict = c->evict,
					      .back = c->back,
					      .drop = true });
		return rc < 0 ? rc : 1;
	}
}

/* Books the swap-outs that liveness chose on the D2H engine, but for
 * those of dead tensors that leave without a copy (tmm_leaves_free). */
static int book_liveness(struct tensile *ts)
{
	const struct tmm_analysis *an = &ts->an;

	for (uint32_t i = 0; i < ts->chosen.n; i++) {
		const struct tmm_eviction *e = &ts->chosen.ev[i];
		uint64_t len, s;

		if (tmm_leaves_free(an, e->tensor, e->back))
			continue;
		len = tmm_swap_ns(an, an->life[e->tensor].bytes, false);
		s = tmm_copy_engine_slot(&ts->d2h,
					 tmm_access_end(an, e->evict), len);
		if (tmm_copy_engine_take(&ts->d2h, s, len) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Algorithm 3. */
static int schedule(struct tensile *ts)
{
	int rc;

	ts->peak = tmm_curve(&ts->an, ts->chosen.ev, ts->chosen.n, ts->curve,
			     &ts->peak_at);
	rc = tmm_cands_find(&ts->an, ts->curve, &ts->cs);
	while (rc == 0 && ts->peak > ts->an.target) {
		rc = swap_one(ts, false);
		if (rc == 0)
			rc = recompute_one(ts);
		if (rc == 0)
			rc = swap_one(ts, true);
		if (rc == 0)
			break; /* nothing left: the plan will not fit */
		if (rc == 1)
			rc = 0;
	}
	return rc;
}

int tmm_plan_tensile(const struct tmm_planner_input *in,
		     struct tmm_plan *out)
{
	struct tensile ts = { 0 };
	uint32_t n = in->trace->n_tensors;
	int rc = tmm_plan_init(out, in->trace, "tensile");

	if (rc == 0)
		rc = tmm_analysis_init(&ts.an, in);
	if (rc < 0)
		return rc;
	ts.curve = tmm_malloc(sizeof(uint64_t) * (in->trace->n_accesses + 1));
	ts.swapped = tmm_calloc(n + 1, sizeof(bool));
	ts.out = tmm_calloc(n + 1, sizeof(bool));
	ts.refused_at = tmm_malloc(sizeof(uint32_t) * (n + 1));
	ts.refused_stall_at = tmm_malloc(sizeof(uint32_t) * (n + 1));
	ts.held = tmm_malloc(sizeof(*ts.held) * (n + 1));
	if (!ts.curve || !ts.swapped || !ts.out || !ts.refused_at ||
	    !ts.refused_stall_at || !ts.held) {
		rc = -ENOMEM;
		goto out;
	}
	memset(ts.refused_at, 0xff, sizeof(uint32_t) * (n + 1));
	memset(ts.refused_stall_at, 0xff, sizeof(uint32_t) * (n + 1));
	rc = tmm_liveness(&ts.an, &ts.chosen);
	if (rc == 0)
		rc = book_liveness(&ts);
	if (rc == 0)
		rc = schedule(&ts);
	if (rc == 0)
		rc = tmm_emit(&ts.an, ts.chosen.ev, ts.chosen.n, out);
out:
	tmm_cands_free(&ts.cs);
	free(ts.curve);
	free(ts.swapped);
	free(ts.out);
	free(ts.refused_at);
	free(ts.refused_stall_at);
	free(ts.held);
	tmm_copy_engine_free(&ts.d2h);
	tmm_copy_engine_free(&ts.h2d);
	tmm_eviction_set_free(&ts.chosen);
	tmm_analysis_free(&ts.an);
	return rc;
}
