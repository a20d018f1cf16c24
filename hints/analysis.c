/* SPDX-License-Identifier: MIT */
/*
 * analysis.c — liveness, memory curve, swap and recomputation costs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "lib/base/pool_align.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"
#include "read_mostly.h"

/*
 * Plans aim below the budget by this fraction of it.  The curve counts
 * bytes, but each allocation needs a contiguous hole: the pool moves
 * tensors to make one (lib/mem/compact.c), but not past tensors that the
 * running op pins.  12% is what the example programs needed to see no
 * passive eviction in any guided iteration of a plan that fits, over
 * budgets from 40% to 90% of their peak (test_policies_e2e); 8% was not
 * enough for the GPT at 50%.  With tensors a large part of the budget the
 * margin grows (tmm_analysis_init), except for the planners that take
 * tmm_analysis_one_margin.
 */
#define TARGET_MARGIN 0.12

static uint64_t aligned(uint64_t bytes)
{
	return (bytes + TMM_POOL_ALIGN - 1) / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
}

uint64_t tmm_access_begin(const struct tmm_analysis *an, uint32_t k)
{
	return an->trace->accesses[k].begin_ns;
}

uint64_t tmm_access_end(const struct tmm_analysis *an, uint32_t k)
{
	return an->trace->accesses[k].end_ns;
}

/* A tensor's accesses are in order: the gap is found by bisection (a
 * DenseNet feature map is read by every later layer of its block). */
void tmm_accesses_around(const struct tmm_analysis *an, uint32_t t,
			 uint32_t at, uint32_t *before, uint32_t *after)
{
	uint32_t lo = 0, hi = an->life[t].n_acc;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tmm_access_of(an, t, mid) < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	*before = lo ? tmm_access_of(an, t, lo - 1) : TMM_TRACE_NONE;
	*after = lo < an->life[t].n_acc ? tmm_access_of(an, t, lo)
					: TMM_TRACE_NONE;
}

bool tmm_op_is_backward(const struct tmm_trace *t, uint32_t op)
{
	return op < t->n_ops && (t->ops[op].flags & TMM_OP_BACKWARD);
}

bool tmm_made_fresh(const struct tmm_analysis *an, uint32_t t)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t first;

	if (tr->tensors[t].flags & TMM_TT_MADE_INSIDE)
		return true;
	if (tr->tensors[t].kind == TMM_PERSISTENT || !an->life[t].n_acc)
		return false;
	first = tmm_access_of(an, t, 0);
	return tr->accesses[first].flags == TMM_TA_WRITE;
}

/* The last access that begins at or before `ns`, not before `lo`. */
static uint32_t last_access_by(const struct tmm_analysis *an, uint32_t lo,
			       uint64_t ns)
{
	uint32_t hi = an->trace->n_accesses;

	/* Access times never decrease: binary search for the first access
	 * beginning after ns. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tmm_access_begin(an, mid) <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* one past it */
}

static int index_accesses(struct tmm_analysis *an)
{
	const struct tmm_trace *t = an->trace;
	uint32_t *fill;

	an->acc = tmm_malloc(sizeof(uint32_t) * (t->n_accesses + 1));
	fill = tmm_calloc(t->n_tensors + 1, sizeof(uint32_t));
	if (!an->acc || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++)
		an->life[t->accesses[k].tensor].n_acc++;
	for (uint32_t i = 0, at = 0; i < t->n_tensors; i++) {
		an->life[i].acc = at;
		at += an->life[i].n_acc;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		uint32_t i = t->accesses[k].tensor;

		an->acc[an->life[i].acc + fill[i]++] = k;
	}
	free(fill);
	return 0;
}

/* The accesses of one op are recorded together, one after another; one
 * made by tmm_acquire (no op) stands alone. */
static void op_bounds(struct tmm_analysis *an)
{
	const struct tmm_trace *t = an->trace;

	for (uint32_t k = 0; k < t->n_accesses;) {
		uint32_t op = t->accesses[k].op, end = k + 1;

		while (op != TMM_TRACE_NONE && end < t->n_accesses &&
		       t->accesses[end].op == op)
			end++;
		for (uint32_t j = k; j < end; j++) {
			an->op_start[j] = k;
			an->op_end[j] = end;
		}
		k = end;
	}
}

/* Where each tensor is counted in the curve (see analysis.h). */
static void lifetimes(struct tmm_analysis *an)
{
	const struct tmm_trace *t = an->trace;
	uint32_t n = t->n_accesses;

	for (uint32_t i = 0; i < t->n_tensors; i++) {
		const struct tmm_trace_tensor *tt = &t->tensors[i];
		struct tmm_life *l = &an->life[i];

		l->bytes = aligned(tt->bytes);
		if (!l->n_acc) {
			l->first = l->last = TMM_TRACE_NONE;
			l->from = 1;
			l->to = 0; /* empty */
			continue;
		}
		l->first = an->acc[l->acc];
		l->last = an->acc[l->acc + l->n_acc - 1];
		l->from = (tt->flags & TMM_TT_MADE_INSIDE)
				  ? an->op_start[l->first]
				  : 0;
		l->to = n - 1;
		if (tt->flags & TMM_TT_FREED_INSIDE) {
			/* Freed some time after its last access: it holds
			 * its memory through the accesses that begin
			 * before the free (one beginning at the free's time
			 * finds the memory returned). */
			uint32_t end = last_access_by(an, l->last,
						      tt->free_ns ? tt->free_ns - 1
								  : 0);

			l->to = end > l->last ? end - 1 : l->last;
			l->to = an->op_end[l->to] - 1;
		}
	}
}

int tmm_analysis_init(struct tmm_analysis *an,
		      const struct tmm_planner_input *in)
{
	const struct tmm_trace *t = in->trace;
	int64_t *diff;

	memset(an, 0, sizeof(*an));
	an->trace = t;
	an->dev = in->device;
	an->budget = in->budget;
	an->offload_idle = in->offload_idle == TMM_OFFLOAD_IDLE_ON;
	an->liveness_discard = in->liveness_discard;
	an->clean_copies = in->clean_copies;
	an->prefetch_after_evictions = in->prefetch_after_evictions;
	an->uvm_copies_serial = in->uvm_copies_serial;
	if (in->moves_compute_share > 0)
		an->copy_compute_share = in->moves_compute_share < 1
						 ? in->moves_compute_share
						 : 1;
	if (in->migrate_d2h_gbps > 0 && in->migrate_h2d_gbps > 0) {
		an->migrate_out_ns_per_byte = 1.0 / in->migrate_d2h_gbps;
		an->migrate_in_ns_per_byte = 1.0 / in->migrate_h2d_gbps;
	}
	an->target = in->budget - (uint64_t)((double)in->budget *
					     TARGET_MARGIN);
	an->life = tmm_calloc(t->n_tensors + 1, sizeof(*an->life));
	an->base = tmm_calloc(t->n_accesses + 1, sizeof(uint64_t));
	an->op_ns = tmm_calloc(t->n_ops + 1, sizeof(uint64_t));
	an->op_start = tmm_malloc(sizeof(uint32_t) * (t->n_accesses + 1));
	an->op_end = tmm_malloc(sizeof(uint32_t) * (t->n_accesses + 1));
	if (in->read_mostly_frozen) {
		an->frozen = tmm_calloc(t->n_tensors + 1, sizeof(bool));
		if (!an->frozen)
			goto nomem;
		tmm_frozen_tensors(t, an->frozen);
	}
	if (!an->life || !an->base || !an->op_ns || !an->op_start ||
	    !an->op_end || index_accesses(an) < 0)
		goto nomem;
	op_bounds(an);
	lifetimes(an);
	/* The pool needs a hole for each allocation: where single tensors
	 * are a large part of the budget (VGG-16's 3.6 GiB activations on
	 * 16 GiB), the margin grows to the largest of them, up to a fifth
	 * of the budget. */
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		uint64_t most = in->budget / 5;
		uint64_t b = an->life[i].bytes < most ? an->life[i].bytes : most;

		if ((t->tensors[i].flags & TMM_TT_MADE_INSIDE) &&
		    in->budget - an->target < b)
			an->target = in->budget - b;
	}
	for (uint32_t o = 0; o < t->n_ops; o++)
		an->op_ns[o] = t->ops[o].end_ns > t->ops[o].begin_ns
				       ? t->ops[o].end_ns - t->ops[o].begin_ns
				       : 0;
	diff = tmm_calloc(t->n_accesses + 1, sizeof(int64_t));
	if (!diff)
		goto nomem;
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		const struct tmm_life *l = &an->life[i];

		if (l->from > l->to)
			continue;
		diff[l->from] += (int64_t)l->bytes;
		diff[l->to + 1] -= (int64_t)l->bytes;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		int64_t v = (k ? (int64_t)an->base[k - 1] : 0) + diff[k];

		an->base[k] = (uint64_t)v;
		if (an->base[k] > an->base_peak) {
			an->base_peak = an->base[k];
			an->base_peak_at = k;
		}
	}
	free(diff);
	/* An iteration that fits as it is needs no margin: nothing moves,
	 * so nothing fragments. */
	if (an->base_peak <= an->budget)
		an->target = an->budget;
	return 0;

nomem:
	tmm_analysis_free(an);
	return -ENOMEM;
}

void tmm_analysis_one_margin(struct tmm_analysis *an)
{
	an->target = an->base_peak <= an->budget
			     ? an->budget
			     : an->budget - (uint64_t)((double)an->budget *
						       TARGET_MARGIN);
}

void tmm_analysis_free(struct tmm_analysis *an)
{
	free(an->life);
	free(an->acc);
	free(an->base);
	free(an->op_ns);
	free(an->op_start);
	free(an->op_end);
	free(an->frozen);
	memset(an, 0, sizeof(*an));
}

bool tmm_leaves_free(const struct tmm_analysis *an, uint32_t t,
		     uint32_t back)
{
	return an->liveness_discard && back == TMM_TRACE_NONE &&
	       tmm_trace_dead_after_last(&an->trace->tensors[t]);
}

uint64_t tmm_swap_ns(const struct tmm_analysis *an, uint64_t bytes,
		     bool to_device)
{
	double gbps = to_device ? an->dev.h2d_gbps : an->dev.d2h_gbps;

	/* GB/s is bytes per ns. */
	if (gbps <= 0)
		gbps = 1;
	return an->dev.copy_latency_ns + (uint64_t)((double)bytes / gbps);
}

int64_t tmm_free_time(const struct tmm_analysis *an, uint32_t t,
		      uint32_t evict, uint32_t back)
{
	uint64_t bytes = an->life[t].bytes;
	int64_t out_end = (int64_t)(tmm_access_end(an, evict) +
				    tmm_swap_ns(an, bytes, false));
	int64_t in_start = (int64_t)tmm_access_begin(an, back) -
			   (int64_t)tmm_swap_ns(an, bytes, true);

	return in_start - out_end;
}

uint32_t tmm_in_trigger(const struct tmm_analysis *an, uint32_t t,
			uint32_t evict, uint32_t back)
{
	uint64_t in_ns = tmm_swap_ns(an, an->life[t].bytes, true);
	uint64_t back_ns = tmm_access_begin(an, back);
	uint32_t past;

	if (back_ns < in_ns)
		return evict;
	/* The prefetch fires after its trigger's op: the trigger must
	 * *end* a swap time before the back-access. */
	past = last_access_by(an, evict, back_ns - in_ns);
	while (past > evict + 1 &&
	       tmm_access_end(an, past - 1) > back_ns - in_ns)
		past--;
	return past > evict + 1 ? past - 1 : evict;
}

uint64_t tmm_swap_overhead(const struct tmm_analysis *an, uint32_t t,
			   uint32_t evict, uint32_t in_trigger,
			   uint32_t back)
{
	uint64_t bytes = an->life[t].bytes;
	uint64_t out_done = tmm_access_end(an, evict) +
			    tmm_swap_ns(an, bytes, false);
	uint64_t start = tmm_access_end(an, in_trigger);
	uint64_t arrive, back_ns = tmm_access_begin(an, back);

	/* The copy engines are separate, but the tensor cannot come back
	 * before it has left. */
	if (start < out_done)
		start = out_done;
	arrive = start + tmm_swap_ns(an, bytes, true);
	return arrive > back_ns ? arrive - back_ns : 0;
}

void tmm_eviction_span(const struct tmm_analysis *an,
		       const struct tmm_eviction *e, uint32_t *gone,
		       uint32_t *returns)
{
	/* A swap-out's memory is freed when its copy completes, but an
	 * allocation that finds no room waits for the earliest pending
	 * copy rather than evicting (Capuchin §5.3's decoupled swap): for
	 * what fits, it leaves at once; the wait is a stall, counted by
	 * tmm_swap_overhead. */
	/* Actions fire once their trigger's op is done; a recomputation
	 * or an on-demand swap-in happens before the back-access's op.
	 * Out since before the iteration (across-iteration): from its
	 * start. */
	*gone = e->evict == TMM_TRACE_NONE ? 0 : an->op_end[e->evict];
	if (e->drop)
		*returns = an->op_start[e->back];
	else if (e->back == TMM_TRACE_NONE)
		*returns = an->life[e->tensor].to + 1;
	else /* by back's op at the latest: on demand (tmm_last_in_trigger) */
		*returns = e->in_trigger < e->back &&
				   an->op_end[e->in_trigger] >
					   an->op_start[e->back]
			   ? an->op_start[e->back]
			   : an->op_end[e->in_trigger];
	if (*gone > *returns)
		*gone = *returns;
}

/* The access that wrote trace tensor t last at or before access `at`. */
static uint32_t writer_before(const struct tmm_analysis *an, uint32_t t,
			      uint32_t at)
{
	uint32_t w = TMM_TRACE_NONE;

	for (uint32_t k = 0; k < an->life[t].n_acc; k++) {
		uint32_t a = tmm_access_of(an, t, k);

		if (a > at)
			break;
		if (an->trace->accesses[a].flags & TMM_TA_WRITE)
			w = a;
	}
	return w;
}

/* tmm_plan_droppable (lib/io/plan.h), the writer found among t's own
 * accesses: the plan's check scans the whole trace back from `after`,
 * thousands of accesses for an activation read in the backward pass,
 * and the planners ask it for every candidate (issue #22: 3.7% of auto's
 * instructions). */
static enum tmm_drop_verdict drop_verdict(const struct tmm_analysis *an,
					  uint32_t t, uint32_t after,
					  uint32_t *writer)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_trace_access *w;

	*writer = writer_before(an, t, after);
	if (*writer == TMM_TRACE_NONE)
		return TMM_DROP_NO_PRODUCER;
	w = &tr->accesses[*writer];
	if (w->op == TMM_TRACE_NONE)
		return TMM_DROP_NO_PRODUCER;
	if (!(tr->ops[w->op].flags & TMM_OP_PURE))
		return TMM_DROP_NOT_PURE;
	if (w->flags & TMM_TA_READ)
		return TMM_DROP_IN_PLACE;
	return TMM_DROP_OK;
}

uint32_t tmm_producer_op(const struct tmm_analysis *an, uint32_t t,
			 uint32_t at)
{
	uint32_t w = writer_before(an, t, at);

	return w == TMM_TRACE_NONE ? TMM_TRACE_NONE : an->trace->accesses[w].op;
}

/*
 * Can tensor x, freed by the program before access `back`, still be had
 * there?  The runtime keeps a freed source of a dropped tensor as a
 * ghost when it can be recomputed itself (lib/exec/recompute.c): made in the
 * iteration by a pure op that did not update it in place, from sources
 * that are alive at `back` or are such ghosts in turn.
 */
static bool ghostable(const struct tmm_analysis *an, uint32_t x,
		      uint32_t back, unsigned depth)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_trace_op *o;
	uint32_t writer;

	if (depth > 8 || !(tr->tensors[x].flags & TMM_TT_MADE_INSIDE) ||
	    an->life[x].first == TMM_TRACE_NONE ||
	    drop_verdict(an, x, an->life[x].last, &writer) != TMM_DROP_OK ||
	    tr->accesses[writer].op >= tr->n_ops)
		return false;
	o = &tr->ops[tr->accesses[writer].op];
	for (uint32_t i = 0; i < o->n_inputs; i++) {
		uint32_t y = tr->op_tensors[o->first + i];
		uint32_t wy = writer_before(an, y, back);

		if (wy != TMM_TRACE_NONE && wy > writer)
			return false;
		if (an->life[y].to < back && !ghostable(an, y, back, depth + 1))
			return false;
	}
	return true;
}

bool tmm_recomputable(const struct tmm_analysis *an, uint32_t t,
		      uint32_t evict, uint32_t back, uint32_t *op)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_trace_op *o;
	uint32_t writer, opi;

	if (drop_verdict(an, t, evict, &writer) != TMM_DROP_OK)
		return false;
	opi = tr->accesses[writer].op;
	if (opi >= tr->n_ops)
		return false;
	o = &tr->ops[opi];
	for (uint32_t i = 0; i < o->n_inputs; i++) {
		uint32_t x = tr->op_tensors[o->first + i];

		/* Freed before the back-access, it must be a ghost there. */
		if (an->life[x].to < back && !ghostable(an, x, back, 1))
			return false;
		/* Rewritten before it: the runtime would recompute t then. */
		uint32_t wx = writer_before(an, x, back);

		if (wx != TMM_TRACE_NONE && wx > writer)
			return false;
	}
	if (op)
		*op = opi;
	return true;
}

/* Per tensor, the evictions of it: a chain through next[]. */
struct by_tensor {
	uint32_t *head, *next;
	uint32_t *gone, *ret;
};

/*
 * A dropped tensor's recomputation at access `at` needs its producer's
 * inputs there.  A swapped-out input comes back at `at` and stays; a
 * dropped one is recomputed first (and so are its own inputs), but only
 * for the op at `at`: what a recomputation regenerates on the way is the
 * first thing the runtime drops again when memory runs short (collective
 * recomputation, recompute.c), so it is counted as a spike, in diff.
 */
static void pull_sources(const struct tmm_analysis *an,
			 const struct tmm_eviction *ev, struct by_tensor *bt,
			 int64_t *diff, uint32_t i, uint32_t at,
			 unsigned depth)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t w = writer_before(an, ev[i].tensor, ev[i].evict);
	const struct tmm_trace_op *o;

	if (w == TMM_TRACE_NONE || depth > 64)
		return;
	if (tr->accesses[w].op >= tr->n_ops)
		return;
	o = &tr->ops[tr->accesses[w].op];
	for (uint32_t k = 0; k < o->n_inputs; k++) {
		uint32_t x = tr->op_tensors[o->first + k];

		for (uint32_t j = bt->head[x]; j != TMM_TRACE_NONE;
		     j = bt->next[j]) {
			if (bt->gone[j] > at || bt->ret[j] <= at)
				continue;
			if (!ev[j].drop) {
				bt->ret[j] = at;
				continue;
			}
			diff[at] += (int64_t)an->life[x].bytes;
			diff[an->op_end[at]] -= (int64_t)an->life[x].bytes;
			pull_sources(an, ev, bt, diff, j, at, depth + 1);
		}
	}
}

uint64_t tmm_curve(const struct tmm_analysis *an,
		   const struct tmm_eviction *ev, uint32_t n, uint64_t *curve,
		   uint32_t *peak_at)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t na = tr->n_accesses;
	struct by_tensor bt = { 0 };
	int64_t *diff = NULL;
	uint64_t peak = 0;
	uint32_t at = 0;

	memcpy(curve, an->base, sizeof(uint64_t) * na);
	if (n) {
		bt.head = tmm_malloc(sizeof(uint32_t) * tr->n_tensors);
		bt.next = tmm_malloc(sizeof(uint32_t) * n);
		bt.gone = tmm_malloc(sizeof(uint32_t) * n);
		bt.ret = tmm_malloc(sizeof(uint32_t) * n);
		diff = tmm_calloc(na + 1, sizeof(int64_t));
	}
	if (n && (!bt.head || !bt.next || !bt.gone || !bt.ret || !diff)) {
		/* Without memory for the adjustment, report the curve
		 * without evictions: pessimistic, never optimistic. */
		n = 0;
	}
	if (n) {
		memset(bt.head, 0xff, sizeof(uint32_t) * tr->n_tensors);
		for (uint32_t i = 0; i < n; i++) {
			tmm_eviction_span(an, &ev[i], &bt.gone[i], &bt.ret[i]);
			bt.next[i] = bt.head[ev[i].tensor];
			bt.head[ev[i].tensor] = i;
		}
		for (uint32_t i = 0; i < n; i++)
			if (ev[i].drop)
				pull_sources(an, ev, &bt, diff, i,
					     an->op_start[ev[i].back], 0);
		for (uint32_t i = 0; i < n; i++) {
			if (bt.gone[i] >= bt.ret[i])
				continue;
			diff[bt.gone[i]] -= (int64_t)an->life[ev[i].tensor].bytes;
			diff[bt.ret[i]] += (int64_t)an->life[ev[i].tensor].bytes;
		}
		for (uint32_t k = 0; k < na; k++) {
			if (k)
				diff[k] += diff[k - 1];
			curve[k] = (uint64_t)((int64_t)curve[k] + diff[k]);
		}
	}
	for (uint32_t k = 0; k < na; k++)
		if (curve[k] > peak) {
			peak = curve[k];
			at = k;
		}
	free(bt.head);
	free(bt.next);
	free(bt.gone);
	free(bt.ret);
	free(diff);
	if (peak_at)
		*peak_at = at;
	return peak;
}

int tmm_emit(const struct tmm_analysis *an, const struct tmm_eviction *ev,
	     uint32_t n, struct tmm_plan *plan)
{
	const struct tmm_trace *tr = an->trace;
	uint64_t *curve;
	int rc = 0;

	for (uint32_t i = 0; i < n && rc == 0; i++) {
		uint64_t key = tr->tensors[ev[i].tensor].key;

		/* Out since the iteration began: the previous iteration
		 * swapped it out; only its prefetch is in this one. */
		/* A back-access before the evicted-access is the next
		 * iteration's (a wrap-around): this one does not need the
		 * tensor again. */
		if (ev[i].evict != TMM_TRACE_NONE)
			rc = tmm_plan_add(plan,
					  ev[i].drop ? TMM_ACT_EVICT_DROP
						     : TMM_ACT_EVICT_SWAP,
					  ev[i].evict, key,
					  ev[i].back <= ev[i].evict
						  ? TMM_PLAN_NONE
						  : ev[i].back,
					  0);
		if (rc == 0 && !ev[i].drop && ev[i].back != TMM_TRACE_NONE)
			rc = tmm_plan_add(plan, TMM_ACT_PREFETCH,
					  ev[i].in_trigger, key, ev[i].back, 0);
	}
	if (rc < 0)
		return rc;
	curve = tmm_malloc(sizeof(uint64_t) * (tr->n_accesses + 1));
	if (!curve)
		return -ENOMEM;
	plan->predicted_peak = tmm_curve(an, ev, n, curve, NULL);
	plan->fits = plan->predicted_peak <= an->target;
	free(curve);
	return 0;
}

/* Block b's maximum, from the curve. */
static uint64_t block_max_of(const struct tmm_analysis *an,
			     const uint64_t *curve, uint32_t b)
{
	uint32_t lo = b * TMM_FIT_BLOCK, hi = lo + TMM_FIT_BLOCK;
	uint64_t m = 0;

	if (hi > an->trace->n_accesses)
		hi = an->trace->n_accesses;
	for (uint32_t k = lo; k < hi; k++)
		m = curve[k] > m ? curve[k] : m;
	return m;
}

/* The whole curve of `set` into fit, and its blocks' maxima. */
static void fit_compute(const struct tmm_analysis *an, struct tmm_fit *fit,
			const struct tmm_eviction_set *set)
{
	tmm_curve(an, set->ev, set->n, fit->curve, NULL);
	for (uint32_t b = 0; b < fit->n_blocks; b++)
		fit->block_max[b] = block_max_of(an, fit->curve, b);
}

int tmm_fit_init(const struct tmm_analysis *an, struct tmm_fit *fit,
		 const struct tmm_eviction_set *set)
{
	uint32_t na = an->trace->n_accesses;

	fit->n_blocks = (na + TMM_FIT_BLOCK - 1) / TMM_FIT_BLOCK;
	fit->curve = tmm_malloc(sizeof(uint64_t) * (na + 1));
	fit->block_max = tmm_malloc(sizeof(uint64_t) * (fit->n_blocks + 1));
	if (!fit->curve || !fit->block_max) {
		tmm_fit_free(fit);
		return -ENOMEM;
	}
	fit_compute(an, fit, set);
	return 0;
}

/* A whole block less `bytes`: a loop of a fixed count, which the compiler
 * turns into vector subtractions at -O2 (a loop of unknown count it does
 * not). */
static void block_less(uint64_t *curve, uint64_t bytes)
{
	for (uint32_t j = 0; j < TMM_FIT_BLOCK; j++)
		curve[j] -= bytes;
}

void tmm_fit_add(const struct tmm_analysis *an, struct tmm_fit *fit,
		 const struct tmm_eviction *e)
{
	uint64_t bytes = an->life[e->tensor].bytes;
	uint64_t *curve = fit->curve;
	uint32_t gone, returns;

	tmm_eviction_span(an, e, &gone, &returns);
	for (uint32_t k = gone; k < returns;) {
		uint32_t b = k / TMM_FIT_BLOCK, lo = b * TMM_FIT_BLOCK;
		uint32_t hi = lo + TMM_FIT_BLOCK;

		if (k == lo && hi <= returns) {
			/* Every access of the block loses the same bytes,
			 * so its maximum does. */
			block_less(curve + lo, bytes);
			fit->block_max[b] -= bytes;
		} else {
			hi = hi < returns ? hi : returns;
			for (uint32_t j = k; j < hi; j++)
				curve[j] -= bytes;
			fit->block_max[b] = block_max_of(an, curve, b);
		}
		k = hi;
	}
}

bool tmm_fit_over(const struct tmm_analysis *an, const struct tmm_fit *fit)
{
	for (uint32_t b = 0; b < fit->n_blocks; b++)
		if (fit->block_max[b] > an->target)
			return true;
	return false;
}

bool tmm_fit_check(const struct tmm_analysis *an, struct tmm_fit *fit,
		   const struct tmm_eviction_set *set)
{
	if (tmm_fit_over(an, fit))
		return false;
	fit_compute(an, fit, set);
	return !tmm_fit_over(an, fit);
}

void tmm_fit_free(struct tmm_fit *fit)
{
	free(fit->curve);
	free(fit->block_max);
	fit->curve = NULL;
	fit->block_max = NULL;
}

int tmm_liveness(const struct tmm_analysis *an,
		 struct tmm_eviction_set *set)
{
	const struct tmm_trace *tr = an->trace;

	for (uint32_t t = 0; t < tr->n_tensors; t++) {
		const struct tmm_life *l = &an->life[t];
		struct tmm_eviction e = { .tensor = t, .evict = l->last,
					  .back = TMM_TRACE_NONE };
		uint32_t gone, returns;
		bool over = false;

		uint64_t idle_until;

		if (l->first == TMM_TRACE_NONE || l->to <= l->last ||
		    !(tr->tensors[t].flags & TMM_TT_MADE_INSIDE))
			continue;
		/* Worth a copy only when the program keeps the tensor
		 * idle for longer than the copy takes: a free that comes
		 * sooner gives the memory back without one. */
		idle_until = (tr->tensors[t].flags & TMM_TT_FREED_INSIDE)
				     ? tr->tensors[t].free_ns
				     : tmm_access_end(an, tr->n_accesses - 1);
		if (idle_until < tmm_access_end(an, l->last) +
					 2 * tmm_swap_ns(an, l->bytes, false))
			continue;
		tmm_eviction_span(an, &e, &gone, &returns);
		for (uint32_t k = gone; k < returns && !over; k++)
			over = an->base[k] > an->target;
		if (over && tmm_eviction_add(set, e) < 0)
			return -ENOMEM;
	}
	return 0;
}

int tmm_eviction_add(struct tmm_eviction_set *s, struct tmm_eviction e)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 64;
		void *p = tmm_realloc(s->ev, sizeof(*s->ev) * cap);

		if (!p)
			return -ENOMEM;
		s->ev = p;
		s->cap = cap;
	}
	s->ev[s->n++] = e;
	return 0;
}

void tmm_eviction_set_free(struct tmm_eviction_set *s)
{
	free(s->ev);
	memset(s, 0, sizeof(*s));
}
