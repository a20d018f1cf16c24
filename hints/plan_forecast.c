/* SPDX-License-Identifier: MIT */
/*
 * plan_forecast.c — replaying a plan against its trace (plan_forecast.h).
 *
 * The timeline follows the runtime: an op starts once the compute engine
 * is free and its tensors are back (a prefetched tensor when its copy
 * lands, a swapped one with no prefetch by an on-demand copy, a dropped
 * one by running its producer again, and its dropped sources first); the
 * actions its accesses trigger fire when it ends.  Swap-outs queue on the
 * device-to-host engine, prefetches on the host-to-device engine behind
 * the swap-out of the same tensor, or, where the backend orders a
 * prefetch after every stream (CUDA's, in mode=uvm), behind every swap-out
 * queued before it.  Where a copy of managed memory holds the host until
 * it has run (CUDA's, in mode=uvm by copy), compute waits for each copy
 * out and back, but not for a swap the plan moves by migration
 * (TMM_ACT_MIGRATE): out and back on the migrate engine, in order, at the
 * device's managed rates (uvm_mix.h).  Op durations are the trace's ideal ones.  What the
 * model leaves out: the compaction and allocator waits of the runtime,
 * and the exact choice of passive victims, which is costed as the excess
 * leaving and coming back once per stretch over the budget.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "key_index.h"
#include "plan_forecast.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

/*
 * The plan's actions grouped by key, each group in plan order, so that
 * pairing an action with the others of its tensor looks at those alone:
 * a scan of the whole plan for each action made the forecast quadratic
 * in the plan's length (8 M steps for a plan of 2,800 actions, issue #22).
 */
struct by_key {
	uint64_t key;
	uint32_t action;
};

struct action_index {
	struct by_key *a;
	uint32_t n;
};

static int cmp_by_key(const void *x, const void *y)
{
	const struct by_key *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->action < b->action ? -1 : a->action > b->action;
}

static int action_index_init(struct action_index *ai,
			     const struct tmm_plan *p)
{
	ai->n = p->n_actions;
	ai->a = tmm_malloc(sizeof(*ai->a) * (ai->n ? ai->n : 1));
	if (!ai->a)
		return -ENOMEM;
	for (uint32_t i = 0; i < ai->n; i++)
		ai->a[i] = (struct by_key){ p->actions[i].key, i };
	qsort(ai->a, ai->n, sizeof(*ai->a), cmp_by_key);
	return 0;
}

/* The first entry of `key`'s group (ai->n when it has none). */
static uint32_t group_of(const struct action_index *ai, uint64_t key)
{
	uint32_t lo = 0, hi = ai->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ai->a[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first action of `key`, in plan order, that `want` accepts for
 * `back`, or NULL. */
static const struct tmm_plan_action *
first_of(const struct tmm_plan *p, const struct action_index *ai,
	 uint64_t key, uint32_t back,
	 bool (*want)(const struct tmm_plan_action *, uint32_t))
{
	for (uint32_t g = group_of(ai, key); g < ai->n && ai->a[g].key == key;
	     g++) {
		const struct tmm_plan_action *a = &p->actions[ai->a[g].action];

		if (want(a, back))
			return a;
	}
	return NULL;
}

/* A prefetch for back-access `back`. */
static bool is_prefetch_for(const struct tmm_plan_action *a, uint32_t back)
{
	return a->type == TMM_ACT_PREFETCH && a->back_access == back;
}

/* A swap-out or drop that prepares for back-access `back`. */
static bool is_eviction_for(const struct tmm_plan_action *a, uint32_t back)
{
	return (a->type == TMM_ACT_EVICT_SWAP ||
		a->type == TMM_ACT_EVICT_DROP) &&
	       a->back_access == back;
}

/* A wrap-around prefetch (plan.h); `back` is not looked at. */
static bool is_wrap_prefetch(const struct tmm_plan_action *a, uint32_t back)
{
	(void)back;
	return a->type == TMM_ACT_PREFETCH &&
	       a->back_access != TMM_PLAN_NONE &&
	       a->back_access <= a->trigger;
}

static struct tmm_eviction pair(const struct tmm_analysis *an,
				const struct tmm_plan *p,
				const struct action_index *ai,
				const struct tmm_plan_action *a, uint32_t t)
{
	struct tmm_eviction e = { .tensor = t, .evict = a->trigger,
				  .back = a->back_access,
				  .drop = a->type == TMM_ACT_EVICT_DROP };
	const struct tmm_plan_action *pf;

	if (e.drop)
		return e;
	if (e.back == TMM_PLAN_NONE) {
		pf = first_of(p, ai, a->key, 0, is_wrap_prefetch);
		if (pf) {
			e.back = pf->back_access;
			e.in_trigger = pf->trigger;
		} else {
			e.back = TMM_TRACE_NONE;
		}
		return e;
	}
	pf = first_of(p, ai, a->key, e.back, is_prefetch_for);
	/* No prefetch: it comes back on demand, as its back-access's op
	 * starts, which is where the last access before that op ends. */
	if (pf)
		e.in_trigger = pf->trigger;
	else
		e.in_trigger = tmm_last_in_trigger(an, e.evict, e.back);
	return e;
}

/* tmm_plan_evictions, with the trace's key index made already. */
static int evictions(const struct tmm_analysis *an, const struct tmm_plan *p,
		     const struct tmm_key_index *ki, struct tmm_eviction **ev,
		     uint32_t *n)
{
	struct action_index ai;
	uint32_t m = 0;

	*ev = NULL;
	*n = 0;
	if (!p->n_actions)
		return 0;
	if (action_index_init(&ai, p) < 0)
		return -ENOMEM;
	*ev = tmm_malloc(sizeof(**ev) * p->n_actions);
	if (!*ev) {
		free(ai.a);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t t = tmm_key_index_tensor(ki, a->key);

		if (t == TMM_TRACE_NONE)
			continue;
		if (a->type == TMM_ACT_EVICT_SWAP ||
		    a->type == TMM_ACT_EVICT_DROP)
			(*ev)[m++] = pair(an, p, &ai, a, t);
		else if (a->type == TMM_ACT_PREFETCH &&
			 a->back_access != TMM_PLAN_NONE &&
			 a->back_access > a->trigger &&
			 !first_of(p, &ai, a->key, a->back_access,
					  is_eviction_for))
			/* Across iterations: out since the iteration
			 * began. */
			(*ev)[m++] = (struct tmm_eviction){
				.tensor = t, .evict = TMM_TRACE_NONE,
				.back = a->back_access,
				.in_trigger = a->trigger,
			};
	}
	free(ai.a);
	*n = m;
	if (!m) {
		free(*ev);
		*ev = NULL;
	}
	return 0;
}

int tmm_plan_evictions(const struct tmm_analysis *an,
		       const struct tmm_plan *p, struct tmm_eviction **ev,
		       uint32_t *n)
{
	struct tmm_key_index ki;
	int rc;

	*ev = NULL;
	*n = 0;
	if (tmm_key_index_init(&ki, an->trace) < 0)
		return -ENOMEM;
	rc = evictions(an, p, &ki, ev, n);
	tmm_key_index_free(&ki);
	return rc;
}

/* ---- the timeline -------------------------------------------------------- */

enum where { ON_DEVICE, SWAPPED, DROPPED };

struct tensor_clock {
	uint8_t where;	   /* enum where */
	bool prefetched;   /* a prefetch is bringing it back */
	bool clean;	   /* back from the host and not written since: its
			    * host copy holds its bytes (clean_copy.h) */
	bool migrated;	   /* out on the migrate engine: back there too */
	uint64_t out_done; /* its swap-out's copy ends */
	uint64_t ready_at; /* its prefetch lands */
};

struct timeline {
	const struct tmm_analysis *an;
	struct tensor_clock *tc;
	uint64_t now, h2d_free, d2h_free;
	/* When each copy engine's current run of back-to-back copies
	 * began: it is busy over [lo, free). */
	uint64_t h2d_lo, d2h_lo;
	uint64_t migrate_free; /* the migrate engine (uvm_mix.h) */
	uint64_t h2d_busy, d2h_busy; /* each engine's transfers, summed */
	struct tmm_forecast *f;
};

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/*
 * When a copy back of tensor t, asked for now, may start: the engine free,
 * and t's swap-out ended; where the backend orders a prefetch after every
 * stream, every swap-out queued so far ended (on the H100 measured, 8.7
 * GB/s to the host by prefetch, so a prefetch queued behind the step's
 * evictions lands late: docs/gpu-h200.md).
 */
static uint64_t in_start(const struct timeline *tl,
			 const struct tensor_clock *c)
{
	uint64_t start = max3(tl->h2d_free, tl->now, c->out_done);

	if (tl->an->prefetch_after_evictions && tl->d2h_free > start)
		start = tl->d2h_free;
	return start;
}

/* A copy of `ns` on the engine whose run began at *lo and ends at *free,
 * from `start` (not before *free): when it ends. */
static uint64_t queue_copy(uint64_t *lo, uint64_t *free_at, uint64_t *busy,
			   uint64_t start, uint64_t ns)
{
	if (start > *free_at)
		*lo = start;
	*free_at = start + ns;
	*busy += ns;
	return *free_at;
}

/*
 * A copy that ends at `end` was just asked for: where it holds the host
 * until then (uvm_copies_serial), the next op is queued only after it, so
 * compute waits.  On the H200 mode=uvm's copy way ran at the unconstrained
 * step plus its bytes out and in at the pinned rate, within 4% in 30 runs
 * (docs/gpu-h200-goals.md).
 */
static void host_held_until(struct timeline *tl, uint64_t end)
{
	if (!tl->an->uvm_copies_serial || end <= tl->now)
		return;
	tl->f->stall_ns += end - tl->now;
	tl->now = end;
}

/* A move of `bytes` on the migrate engine asked for at `at` (after its
 * tensor's own way out): when it ends. */
static uint64_t migrate(struct timeline *tl, uint64_t at, uint64_t bytes,
			bool in)
{
	const struct tmm_analysis *an = tl->an;
	uint64_t start = tl->migrate_free > at ? tl->migrate_free : at;

	tl->migrate_free = start + an->dev.copy_latency_ns +
			   (uint64_t)((double)bytes *
				      (in ? an->migrate_in_ns_per_byte
					  : an->migrate_out_ns_per_byte));
	return tl->migrate_free;
}

/* Tensor t copied back now, no prefetch having started it; away by
 * migration, prefetched back on the compute stream once it has left. */
static void swap_in_on_demand(struct timeline *tl, uint32_t t)
{
	struct tensor_clock *c = &tl->tc[t];
	uint64_t start = in_start(tl, c);
	uint64_t ns = tmm_swap_ns(tl->an, tl->an->life[t].bytes, true);

	if (c->migrated) {
		start = c->out_done > tl->now ? c->out_done : tl->now;
		ns = (uint64_t)((double)tl->an->life[t].bytes *
				tl->an->migrate_in_ns_per_byte);
		tl->f->stall_ns += start + ns - tl->now;
		tl->now = start + ns;
		return;
	}

	queue_copy(&tl->h2d_lo, &tl->h2d_free, &tl->h2d_busy, start, ns);
	tl->f->stall_ns += tl->h2d_free - tl->now;
	tl->now = tl->h2d_free;
}

/* Brings tensor t back for access `at`: waits, copies or recomputes. */
static void bring_back(struct timeline *tl, uint32_t t, uint32_t at,
		       unsigned depth)
{
	const struct tmm_analysis *an = tl->an;
	const struct tmm_trace *tr = an->trace;
	struct tensor_clock *c = &tl->tc[t];
	uint32_t op;

	if (c->where == SWAPPED) {
		if (!c->prefetched) {
			swap_in_on_demand(tl, t);
		} else if (c->ready_at > tl->now) {
			tl->f->stall_ns += c->ready_at - tl->now;
			tl->now = c->ready_at;
			tl->f->least_lead_ns = 0;
		} else if (tl->now - c->ready_at < tl->f->least_lead_ns) {
			tl->f->least_lead_ns = tl->now - c->ready_at;
		}
		/* A migration back leaves no host copy to keep. */
		c->clean = !c->migrated;
		c->migrated = false;
	} else if (c->where == DROPPED) {
		c->clean = false; /* made again on the device alone */
		op = tmm_producer_op(an, t, at);
		/* Sources dropped too come back first (Capuchin §4.4);
		 * a chain longer than this is costed at its head. */
		if (op != TMM_TRACE_NONE && depth < 64) {
			const struct tmm_trace_op *o = &tr->ops[op];

			for (uint32_t i = 0; i < o->n_inputs; i++) {
				uint32_t s = tr->op_tensors[o->first + i];

				if (s != t && tl->tc[s].where != ON_DEVICE)
					bring_back(tl, s, at, depth + 1);
			}
			tl->f->recompute_ns += an->op_ns[op];
			tl->now += an->op_ns[op];
		}
	}
	c->where = ON_DEVICE;
	c->prefetched = false;
}

/* Carries out action a as its trigger's op ends. */
static void fire(struct timeline *tl, const struct tmm_plan_action *a,
		 uint32_t t)
{
	struct tensor_clock *c = &tl->tc[t];
	uint64_t bytes = tl->an->life[t].bytes;
	uint64_t start, ns;

	switch ((enum tmm_action_type)a->type) {
	case TMM_ACT_EVICT_SWAP:
		if (c->where != ON_DEVICE)
			break;
		if (tmm_leaves_free(tl->an, t, a->back_access) ||
		    (c->clean && tl->an->clean_copies &&
		     tl->an->trace->tensors[t].kind != TMM_SCRATCH) ||
		    (tl->an->frozen && tl->an->frozen[t])) {
			/* Dead, or its host copy is whole (a clean copy, or
			 * a frozen tensor's read-mostly duplicate): it
			 * leaves with no copy, at once. */
			c->out_done = tl->now;
		} else if ((a->flags & TMM_ACT_MIGRATE) &&
			   tl->an->migrate_out_ns_per_byte > 0) {
			c->out_done = migrate(tl, tl->now, bytes, false);
			c->migrated = true;
		} else {
			ns = tmm_swap_ns(tl->an, bytes, false);
			start = tl->d2h_free > tl->now ? tl->d2h_free
						       : tl->now;
			c->out_done = queue_copy(&tl->d2h_lo, &tl->d2h_free,
						 &tl->d2h_busy, start, ns);
			host_held_until(tl, c->out_done);
		}
		c->where = SWAPPED;
		c->prefetched = false;
		break;
	case TMM_ACT_EVICT_DROP:
		if (c->where == ON_DEVICE)
			c->where = DROPPED;
		break;
	case TMM_ACT_PREFETCH:
		if (c->where != SWAPPED || c->prefetched)
			break;
		if (c->migrated) {
			c->ready_at = migrate(tl, c->out_done > tl->now
							 ? c->out_done
							 : tl->now,
					      bytes, true);
			c->prefetched = true;
			break;
		}
		start = in_start(tl, c);
		ns = tmm_swap_ns(tl->an, bytes, true);
		c->ready_at = queue_copy(&tl->h2d_lo, &tl->h2d_free,
					 &tl->h2d_busy, start, ns);
		c->prefetched = true;
		host_held_until(tl, c->ready_at);
		break;
	case TMM_ACT_SPLIT:
		/* Costed as its op runs (run_op). */
	case TMM_ACT_ADVISE:
	case TMM_ACT_TYPE_COUNT:
		break;
	}
}

/* How much of [a, b) falls in [lo, hi). */
static uint64_t overlap(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi)
{
	uint64_t from = a > lo ? a : lo, to = b < hi ? b : hi;

	return to > from ? to - from : 0;
}

/*
 * What an op of `ns` starting now loses to copies that are kernels
 * (copy_compute_share): their share of it over the time they run beside
 * it, both directions counted, to first order (the slowdown's own
 * overlap not charged again), as the simulator charges it
 * (sim_copy_kernel_sm, backend_sim_copy.c).
 */
static uint64_t copier_cost(const struct timeline *tl, uint64_t ns)
{
	uint64_t o;

	if (!(tl->an->copy_compute_share > 0))
		return 0;
	o = overlap(tl->now, tl->now + ns, tl->h2d_lo, tl->h2d_free) +
	    overlap(tl->now, tl->now + ns, tl->d2h_lo, tl->d2h_free);
	return (uint64_t)((double)(o < ns ? o : ns) *
			  tl->an->copy_compute_share + 0.5);
}

/* The op whose accesses are [k, end): its tensors back, then its time. */
static void run_op(struct timeline *tl, uint32_t k, uint32_t end)
{
	const struct tmm_analysis *an = tl->an;
	const struct tmm_trace *tr = an->trace;
	uint32_t op = tr->accesses[k].op;

	for (uint32_t j = k; j < end; j++) {
		uint32_t t = tr->accesses[j].tensor;

		if (tl->tc[t].where != ON_DEVICE)
			bring_back(tl, t, j, 0);
		if (tr->accesses[j].flags & TMM_TA_WRITE)
			tl->tc[t].clean = false;
	}
	if (op != TMM_TRACE_NONE) {
		uint64_t slowed = copier_cost(tl, an->op_ns[op]);

		tl->now += an->op_ns[op] + slowed;
		tl->f->compute_ns += an->op_ns[op];
		tl->f->copier_ns += slowed;
	}
}

/* Passive mode where the curve is over the budget: per stretch over it,
 * the largest excess leaves and comes back, with compute waiting. */
static uint64_t passive_estimate(const struct tmm_analysis *an,
				 const uint64_t *curve)
{
	uint64_t total = 0, excess = 0;

	for (uint32_t k = 0; k <= an->trace->n_accesses; k++) {
		bool over = k < an->trace->n_accesses &&
			    curve[k] > an->budget;

		if (over) {
			uint64_t e = curve[k] - an->budget;

			excess = e > excess ? e : excess;
		} else if (excess) {
			total += tmm_swap_ns(an, excess, false) +
				 tmm_swap_ns(an, excess, true);
			excess = 0;
		}
	}
	return total;
}

static int forecast_memory(const struct tmm_analysis *an,
			   struct tmm_forecast *f, struct tmm_eviction *ev,
			   uint32_t n)
{
	uint64_t *curve = tmm_malloc(sizeof(uint64_t) *
				     (an->trace->n_accesses
					      ? an->trace->n_accesses
					      : 1));

	if (!curve)
		return -ENOMEM;
	f->peak = tmm_curve(an, ev, n, curve, &f->peak_at);
	f->fits = f->peak <= an->budget;
	f->passive_ns = passive_estimate(an, curve);
	free(curve);
	return 0;
}

int tmm_forecast_plan(const struct tmm_analysis *an, const struct tmm_plan *p,
		      struct tmm_forecast *f)
{
	const struct tmm_trace *tr = an->trace;
	struct timeline tl = { .an = an, .f = f };
	struct tmm_eviction *ev = NULL;
	struct tmm_key_index ki;
	uint32_t n, next = 0;
	uint64_t wrap_late = 0;
	int rc;

	memset(f, 0, sizeof(*f));
	f->least_lead_ns = UINT64_MAX;
	if (tmm_key_index_init(&ki, tr) < 0)
		return -ENOMEM;
	rc = evictions(an, p, &ki, &ev, &n);
	if (rc == 0)
		rc = forecast_memory(an, f, ev, n);
	tl.tc = rc == 0 ? tmm_calloc(tr->n_tensors ? tr->n_tensors : 1,
				     sizeof(*tl.tc))
			: NULL;
	if (!tl.tc) {
		free(ev);
		tmm_key_index_free(&ki);
		return rc < 0 ? rc : -ENOMEM;
	}
	/* Swapped out by the previous iteration, to be prefetched. */
	for (uint32_t i = 0; i < n; i++)
		if (ev[i].evict == TMM_TRACE_NONE)
			tl.tc[ev[i].tensor].where = SWAPPED;
	free(ev);

	for (uint32_t k = 0; k < tr->n_accesses;) {
		uint32_t end = an->op_end[k];

		run_op(&tl, k, end);
		for (; next < p->n_actions && p->actions[next].trigger < end;
		     next++) {
			const struct tmm_plan_action *a = &p->actions[next];
			uint32_t t = tmm_key_index_tensor(&ki, a->key);

			if (t == TMM_TRACE_NONE || a->trigger < k)
				continue;
			fire(&tl, a, t);
			/* A prefetch for the next iteration's first access
			 * that lands after this one ends delays it. */
			if (a->type == TMM_ACT_PREFETCH &&
			    a->back_access <= a->trigger &&
			    tl.tc[t].prefetched) {
				uint64_t first = tmm_access_begin(an,
								  a->back_access);

				if (tl.tc[t].ready_at > first)
					wrap_late = tl.tc[t].ready_at - first >
							    wrap_late
							    ? tl.tc[t].ready_at -
								      first
							    : wrap_late;
			}
		}
		k = end > k ? end : k + 1;
	}
	/* A wrap-around prefetch is waited for only when it lands after
	 * the iteration's end plus the time to its first access. */
	if (wrap_late > tl.now)
		f->stall_ns += wrap_late - tl.now;
	f->total_ns = f->compute_ns + f->stall_ns + f->recompute_ns +
		      f->split_ns + f->passive_ns + f->copier_ns;
	/* Iterations repeat: a copy engine with more to move than an
	 * iteration lasts pushes its overflow into the next, which waits
	 * for it, step after step.  The timeline above starts each engine
	 * idle and so misses that; the steady state's iteration is at
	 * least the busier engine's work. */
	{
		uint64_t busy = tl.d2h_busy > tl.h2d_busy ? tl.d2h_busy
							  : tl.h2d_busy;

		if (busy > f->total_ns) {
			f->stall_ns += busy - f->total_ns;
			f->total_ns = busy;
		}
	}
	free(tl.tc);
	tmm_key_index_free(&ki);
	return 0;
}
