/* SPDX-License-Identifier: MIT */
/*
 * msps.c — eviction candidates and MSPS recomputation (see msps.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msps.h"
#include "lib/base/xalloc.h"

static int src_add(struct tmm_cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t)
			return 0;
	if (c->n_srcs == c->cap_srcs) {
		uint32_t cap = c->cap_srcs ? 2 * c->cap_srcs : 4;
		void *p = tmm_realloc(c->srcs, sizeof(uint32_t) * cap);

		if (!p)
			return -ENOMEM;
		c->srcs = p;
		c->cap_srcs = cap;
	}
	c->srcs[c->n_srcs++] = t;
	return 0;
}

static bool src_has(const struct tmm_cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t)
			return true;
	return false;
}

static void src_remove(struct tmm_cand *c, uint32_t t)
{
	for (uint32_t i = 0; i < c->n_srcs; i++)
		if (c->srcs[i] == t) {
			c->srcs[i] = c->srcs[--c->n_srcs];
			return;
		}
}

/* Replaces t in c's sources by t's own sources. */
static int src_expand(struct tmm_cand *c, const struct tmm_cand *t)
{
	src_remove(c, t->tensor);
	for (uint32_t i = 0; i < t->n_srcs; i++)
		if (src_add(c, t->srcs[i]) < 0)
			return -ENOMEM;
	return 0;
}

double tmm_msps(const struct tmm_analysis *an, const struct tmm_cand *c)
{
	double t = c->rp_time + c->ext_time;

	return (double)an->life[c->tensor].bytes / (t > 1 ? t : 1);
}

bool tmm_over_target(const struct tmm_analysis *an, const uint64_t *curve,
		     uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++)
		if (curve[k] > an->target)
			return true;
	return false;
}

static int cmp_ft(const void *a, const void *b)
{
	const struct tmm_cand *x = a, *y = b;

	if (x->ft != y->ft)
		return x->ft > y->ft ? -1 : 1;
	return x->evict < y->evict ? -1 : x->evict > y->evict;
}

/* Algorithm 2, line 1: InitMSPS, for candidate c. */
/*
 * The sources of recomputing with op `o` for c's back-access: its inputs,
 * except that an input the program has freed by then is recomputed too
 * (a ghost), from its own inputs, at the cost of its producer (§4.4:
 * "T4's re-computation will start from T2").
 */
static int add_sources(const struct tmm_analysis *an, struct tmm_cand *c,
		       uint32_t o, unsigned depth)
{
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
		if (p == TMM_TRACE_NONE ? src_add(c, x) < 0
					: add_sources(an, c, p, depth + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int init_msps(const struct tmm_analysis *an, struct tmm_cand *c)
{
	if (!c->recomputable)
		return 0;
	return add_sources(an, c, c->op, 0);
}

int tmm_cands_find(const struct tmm_analysis *an, const uint64_t *curve,
		   struct tmm_cands *cs)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t cap = 0;

	memset(cs, 0, sizeof(*cs));
	for (uint32_t t = 0; t < tr->n_tensors; t++) {
		const struct tmm_life *l = &an->life[t];

		for (uint32_t k = 0; k + 1 < l->n_acc; k++) {
			uint32_t e = tmm_access_of(an, t, k);
			uint32_t b = tmm_access_of(an, t, k + 1);
			struct tmm_cand *c;

			/* Two accesses by one op are one use. */
			if (b == e + 1 || tr->accesses[e].op ==
						  tr->accesses[b].op)
				continue;
			if (!tmm_over_target(an, curve, e + 1, b))
				continue;
			if (cs->n == cap) {
				void *p;

				cap = cap ? 2 * cap : 256;
				p = tmm_realloc(cs->c, sizeof(*cs->c) * cap);
				if (!p)
					return -ENOMEM;
				cs->c = p;
			}
			c = &cs->c[cs->n++];
			memset(c, 0, sizeof(*c));
			c->tensor = t;
			c->evict = e;
			c->back = b;
			c->ft = tmm_free_time(an, t, e, b);
			c->recomputable = tmm_recomputable(an, t, e, b,
							   &c->op);
			if (init_msps(an, c) < 0)
				return -ENOMEM;
		}
	}
	if (cs->n)
		qsort(cs->c, cs->n, sizeof(*cs->c), cmp_ft);
	return 0;
}

void tmm_cands_free(struct tmm_cands *cs)
{
	for (uint32_t i = 0; i < cs->n; i++)
		free(cs->c[i].srcs);
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

void tmm_cands_backward_only(const struct tmm_analysis *an,
			     struct tmm_cands *cs)
{
	const struct tmm_trace *tr = an->trace;
	bool flagged = false;

	for (uint32_t o = 0; o < tr->n_ops && !flagged; o++)
		flagged = tmm_op_is_backward(tr, o);
	if (!flagged)
		return;
	for (uint32_t i = 0; i < cs->n; i++)
		if (!tmm_op_is_backward(tr, tr->accesses[cs->c[i].back].op))
			cs->c[i].recomputable = false;
}

void tmm_cands_new_round(struct tmm_cands *cs)
{
	for (uint32_t i = 0; i < cs->n; i++)
		cs->c[i].over_at = 0;
}

int64_t tmm_msps_best_if(const struct tmm_analysis *an,
			 const uint64_t *curve, struct tmm_cands *cs,
			 bool (*ok)(void *arg, const struct tmm_cands *cs,
				    uint32_t i),
			 void *arg)
{
	int64_t best = -1;
	double best_v = 0;

	for (uint32_t i = 0; i < cs->n; i++) {
		struct tmm_cand *c = &cs->c[i];
		double v;

		uint32_t k = c->over_at > c->evict ? c->over_at : c->evict + 1;

		if (c->taken || !c->recomputable)
			continue;
		while (k < c->back && curve[k] <= an->target)
			k++;
		c->over_at = k;
		if (k >= c->back)
			continue; /* would not lower the peak this round */
		v = tmm_msps(an, c);
		if (best >= 0 && v <= best_v)
			continue;
		if (ok && !ok(arg, cs, i))
			continue;
		best = i;
		best_v = v;
	}
	return best;
}

int64_t tmm_msps_best(const struct tmm_analysis *an, const uint64_t *curve,
		      struct tmm_cands *cs)
{
	return tmm_msps_best_if(an, curve, cs, NULL, NULL);
}

int tmm_msps_choose(struct tmm_cands *cs, uint32_t ti)
{
	struct tmm_cand *t = &cs->c[ti];
	double ext_ct = 1;

	for (uint32_t i = 0; i < cs->n; i++) {
		struct tmm_cand *rp = &cs->c[i];

		if (rp->is_recomp && src_has(rp, t->tensor)) {
			if (src_expand(rp, t) < 0)
				return -ENOMEM;
			ext_ct += 1;
		}
	}
	t->is_recomp = true;
	t->taken = true;
	for (uint32_t i = 0; i < cs->n; i++) {
		struct tmm_cand *cand = &cs->c[i];

		if (cand->taken || !cand->recomputable)
			continue;
		if (src_has(cand, t->tensor)) {
			if (src_expand(cand, t) < 0)
				return -ENOMEM;
			cand->rp_time += t->rp_time;
			cand->ext_time = 0;
			for (uint32_t j = 0; j < cs->n; j++)
				if (cs->c[j].is_recomp &&
				    src_has(&cs->c[j], cand->tensor))
					cand->ext_time += cand->rp_time;
		}
		if (src_has(t, cand->tensor))
			cand->ext_time = ext_ct * cand->rp_time;
	}
	return 0;
}

void tmm_cands_retire_gap(struct tmm_cands *cs, const struct tmm_cand *c)
{
	for (uint32_t i = 0; i < cs->n; i++)
		if (cs->c[i].tensor == c->tensor && cs->c[i].evict == c->evict)
			cs->c[i].taken = true;
}
