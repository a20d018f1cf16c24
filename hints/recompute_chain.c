/* SPDX-License-Identifier: MIT */
/*
 * recompute_chain.c — memory-centric recomputation's bookkeeping (see
 * recompute_chain.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recompute_chain.h"
#include "lib/base/xalloc.h"

/* One entry of a per-tensor list: a gap (a: evict, b: back; cand: the
 * candidate recomputing it, or -1) or a need (a: the access). */
struct tmm_chain_link {
	uint32_t a, b;
	int64_t cand;
	uint32_t next; /* the next of the tensor's list, or TMM_TRACE_NONE */
};

int tmm_chain_book_init(struct tmm_chain_book *b,
			const struct tmm_analysis *an,
			const struct tmm_cands *cs)
{
	uint32_t n_tensors = an->trace->n_tensors;
	size_t bytes = sizeof(uint32_t) * ((size_t)n_tensors + 1);

	memset(b, 0, sizeof(*b));
	b->an = an;
	b->cs = cs;
	b->gap_head = tmm_malloc(bytes);
	b->need_head = tmm_malloc(bytes);
	b->seen = tmm_calloc((size_t)n_tensors + 1, sizeof(uint32_t));
	if (!b->gap_head || !b->need_head || !b->seen) {
		tmm_chain_book_free(b);
		return -ENOMEM;
	}
	memset(b->gap_head, 0xff, bytes);
	memset(b->need_head, 0xff, bytes);
	return 0;
}

void tmm_chain_book_free(struct tmm_chain_book *b)
{
	free(b->gap_head);
	free(b->need_head);
	free(b->links);
	free(b->seen);
	memset(b, 0, sizeof(*b));
}

static int link_add(struct tmm_chain_book *b, uint32_t *head, uint32_t a,
		    uint32_t end, int64_t cand)
{
	if (b->n_links == b->cap_links) {
		uint32_t cap = b->cap_links ? 2 * b->cap_links : 256;
		void *p = tmm_realloc(b->links, sizeof(*b->links) * cap);

		if (!p)
			return -ENOMEM;
		b->links = p;
		b->cap_links = cap;
	}
	b->links[b->n_links] = (struct tmm_chain_link){ a, end, cand, *head };
	*head = b->n_links++;
	return 0;
}

int tmm_chain_note_gap(struct tmm_chain_book *b, const struct tmm_eviction *e,
		       int64_t cand)
{
	return link_add(b, &b->gap_head[e->tensor],
			e->evict == TMM_TRACE_NONE ? 0 : e->evict,
			e->back == TMM_TRACE_NONE ? UINT32_MAX : e->back,
			cand);
}

bool tmm_chain_needed_within(const struct tmm_chain_book *b, uint32_t t,
			     uint32_t evict, uint32_t back)
{
	for (uint32_t l = b->need_head[t]; l != TMM_TRACE_NONE;
	     l = b->links[l].next)
		if (b->links[l].a > evict && b->links[l].a < back)
			return true;
	return false;
}

/* The gap of tensor t that holds access k, or NULL: t is on the device
 * at k as far as the plan goes. */
static const struct tmm_chain_link *gap_at(const struct tmm_chain_book *b,
					   uint32_t t, uint32_t k)
{
	for (uint32_t l = b->gap_head[t]; l != TMM_TRACE_NONE;
	     l = b->links[l].next)
		if (b->links[l].a < k && k < b->links[l].b)
			return &b->links[l];
	return NULL;
}

/* A new query: no tensor visited yet. */
static void new_query(struct tmm_chain_book *b)
{
	if (++b->stamp == 0) {
		memset(b->seen, 0,
		       sizeof(uint32_t) * (b->an->trace->n_tensors + 1));
		b->stamp = 1;
	}
}

/* Marks t visited by this query; false if it was already. */
static bool visit(struct tmm_chain_book *b, uint32_t t)
{
	if (b->seen[t] == b->stamp)
		return false;
	b->seen[t] = b->stamp;
	return true;
}

/*
 * The op the runtime re-runs for t at access k, or TMM_TRACE_NONE when it
 * needs none (t is on the device there); *reach false when t is out at k
 * in a way no chain undoes.  t is re-run at k when the plan has dropped
 * it there, or when the program has freed it by then: a freed source of
 * a recomputation is kept as a ghost (lib/exec/recompute.c), but only
 * where it is on the device when freed, not swapped out.
 */
static uint32_t rerun_at(const struct tmm_chain_book *b, uint32_t t,
			 uint32_t k, bool *reach)
{
	const struct tmm_analysis *an = b->an;
	const struct tmm_chain_link *g = gap_at(b, t, k);

	*reach = true;
	if (g && g->cand >= 0)
		return b->cs->c[g->cand].op;
	if (g) {
		*reach = false;
		return TMM_TRACE_NONE;
	}
	if (an->life[t].to >= k || an->life[t].last == TMM_TRACE_NONE)
		return TMM_TRACE_NONE;
	return tmm_producer_op(an, t, an->life[t].last);
}

/* What a walk down the tensors a chain reads does with each. */
enum walk { CHECK, NEED };

static int walk_tensor(struct tmm_chain_book *b, uint32_t t, uint32_t k,
		       unsigned depth, enum walk how);

/*
 * Walks the inputs of op o, re-run at k, and down the chain below them:
 * CHECK returns 1 when every one can be had there (on the device, or
 * recomputable from tensors that can), else 0; NEED notes each as
 * needed at k and returns 1, or -ENOMEM.
 */
static int walk_inputs(struct tmm_chain_book *b, uint32_t o, uint32_t k,
		       unsigned depth, enum walk how)
{
	const struct tmm_trace *tr = b->an->trace;
	const struct tmm_trace_op *op;
	int rc = 1;

	if (o >= tr->n_ops || depth >= TMM_CHAIN_MAX_DEPTH)
		return how == CHECK ? 0 : 1;
	op = &tr->ops[o];
	for (uint32_t i = 0; rc == 1 && i < op->n_inputs; i++)
		rc = walk_tensor(b, tr->op_tensors[op->first + i], k, depth,
				 how);
	return rc;
}

static int walk_tensor(struct tmm_chain_book *b, uint32_t t, uint32_t k,
		       unsigned depth, enum walk how)
{
	uint32_t o;
	bool reach;
	int rc;

	if (!visit(b, t))
		return 1; /* walked already in this query, and not refused */
	if (how == NEED) {
		rc = link_add(b, &b->need_head[t], k, 0, -1);
		if (rc < 0)
			return rc;
	}
	o = rerun_at(b, t, k, &reach);
	if (o == TMM_TRACE_NONE)
		return how == NEED || reach;
	return walk_inputs(b, o, k, depth + 1, how);
}

/* Walks what recomputing c at k reads (see walk_inputs). */
static int walk_sources(struct tmm_chain_book *b, const struct tmm_cand *c,
			uint32_t k, enum walk how)
{
	new_query(b);
	visit(b, c->tensor);
	return walk_inputs(b, c->op, k, 0, how);
}

bool tmm_chain_may_drop(struct tmm_chain_book *b, const struct tmm_cand *c)
{
	if (!c->recomputable || walk_sources(b, c, c->back, CHECK) != 1)
		return false;
	for (uint32_t l = b->need_head[c->tensor]; l != TMM_TRACE_NONE;
	     l = b->links[l].next) {
		uint32_t a = b->links[l].a;

		if (a > c->evict && a < c->back &&
		    walk_sources(b, c, a, CHECK) != 1)
			return false;
	}
	return true;
}

/* The producers' time of the dropped tensors below t at k, each once. */
static double below_ns(struct tmm_chain_book *b, uint32_t t, uint32_t k,
		       unsigned depth)
{
	const struct tmm_chain_link *g;
	const struct tmm_cand *d;
	double ns;

	if (!visit(b, t) || depth >= TMM_CHAIN_MAX_DEPTH)
		return 0;
	g = gap_at(b, t, k);
	if (!g || g->cand < 0)
		return 0;
	d = &b->cs->c[g->cand];
	ns = d->rp_time;
	for (uint32_t i = 0; i < d->n_srcs; i++)
		ns += below_ns(b, d->srcs[i], k, depth + 1);
	return ns;
}

static double chain_ns(struct tmm_chain_book *b, const struct tmm_cand *c,
		       uint32_t k)
{
	double ns = c->rp_time + c->ext_time;

	new_query(b);
	visit(b, c->tensor);
	for (uint32_t i = 0; i < c->n_srcs; i++)
		ns += below_ns(b, c->srcs[i], k, 0);
	return ns;
}

double tmm_chain_drop_ns(struct tmm_chain_book *b, const struct tmm_cand *c)
{
	double ns = chain_ns(b, c, c->back);

	for (uint32_t l = b->need_head[c->tensor]; l != TMM_TRACE_NONE;
	     l = b->links[l].next) {
		uint32_t a = b->links[l].a;

		if (a > c->evict && a < c->back)
			ns += chain_ns(b, c, a);
	}
	return ns;
}

int tmm_chain_choose(struct tmm_chain_book *b, const struct tmm_cand *c)
{
	int rc = walk_sources(b, c, c->back, NEED);

	/* By index: the walk may move the links. */
	for (uint32_t l = b->need_head[c->tensor];
	     rc == 1 && l != TMM_TRACE_NONE; l = b->links[l].next) {
		uint32_t a = b->links[l].a;

		if (a > c->evict && a < c->back)
			rc = walk_sources(b, c, a, NEED);
	}
	return rc < 0 ? rc : 0;
}
