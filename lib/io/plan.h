/* SPDX-License-Identifier: MIT */
/*
 * plan.h — what a planner decides: actions keyed by access index.
 *
 * A plan is made from one recorded iteration (lib/io/trace.h) and replayed on
 * the iterations after it.  Each action fires right after its *trigger*
 * access (Capuchin §4.2: the evicted-access or the in-trigger) and names
 * the *back-access* it prepares for: the next access of its tensor that
 * must find the bytes again.  The plan also keeps the tensor key of every
 * access of the iteration it was made for, so the runtime can tell, access
 * by access, whether the live iteration still follows it (divergence).
 *
 * Across iterations (TENSILE §IV-C): a PREFETCH with no eviction of its
 * tensor for the same back-access expects the tensor on the host when the
 * iteration begins, put there by an EVICT_SWAP with no back-access after
 * its last access in the iteration before.  The guide swaps such tensors
 * out as a guided iteration begins if they are still on the device (the
 * first guided iteration follows a measured one).  When the first access
 * comes too early for any trigger before it, the prefetch may instead
 * wrap around: a PREFETCH whose back-access is at or before its trigger
 * fires late in this iteration for the tensor's first access in the
 * next; its trigger must be at or after the tensor's last access.
 *
 * Splitting (TSPLIT §IV-B): a SPLIT action names an op by its first access
 * (its trigger; its key is that access's tensor) and the number of parts p
 * (2 <= p <= the op's slice_extent).  The runtime runs that op as p
 * micro-ops over contiguous row ranges.  While it does, the plan's
 * EVICT_SWAP and EVICT_DROP actions triggered by that op's access of a
 * sliced tensor act slice by slice: an input's rows leave the device once
 * the micro-op that read them is done (copied to the host first for a
 * swap), and an output's rows are copied to the host as soon as the
 * micro-op that wrote them is done, so the op never holds all of both
 * (TSPLIT Eq. 5).  The rest of the plan sees whole tensors: after the op
 * each such tensor is evicted as if the action had fired after it.
 *
 * Layer-synchronous copies (vDNN, Rhu et al. MICRO 2016, §III): an
 * EVICT_SWAP or PREFETCH flagged TMM_ACT_SYNC makes compute wait for its
 * copy at an op boundary, as vDNN synchronises each layer's transfer with
 * the layer.  A SYNC EVICT_SWAP's copy runs beside the op of its trigger
 * (started before that op when the op only reads the tensor, else after
 * it), and the op after that one does not start before the copy ends: the
 * device memory is free at that boundary.  A SYNC PREFETCH's copy runs
 * beside the op after its trigger, and the op after that one waits for it;
 * it takes its device memory as an allocation does, evicting when short,
 * where a plain prefetch only uses free room and is skipped without it.
 * The wait is a stall, counted as one.  Without the flag, compute never
 * waits for a swap-out and waits for a prefetch only at its back-access
 * (Capuchin §5.3, decoupled).  Feedback does not move a SYNC prefetch: its
 * layer is the policy's.
 *
 * Segment recomputation (Chen et al., arXiv:1604.06174, §4.1): an
 * EVICT_DROP flagged TMM_ACT_KEEP, once a recomputation for another
 * tensor has regenerated it, stays on the device until its next access;
 * without the flag such a tensor is the first to be dropped again when
 * memory runs short (Capuchin §5.3's collective recomputation), and
 * recomputed again when needed.
 *
 * Moves by migration (mode=uvm): an EVICT_SWAP flagged TMM_ACT_MIGRATE,
 * in a run that moves evicted tensors by its copy way (pinned copies of
 * managed memory, which on CUDA hold the host until they are done),
 * moves this tensor by the driver's migration instead: a prefetch to the
 * host on a stream of its own (the migrate engine), and back by a
 * prefetch there, so that neither holds the host.  In swap mode, and in
 * mode=uvm by the prefetch way, the flag changes nothing.  Which tensors
 * go so is hints/uvm_mix.c's choice.  A layer-synchronous copy is vDNN's
 * and is a copy, so a swap-out is never both SYNC and MIGRATE.
 *
 * Plans are plain data: planners (hints/) build them as pure functions of
 * a trace, tests write them by hand, and lib/exec/guide.c executes them.
 */
#ifndef TMM_PLAN_H
#define TMM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

enum tmm_action_type {
	TMM_ACT_EVICT_SWAP, /* copy to the host, free the device memory */
	TMM_ACT_EVICT_DROP, /* free the device memory; recompute on use */
	TMM_ACT_PREFETCH,   /* start bringing a swapped-out tensor back */
	TMM_ACT_ADVISE,	    /* a cudaMemAdvise on the tensor (UVM mode) */
	TMM_ACT_SPLIT,	    /* run the op as micro-ops (TSPLIT) */
	TMM_ACT_TYPE_COUNT
};

/* ADVISE: what to tell the driver about the tensor's pages. */
enum tmm_plan_advice {
	TMM_PLAN_ADVICE_PREFER_HOST,	  /* preferred location: host memory */
	TMM_PLAN_ADVICE_PREFER_DEVICE, /* preferred location: the GPU */
	TMM_PLAN_ADVICE_UNSET_PREFERRED,
	TMM_PLAN_ADVICE_READ_MOSTLY,	  /* duplicate read-only pages */
	TMM_PLAN_ADVICE_UNSET_READ_MOSTLY,
	TMM_PLAN_ADVICE_ACCESSED_BY_DEVICE, /* map on the GPU, no migration */
	TMM_PLAN_ADVICE_COUNT
};

#define TMM_PLAN_NONE UINT32_MAX

/* Action flags (tmm_plan_action.flags). */
#define TMM_ACT_SYNC 1u	/* EVICT_SWAP, PREFETCH: layer-synchronous
			 * (see above) */
#define TMM_ACT_KEEP 2u	/* EVICT_DROP: once regenerated, kept until
			 * its back-access (see above) */
#define TMM_ACT_MIGRATE 4u /* EVICT_SWAP, not with SYNC: in mode=uvm's
			    * copy way, moved by migration (see above) */
#define TMM_ACT_FLAGS_KNOWN (TMM_ACT_SYNC | TMM_ACT_KEEP | TMM_ACT_MIGRATE)

struct tmm_plan_action {
	uint32_t type;	      /* enum tmm_action_type */
	uint32_t trigger;     /* fires after this access index */
	uint64_t key;	      /* the tensor it acts on (lib/io/trace.h keys) */
	uint32_t back_access; /* the access it prepares for, or
			       * TMM_PLAN_NONE: ADVISE, and EVICT_SWAP of
			       * a tensor the iteration does not touch
			       * again (its memory back for the rest of
			       * the iteration, its bytes kept) */
	uint32_t advice;      /* enum tmm_plan_advice, for ADVISE */
	uint32_t parts;	      /* SPLIT: micro-ops, >= 2; else 0 */
	uint32_t flags;	      /* TMM_ACT_SYNC, _KEEP or _MIGRATE, or 0 */
	/* Feedback the runtime writes while executing the plan: */
	uint32_t late;	      /* PREFETCH: back-accesses that found the
			       * tensor still arriving */
	uint32_t moved;	      /* PREFETCH: times that feedback moved
			       * its trigger earlier */
	uint32_t skipped;     /* times it did not apply (the tensor was
			       * not in a state it acts on) */
};

struct tmm_plan {
	char policy[32];       /* the planner that made it */
	uint32_t n_accesses;   /* accesses of the iteration it is for */
	uint64_t *access_keys; /* n_accesses keys, in order */
	struct tmm_plan_action *actions; /* sorted by trigger */
	uint32_t n_actions, cap_actions;
	/* What the planner expects of it (not checked by the runtime): */
	uint64_t predicted_peak; /* device bytes at the iteration's peak */
	bool fits;		 /* ... within its target below the budget:
				  * guided iterations need no passive
				  * eviction */
};

/*
 * Starts an empty plan for iterations shaped like `t`: copies the key of
 * each of its accesses.  Returns 0 or -ENOMEM.
 */
int tmm_plan_init(struct tmm_plan *p, const struct tmm_trace *t,
		  const char *policy);

/* Appends an action (feedback fields zeroed).  Returns 0 or -ENOMEM. */
int tmm_plan_add(struct tmm_plan *p, enum tmm_action_type type,
		 uint32_t trigger, uint64_t key, uint32_t back_access,
		 enum tmm_plan_advice advice);

/* Appends a SPLIT of the op whose first access is `first_access` (to the
 * tensor `key`) into `parts` micro-ops.  Returns 0 or -ENOMEM. */
int tmm_plan_add_split(struct tmm_plan *p, uint32_t first_access,
		       uint64_t key, uint32_t parts);

/* Sorts the actions by trigger, keeping the order of equal triggers. */
void tmm_plan_sort(struct tmm_plan *p);

/* Can a tensor be dropped after an access, and recomputed later? */
enum tmm_drop_verdict {
	TMM_DROP_OK,
	TMM_DROP_NO_PRODUCER, /* no op wrote it in the iteration before */
	TMM_DROP_NOT_PURE,    /* its producer is not flagged TMM_OP_PURE */
	TMM_DROP_IN_PLACE,    /* its producer also read it */
};

/*
 * The verdict for trace tensor `tensor` after access `after`: its bytes
 * would come from the last op that wrote it up to there, which must be
 * pure and must not read the tensor itself (an in-place update cannot be
 * re-run).  *writer (may be NULL) receives that write's access index, or
 * TMM_TRACE_NONE.  Planners and the plan check share this one rule.
 */
enum tmm_drop_verdict tmm_plan_droppable(const struct tmm_trace *t,
					 uint32_t tensor, uint32_t after,
					 uint32_t *writer);

/*
 * Checks a plan against the trace it was made for: the access keys match;
 * each action's trigger is an access of the trace; its tensor is in the
 * trace; its back-access comes after the trigger and is an access of that
 * tensor; an EVICT_DROP names a tensor whose producer is a pure op that
 * does not also read the tensor (only those can be recomputed); its flags
 * are ones its type takes (SYNC on a swap-out or a prefetch, KEEP on a
 * drop, MIGRATE on a swap-out that is not SYNC).  Returns
 * 0, or -EINVAL with a message in err naming the action and what is wrong.
 */
int tmm_plan_validate(const struct tmm_plan *p, const struct tmm_trace *t,
		      char *err, size_t errlen);

/* A tensor the plan's drops need after the program frees it: its key,
 * and the trigger of the last drop that needs it (after that access no
 * drop to come reads it; a drop already made counts on its own). */
struct tmm_kept_source {
	uint64_t key;
	uint32_t until;
};

/*
 * The tensors the program frees in the iteration that the plan's drops
 * will still need, to recompute through them (Capuchin §4.4's T3, gone
 * after its last use, through which T4 is recomputed from T2): for each
 * EVICT_DROP, the sources of its producer that are freed before its
 * back-access, and theirs in turn.  *kept (from malloc, sorted by key,
 * one entry per key; NULL when *n is 0) receives them.  Returns 0 or
 * -ENOMEM.
 */
int tmm_plan_kept_sources(const struct tmm_plan *p, const struct tmm_trace *t,
			  struct tmm_kept_source **kept, uint32_t *n);

/* A deep copy of src into *dst.  Returns 0 or -ENOMEM. */
int tmm_plan_copy(struct tmm_plan *dst, const struct tmm_plan *src);

/* Frees a plan's arrays and zeroes it. */
void tmm_plan_free(struct tmm_plan *p);

/* "EVICT_SWAP", "EVICT_DROP", "PREFETCH", "ADVISE". */
const char *tmm_action_name(enum tmm_action_type type);

#endif /* TMM_PLAN_H */
