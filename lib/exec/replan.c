/* SPDX-License-Identifier: MIT */
/*
 * replan.c — EWMA of op latencies and the retimed trace (see replan.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replan.h"
#include "lib/base/xalloc.h"

struct tmm_replan {
	double *avg;	   /* per op: smoothed latency, ns */
	uint32_t n_ops;
	double base_sum;   /* s: the sum the plan was made with */
	double last_drift; /* |s' - s| / s at the last observation */
};

static uint64_t op_ns(const struct tmm_trace_op *o)
{
	return o->end_ns > o->begin_ns ? o->end_ns - o->begin_ns : 0;
}

static double avg_sum(const struct tmm_replan *rp)
{
	double s = 0;

	for (uint32_t o = 0; o < rp->n_ops; o++)
		s += rp->avg[o];
	return s;
}

int tmm_replan_create(struct tmm_replan **rp)
{
	*rp = tmm_calloc(1, sizeof(**rp));
	return *rp ? 0 : -ENOMEM;
}

void tmm_replan_destroy(struct tmm_replan *rp)
{
	if (!rp)
		return;
	free(rp->avg);
	free(rp);
}

int tmm_replan_reset(struct tmm_replan *rp, const struct tmm_trace *t)
{
	double *avg = tmm_realloc(rp->avg, sizeof(double) * (t->n_ops + 1));

	if (!avg)
		return -ENOMEM;
	rp->avg = avg;
	rp->n_ops = t->n_ops;
	for (uint32_t o = 0; o < t->n_ops; o++)
		avg[o] = (double)op_ns(&t->ops[o]);
	rp->base_sum = avg_sum(rp);
	rp->last_drift = 0;
	return 0;
}

bool tmm_replan_observe(struct tmm_replan *rp, const struct tmm_trace *cur,
			double drift)
{
	double s;

	if (!rp->avg || cur->n_ops != rp->n_ops) {
		/* Without memory for a fresh average, keep the old one:
		 * re-planning is an optimisation. */
		(void)tmm_replan_reset(rp, cur);
		return false;
	}
	/* An op the plan split takes longer by its micro-ops' launches:
	 * the plan's doing, not a drift to re-plan for. */
	for (uint32_t o = 0; o < rp->n_ops; o++)
		if (!(cur->ops[o].flags & TMM_TRACE_OP_SPLIT))
			rp->avg[o] = TMM_REPLAN_EWMA_ALPHA *
					     (double)op_ns(&cur->ops[o]) +
				     (1 - TMM_REPLAN_EWMA_ALPHA) * rp->avg[o];
	s = avg_sum(rp);
	rp->last_drift = rp->base_sum > 0 ? fabs(s - rp->base_sum) /
						    rp->base_sum
					  : 0;
	return drift > 0 && rp->last_drift > drift;
}

double tmm_replan_drift(const struct tmm_replan *rp)
{
	return rp->last_drift;
}

void tmm_replan_planned(struct tmm_replan *rp)
{
	rp->base_sum = avg_sum(rp);
	rp->last_drift = 0;
}

/* Old and new times of the ops, for moving the other times with them. */
struct retime {
	const struct tmm_trace *base;
	const uint64_t *nb, *ne; /* new begin and end per op */
};

/* Time x of the base trace on the new timeline: inside an op it scales
 * with the op; after it, it keeps its distance from the op's end. */
static uint64_t map_time(const struct retime *r, uint64_t x)
{
	const struct tmm_trace_op *ops = r->base->ops;
	uint32_t lo = 0, hi = r->base->n_ops;
	uint64_t ob, oe;

	/* The last op beginning at or before x (begin times never
	 * decrease). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ops[mid].begin_ns <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return x;
	ob = ops[lo - 1].begin_ns;
	oe = ops[lo - 1].end_ns;
	if (x <= oe)
		return oe > ob ? r->nb[lo - 1] +
					 (uint64_t)((double)(x - ob) *
						    (double)(r->ne[lo - 1] -
							     r->nb[lo - 1]) /
						    (double)(oe - ob))
			       : r->nb[lo - 1];
	return r->ne[lo - 1] + (x - oe);
}

/*
 * base into *out, each op lasting avg[o] (its own duration where avg is
 * NULL), after the host's gap before it less the time it waited for the
 * memory manager (op->stall_ns: copies, faults), which a plan's iteration
 * is not to wait again.  In mode=uvm the measured iteration, in passive
 * mode, faults its tensors in: on the compute-bound MLP of issue #19 its
 * ops were 17-20 ms apart, where a guided step runs them back to back,
 * and plans timed their prefetches by those gaps, late by a whole copy.
 */
static int retime(const struct tmm_trace *base, const double *avg,
		  struct tmm_trace *out)
{
	uint64_t *nb, *ne;
	struct retime r = { .base = base };
	int rc;

	nb = tmm_malloc(sizeof(uint64_t) * (base->n_ops + 1));
	ne = tmm_malloc(sizeof(uint64_t) * (base->n_ops + 1));
	if (!nb || !ne) {
		free(nb);
		free(ne);
		return -ENOMEM;
	}
	for (uint32_t o = 0; o < base->n_ops; o++) {
		const struct tmm_trace_op *op = &base->ops[o];
		uint64_t prev_end = o ? base->ops[o - 1].end_ns : 0;
		uint64_t gap = op->begin_ns > prev_end ? op->begin_ns - prev_end
						       : 0;

		gap = gap > op->stall_ns ? gap - op->stall_ns : 0;
		nb[o] = o == 0 ? gap : ne[o - 1] + gap;
		ne[o] = nb[o] + (avg ? (uint64_t)llround(avg[o])
				     : op_ns(op));
	}
	r.nb = nb;
	r.ne = ne;
	rc = tmm_trace_copy(out, base);
	if (rc == 0) {
		for (uint32_t o = 0; o < out->n_ops; o++) {
			out->ops[o].begin_ns = nb[o];
			out->ops[o].end_ns = ne[o];
		}
		for (uint32_t k = 0; k < out->n_accesses; k++) {
			struct tmm_trace_access *a = &out->accesses[k];

			if (a->op < out->n_ops) {
				a->begin_ns = nb[a->op];
				a->end_ns = ne[a->op];
			} else {
				a->begin_ns = map_time(&r, a->begin_ns);
				a->end_ns = map_time(&r, a->end_ns);
			}
		}
		for (uint32_t i = 0; i < out->n_tensors; i++) {
			struct tmm_trace_tensor *t = &out->tensors[i];

			if (t->alloc_ns)
				t->alloc_ns = map_time(&r, t->alloc_ns);
			if (t->free_ns)
				t->free_ns = map_time(&r, t->free_ns);
		}
	}
	free(nb);
	free(ne);
	return rc;
}

int tmm_replan_trace(const struct tmm_replan *rp,
		     const struct tmm_trace *base, struct tmm_trace *out)
{
	if (base->n_ops != rp->n_ops)
		return -EINVAL;
	return retime(base, rp->avg, out);
}

int tmm_trace_without_stalls(const struct tmm_trace *base,
			     struct tmm_trace *out)
{
	return retime(base, NULL, out);
}
