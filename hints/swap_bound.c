/* SPDX-License-Identifier: MIT */
/*
 * swap_bound.c — the fewest bytes any plan must copy each way per step
 * (swap_bound.h).
 *
 * Why each figure is a lower bound for every plan:
 *
 * 1. The relaxed problem.  An op (a run of accesses of one trace op, or
 *    one tmm_acquire) needs every tensor it accesses on the device at
 *    once, within the budget.  Kept tensors (made before the iteration,
 *    not destroyed in it) are "items": their bytes exist only on the
 *    device or the host, and moving them costs link bytes.  Every other
 *    tensor only takes room while an op accesses it: a plan must hold it
 *    then, and may do anything else for free (drop and remake it without
 *    cost, which no real plan can).  Dropping constraints and costs can
 *    only lower the optimum, so the optimum of the relaxed problem is a
 *    lower bound on the real one.  Room is counted in the trace's bytes,
 *    not the pool's rounded ones, and nothing else the runtime holds is
 *    counted: less room taken, a lower optimum again.  Workspaces
 *    (TMM_SCRATCH) take none: their size is the algorithm a framework
 *    picked for the room it had, and another may need none.  A TSPLIT access
 *    (.slices) needs one slice of a made-inside tensor, and nothing of an
 *    item (the op may run as micro-ops); a bound that drops it is lower.
 *
 * 2. Paging.  Seen byte by byte, the relaxed problem is paging with a
 *    cache of `budget - room taken by the op's other tensors` bytes, a
 *    capacity that varies from op to op, with a set of pages requested
 *    at once at each op.  Belady's MIN, which evicts the bytes whose next
 *    request is furthest and evicts only what the capacity forces, loads
 *    the fewest pages; its exchange argument (swap the eviction of a
 *    byte needed sooner for one needed later, the loads cannot grow)
 *    holds as well when the capacity varies and when a whole set must be
 *    resident, since it never evicts a byte of the current set.  All the
 *    bytes of one tensor share their requests, so evicting part of a
 *    tensor (fractional eviction) is what MIN does with ties; the whole-
 *    tensor problem has fewer choices, so its optimum is no lower.
 *
 * 3. Which misses cost.  A request whose page is new (its previous
 *    content is not needed) is a compulsory miss whatever the plan, so
 *    counting it or not leaves MIN optimal for the misses that do count.
 *    Host to device, a request costs when the access reads: a write-only
 *    access needs no load.  Device to host, a request costs when a miss
 *    there implies a copy out of a value written in the window:
 *      - FIRST: the first read after a write w (the access before it is w
 *        itself): a miss means the tensor was away between w and the
 *        read, so the value w wrote went to the host in between;
 *      - LAST: the last read of the value a write w made (an access
 *        that reads then writes, or a read followed by a write-only
 *        access): a miss means it was away between that read and the
 *        access before it, both after w, with w's value not yet read for
 *        the last time, so that value went (or had gone) to the host
 *        after w.
 *    Each write's value is copied out at most once per such read, and
 *    each write has one first and one last read, so either count is at
 *    most the copies out.  Only writes inside the window count.
 *
 * 4. Steady state.  Repeating the step `passes` times and starting from
 *    the best content of the device (the bytes requested soonest, up to
 *    the budget: what MIN keeps after a prefix that requests every item
 *    once, latest-used first, whose misses are all compulsory), MIN's
 *    cost is at most what any plan pays over `passes` steps of its
 *    steady state, whatever it holds when they begin.  So cost / passes
 *    is at most its cost per step.  Copies out need their write in the
 *    window, so that count starts from an empty device.
 *
 * 5. The simple counts.  At a step boundary at most `budget` kept bytes
 *    are on the device: the rest of the items the step reads first must
 *    come in during the step, and the rest of those whose last write in
 *    the step is read again must have gone out after it.
 *
 * 6. Windows (tmm_swap_bound_step).  Cut the step at the ends of ops
 *    into windows.  A window's span, from the end of the op before it to
 *    the end of its last op, holds its ops' compute (the stream runs one
 *    op at a time, and the caller gives each op's least time, or the
 *    trace's where no plan makes it shorter), and
 *    every load its ops need that is not on the device when it begins,
 *    which is at least MIN's count over the window alone from the best
 *    content (point 4, one pass); the same for copies out of values
 *    written in the window.  The spans do not overlap, so the step is at
 *    least the sum over the windows of the largest of the three times,
 *    for any cutting: the best over cuttings at TMM_SWAP_BOUND_CUTS
 *    places is found by dynamic programming.  It sees what the per-step
 *    bytes cannot: copies needed where compute is short cannot hide
 *    under compute elsewhere, since memory to hold them early is short.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "swap_bound.h"
#include "tensormm.h"

#define NONE UINT32_MAX
#define FAR UINT64_MAX /* the key of a byte no costly request wants */

/* Which misses cost (point 3 above). */
enum cost_of {
	COST_LOAD,	  /* host to device: reads */
	COST_FIRST_READ,  /* device to host: first read after a write */
	COST_LAST_READ,	  /* device to host: last read of a write's value */
};

struct req {
	uint32_t item;
	uint32_t flags; /* TMM_TA_*, the op's accesses of it together */
};

/* The trace as ops of item requests and room. */
struct steps {
	uint32_t n_groups;
	uint32_t *grp_at;   /* n_groups + 1 offsets into reqs */
	struct req *reqs;
	double *room;	    /* per group: bytes of its made-inside tensors */
	uint32_t n_items;
	double *bytes;	    /* per item */
	uint32_t *occ_at;   /* n_items + 1 offsets into occ_grp/occ_flags */
	uint32_t *occ_grp;  /* an item's requests, by group */
	uint32_t *occ_flags;
	double *ns;	    /* per group: the op's time in the trace */
};

static void steps_free(struct steps *s)
{
	free(s->grp_at);
	free(s->reqs);
	free(s->room);
	free(s->bytes);
	free(s->occ_at);
	free(s->occ_grp);
	free(s->occ_flags);
	free(s->ns);
}

static bool is_item(const struct tmm_trace_tensor *t)
{
	return !(t->flags & (TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE));
}

/* Groups the accesses into ops (an op's accesses follow each other),
 * one request per item and op, and the room of the rest. */
static int steps_make(const struct tmm_trace *t, const double *op_ns,
		      struct steps *s)
{
	uint32_t *item_of = NULL, *seen = NULL, *slot = NULL, *fill = NULL;
	uint32_t g = 0, n_req = 0;
	int rc = -ENOMEM;

	memset(s, 0, sizeof(*s));
	item_of = malloc(sizeof(*item_of) * (t->n_tensors + 1));
	seen = calloc(t->n_tensors + 1, sizeof(*seen));
	slot = malloc(sizeof(*slot) * (t->n_tensors + 1));
	s->grp_at = malloc(sizeof(*s->grp_at) * (t->n_accesses + 1));
	s->reqs = malloc(sizeof(*s->reqs) * (t->n_accesses + 1));
	s->room = calloc(t->n_accesses + 1, sizeof(*s->room));
	if (!item_of || !seen || !slot || !s->grp_at || !s->reqs || !s->room)
		goto out;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		item_of[i] = is_item(&t->tensors[i]) ? s->n_items++ : NONE;
	s->bytes = calloc(s->n_items + 1, sizeof(*s->bytes));
	s->occ_at = calloc(s->n_items + 2, sizeof(*s->occ_at));
	s->ns = calloc(t->n_accesses + 1, sizeof(*s->ns));
	if (!s->bytes || !s->occ_at || !s->ns)
		goto out;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (item_of[i] != NONE)
			s->bytes[item_of[i]] = (double)t->tensors[i].bytes;

	for (uint32_t k = 0; k < t->n_accesses; k++) {
		const struct tmm_trace_access *a = &t->accesses[k];
		const struct tmm_trace_tensor *tt;
		uint32_t it;

		if (a->tensor >= t->n_tensors)
			continue;
		/* A new op: a tmm_acquire, or another op than the last. */
		if (k == 0 || a->op == TMM_TRACE_NONE ||
		    a->op != t->accesses[k - 1].op) {
			const struct tmm_trace_op *op =
				a->op < t->n_ops ? &t->ops[a->op] : NULL;

			if (op && op_ns)
				s->ns[g] = op_ns[a->op];
			else if (op && op->end_ns > op->begin_ns)
				s->ns[g] = (double)(op->end_ns - op->begin_ns);
			s->grp_at[g++] = n_req;
		}
		tt = &t->tensors[a->tensor];
		it = item_of[a->tensor];
		/* A workspace's size is the algorithm the framework picked
		 * for the room it had; another may need none. */
		if (it == NONE && tt->kind == TMM_SCRATCH)
			continue;
		if (it == NONE) {
			/* Room, once per op: the whole tensor unless every
			 * access of it in the op is through a cut (slot:
			 * the cut counted so far, 0 for the whole). */
			if (seen[a->tensor] != g) {
				seen[a->tensor] = g;
				slot[a->tensor] = a->slices;
				s->room[g - 1] +=
					a->slices ? (double)tt->bytes /
							    a->slices
						  : (double)tt->bytes;
			} else if (!a->slices && slot[a->tensor]) {
				s->room[g - 1] +=
					(double)tt->bytes -
					(double)tt->bytes / slot[a->tensor];
				slot[a->tensor] = 0;
			}
			continue;
		}
		if (a->slices)
			continue;
		if (seen[a->tensor] == g) {
			s->reqs[slot[a->tensor]].flags |= a->flags;
			continue;
		}
		seen[a->tensor] = g;
		slot[a->tensor] = n_req;
		s->reqs[n_req++] = (struct req){ it, a->flags };
		s->occ_at[it + 1]++;
	}
	s->n_groups = g;
	s->grp_at[g] = n_req;

	/* Each item's requests, in group order. */
	for (uint32_t i = 0; i < s->n_items; i++)
		s->occ_at[i + 1] += s->occ_at[i];
	s->occ_grp = malloc(sizeof(*s->occ_grp) * (n_req + 1));
	s->occ_flags = malloc(sizeof(*s->occ_flags) * (n_req + 1));
	fill = calloc(s->n_items + 1, sizeof(*fill));
	if (!s->occ_grp || !s->occ_flags || !fill)
		goto out;
	for (g = 0; g < s->n_groups; g++)
		for (uint32_t r = s->grp_at[g]; r < s->grp_at[g + 1]; r++) {
			uint32_t i = s->reqs[r].item;
			uint32_t o = s->occ_at[i] + fill[i];

			fill[i]++;
			s->occ_grp[o] = g;
			s->occ_flags[o] = s->reqs[r].flags;
		}
	rc = 0;
out:
	free(item_of);
	free(seen);
	free(slot);
	free(fill);
	if (rc < 0)
		steps_free(s);
	return rc;
}

/* Whether item i's request number k (counted over the repeated steps)
 * costs (point 3); fw: its first request in the window that writes. */
static bool costs(const struct steps *s, enum cost_of c, uint32_t i,
		  uint64_t k, uint64_t fw)
{
	uint32_t n = s->occ_at[i + 1] - s->occ_at[i];
	const uint32_t *f = s->occ_flags + s->occ_at[i];
	uint32_t at = (uint32_t)(k % n);
	uint32_t self = f[at], prev = f[(at + n - 1) % n];
	uint32_t next = f[(at + 1) % n];
	bool written_before = k > fw;

	if (!(self & TMM_TA_READ))
		return false;
	switch (c) {
	case COST_LOAD:
		return true;
	case COST_FIRST_READ:
		return written_before && (prev & TMM_TA_WRITE);
	case COST_LAST_READ:
		return written_before &&
		       ((self & TMM_TA_WRITE) ||
			((next & TMM_TA_WRITE) && !(next & TMM_TA_READ)));
	}
	return false;
}

/* Where item i's request number k falls on the line of repeated steps
 * (step x n_groups + op). */
static uint64_t pos_of(const struct steps *s, uint32_t i, uint64_t k)
{
	uint32_t n = s->occ_at[i + 1] - s->occ_at[i];

	return k / n * s->n_groups + s->occ_grp[s->occ_at[i] + k % n];
}

/* An entry of the eviction heap: an item's key when pushed, valid while
 * the item's version is the same. */
struct entry {
	uint64_t key;
	uint32_t item, ver;
};

/* Belady's working state, reused from window to window. */
struct work {
	double *res;	   /* per item: bytes on the device */
	uint64_t *cur;	   /* per item: its next request (number k) */
	uint64_t *fw;	   /* per item: its first writing request in the
			    * window, or UINT64_MAX */
	uint64_t *stamp;   /* per item: 1 + the position requesting it */
	uint32_t *ver;
	struct entry *heap; /* a max-heap on key */
	uint64_t n_heap, cap_heap;
};

static void work_free(struct work *w)
{
	free(w->res);
	free(w->cur);
	free(w->fw);
	free(w->stamp);
	free(w->ver);
	free(w->heap);
}

static int work_make(const struct steps *s, struct work *w)
{
	size_t n = (size_t)s->n_items + 1;

	memset(w, 0, sizeof(*w));
	w->res = malloc(sizeof(*w->res) * n);
	w->cur = malloc(sizeof(*w->cur) * n);
	w->fw = malloc(sizeof(*w->fw) * n);
	w->stamp = malloc(sizeof(*w->stamp) * n);
	w->ver = malloc(sizeof(*w->ver) * n);
	w->cap_heap = 64 + 4 * (uint64_t)s->grp_at[s->n_groups];
	w->heap = malloc(sizeof(*w->heap) * w->cap_heap);
	if (!w->res || !w->cur || !w->fw || !w->stamp || !w->ver ||
	    !w->heap) {
		work_free(w);
		return -ENOMEM;
	}
	return 0;
}

static int heap_push(struct work *w, struct entry e)
{
	uint64_t j;

	if (w->n_heap == w->cap_heap) {
		struct entry *h = realloc(w->heap,
					  sizeof(*h) * w->cap_heap * 2);

		if (!h)
			return -ENOMEM;
		w->heap = h;
		w->cap_heap *= 2;
	}
	j = w->n_heap++;
	while (j > 0 && w->heap[(j - 1) / 2].key < e.key) {
		w->heap[j] = w->heap[(j - 1) / 2];
		j = (j - 1) / 2;
	}
	w->heap[j] = e;
	return 0;
}

static struct entry heap_pop(struct work *w)
{
	struct entry top = w->heap[0], last = w->heap[--w->n_heap];
	uint64_t j = 0;

	for (;;) {
		uint64_t c = 2 * j + 1;

		if (c >= w->n_heap)
			break;
		if (c + 1 < w->n_heap && w->heap[c + 1].key > w->heap[c].key)
			c++;
		if (w->heap[c].key <= last.key)
			break;
		w->heap[j] = w->heap[c];
		j = c;
	}
	if (w->n_heap)
		w->heap[j] = last;
	return top;
}

/* When item i is next requested at a cost, before position `end`: FAR
 * when its next request starts a new page, or comes at `end` or later. */
static uint64_t key_of(const struct steps *s, const struct work *w,
		       enum cost_of c, uint32_t i, uint64_t end)
{
	uint32_t n = s->occ_at[i + 1] - s->occ_at[i];
	uint64_t at;

	if (n == 0)
		return FAR;
	at = pos_of(s, i, w->cur[i]);
	if (at >= end || !costs(s, c, i, w->cur[i], w->fw[i]))
		return FAR;
	return at;
}

/* Each item's first request at or after position `start`, and its first
 * writing one from there. */
static void work_start(const struct steps *s, struct work *w,
		       uint64_t start)
{
	uint64_t step = start / s->n_groups;
	uint32_t g = (uint32_t)(start % s->n_groups);

	for (uint32_t i = 0; i < s->n_items; i++) {
		uint32_t n = s->occ_at[i + 1] - s->occ_at[i];
		const uint32_t *grp = s->occ_grp + s->occ_at[i];
		const uint32_t *f = s->occ_flags + s->occ_at[i];
		uint32_t j = 0;

		w->res[i] = 0;
		w->stamp[i] = 0;
		w->ver[i] = 0;
		w->fw[i] = UINT64_MAX;
		if (n == 0) {
			w->cur[i] = 0;
			continue;
		}
		while (j < n && grp[j] < g)
			j++;
		w->cur[i] = step * n + j;
		for (uint32_t d = 0; d < n; d++)
			if (f[(j + d) % n] & TMM_TA_WRITE) {
				w->fw[i] = w->cur[i] + d;
				break;
			}
	}
	w->n_heap = 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * MIN's costly misses, in bytes, over the positions [start, end) of the
 * repeated steps (points 2 to 4); loads start from the best content.
 */
static int belady(const struct steps *s, struct work *w, enum cost_of c,
		  uint64_t budget, uint64_t start, uint64_t end, double *cost)
{
	double total = 0, paid = 0;
	uint32_t n = 0;
	int rc = 0;

	*cost = 0;
	if (s->n_groups == 0 || start >= end)
		return 0;
	work_start(s, w, start);
	/* Loads start from the best content: the soonest-wanted bytes
	 * (the heap's array as scratch, before any push). */
	if (c == COST_LOAD) {
		for (uint32_t i = 0; i < s->n_items; i++) {
			uint64_t k = key_of(s, w, c, i, end);

			if (k != FAR && n < w->cap_heap)
				w->heap[n++] = (struct entry){ k, i, 0 };
		}
		qsort(w->heap, n, sizeof(*w->heap), cmp_key);
		for (uint32_t j = 0; j < n && total < (double)budget; j++) {
			double room = (double)budget - total;
			double b = s->bytes[w->heap[j].item];

			w->res[w->heap[j].item] = b < room ? b : room;
			total += w->res[w->heap[j].item];
		}
		w->n_heap = 0;
		/* The heap grows over the sorted scratch from its front:
		 * it never reaches past the entry being pushed. */
		for (uint32_t j = 0; j < n && rc == 0; j++)
			if (w->res[w->heap[j].item] > 0)
				rc = heap_push(w, w->heap[j]);
	}
	for (uint64_t pos = start; pos < end && rc == 0; pos++) {
		uint32_t g = (uint32_t)(pos % s->n_groups);
		double cap = (double)budget - s->room[g];

		for (uint32_t r = s->grp_at[g]; r < s->grp_at[g + 1]; r++) {
			uint32_t i = s->reqs[r].item;
			double miss = s->bytes[i] - w->res[i];

			w->stamp[i] = pos + 1;
			w->ver[i]++;
			if (miss > 0) {
				if (costs(s, c, i, w->cur[i], w->fw[i]))
					paid += miss;
				total += miss;
				w->res[i] = s->bytes[i];
			}
			w->cur[i]++;
		}
		if (cap < 0)
			cap = 0;
		/* Evict what the op leaves no room for, furthest next
		 * costly request first. */
		while (total > cap && w->n_heap) {
			struct entry e = heap_pop(w);
			uint32_t i = e.item;
			double ev = total - cap;

			if (e.ver != w->ver[i] || w->res[i] <= 0 ||
			    w->stamp[i] == pos + 1)
				continue;
			if (ev >= w->res[i]) {
				total -= w->res[i];
				w->res[i] = 0;
			} else {
				w->res[i] -= ev;
				total = cap;
				rc = heap_push(w, e);
			}
		}
		/* The requested items' next keys. */
		for (uint32_t r = s->grp_at[g]; r < s->grp_at[g + 1] && rc == 0;
		     r++) {
			uint32_t i = s->reqs[r].item;

			if (w->res[i] > 0)
				rc = heap_push(w, (struct entry){
					key_of(s, w, c, i, end), i, w->ver[i] });
		}
	}
	*cost = paid;
	return rc;
}

/* Point 5: the items whose first request in a step reads (loads), or
 * whose value from their last write is read again (copies out), less
 * the budget. */
static void simple_counts(const struct steps *s, uint64_t budget,
			  struct tmm_swap_bound *b)
{
	double in = 0, out = 0;

	for (uint32_t i = 0; i < s->n_items; i++) {
		uint32_t n = s->occ_at[i + 1] - s->occ_at[i];
		const uint32_t *f = s->occ_flags + s->occ_at[i];
		uint32_t last = NONE;

		b->kept += (uint64_t)s->bytes[i];
		if (n == 0)
			continue;
		if (f[0] & TMM_TA_READ)
			in += s->bytes[i];
		for (uint32_t k = 0; k < n; k++)
			if (f[k] & TMM_TA_WRITE)
				last = k;
		/* the next request after the last write, in the next step
		 * when it is the step's last */
		if (last != NONE && (f[(last + 1) % n] & TMM_TA_READ))
			out += s->bytes[i];
	}
	b->h2d_simple = in > (double)budget ? in - (double)budget : 0;
	b->d2h_simple = out > (double)budget ? out - (double)budget : 0;
}

/* The three counts over [start, end): loads, and the larger count of
 * copies out. */
static int counts(const struct steps *s, struct work *w, uint64_t budget,
		  uint64_t start, uint64_t end, double *in, double *out)
{
	double first = 0, last = 0;
	int rc = belady(s, w, COST_LOAD, budget, start, end, in);

	if (rc == 0)
		rc = belady(s, w, COST_FIRST_READ, budget, start, end, &first);
	if (rc == 0)
		rc = belady(s, w, COST_LAST_READ, budget, start, end, &last);
	*out = first > last ? first : last;
	return rc;
}

int tmm_swap_bound(const struct tmm_trace *t, uint64_t budget,
		   unsigned passes, struct tmm_swap_bound *b)
{
	struct steps s;
	struct work w;
	int rc;

	if (!t || !b || passes == 0)
		return -EINVAL;
	memset(b, 0, sizeof(*b));
	rc = steps_make(t, NULL, &s);
	if (rc < 0)
		return rc;
	simple_counts(&s, budget, b);
	rc = work_make(&s, &w);
	if (rc == 0) {
		rc = counts(&s, &w, budget, 0,
			    (uint64_t)passes * s.n_groups, &b->h2d_bytes,
			    &b->d2h_bytes);
		work_free(&w);
		b->h2d_bytes /= passes;
		b->d2h_bytes /= passes;
	}
	steps_free(&s);
	if (rc < 0)
		return rc;
	if (b->h2d_simple > b->h2d_bytes)
		b->h2d_bytes = b->h2d_simple;
	if (b->d2h_simple > b->d2h_bytes)
		b->d2h_bytes = b->d2h_simple;
	return 0;
}

/* A window's least time: its ops, or its copies either way. */
static double window_ns(double ops, double in, double out, double h2d_gbps,
			double d2h_gbps)
{
	double t = ops;

	if (h2d_gbps > 0 && in / h2d_gbps > t)
		t = in / h2d_gbps;
	if (d2h_gbps > 0 && out / d2h_gbps > t)
		t = out / d2h_gbps;
	return t;
}

int tmm_swap_bound_step(const struct tmm_trace *t, const double *op_ns,
			uint64_t budget, double h2d_gbps, double d2h_gbps,
			double *ns)
{
	struct steps s;
	struct work w;
	uint32_t cut[TMM_SWAP_BOUND_CUTS + 1], n_cut;
	double best[TMM_SWAP_BOUND_CUTS + 1], *sum = NULL;
	int rc;

	if (!t || !ns)
		return -EINVAL;
	*ns = 0;
	rc = steps_make(t, op_ns, &s);
	if (rc < 0)
		return rc;
	rc = work_make(&s, &w);
	if (rc < 0) {
		steps_free(&s);
		return rc;
	}
	sum = calloc(s.n_groups + 1, sizeof(*sum));
	if (!sum)
		rc = -ENOMEM;
	for (uint32_t g = 0; sum && g < s.n_groups; g++)
		sum[g + 1] = sum[g] + s.ns[g];
	/* The windows start and end at these ops. */
	n_cut = s.n_groups < TMM_SWAP_BOUND_CUTS ? s.n_groups
						  : TMM_SWAP_BOUND_CUTS;
	for (uint32_t j = 0; j <= n_cut; j++)
		cut[j] = n_cut ? (uint32_t)((uint64_t)j * s.n_groups / n_cut)
			       : 0;
	best[0] = 0;
	for (uint32_t z = 1; z <= n_cut && rc == 0; z++) {
		best[z] = 0;
		for (uint32_t a = 0; a < z && rc == 0; a++) {
			double in, out, v;

			rc = counts(&s, &w, budget, cut[a], cut[z], &in, &out);
			v = best[a] + window_ns(sum[cut[z]] - sum[cut[a]], in,
						out, h2d_gbps, d2h_gbps);
			if (v > best[z])
				best[z] = v;
		}
	}
	if (rc == 0)
		*ns = best[n_cut];
	free(sum);
	work_free(&w);
	steps_free(&s);
	return rc;
}
