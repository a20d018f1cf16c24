/* SPDX-License-Identifier: MIT */
/*
 * rehearse.c — a rehearsal: the first plan from predicted op latencies
 * (see rehearse.h).
 *
 * The rehearsed step must look to the tracker, and so to the planner,
 * exactly like a measured one: the same tensors made in the same order
 * (their keys are creation ordinals), the same accesses, only with
 * predicted times.  So the rehearsal reuses the real markers and the real
 * tensor table; what it changes is that nothing reaches the device.
 * Tensors made inside hold no memory (an op's outputs stay EMPTY), and
 * tensors that existed before are never made resident, so their bytes,
 * wherever they are, are left as they were.
 *
 * The context's counters are put back as they were at tmm_rehearsal_begin
 * (except the planner's): the rehearsal is not an iteration the program
 * trained, and the statistics of the first real one must say what that
 * one did.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/guard.h"
#include "lib/record/guide_state.h"
#include "lib/move/mover.h"
#include "rehearse.h"
#include "lib/record/tracker.h"
#include "lib/base/xalloc.h"

int tmm_rehearse_op(struct tmm_ctx *ctx, const tmm_op *op,
		    struct tmm_tensor_rec *const *recs, const uint8_t *flags,
		    unsigned n)
{
	struct tmm_backend *be = &ctx->be;
	uint64_t start = tmm_rehearsal_clock(ctx), ns = 0;
	uint32_t first_access, n_accesses;

	if (be->ops->op_estimate_ns)
		ns = be->ops->op_estimate_ns(be, &op->cost);
	ctx->rehearsal->predicted_ns += ns;
	/* No stall: a plan is made for a device that keeps up. */
	tmm_tracker_op(ctx, op, recs, flags, n, start, ns, 0, &first_access,
		       &n_accesses);
	return 0;
}

int tmm_rehearse_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		      void *dst, size_t bytes)
{
	(void)ctx;
	(void)t;
	memset(dst, 0, bytes);
	return 0;
}

/* Every tensor record of the table, live or not. */
#define FOR_EACH_SLOT(ctx, t)                                               \
	for (uint32_t slot_ = 0;                                            \
	     slot_ < (ctx)->n_slots &&                                      \
	     ((t) = &(ctx)->chunks[slot_ / TMM_TABLE_CHUNK]                 \
				  [slot_ % TMM_TABLE_CHUNK], 1);            \
	     slot_++)

/*
 * Takes away what the rehearsal made and what it left in the records of
 * the tensors it did not make: their place in the rehearsed trace would
 * otherwise be taken for their place in the first real iteration, which
 * the tracker numbers the same.
 */
static void clear_rehearsed_tensors(struct tmm_ctx *ctx)
{
	struct tmm_tensor_rec *t;

	FOR_EACH_SLOT(ctx, t) {
		if (!t->live)
			continue;
		if (t->rehearsed)
			tmm_tensor_retire(ctx, t);
		else
			t->trace_epoch = 0;
	}
}

static void finish(struct tmm_ctx *ctx)
{
	struct tmm_rehearsal *r = ctx->rehearsal;
	struct tmm_counters now;

	clear_rehearsed_tensors(ctx);
	now = ctx->c;
	ctx->c = r->before;
	/* The plan is the rehearsal's product; gauges say what is held
	 * now (a workspace taken in the rehearsal was real memory). */
	ctx->c.plans_made = now.plans_made;
	ctx->c.plan_ns = now.plan_ns;
	ctx->c.host_in_use = now.host_in_use;
	ctx->c.uvm_resident = now.uvm_resident;
	ctx->c.uvm_resident_peak = now.uvm_resident_peak;
	free(r);
	ctx->rehearsal = NULL;
}

static int rehearsal_begin(struct tmm_ctx *ctx)
{
	struct tmm_rehearsal *r;

	if (ctx->rehearsal)
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_begin: a rehearsal is already "
				"on (rehearsals do not nest; call "
				"tmm_rehearsal_end first)");
	if (ctx->in_iteration)
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_begin: iteration %llu is open; "
				"rehearse before the first "
				"tmm_iteration_begin",
				(unsigned long long)ctx->c.iterations + 1);
	if (ctx->c.iterations || tmm_tracker_first(ctx))
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_begin: %s, and the plan comes "
				"from it; a rehearsal is only for the start, "
				"before the first tmm_iteration_begin",
				ctx->c.iterations ? "an iteration has run"
						  : "a step was rehearsed");
	if (tmm_guide_plan(ctx))
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_begin: a plan is already "
				"installed (from the TENSORMM_HINTS file "
				"%s?); the first iteration follows it, no "
				"rehearsal is needed",
				ctx->cfg.hints[0] ? ctx->cfg.hints : "");
	r = tmm_calloc(1, sizeof(*r));
	if (!r)
		return tmm_fail(ctx, -ENOMEM, "tmm_rehearsal_begin: out of "
				"host memory for the rehearsal's state");
	r->base_ns = ctx->be.ops->now_ns(&ctx->be);
	r->before = ctx->c;
	ctx->rehearsal = r;
	tmm_log(ctx, TMM_LOG_INFO, "rehearsing one step: op times are %s",
		ctx->be.info.op_estimate[0] ? ctx->be.info.op_estimate
					    : "unknown (no prediction)");
	return 0;
}

static int rehearsal_end(struct tmm_ctx *ctx)
{
	if (!ctx->rehearsal)
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_end: no rehearsal is on "
				"(call tmm_rehearsal_begin first)");
	if (ctx->in_iteration)
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_end: the rehearsed iteration "
				"is still open; call tmm_iteration_end "
				"first");
	finish(ctx);
	if (!tmm_tracker_first(ctx))
		return tmm_fail(ctx, -EINVAL,
				"tmm_rehearsal_end: no complete iteration was "
				"rehearsed (run one training step, with its "
				"tmm_iteration_begin and tmm_iteration_end, "
				"between the two calls); the first real "
				"iteration will be measured");
	return 0;
}

/* The public calls, let into the context by the guard (guard.h). */
int tmm_rehearsal_begin(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_REHEARSAL_BEGIN);
	int rc;

	if (entered < 0)
		return entered;
	rc = rehearsal_begin(ctx);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_rehearsal_end(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_REHEARSAL_END);
	int rc;

	if (entered < 0)
		return entered;
	rc = rehearsal_end(ctx);
	tmm_guard_leave(ctx, entered);
	return rc;
}

void tmm_rehearsal_discard(struct tmm_ctx *ctx)
{
	if (ctx->rehearsal)
		finish(ctx);
}
