/* SPDX-License-Identifier: MIT */
/*
 * analysis.h — what every planner asks of a recorded iteration.
 *
 * Written once here and shared by the planners: each tensor's accesses and
 * lifetime (liveness), the device memory curve of the iteration with or
 * without a set of evictions and its peak, swap times from the device's
 * link (latency + bytes / bandwidth), Capuchin's free time FT (§4.3), and
 * the recomputation sources and cost of a tensor from the lineage (§4.4).
 * Planners turn their decisions into a set of evictions, check the curve
 * against the budget, and emit the set as plan actions.
 *
 * Memory is counted per access: curve[k] is the bytes the iteration holds
 * on the device while access k's op runs (all accesses of one op hold the
 * same).  A tensor made outside the iteration is counted from the start,
 * one made inside from the op that first writes it (the runtime allocates
 * an op's outputs before it runs) until it is freed.
 */
#ifndef TMM_ANALYSIS_H
#define TMM_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/io/plan.h"
#include "planner_input.h"

/* One tensor's life in the iteration. */
struct tmm_life {
	uint64_t bytes;	  /* rounded up to the device pool's alignment */
	uint32_t first;	  /* first access, or TMM_TRACE_NONE */
	uint32_t last;	  /* last access */
	uint32_t from;	  /* counted in the curve for accesses */
	uint32_t to;	  /* [from, to] (inclusive) */
	uint32_t acc;	  /* its accesses: an->acc[acc .. acc + n_acc) */
	uint32_t n_acc;
};

struct tmm_analysis {
	const struct tmm_trace *trace;
	struct tmm_planner_device dev;
	uint64_t budget;
	uint64_t target;	/* what plans aim for: budget less a margin */
	bool offload_idle;	/* in->offload_idle is ON (idle_state.h) */
	bool liveness_discard;	/* in->liveness_discard */
	bool clean_copies;	/* in->clean_copies */
	bool prefetch_after_evictions; /* in->prefetch_after_evictions */
	bool uvm_copies_serial; /* in->uvm_copies_serial */
	double copy_compute_share; /* in->moves_compute_share */
	/* in->migrate_d2h_gbps and migrate_h2d_gbps, in ns a byte: the
	 * migrate engine of a plan's TMM_ACT_MIGRATE swaps (uvm_mix.h); 0
	 * where it has none. */
	double migrate_out_ns_per_byte, migrate_in_ns_per_byte;
	/* Per trace tensor where in->read_mostly_frozen, else NULL: frozen
	 * (read_mostly.h), advised read-mostly, so that its eviction moves
	 * nothing. */
	bool *frozen;
	struct tmm_life *life;	/* per trace tensor */
	uint32_t *acc;		/* access indices, grouped by tensor */
	uint64_t *base;		/* curve under liveness alone */
	uint64_t base_peak;
	uint32_t base_peak_at;
	uint64_t *op_ns;	/* per op: its ideal duration */
	/* Per access: the first access of its op, and the first access
	 * after its op.  An op's accesses happen at once: its outputs are
	 * allocated before it runs, and what it triggers happens after. */
	uint32_t *op_start, *op_end;
};

/*
 * One tensor out of device memory between two of its accesses: it leaves
 * after access `evict` (the evicted-access) and must be back for access
 * `back` (the back-access).  A swap is brought back by a prefetch fired
 * after `in_trigger` (evict <= in_trigger < back); a drop is recomputed on
 * demand at its back-access (Capuchin §4.4 sets no in-trigger for it).
 *
 * Across iterations (TENSILE §IV-C), `evict` may be TMM_TRACE_NONE: the
 * tensor is on the host when the iteration begins, because the previous
 * one swapped it out after its last access (an eviction of its own, with
 * no back-access), and it is out until its prefetch fires after
 * `in_trigger`.  Such an eviction emits only that PREFETCH.  And `back`
 * may come before `evict` (a wrap-around): the tensor is out from the
 * evicted-access until a prefetch fired after `in_trigger`, later in the
 * same iteration, brings it back for its first access in the next one.
 */
struct tmm_eviction {
	uint32_t tensor;
	uint32_t evict;	     /* TMM_TRACE_NONE: before the iteration */
	uint32_t back;	     /* TMM_TRACE_NONE: not needed again in the
			      * iteration (a swap, with no prefetch) */
	uint32_t in_trigger; /* swap only */
	bool drop;
};

/* Analyses in->trace for in->device and in->budget.  Returns 0, -ENOMEM. */
int tmm_analysis_init(struct tmm_analysis *an,
		      const struct tmm_planner_input *in);
void tmm_analysis_free(struct tmm_analysis *an);

/*
 * The target with one margin only: the budget less TARGET_MARGIN (12%) of
 * it, or the budget itself when the iteration fits as it is, without the
 * larger margin tmm_analysis_init takes where one tensor is a large part
 * of the budget.  For a planner whose runtime makes its holes (capuchin:
 * a guided iteration moves even the running op's tensors to make one,
 * lib/move/mover.c), that second margin only stacks on the first.
 */
void tmm_analysis_one_margin(struct tmm_analysis *an);

/* The access index of the k-th access of trace tensor t. */
static inline uint32_t tmm_access_of(const struct tmm_analysis *an,
				     uint32_t t, uint32_t k)
{
	return an->acc[an->life[t].acc + k];
}

/*
 * Whether an eviction of trace tensor t with back-access `back` leaves
 * without a copy in the run, and so takes no time of the engine to the
 * host: liveness=discard, no back-access, and t dead after its last
 * access (the runtime's rule, lib/move/dead.c; the runtime copies still
 * where a drop of the plan recomputes through t, which this does not
 * see).
 */
bool tmm_leaves_free(const struct tmm_analysis *an, uint32_t t,
		     uint32_t back);

/* Nanoseconds to copy `bytes` over the link, to or from the device. */
uint64_t tmm_swap_ns(const struct tmm_analysis *an, uint64_t bytes,
		     bool to_device);

/* Ideal start and end of access k. */
uint64_t tmm_access_begin(const struct tmm_analysis *an, uint32_t k);
uint64_t tmm_access_end(const struct tmm_analysis *an, uint32_t k);

/* The gap in trace tensor t's accesses around access `at`: its last
 * access before `at` into *before, its first at or after it into *after
 * (TMM_TRACE_NONE where there is none). */
void tmm_accesses_around(const struct tmm_analysis *an, uint32_t t,
			 uint32_t at, uint32_t *before, uint32_t *after);

/*
 * Free time of swapping tensor t out after access `evict` and in for
 * access `back` (Capuchin eq. 1): SwapInStartTime - SwapOutEndTime, where
 * the swap-out ends a swap time after the evicted-access and the ideal
 * swap-in starts a swap time before the back-access.  Negative when the
 * gap cannot hold both copies.
 */
int64_t tmm_free_time(const struct tmm_analysis *an, uint32_t t,
		      uint32_t evict, uint32_t back);

/*
 * The in-trigger of a prefetch that should land by access `back`: the
 * latest access after `evict` that begins a swap-in time or more before
 * `back` begins (Capuchin §4.4), or `evict` itself when none does.
 */
uint32_t tmm_in_trigger(const struct tmm_analysis *an, uint32_t t,
			uint32_t evict, uint32_t back);

/*
 * The latest in-trigger of a prefetch for access `back` that still helps:
 * the last access before back's op (an op's accesses happen at once, so a
 * prefetch fired inside back's own op comes after that op has brought the
 * tensor back on demand), or `evict` where back's op follows it at once.
 */
static inline uint32_t tmm_last_in_trigger(const struct tmm_analysis *an,
					   uint32_t evict, uint32_t back)
{
	uint32_t last = an->op_start[back] ? an->op_start[back] - 1 : 0;

	return evict != TMM_TRACE_NONE && last < evict ? evict : last;
}

/*
 * The time a back-access would wait for a prefetch fired after
 * `in_trigger`: the part of the swap-in that the accesses between trigger
 * and back-access do not cover, plus any part of the swap-out still
 * running (0 when fully hidden).
 */
uint64_t tmm_swap_overhead(const struct tmm_analysis *an, uint32_t t,
			   uint32_t evict, uint32_t in_trigger,
			   uint32_t back);

/*
 * The memory curve of the iteration with evictions ev[0..n) applied, into
 * curve[] (trace->n_accesses entries): the memory that cannot be had
 * back without evicting.  An evicted tensor's bytes leave right after the
 * evicted-access (a swap-out still copying can be waited for, a stall but
 * no eviction); a swapped tensor's return when its prefetch fires, a
 * dropped tensor's at its back-access.  Recomputation is
 * collective: an evicted source of a dropped tensor is brought back at
 * that tensor's back-access too.  Returns the peak; *peak_at (may be NULL)
 * receives its access.
 */
uint64_t tmm_curve(const struct tmm_analysis *an,
		   const struct tmm_eviction *ev, uint32_t n, uint64_t *curve,
		   uint32_t *peak_at);

/*
 * The accesses for which eviction e holds no device memory that the
 * runtime would have to evict for: [*gone, *returns) (see tmm_curve).
 */
void tmm_eviction_span(const struct tmm_analysis *an,
		       const struct tmm_eviction *e, uint32_t *gone,
		       uint32_t *returns);

/*
 * Can trace tensor t be dropped after access `evict` and recomputed for
 * access `back`?  Yes when its producer there is pure and not in place
 * (tmm_plan_droppable) and every tensor the recomputation reads is alive
 * at the back-access, or freed but recomputable itself from such tensors
 * (the runtime keeps it as a ghost; Capuchin §4.4's T3).  *op (may be
 * NULL) receives the producing op.
 */
bool tmm_recomputable(const struct tmm_analysis *an, uint32_t t,
		      uint32_t evict, uint32_t back, uint32_t *op);

/*
 * Appends the actions of evictions ev[0..n) to plan: EVICT_SWAP or
 * EVICT_DROP at the evicted-access, and for a swap a PREFETCH at its
 * in-trigger.  Sets plan->predicted_peak and plan->fits from the curve.
 * Returns 0 or -ENOMEM.
 */
int tmm_emit(const struct tmm_analysis *an, const struct tmm_eviction *ev,
	     uint32_t n, struct tmm_plan *plan);

/* The op that last wrote trace tensor t at or before access `at`, or
 * TMM_TRACE_NONE. */
uint32_t tmm_producer_op(const struct tmm_analysis *an, uint32_t t,
			 uint32_t at);

/* A growable array of evictions. */
struct tmm_eviction_set;

/*
 * Liveness: a tensor made in the iteration keeps its memory until the
 * program frees it, which may be long after its last access (a program
 * that frees a step's tensors at its end).  Adds to set a swap-out with
 * no back-access after the last access of each such tensor whose idle
 * memory lies where the curve is over the target.  Swapped, not dropped:
 * a read after the iteration must still find the bytes.  Returns 0 or
 * -ENOMEM.
 */
int tmm_liveness(const struct tmm_analysis *an,
		 struct tmm_eviction_set *set);

struct tmm_eviction_set {
	struct tmm_eviction *ev;
	uint32_t n, cap;
};

/* Appends e.  Returns 0 or -ENOMEM. */
int tmm_eviction_add(struct tmm_eviction_set *s, struct tmm_eviction e);
void tmm_eviction_set_free(struct tmm_eviction_set *s);

/*
 * A planner's running memory curve while it adds evictions one by one.
 * Adding is incremental, O(the eviction's span), and leaves out the
 * collective-recomputation effect of tmm_curve (an evicted source brought
 * back with a dropped tensor), which only raises the curve: so when the
 * incremental curve fits, tmm_fit_check recomputes it in full before
 * saying so.  Planners read curve[] and never write it: the maxima of its
 * blocks of TMM_FIT_BLOCK accesses are kept beside it, so that whether it
 * is over the target anywhere is a look at the blocks, and an eviction
 * spanning a whole block lowers its maximum by its bytes, with no
 * per-access comparison (issue #22: that comparison was a quarter of the
 * planners' time).
 */
#define TMM_FIT_BLOCK 64
struct tmm_fit {
	uint64_t *curve;
	uint64_t *block_max; /* per TMM_FIT_BLOCK accesses of curve */
	uint32_t n_blocks;
};

/* The curve of set->ev into fit.  Returns 0 or -ENOMEM. */
int tmm_fit_init(const struct tmm_analysis *an, struct tmm_fit *fit,
		 const struct tmm_eviction_set *set);
/* Takes eviction e off the curve over its own span. */
void tmm_fit_add(const struct tmm_analysis *an, struct tmm_fit *fit,
		 const struct tmm_eviction *e);
/* Whether the running curve is over the target anywhere. */
bool tmm_fit_over(const struct tmm_analysis *an, const struct tmm_fit *fit);
/* Whether the curve of `set` is within the target everywhere; when the
 * incremental curve says so, the full curve decides (and replaces it). */
bool tmm_fit_check(const struct tmm_analysis *an, struct tmm_fit *fit,
		   const struct tmm_eviction_set *set);
void tmm_fit_free(struct tmm_fit *fit);

/* Whether an op of the trace is in the backward pass (its flag). */
bool tmm_op_is_backward(const struct tmm_trace *t, uint32_t op);

/*
 * Whether the iteration makes t's bytes anew: t is made in it, or t is
 * no weight and its first access in it overwrites it whole (an output
 * not also an input), so that nothing from before that access is worth
 * keeping.  The second is the activation buffer a hand-written C trainer
 * allocates once and refills every step: to the layer planners it is a
 * feature map like a framework's fresh tensor.
 */
bool tmm_made_fresh(const struct tmm_analysis *an, uint32_t t);

#endif /* TMM_ANALYSIS_H */
