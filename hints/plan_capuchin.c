/*
 * plan_capuchin.c — Capuchin's hybrid policy (ASPLOS '20, §4.3–4.5).
 *
 * Algorithm 1: eviction candidates are tensors accessed more than once
 * whose gap between two consecutive accesses lies in the peak period;
 * they are ranked by free time FT.  Swaps are taken from the top while an
 * in-trigger can hide the prefetch entirely; after that each step compares
 * the overhead of the next swap with that of the best recomputation and
 * takes the smaller.  Algorithm 2 chooses recomputations by memory saving
 * per second (MSPS), updating the candidates' recomputation sources and
 * times as each choice changes what is available.
 *
 * Choices where the paper is silent, and ours:
 * - The required saving: the paper takes it from passive mode's evicted
 *   bytes (a scalar).  We have the whole memory curve, so we stop as soon
 *   as the curve under the chosen evictions is within the target at every
 *   access, and we skip a candidate whose gap holds no over-target access
 *   any more (its saving would not lower the peak).
 * - Candidates are (tensor, gap) pairs: a tensor accessed four times may be
 *   evicted in several of its gaps, each ranked by its own FT.
 * - In-trigger: the paper's reverse walk from the back-access (§4.4), then
 *   moved later while bringing the tensor back early would push the curve
 *   over the target ("not within the peak period").
 * - Recomputation time is the producer's measured duration; the sources of
 *   a recomputation are its producer's inputs, replaced by their own
 *   sources when they are themselves chosen for recomputation (lines 7-9
 *   and 18-20 of Algorithm 2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "planners.h"

/* One candidate: tensor `tensor` out of memory between two accesses. */
struct cand {
	uint32_t tensor, evict, back;
	int64_t ft;
	bool taken;
	bool no_swap;	       /* a swap of it would not lower the peak */
	/* Recomputation (Algorithm 2), when recomputable: */
	bool recomputable;
	uint32_t op;	       /* its producer */
	uint32_t *srcs, n_srcs, cap_srcs; /* tensors it is recomputed from */
	double rp_time, ext_time;
	bool is_recomp;	       /* chosen for recomputation */
};

struct capuchin {
	struct tmm_analysis an;
	struct cand *c;
	uint32_t n;
	struct tmm_eviction_set chosen;
	struct tmm_fit fit;	/* the curve under `chosen` */
};

static int src_add(struct cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t)
			return 0;
	if (c->n_srcs == c->cap_srcs) {
		uint32_t cap = c->cap_srcs ? 2 * c->cap_srcs : 4;
		void *p = realloc(c->srcs, sizeof(uint32_t) * cap);

		if (!p)
			return -ENOMEM;
		c->srcs = p;
		c->cap_srcs = cap;
	}
	c->srcs[c->n_srcs++] = t;
	return 0;
}

static bool src_has(const struct cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t)
			return true;
	return false;
}

static void src_remove(struct cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t) {
			c->srcs[i] = c->srcs[--c->n_srcs];
			return;
		}
}

/* Replaces t in c's sources by t's own sources. */
static int src_expand(struct cand *c, const struct cand *t)
{
	src_remove(c, t->tensor);
	for (uint32_t i = 0; i < t->n_srcs; i++)
		if (src_add(c, t->srcs[i]) < 0)
			return -ENOMEM;
	return 0;
}

static double msps(const struct capuchin *cp, const struct cand *c)
{
	double t = c->rp_time + c->ext_time;

	return (double)cp->an.life[c->tensor].bytes / (t > 1 ? t : 1);
}

/* Does the gap [gone, returns) hold an access over the target? */
static bool lowers_peak(const struct capuchin *cp, uint32_t gone,
			uint32_t returns)
{
	for (uint32_t k = gone; k < returns; k++)
		if (cp->fit.curve[k] > cp->an.target)
			return true;
	return false;
}

static int cmp_ft(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->ft != y->ft)
		return x->ft > y->ft ? -1 : 1;
	return x->evict < y->evict ? -1 : x->evict > y->evict;
}

/* Algorithm 1, line 1: IdentifyAndSortCandidates. */
static int find_candidates(struct capuchin *cp)
{
	const struct tmm_analysis *an = &cp->an;
	const struct tmm_trace *tr = an->trace;
	uint32_t cap = 0;

	for (uint32_t t = 0; t < tr->n_tensors; t++) {
		const struct tmm_life *l = &an->life[t];

		for (uint32_t k = 0; k + 1 < l->n_acc; k++) {
			uint32_t e = tmm_access_of(an, t, k);
			uint32_t b = tmm_access_of(an, t, k + 1);
			struct cand *c;

			/* Two accesses by one op are one use. */
			if (b == e + 1 || tr->accesses[e].op ==
						  tr->accesses[b].op)
				continue;
			if (!lowers_peak(cp, e + 1, b))
				continue;
			if (cp->n == cap) {
				void *p;

				cap = cap ? 2 * cap : 256;
				p = realloc(cp->c, sizeof(*cp->c) * cap);
				if (!p)
					return -ENOMEM;
				cp->c = p;
			}
			c = &cp->c[cp->n++];
			memset(c, 0, sizeof(*c));
			c->tensor = t;
			c->evict = e;
			c->back = b;
			c->ft = tmm_free_time(an, t, e, b);
			c->recomputable = tmm_recomputable(an, t, e, b,
							   &c->op);
		}
	}
	qsort(cp->c, cp->n, sizeof(*cp->c), cmp_ft);
	return 0;
}

/*
 * The sources of recomputing with op `o` for access `back`: its inputs,
 * except that an input the program has freed by then is recomputed too
 * (a ghost), from its own inputs, at the cost of its producer (§4.4:
 * "T4's re-computation will start from T2").
 */
static int add_sources(struct capuchin *cp, struct cand *c, uint32_t o,
		       unsigned depth)
{
	const struct tmm_analysis *an = &cp->an;
	const struct tmm_trace *tr = an->trace;
	const struct tmm_trace_op *op = &tr->ops[o];

	c->rp_time += (double)an->op_ns[o];
	for (uint32_t k = 0; k < op->n_inputs; k++) {
		uint32_t x = tr->op_tensors[op->first + k];
		uint32_t p;

		if (an->life[x].to >= c->back || depth > 8) {
			if (src_add(c, x) < 0)
				return -ENOMEM;
			continue;
		}
		p = tmm_producer_op(an, x, an->life[x].last);
		if (p == TMM_TRACE_NONE || add_sources(cp, c, p, depth + 1) < 0)
			return p == TMM_TRACE_NONE ? src_add(c, x) : -ENOMEM;
	}
	return 0;
}

/* Algorithm 2, line 1: InitMSPS. */
static int init_msps(struct capuchin *cp)
{
	for (uint32_t i = 0; i < cp->n; i++) {
		struct cand *c = &cp->c[i];

		if (c->recomputable && add_sources(cp, c, c->op, 0) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Takes an eviction into the plan and updates the curve. */
static int take(struct capuchin *cp, struct tmm_eviction e)
{
	int rc = tmm_eviction_add(&cp->chosen, e);

	if (rc == 0)
		tmm_fit_add(&cp->an, &cp->fit, &e);
	return rc;
}

/* The best swap still worth taking, with its in-trigger and overhead;
 * -1 when none is left. */
static int64_t next_swap(struct capuchin *cp, uint32_t *trigger,
			 uint64_t *overhead)
{
	const struct tmm_analysis *an = &cp->an;

	for (uint32_t i = 0; i < cp->n; i++) {
		struct cand *c = &cp->c[i];
		struct tmm_eviction e = { .tensor = c->tensor,
					  .evict = c->evict,
					  .back = c->back };
		uint32_t gone, returns;
		uint64_t bytes = an->life[c->tensor].bytes;

		if (c->taken || c->no_swap)
			continue;
		e.in_trigger = tmm_in_trigger(an, c->tensor, c->evict,
					      c->back);
		/* Not within the peak: bring it back no earlier than the
		 * curve has room for it, that is after the last access
		 * before the back-access that has none. */
		for (uint32_t k = c->back - 1; k > e.in_trigger; k--)
			if (cp->fit.curve[k] + bytes > an->target) {
				e.in_trigger = k;
				break;
			}
		tmm_eviction_span(an, &e, &gone, &returns);
		if (!lowers_peak(cp, gone, returns)) {
			/* Its copy would not be done in time to help, or
			 * the peak has gone: recomputation may still do. */
			c->no_swap = true;
			continue;
		}
		*trigger = e.in_trigger;
		*overhead = tmm_swap_overhead(an, c->tensor, c->evict,
					      e.in_trigger, c->back);
		return i;
	}
	return -1;
}

/* The recomputation candidate of largest MSPS still worth taking. */
static int64_t max_msps(struct capuchin *cp)
{
	int64_t best = -1;
	double best_v = 0;

	for (uint32_t i = 0; i < cp->n; i++) {
		struct cand *c = &cp->c[i];
		double v;

		if (c->taken || !c->recomputable)
			continue;
		if (!lowers_peak(cp, c->evict + 1, c->back)) {
			c->taken = true;
			continue;
		}
		v = msps(cp, c);
		if (best < 0 || v > best_v) {
			best = i;
			best_v = v;
		}
	}
	return best;
}

/* Algorithm 2, lines 5-34: t is chosen for recomputation. */
static int choose_recompute(struct capuchin *cp, struct cand *t)
{
	double ext_ct = 1;

	for (uint32_t i = 0; i < cp->n; i++) {
		struct cand *rp = &cp->c[i];

		if (rp->is_recomp && src_has(rp, t->tensor)) {
			if (src_expand(rp, t) < 0)
				return -ENOMEM;
			ext_ct += 1;
		}
	}
	t->is_recomp = true;
	t->taken = true;
	for (uint32_t i = 0; i < cp->n; i++) {
		struct cand *cand = &cp->c[i];

		if (cand->taken || !cand->recomputable)
			continue;
		if (src_has(cand, t->tensor)) {
			if (src_expand(cand, t) < 0)
				return -ENOMEM;
			cand->rp_time += t->rp_time;
			cand->ext_time = 0;
			for (uint32_t j = 0; j < cp->n; j++)
				if (cp->c[j].is_recomp &&
				    src_has(&cp->c[j], cand->tensor))
					cand->ext_time += cand->rp_time;
		}
		if (src_has(t, cand->tensor))
			cand->ext_time = ext_ct * cand->rp_time;
	}
	return take(cp, (struct tmm_eviction){ .tensor = t->tensor,
					       .evict = t->evict,
					       .back = t->back,
					       .drop = true });
}

/* Once a gap of a tensor is taken, its other candidates for that gap
 * go. */
static void retire_gap(struct capuchin *cp, const struct cand *c)
{
	for (uint32_t i = 0; i < cp->n; i++)
		if (cp->c[i].tensor == c->tensor && cp->c[i].evict == c->evict)
			cp->c[i].taken = true;
}

/* Algorithm 1's loop. */
static int hybrid(struct capuchin *cp)
{
	while (!tmm_fit_check(&cp->an, &cp->fit, &cp->chosen)) {
		uint32_t trigger = 0;
		uint64_t s_over = 0;
		int64_t s = next_swap(cp, &trigger, &s_over);
		int64_t r = -1;
		int rc;

		if (s >= 0 && s_over > 0)
			r = max_msps(cp);
		if (s < 0)
			r = max_msps(cp);
		if (s < 0 && r < 0)
			break; /* nothing left: the plan will not fit */
		if (r < 0 || (s >= 0 && (double)s_over <=
						cp->c[r].rp_time +
							cp->c[r].ext_time)) {
			struct cand *c = &cp->c[s];

			retire_gap(cp, c);
			rc = take(cp, (struct tmm_eviction){
					      .tensor = c->tensor,
					      .evict = c->evict,
					      .back = c->back,
					      .in_trigger = trigger });
		} else {
			struct cand *c = &cp->c[r];

			retire_gap(cp, c);
			rc = choose_recompute(cp, c);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tmm_plan_capuchin(const struct tmm_planner_input *in,
		      struct tmm_plan *out)
{
	struct capuchin cp = { 0 };
	int rc = tmm_plan_init(out, in->trace, "capuchin");

	if (rc == 0)
		rc = tmm_analysis_init(&cp.an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&cp.an, &cp.chosen);
	if (rc == 0)
		rc = tmm_fit_init(&cp.an, &cp.fit, &cp.chosen);
	if (rc < 0)
		goto out;
	rc = find_candidates(&cp);
	if (rc == 0)
		rc = init_msps(&cp);
	if (rc == 0)
		rc = hybrid(&cp);
	if (rc == 0)
		rc = tmm_emit(&cp.an, cp.chosen.ev, cp.chosen.n, out);
out:
	for (uint32_t i = 0; i < cp.n; i++)
		free(cp.c[i].srcs);
	free(cp.c);
	tmm_fit_free(&cp.fit);
	tmm_eviction_set_free(&cp.chosen);
	tmm_analysis_free(&cp.an);
	return rc;
}
