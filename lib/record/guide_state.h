/* SPDX-License-Identifier: MIT */
/*
 * guide_state.h — the plan a context follows, and what the code below the
 * guide may ask of it.
 *
 * The guide (lib/exec/guide.c) installs plans and fires their actions
 * through the mover and recomputation; the mover, recomputation and the
 * split ops in turn ask the plan questions while they work: does the
 * plan keep this tensor, split this op, swap this output.  The guide's
 * state is therefore one structure spanning two files: guide.c changes
 * it, guide_state.c answers the questions, and sits below all who ask.
 */
#ifndef TMM_GUIDE_STATE_H
#define TMM_GUIDE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"
#include "lib/core/split_op.h"
#include "lib/io/plan.h"

struct tmm_replan;

/* Layer-synchronous copies a guide tracks at once (layer_sync.h); more
 * swap-outs at one op are copied after it, more prefetches are waited
 * for only by their back-access. */
#define TMM_SYNC_MAX 32

/* A swap-out started before the op that reads its tensor. */
struct tmm_sync_copy {
	struct tmm_tensor_rec *t;
	tmm_event ev; /* the copy */
};

/* A back-access that found its prefetch still arriving, its compute
 * engine's wait measured on the device (lib/exec/late_prefetch.h). */
struct tmm_late_wait {
	uint64_t key;	 /* the tensor's trace key */
	uint32_t action; /* the plan's prefetch */
	tmm_timed_wait w;
};

/* The guide's state, one per context (ctx->guide). */
struct tmm_guide {
	struct tmm_plan plan;
	bool installed;	 /* a plan is there to follow */
	bool following;	 /* this iteration follows it */
	bool diverged;	 /* ... and has left it */
	bool planned;	 /* the planner has run (once) */
	bool from_file;	 /* the plan came from TENSORMM_HINTS and is yet
			  * to be checked against a measured iteration */
	bool diverged_once; /* the first iteration left a plan from file */
	uint32_t next;	 /* the next action to fire */
	/* Tensors the program frees that the plan's drops need to
	 * recompute through (tmm_plan_kept_sources), sorted by key. */
	struct tmm_kept_source *kept;
	uint32_t n_kept;
	/* liveness=discard: the tensors the plan may discard dead, sorted
	 * by key (lib/move/dead.h, tmm_dead_list). */
	struct tmm_kept_source *dead;
	uint32_t n_dead;
	uint32_t at;	 /* accesses of this iteration seen so far */
	/* The device bytes held (tmm_mover_held) as each access of the
	 * plan ran, last written by the guided iteration that reached it:
	 * how far earlier a late prefetch may fire (move_late_prefetches).
	 * n_held_at 0: not known yet. */
	uint64_t *held_at;
	uint32_t n_held_at;
	struct tmm_replan *replan; /* latencies since the plan was made */
	uint64_t plan_budget;	 /* the budget the plan was made for */
	/* The budget of the last plan that did not fit, 0: none yet.  A
	 * plan that does not fit is a warning once per budget; plans made
	 * again for the same one (drift) say so at info. */
	uint64_t unfit_warned_budget;
	uint64_t unconstrained_peak; /* the first trace's, under liveness
				      * alone (0: not known yet) */
	/* Layer-synchronous copies (lib/exec/layer_sync.h): swap-outs
	 * started before the op running, and the keys of SYNC prefetches
	 * that compute waits for after the next op. */
	struct tmm_sync_copy beside[TMM_SYNC_MAX];
	uint32_t n_beside;
	uint64_t sync_prefetch[TMM_SYNC_MAX];
	uint32_t n_sync_prefetch;
	/* Waits for late prefetches, read when the iteration ends. */
	struct tmm_late_wait *late;
	uint32_t n_late, cap_late;
	bool late_unmeasured_said; /* logged once: a wait not measured */
};

/* Does the plan's lineage need t after the program frees it (a source
 * of the recomputation of a drop the plan has still to make)?  Then it
 * is kept as a ghost.  Once the iteration is past the last such drop,
 * no: what a drop made needs, its dropped tensor says (recompute.c's
 * dropped_dependents). */
bool tmm_guide_keeps(const struct tmm_ctx *ctx,
		     const struct tmm_tensor_rec *t);

/* The plan being followed, with its feedback fields, or NULL. */
const struct tmm_plan *tmm_guide_plan(const struct tmm_ctx *ctx);

/* Measuring (no plan), guided, or diverged (this or the last iteration
 * left its plan): tmm_stats.plan_state. */
enum tmm_plan_state tmm_guide_state(const struct tmm_ctx *ctx);

/* Whether the iteration running follows a plan and has not left it. */
bool tmm_guide_following(const struct tmm_ctx *ctx);

/*
 * The parts of the plan's SPLIT of the op about to run, whose first
 * tensor is `first` (split.c), or 0: no plan being followed, no SPLIT at
 * the access about to be recorded, or a plan whose access there is to
 * another tensor (the guide will see the divergence after the op).
 * *evicts_first: whether the plan also drops or swaps out `first` at
 * that access.
 */
uint32_t tmm_guide_split_parts(struct tmm_ctx *ctx,
			       const struct tmm_tensor_rec *first,
			       enum tmm_split_evict *evicts_first);

/*
 * Whether the plan swaps out, at the op's own access of it, the tensor
 * the op about to run will access `nth` (its access at the current
 * access count + nth, each tensor listed once): an EVICT_SWAP of a split
 * op's output right after the op wrote it, which split_stream.c carries
 * out while the op runs.  False when no plan is followed.
 */
bool tmm_guide_swaps_at_op(struct tmm_ctx *ctx, unsigned nth);

/* The same, for a layer-synchronous swap-out (TMM_ACT_SYNC) of the
 * tensor the op about to run will access `nth`, whoever wrote it. */
bool tmm_guide_sync_swap_at_op(struct tmm_ctx *ctx, unsigned nth);

#endif /* TMM_GUIDE_STATE_H */
