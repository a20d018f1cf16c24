/* SPDX-License-Identifier: MIT */
/*
 * plan_tsplit.c — TSPLIT's model-guided planner (Nie et al., §IV,
 * Algorithm 2).
 *
 * The ops are walked in order over the memory curve (hints/analysis.c,
 * lowered by the splits already chosen: hints/split_curve.c).  While an op holds
 * more than the target, two kinds of choice are priced by the extra time
 * they cost per byte they save there (ΔT/ΔM), and the cheaper is taken:
 * - step 1, a tensor alive across the op that the op does not use, swapped
 *   (Eq. 3) or recomputed (Eq. 4) over the gap between two of its
 *   accesses that holds the op (Eq. 2: it saves its size).  A swap of a
 *   sliced output at the op that wrote it may stream out of that op
 *   split (lib/exec/split_stream.c), the op split for it if it is not yet;
 * - step 2, the op itself split into p micro-ops while its sliced input
 *   leaves slice by slice (Eq. 5 and 6), swapped out or dropped (to be
 *   recomputed) at the op: the runtime gives the rows of either back as
 *   the micro-ops finish with them, a swapped slice once its copy to the
 *   host is complete (lib/exec/split.c), and the model (split_curve.h) credits
 *   both.
 *
 * Where ours differs from the paper, and why:
 * - Micro-tensors.  TSPLIT (§V-A, §V-C) gives every micro-tensor its own
 *   allocation and merges them when an op needs the whole tensor.  Ours
 *   runs micro-ops over row ranges of whole tensors: the op's sliced
 *   input gives its rows back from the front as each micro-op finishes
 *   with them, and its output grows into them from just below
 *   (lib/exec/split.c), so each micro-tensor of the input is freed, or
 *   swapped out, as soon as its micro-op is done, and no merge is ever
 *   copied.  Only the op's first tensor and first sliced output trade
 *   (tmm_split_pair); ops that hold weights or several big inputs save
 *   on those two.  The output needs the room of one part right below the
 *   input: where the free space there is smaller and the budget has no
 *   room for the whole output, the runtime cuts the op into more parts
 *   until one part's rows fit (up to TMM_SPLIT_MAX_PARTS); where it has
 *   room, the output is whole (tmm_split_place_output).
 * - Split dimension: the sample (row) dimension only, the outermost of
 *   the op's sliced tensors; the paper's parameter split has no
 *   counterpart in our op descriptors.
 * - Recomputation.  As the paper (§V-D): for the backward layers only,
 *   memory-centrically, the chain of dropped tensors run again from a
 *   checkpoint for each backward access that needs it, what fits kept
 *   with the least recently used going first.  The runtime does this by
 *   itself (lib/exec/recompute.c); the plan keeps to what it can do
 *   (hints/recompute_chain.h): a tensor is dropped only where every
 *   tensor its chain reads is on the device there, or dropped in turn,
 *   or freed by the program while on the device (a ghost), never swapped
 *   out, and a tensor a chosen chain reads is not swapped out across the
 *   access that needs it.  Eq. 4's set I is the chain's producers, each
 *   once; a tensor dropped where chosen chains already read it adds its
 *   producer to each of them.
 * - Rounds.  The walk's running curve leaves out what a chain holds at
 *   its back-access (its dropped sources made again on the way, a
 *   swapped-out source brought back: tmm_curve counts both).  Where the
 *   full curve is over the target after a walk, the walk goes over it
 *   again, TSPLIT_ROUNDS walks in all.
 * - Termination.  Algorithm 2 stops when the bottlenecks are gone or
 *   nothing is left to move.  What the recomputations keep on the device
 *   can leave a later bottleneck with nothing to move; where the walks
 *   leave the curve over the budget itself, the plan is made again with
 *   swaps and splits only, and the plan that fits (or else the lower) is
 *   kept (tmm_plan_tsplit; ours: the tsplit_retry tunable off leaves
 *   the walks' plan, as the paper does).
 *
 * Choices where the paper is vague, and ours:
 * - ΔM is the saving that counts at this bottleneck: at most what the op
 *   is over the target.  Saving more there buys nothing there, so among
 *   choices that suffice the cheapest wins, not the largest; and a split
 *   into more parts than it takes to fit is not chosen for its ratio.
 * - Ties go to step 1 (line 15 of Algorithm 2 compares with <=).
 * - Swap cost (Eq. 3): Oc_u, the share of the link an op's time leaves
 *   free, is modelled as the other planners do: one transfer at a time in
 *   each direction, a copy queued behind the chosen ones whose intervals
 *   it would overlap.  The cost is what the bottleneck op waits for the
 *   swap-out to end plus what the back-access waits for the prefetch; the
 *   prefetch's trigger is Capuchin's (tmm_in_trigger), moved later while
 *   bringing the tensor back early would put the curve over the target
 *   (Eq. 3's M_k + size(s_j) < M).
 * - Recompute cost (Eq. 4): MSPS's for each producer of the chain
 *   (hints/msps.c): its time, and that of the freed tensors it is
 *   recomputed through.
 * - Split cost (Eq. 6): the swap or recomputation of the whole input plus
 *   one launch overhead per micro-op; the paper's split/merge copies do
 *   not exist here (micro-ops work in place on row ranges).  A swapped
 *   input's copies are priced as the runtime waits for them
 *   (tmm_split_input_stall_ns): each slice's copy is queued as its part
 *   ends and waited for only when the output grows into its rows, which
 *   with rows of one size is the next part (every copy waited for, each
 *   paying the copy latency), and later for an output with smaller rows
 *   (the copies hide behind the parts).  A recomputed input costs its
 *   chain (Eq. 4), whatever p.  p is one of 2, 4, 8, 16, at most the op's
 *   rows.  An op already split may be split into more parts later, for
 *   the extra saving at the extra launches.
 * - Streamed output (step 1): part u's rows are queued for the host as
 *   micro-op u ends, one copy per part, each paying the copy latency;
 *   the swap-out ends a part's copy after the op at best, instead of a
 *   whole copy after it.  An op not split yet is split for it at p
 *   launches (p as above), which saves nothing at the op itself (its
 *   input stays whole): Eq. 5 is credited to a split only where its
 *   input leaves at the op, and step 2 may add that eviction later at
 *   the same parts.
 * - The input of a split whose only later use is none (the op is its last
 *   access) is swapped out with no back-access, as liveness does: its
 *   cost is the copy, and the split saves as with any swap at the op.
 * - A bottleneck no choice can lower is left: the walk goes on, and the
 *   plan says it does not fit (then the second try, above).  A final
 *   full curve (with the collective recomputations the incremental one
 *   leaves out) sets predicted_peak.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "idle_state.h"
#include "copy_engine.h"
#include "msps.h"
#include "planners.h"
#include "recompute_chain.h"
#include "split_curve.h"
#include "lib/base/xalloc.h"

struct tsplit {
	struct tmm_analysis an;
	struct tmm_cands cs;
	struct tmm_eviction_set chosen;
	struct tmm_fit fit;	  /* the curve under `chosen`, whole tensors */
	uint64_t *split_saving;	  /* per access: lowered by splits */
	/* Where each tensor is out of the device, and where the chosen
	 * recomputations read it (recompute_chain.h). */
	struct tmm_chain_book book;
	bool no_recompute;	  /* the second try: swaps and splits only */
	uint32_t *in_trigger;	  /* per candidate: tmm_in_trigger, once
				   * asked (it depends on the gap only) */
	struct tmm_split *splits;
	uint32_t n_splits, cap_splits;
	struct tmm_copy_engine d2h, h2d;
};

/* One priced choice. */
struct option {
	double ratio;		/* ΔT / ΔM; INFINITY: none */
	bool split;
	int64_t cand;		/* step 1, or the split's recomputed input */
	struct tmm_eviction ev; /* the eviction it takes, if new */
	bool new_eviction;
	uint32_t parts;
	uint32_t stream_parts;	/* step 1: the swapped output leaves part
				 * by part from its op split in as many
				 * (0: whole, after its op) */
	bool stream_new_split;	/* ... an op not split yet, split for it */
	uint64_t d2h_start, d2h_ns, h2d_start; /* a swap's copies */
};

static uint64_t held(const struct tsplit *ts, uint32_t k)
{
	return ts->fit.curve[k] - ts->split_saving[k];
}

/* Whether the op of access k accesses trace tensor t. */
static bool op_uses(const struct tmm_analysis *an, uint32_t k, uint32_t t)
{
	for (uint32_t j = an->op_start[k]; j < an->op_end[k]; j++)
		if (an->trace->accesses[j].tensor == t)
			return true;
	return false;
}

/*
 * Books nothing: finds where the swap-out of o->ev runs on the D2H engine
 * (o->d2h_start, o->d2h_ns) and returns when it ends.  Whole, it follows
 * its evict access.  Streamed (o->stream_parts, lib/exec/split_stream.c), part
 * u's rows are queued as micro-op u ends: the engine is busy from the
 * first part's end for one copy per part, each paying the copy latency,
 * and the last copy cannot end before the op does plus its own time.
 */
static uint64_t out_slot(const struct tsplit *ts, struct option *o)
{
	const struct tmm_analysis *an = &ts->an;
	const struct tmm_eviction *e = &o->ev;
	uint64_t bytes = an->life[e->tensor].bytes;
	uint64_t begin, end, copy, out_end;
	uint32_t p = o->stream_parts;

	if (!p) {
		o->d2h_ns = tmm_swap_ns(an, bytes, false);
		o->d2h_start = tmm_copy_engine_slot(&ts->d2h,
					   tmm_access_end(an, e->evict),
					   o->d2h_ns);
		return o->d2h_start + o->d2h_ns;
	}
	begin = tmm_access_begin(an, an->op_start[e->evict]);
	end = tmm_access_end(an, e->evict);
	copy = tmm_swap_ns(an, (bytes + p - 1) / p, false);
	o->d2h_ns = p * copy;
	o->d2h_start = tmm_copy_engine_slot(&ts->d2h, begin + (end - begin) / p,
				   o->d2h_ns);
	out_end = o->d2h_start + o->d2h_ns;
	if (out_end < end + copy) {
		out_end = end + copy;
		o->d2h_ns = out_end - o->d2h_start;
	}
	return out_end;
}

/*
 * A split op's input swapped out at it, slice by slice (o->parts): what
 * the op waits for its copies (split_curve.h), later by as much as the
 * chosen transfers keep the engine from starting at the op.  Books
 * nothing; sets the copies' place and *out_end.
 */
static uint64_t sliced_out_cost(const struct tsplit *ts, struct option *o,
				uint64_t *out_end)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t first = an->op_start[o->ev.evict];
	struct tmm_split s = { .first = first, .parts = o->parts };
	uint64_t begin = tmm_access_begin(an, first);
	uint64_t end = tmm_access_end(an, o->ev.evict), stall, copies;

	if (!tmm_split_pair(an, first, &s.input, &s.output))
		s.output = s.input = o->ev.tensor;
	stall = tmm_split_input_stall_ns(an, &s, end - begin, &copies);
	o->d2h_ns = copies ? copies : 1;
	o->d2h_start = tmm_copy_engine_slot(&ts->d2h, begin, o->d2h_ns);
	*out_end = o->d2h_start + o->d2h_ns;
	return stall + (o->d2h_start - begin);
}

/* The time swap o->ev costs (see price_swap), with its copies' starts. */
static uint64_t swap_cost(const struct tsplit *ts, uint32_t k, bool sliced,
			  struct option *o)
{
	const struct tmm_analysis *an = &ts->an;
	const struct tmm_eviction *e = &o->ev;
	uint64_t bytes = an->life[e->tensor].bytes;
	uint64_t out_end, cost = 0, need = tmm_access_begin(an, k);

	/* A split's own op is the bottleneck: its slices leave as it runs
	 * (lib/exec/split.c), and it waits for what they do not hide. */
	if (sliced) {
		cost = sliced_out_cost(ts, o, &out_end);
	} else {
		out_end = out_slot(ts, o);
		if (out_end > need)
			cost += out_end - need;
	}
	if (e->back != TMM_TRACE_NONE) {
		uint64_t in_ns = tmm_swap_ns(an, bytes, true);
		uint64_t start = tmm_access_end(an, e->in_trigger);
		uint64_t arrive, back_ns = tmm_access_begin(an, e->back);

		if (start < out_end)
			start = out_end;
		o->h2d_start = tmm_copy_engine_slot(&ts->h2d, start, in_ns);
		arrive = o->h2d_start + in_ns;
		if (arrive > back_ns)
			cost += arrive - back_ns;
	}
	return cost;
}

/*
 * Prices swapping tensor t out after `evict` and back for `back` (or
 * never, TMM_TRACE_NONE) for bottleneck access k, or for a split of the
 * op of `evict` (sliced): fills o->ev and the copies' starts; returns the
 * time it costs, or -1 when its memory would not be gone at k or when it
 * costs `bound` per byte of `m` or more (moving the prefetch later only
 * adds to the cost, so that is known before looking for where it may
 * come back).  `trigger` (may be NULL) caches tmm_in_trigger for the gap.
 */
static int64_t price_swap(const struct tsplit *ts, uint32_t t,
			  uint32_t evict, uint32_t back, uint32_t k,
			  bool sliced, double m, double bound,
			  uint32_t *trigger, struct option *o)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t gone, returns;

	o->ev = (struct tmm_eviction){ .tensor = t, .evict = evict,
				       .back = back, .in_trigger = evict };
	if (back == TMM_TRACE_NONE)
		return (int64_t)swap_cost(ts, k, sliced, o);
	if (!trigger || *trigger == TMM_TRACE_NONE)
		o->ev.in_trigger = tmm_in_trigger(an, t, evict, back);
	else
		o->ev.in_trigger = *trigger;
	if (trigger)
		*trigger = o->ev.in_trigger;
	if ((double)swap_cost(ts, k, sliced, o) / m >= bound)
		return -1;
	/* t is in the curve over its gap: where the curve is over the
	 * target with it, it cannot be back yet; before back's op, it
	 * must. */
	for (uint32_t j = tmm_last_in_trigger(an, evict, back);
	     j > o->ev.in_trigger; j--)
		if (held(ts, j) > an->target) {
			o->ev.in_trigger = j;
			break;
		}
	tmm_eviction_span(an, &o->ev, &gone, &returns);
	if (!sliced && (k < gone || k >= returns))
		return -1;
	return (int64_t)swap_cost(ts, k, sliced, o);
}

/* Whether candidate c may be dropped and recomputed (recompute_chain.h). */
static bool may_drop(struct tsplit *ts, const struct tmm_cand *c)
{
	return !ts->no_recompute && tmm_chain_may_drop(&ts->book, c);
}

/* The saving that counts at bottleneck k. */
static double counted(const struct tsplit *ts, uint32_t k, uint64_t saving)
{
	uint64_t over = held(ts, k) - ts->an.target;

	return (double)(saving < over ? saving : over);
}

static struct tmm_split *split_of(struct tsplit *ts, uint32_t first)
{
	for (uint32_t i = 0; i < ts->n_splits; i++)
		if (ts->splits[i].first == first)
			return &ts->splits[i];
	return NULL;
}

/* The saving of split s that the curve is lowered by: none unless its
 * input leaves at the op (a split only to stream its output out). */
static uint64_t credited(const struct tsplit *ts, const struct tmm_split *s)
{
	if (!s || !tmm_split_evicts_input(&ts->an, s, ts->chosen.ev,
					  ts->chosen.n))
		return 0;
	return tmm_split_saving(&ts->an, s);
}

/*
 * Whether candidate c, swapped out at its evict access, can stream out
 * of the op that wrote it (lib/exec/split_stream.c): that access is the
 * op's write of a sliced output made there, of an op that splits (a
 * split pair, so that the split is modelled as step 2's are).  Returns
 * the op's rows, or 0.
 */
static uint32_t streamable(const struct tsplit *ts,
			   const struct tmm_cand *c)
{
	const struct tmm_analysis *an = &ts->an;
	const struct tmm_trace_access *a = &an->trace->accesses[c->evict];
	uint32_t first = an->op_start[c->evict], in, out;

	if (!a->slices || !(a->flags & TMM_TA_WRITE) ||
	    (a->flags & TMM_TA_READ) || an->life[c->tensor].from != first ||
	    !tmm_split_pair(an, first, &in, &out))
		return 0;
	return tmm_trace_op_slices(an->trace, first);
}

/*
 * Step 1's swap of candidate i streamed out of its op, if that is
 * cheaper than *best: from the op as it is split already, for nothing
 * more, or split for it into p parts (2, 4, 8, 16, at most its rows) at
 * p launches, as step 2 prices a split.
 */
static void stream_option(struct tsplit *ts, uint32_t k, uint32_t i,
			  double m, struct option *best)
{
	const struct tmm_analysis *an = &ts->an;
	const struct tmm_cand *c = &ts->cs.c[i];
	uint32_t rows = streamable(ts, c);
	const struct tmm_split *now;

	if (!rows)
		return;
	now = split_of(ts, an->op_start[c->evict]);
	for (uint32_t p = 2; p <= 16 && p <= rows; p *= 2) {
		struct option o = { .cand = i, .new_eviction = true };
		double extra = 0;
		int64_t t;

		if (now && p != now->parts)
			continue;
		if (!now)
			extra = (double)p * (double)an->dev.launch_ns;
		o.stream_parts = p;
		o.stream_new_split = !now;
		t = price_swap(ts, c->tensor, c->evict, c->back, k, false, m,
			       best->ratio, &ts->in_trigger[i], &o);
		if (t >= 0 && ((double)t + extra) / m < best->ratio) {
			o.ratio = ((double)t + extra) / m;
			*best = o;
		}
	}
}

/* Step 1: the cheapest swap or recomputation of a tensor alive across
 * the op of k that the op does not use. */
static void step_one(struct tsplit *ts, uint32_t k, struct option *best)
{
	const struct tmm_analysis *an = &ts->an;

	/* A free option (ratio 0) cannot be beaten, since options replace
	 * the best only when strictly cheaper: the walk stops there with
	 * the same choice it would make after asking every candidate. */
	for (uint32_t i = 0; i < ts->cs.n && best->ratio > 0; i++) {
		struct tmm_cand *c = &ts->cs.c[i];
		uint64_t bytes = an->life[c->tensor].bytes;
		struct option o;
		double m, drop_ns;
		int64_t t;

		if (c->taken || bytes == 0 || an->op_end[c->evict] > k ||
		    c->back <= k || op_uses(an, k, c->tensor))
			continue;
		m = counted(ts, k, bytes);
		/* Read by a chosen recomputation inside the gap, it may
		 * only be dropped: that chain then regenerates it. */
		if (!tmm_chain_needed_within(&ts->book, c->tensor, c->evict,
					     c->back)) {
			o = (struct option){ .cand = i, .new_eviction = true };
			t = price_swap(ts, c->tensor, c->evict, c->back, k,
				       false, m, best->ratio,
				       &ts->in_trigger[i], &o);
			if (t >= 0 && (double)t / m < best->ratio) {
				o.ratio = (double)t / m;
				*best = o;
			}
			stream_option(ts, k, i, m, best);
		}
		if (c->recomputable && !ts->no_recompute &&
		    c->rp_time / m < best->ratio && may_drop(ts, c) &&
		    (drop_ns = tmm_chain_drop_ns(&ts->book, c)) / m <
			    best->ratio) {
			o = (struct option){
				.ratio = drop_ns / m,
				.cand = i, .new_eviction = true,
				.ev = { .tensor = c->tensor, .evict = c->evict,
					.back = c->back, .drop = true },
			};
			*best = o;
		}
	}
}

/* The access of tensor t by the op of `first`, and its next access after
 * the op (TMM_TRACE_NONE: none). */
static void around_op(const struct tmm_analysis *an, uint32_t first,
		      uint32_t t, uint32_t *at, uint32_t *next)
{
	*at = first;
	*next = TMM_TRACE_NONE;
	for (uint32_t j = 0; j < an->life[t].n_acc; j++) {
		uint32_t a = tmm_access_of(an, t, j);

		if (a >= first && a < an->op_end[first])
			*at = a;
		else if (a >= an->op_end[first]) {
			*next = a;
			break;
		}
	}
}

/* Step 2: split the op of k (or split it into more parts), its sliced
 * input leaving slice by slice. */
static void step_two(struct tsplit *ts, uint32_t k, struct option *best)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t first = an->op_start[k], at, next;
	uint32_t rows = tmm_trace_op_slices(an->trace, first);
	struct tmm_split s = { .first = first };
	const struct tmm_split *now = split_of(ts, first);
	uint64_t had = credited(ts, now);
	struct option evict = { .new_eviction = true, .cand = -1 };
	double drop_ns = INFINITY;

	if (!tmm_split_pair(an, first, &s.input, &s.output))
		return;
	around_op(an, first, s.input, &at, &next);
	if (tmm_chain_needed_within(&ts->book, s.input, at,
				    next == TMM_TRACE_NONE ? UINT32_MAX
							   : next))
		return; /* a recomputation reads it there */
	if (tmm_split_evicts_input(an, &s, ts->chosen.ev, ts->chosen.n))
		evict.new_eviction = false; /* paid for already */
	/* The gap's candidate, retired when the split takes it; a
	 * recomputation there, priced as MSPS prices it. */
	for (uint32_t i = 0; evict.new_eviction && next != TMM_TRACE_NONE &&
			     i < ts->cs.n; i++) {
		const struct tmm_cand *c = &ts->cs.c[i];

		if (c->tensor != s.input || c->evict != at || c->back != next)
			continue;
		if (c->taken)
			return; /* chosen for a bottleneck before */
		evict.cand = i;
		if (may_drop(ts, c))
			drop_ns = tmm_chain_drop_ns(&ts->book, c);
		break;
	}
	for (uint32_t p = 2; p <= 16 && p <= rows; p *= 2) {
		uint32_t before = now ? now->parts : 0;
		struct option o = evict;
		uint64_t saving;
		double ratio, evict_ns = 0;

		s.parts = p;
		saving = tmm_split_saving(an, &s);
		/* A split only to stream its output out may take its
		 * input's eviction at the same parts. */
		if (p < before || saving <= had)
			continue;
		if (o.new_eviction) {
			/* Swapped, its copies' wait depends on p. */
			o.parts = p;
			evict_ns = (double)price_swap(ts, s.input, at, next, k,
						      true, 1, INFINITY, NULL,
						      &o);
			if (drop_ns < evict_ns) {
				evict_ns = drop_ns;
				o.ev.drop = true;
			}
		}
		ratio = (evict_ns + (double)((p - before) * an->dev.launch_ns)) /
			counted(ts, k, saving - had);
		if (ratio < best->ratio) {
			*best = o;
			best->ratio = ratio;
			best->split = true;
			best->parts = p;
			best->ev.tensor = s.input;
		}
	}
}

static int add_split(struct tsplit *ts, const struct tmm_split *s,
		     uint64_t had)
{
	struct tmm_split *now = split_of(ts, s->first);
	uint64_t more;

	if (!now) {
		if (ts->n_splits == ts->cap_splits) {
			uint32_t cap = ts->cap_splits ? 2 * ts->cap_splits : 16;
			void *p = tmm_realloc(ts->splits, sizeof(*s) * cap);

			if (!p)
				return -ENOMEM;
			ts->splits = p;
			ts->cap_splits = cap;
		}
		now = &ts->splits[ts->n_splits++];
		*now = *s;
		now->parts = 0;
	}
	if (now->parts < s->parts)
		now->parts = s->parts;
	more = credited(ts, now);
	more = more > had ? more - had : 0;
	for (uint32_t k = s->first; k < ts->an.op_end[s->first]; k++)
		ts->split_saving[k] += more;
	return 0;
}

/* Takes option o at bottleneck k. */
static int take(struct tsplit *ts, uint32_t k, const struct option *o)
{
	const struct tmm_analysis *an = &ts->an;
	uint32_t first = an->op_start[o->split ? k : o->ev.evict];
	uint64_t had = credited(ts, split_of(ts, first));
	int rc = 0;

	if (o->cand >= 0) {
		struct tmm_cand *c = &ts->cs.c[o->cand];

		tmm_cands_retire_gap(&ts->cs, c);
		c->taken = true;
		if (o->ev.drop) {
			rc = tmm_chain_choose(&ts->book, c);
			c->is_recomp = true;
		}
	}
	if (rc == 0 && o->new_eviction && !o->ev.drop) {
		uint64_t bytes = an->life[o->ev.tensor].bytes;

		rc = tmm_copy_engine_take(&ts->d2h, o->d2h_start, o->d2h_ns);
		if (rc == 0 && o->ev.back != TMM_TRACE_NONE)
			rc = tmm_copy_engine_take(&ts->h2d, o->h2d_start,
					 tmm_swap_ns(an, bytes, true));
	}
	if (rc == 0 && o->new_eviction) {
		rc = tmm_chain_note_gap(&ts->book, &o->ev,
					o->ev.drop ? o->cand : -1);
		if (rc == 0)
			rc = tmm_eviction_add(&ts->chosen, o->ev);
		if (rc == 0)
			tmm_fit_add(an, &ts->fit, &o->ev);
	}
	if (rc == 0 && (o->split || o->stream_new_split)) {
		struct tmm_split s = { .first = first,
				       .parts = o->split ? o->parts
							 : o->stream_parts };

		tmm_split_pair(an, s.first, &s.input, &s.output);
		rc = add_split(ts, &s, had);
	}
	return rc;
}

/* Algorithm 2's walk. */
static int walk(struct tsplit *ts)
{
	const struct tmm_analysis *an = &ts->an;

	for (uint32_t k = 0; k < an->trace->n_accesses; k = an->op_end[k]) {
		while (held(ts, k) > an->target) {
			struct option best = { .ratio = INFINITY, .cand = -1 };
			struct option split = best;
			int rc;

			step_one(ts, k, &best);
			step_two(ts, k, &split);
			if (split.ratio < best.ratio)
				best = split;
			if (best.ratio == INFINITY)
				break; /* nothing left lowers this op */
			rc = take(ts, k, &best);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Walks of the curve at most: a walk's chains can raise it again where
 * the next walk lowers it. */
#define TSPLIT_ROUNDS 3

/*
 * Whether the full curve of the evictions chosen, which counts the
 * sources a chain regenerates at its back-access, is over the target
 * where the splits leave it; the running curve becomes that one.
 */
static bool chains_over(struct tsplit *ts)
{
	struct tmm_fit full;
	if (tmm_fit_init(&ts->an, &full, &ts->chosen) < 0)
		return false; /* the plan says so: emit's curve is full */
	tmm_fit_free(&ts->fit);
	ts->fit = full;
	for (uint32_t k = 0; k < ts->an.trace->n_accesses; k++)
		if (held(ts, k) > ts->an.target)
			return true;
	return false;
}

static int plan_once(const struct tmm_planner_input *in, bool no_recompute,
		     struct tmm_plan *out)
{
	struct tsplit ts = { .no_recompute = no_recompute };
	int rc = tmm_plan_init(out, in->trace, "tsplit");

	if (rc == 0)
		rc = tmm_analysis_init(&ts.an, in);
	if (rc < 0)
		return rc;
	ts.split_saving = tmm_calloc(in->trace->n_accesses + 1,
				      sizeof(uint64_t));
	rc = ts.split_saving ? tmm_chain_book_init(&ts.book, &ts.an,
						   &ts.cs)
			     : -ENOMEM;
	if (rc == 0)
		rc = tmm_liveness(&ts.an, &ts.chosen);
	if (rc == 0)
		rc = tmm_idle_state(&ts.an, &ts.chosen);
	/* Nothing brings these back within the plan: no chain runs through
	 * them. */
	for (uint32_t i = 0; rc == 0 && i < ts.chosen.n; i++)
		rc = tmm_chain_note_gap(&ts.book, &ts.chosen.ev[i], -1);
	if (rc == 0)
		rc = tmm_fit_init(&ts.an, &ts.fit, &ts.chosen);
	if (rc == 0)
		rc = tmm_cands_find(&ts.an, ts.fit.curve, &ts.cs);
	/* TSPLIT recomputes for the backward layers (§V-D). */
	if (rc == 0)
		tmm_cands_backward_only(&ts.an, &ts.cs);
	if (rc == 0) {
		ts.in_trigger = tmm_malloc(sizeof(uint32_t) * (ts.cs.n + 1));
		if (ts.in_trigger)
			memset(ts.in_trigger, 0xff,
			       sizeof(uint32_t) * (ts.cs.n + 1));
		rc = ts.in_trigger ? walk(&ts) : -ENOMEM;
	}
	/* The walk's curve leaves out what a chain regenerates on the way
	 * (tmm_fit_add): where the full curve is over the target there,
	 * the walk goes over it again. */
	for (unsigned round = 1; rc == 0 && !no_recompute &&
				 round < TSPLIT_ROUNDS && chains_over(&ts);
	     round++)
		rc = walk(&ts);
	if (rc == 0)
		rc = tmm_emit_split(&ts.an, ts.chosen.ev, ts.chosen.n,
				    ts.splits, ts.n_splits, out);
	tmm_cands_free(&ts.cs);
	tmm_fit_free(&ts.fit);
	tmm_eviction_set_free(&ts.chosen);
	tmm_analysis_free(&ts.an);
	free(ts.split_saving);
	tmm_chain_book_free(&ts.book);
	free(ts.in_trigger);
	free(ts.splits);
	tmm_copy_engine_free(&ts.d2h);
	tmm_copy_engine_free(&ts.h2d);
	return rc;
}

/*
 * Algorithm 2 with every option, and where that leaves the curve over the
 * budget, again with swaps and splits only (unless in->tsplit_no_retry):
 * a recomputation keeps its chain's checkpoints on the device at its
 * back-access, which can leave a later bottleneck with nothing left to
 * move (the greedy choice does not see it coming).  The plan that fits,
 * or else the lower, is kept.
 */
int tmm_plan_tsplit(const struct tmm_planner_input *in,
		    struct tmm_plan *out)
{
	struct tmm_plan other = { 0 };
	int rc = plan_once(in, false, out);

	/* Over the margin but within the budget (the margin is room for
	 * the pool's holes), the walks' recomputations are cheaper than
	 * the swaps a second try would take instead: ResNet-50 at 30% on
	 * the P100 profile, 2304 against 3279 ms a step (simulated). */
	if (rc < 0 || out->fits || in->tsplit_no_retry ||
	    out->predicted_peak <= in->budget)
		return rc;
	rc = plan_once(in, true, &other);
	if (rc < 0) {
		/* What the failed try made (tmm_plan_init succeeds before
		 * the analysis can fail) is ours to free; *out is the
		 * caller's (policies.c frees it on an error). */
		tmm_plan_free(&other);
		tmm_plan_free(out);
		return rc;
	}
	if (other.fits || other.predicted_peak < out->predicted_peak) {
		tmm_plan_free(out);
		*out = other;
	} else {
		tmm_plan_free(&other);
	}
	return 0;
}
