/* SPDX-License-Identifier: MIT */
/*
 * guide.h — executing a plan (guided execution, Capuchin §4.2).
 *
 * Iteration 1 runs *measured*: passive mode keeps it alive, the tracker
 * records it.  At its end the configured planner (TENSORMM_POLICY) turns
 * the record into a plan, and the iterations after it run *guided*: after
 * each access, the plan's actions whose trigger is that access fire.  The
 * live sequence of accesses is compared with the plan's, access by access;
 * when they part, the rest of the iteration runs in passive mode and the
 * divergence is counted.  Nothing is lost either way: actions only move
 * bytes, and every tensor stays recoverable.
 */
#ifndef TMM_GUIDE_H
#define TMM_GUIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"
#include "lib/io/plan.h"
#include "lib/core/split_op.h"
#include "lib/record/guide_state.h"

int tmm_guide_create(struct tmm_ctx *ctx);
void tmm_guide_destroy(struct tmm_ctx *ctx);

/*
 * Makes `plan` (copied) the plan of the next iterations.  It is checked
 * against the first iteration's trace (tmm_plan_validate), so a context
 * must have completed one iteration.  Returns 0, -EINVAL (with the reason
 * in ctx->error), -EAGAIN (no iteration recorded yet), or -ENOMEM.
 */
int tmm_guide_install(struct tmm_ctx *ctx, const struct tmm_plan *plan);


/*
 * With TENSORMM_HINTS set, reads the plan file and follows it from the
 * first iteration; the trace of that iteration then checks it, and a plan
 * that does not hold is replaced by the planner's.  No file, or a file
 * that cannot be used, is logged and the first iteration is measured.
 * The planner's plan is saved to the file.  Returns 0 or -ENOMEM.
 */
int tmm_guide_load_hints(struct tmm_ctx *ctx);

/* "measuring", "guided" or "diverged" (stats, tensormm-stat). */
const char *tmm_plan_state_name(uint32_t state);

void tmm_guide_iteration_begin(struct tmm_ctx *ctx);

/* The iteration is ending (before the tracker closes its trace). */
void tmm_guide_iteration_end(struct tmm_ctx *ctx);

/* The tracker has closed the trace: after the first iteration, the
 * configured planner makes the plan of the next ones. */
void tmm_guide_plan_if_due(struct tmm_ctx *ctx);

/* Plans again on the first trace for the current budget (gpu_share.c,
 * after the budget moved), when a plan was made before. */
void tmm_guide_replan(struct tmm_ctx *ctx);

/* The device bytes this context would like: the plan's predicted peak
 * when it was made with room for the unconstrained peak, else that peak
 * (of the first trace, under liveness alone); 0 before a first trace. */
uint64_t tmm_guide_demand(struct tmm_ctx *ctx);

void tmm_guide_note_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * A tensor is about to be accessed: notes, for the feedback of the
 * prefetch that was meant to bring it in, whether it is still arriving.
 * Inline: it is on every access, and almost always has nothing to do.
 */
static inline void tmm_guide_before_access(struct tmm_ctx *ctx,
					   struct tmm_tensor_rec *t)
{
	if (t->pending_prefetch != TMM_PLAN_NONE)
		tmm_guide_note_prefetch(ctx, t);
}

/*
 * Accesses [first, first + n) were recorded: checks them against the plan
 * and fires the actions they trigger.  Returns 0, or a backend error (an
 * action that merely does not apply is skipped and counted).
 */
int tmm_guide_after_accesses(struct tmm_ctx *ctx, uint32_t first,
			     uint32_t n);

#endif /* TMM_GUIDE_H */
