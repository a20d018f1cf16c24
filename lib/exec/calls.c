/* SPDX-License-Identifier: MIT */
/*
 * calls.c — the public calls around ops: tmm_run, direct access
 * (tmm_acquire, tmm_release) and the iteration markers.
 *
 * Each is let into the context by the guard (guard.h), which refuses a
 * second thread and, inside a callback, every call here.  The work of an
 * op is run.c's; here is what surrounds it for the program: views kept
 * coherent with their parents (view.c), and the iteration's bookkeeping.
 */
#include <errno.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/share/gpu_share.h"
#include "guide.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "peak_budget.h"
#include "recompute.h"
#include "run.h"
#include "stats_shm.h"
#include "view.h"
#include "workspace.h"
#include "lib/record/tracker.h"

int tmm_run(tmm_ctx *ctx, const tmm_op *op)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_RUN);
	int rc;

	if (entered < 0)
		return entered;
	/* Views keep their parents coherent around the op (view.c); a
	 * program without views pays one test. */
	rc = ctx->live_views ? tmm_view_run(ctx, op) : tmm_run_op(ctx, op);
	tmm_guard_leave(ctx, entered);
	return rc;
}

static int acquire(struct tmm_ctx *ctx, tmm_tensor h, enum tmm_access mode,
		   void **ptr)
{
	struct tmm_tensor_rec *t;
	uint32_t first_access, n_accesses;
	int rc;

	ctx->current_op = "tmm_acquire";
	if (!ptr || mode < TMM_READ || mode > TMM_READ_WRITE)
		return tmm_fail(ctx, -EINVAL,
				"tmm_acquire: %s",
				!ptr ? "ptr is NULL"
				     : "mode is not TMM_READ, TMM_WRITE or "
				       "TMM_READ_WRITE");
	t = tmm_tensor_lookup(ctx, h, "tmm_acquire");
	if (!t)
		return -EBADF;
	if (tmm_mover_footprint(ctx, t->bytes) > ctx->budget && !ctx->share) {
		char label[64], b1[32], b2[32];

		return tmm_fail(ctx, -ENOMEM,
				"tmm_acquire: tensor %s (%s) is larger than "
				"the whole device budget (%s); raise "
				"TENSORMM_BUDGET, or acquire views of it",
				tmm_tensor_label(t, label, sizeof(label)),
				tmm_fmt_bytes(t->bytes, b1, sizeof(b1)),
				tmm_fmt_bytes(ctx->budget, b2, sizeof(b2)));
	}
	if (ctx->rehearsal)
		return tmm_fail(ctx, -EBUSY,
				"tmm_acquire: a rehearsal is on and tensors "
				"hold no bytes in it; a step that acquires "
				"tensors cannot be rehearsed (measure its "
				"first iteration instead)");
	/* A parent gathers its views' bytes, and a view catches up with its
	 * parent: the program may read any of them (view.c). */
	if (t->n_views || t->view_parent) {
		rc = tmm_view_before_use(ctx, t, true, "tmm_acquire");
		if (rc < 0)
			return rc;
	}
	if ((mode & TMM_WRITE) && t->dropped_dependents) {
		rc = tmm_recompute_settle_readers(ctx, t);
		if (rc < 0)
			return rc;
	}
	ctx->use_clock++;
	t->pins++;
	tmm_guide_before_access(ctx, t);
	rc = tmm_recompute_make_resident(ctx, t, mode & TMM_READ);
	/* The pointer is for kernels on the compute stream: a collective
	 * still on the tensor ends before them. */
	if (rc == 0) {
		rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);
		if (rc < 0)
			rc = tmm_fail(ctx, rc, "%s", ctx->be.error);
	}
	/* mode=uvm: the pointer is for kernels; their faults come now. */
	if (rc == 0 && ctx->mode == TMM_MODE_UVM)
		rc = tmm_uvm_touch_op(ctx, &t, (mode & TMM_WRITE) ? 0 : 1, 1);
	if (rc < 0) {
		t->pins--;
		return rc;
	}
	if (mode & TMM_WRITE) {
		tmm_lineage_host_write(ctx, t);
		tmm_view_after_write(ctx, t);
	}
	t->acquires++;
	ctx->c.accesses++;
	tmm_mover_touch(ctx, t);
	t->regenerated = false;
	*ptr = t->dev;
	tmm_tracker_direct(ctx, t, mode & TMM_READ, mode & TMM_WRITE,
			   &first_access, &n_accesses);
	return tmm_guide_after_accesses(ctx, first_access, n_accesses);
}

int tmm_acquire(tmm_ctx *ctx, tmm_tensor h, enum tmm_access mode, void **ptr)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_ACQUIRE);
	int rc;

	if (entered < 0)
		return entered;
	rc = acquire(ctx, h, mode, ptr);
	tmm_guard_leave(ctx, entered);
	return rc;
}

static int release(struct tmm_ctx *ctx, tmm_tensor h)
{
	struct tmm_tensor_rec *t;
	char label[64];

	t = tmm_tensor_lookup(ctx, h, "tmm_release");
	if (!t)
		return -EBADF;
	if (!t->acquires)
		return tmm_fail(ctx, -EINVAL,
				"tmm_release: tensor %s is not acquired",
				tmm_tensor_label(t, label, sizeof(label)));
	t->acquires--;
	t->pins--;
	return 0;
}

int tmm_release(tmm_ctx *ctx, tmm_tensor h)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_RELEASE);
	int rc;

	if (entered < 0)
		return entered;
	rc = release(ctx, h);
	tmm_guard_leave(ctx, entered);
	return rc;
}

static int iteration_begin(struct tmm_ctx *ctx)
{
	int rc;

	if (ctx->in_iteration)
		return tmm_fail(ctx, -EINVAL,
				"tmm_iteration_begin: iteration %llu has not "
				"ended (call tmm_iteration_end first)",
				(unsigned long long)ctx->c.iterations + 1);
	rc = tmm_lineage_iteration_begin(ctx);
	if (rc < 0)
		return rc;
	ctx->in_iteration = true;
	ctx->iteration_begin_ns = ctx->be.ops->now_ns(&ctx->be);
	tmm_tracker_iteration_begin(ctx);
	tmm_guide_iteration_begin(ctx);
	return 0;
}

int tmm_iteration_begin(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_ITERATION_BEGIN);
	int rc;

	if (entered < 0)
		return entered;
	rc = iteration_begin(ctx);
	tmm_guard_leave(ctx, entered);
	return rc;
}

static int iteration_end(struct tmm_ctx *ctx)
{
	uint64_t plans_before;
	bool moved = false;

	if (!ctx->in_iteration)
		return tmm_fail(ctx, -EINVAL,
				"tmm_iteration_end: no iteration has begun");
	tmm_workspace_drop(ctx);
	/* A host that runs ahead of the device (the sim's sim_host=ahead)
	 * meets it here, as CUDA's does reading the op times below. */
	if (ctx->be.ops->kernels_wait)
		(void)ctx->be.ops->kernels_wait(&ctx->be);
	/* The guide judges drift by these times: on CUDA they are read
	 * from the GPU here, and were zeros before (every guided iteration
	 * then looked 30% off its plan and re-planned). */
	tmm_tracker_settle_op_times(ctx);
	tmm_guide_iteration_end(ctx);
	tmm_tracker_iteration_end(ctx);
	ctx->in_iteration = false;
	ctx->c.iterations++;
	ctx->c.last_iteration_ns =
		ctx->be.ops->now_ns(&ctx->be) - ctx->iteration_begin_ns;
	plans_before = ctx->c.plans_made;
	/* budget=N%peak: set before the plan that follows the budget. */
	if (tmm_peak_budget_apply(ctx) && plans_before)
		moved = true;
	tmm_guide_plan_if_due(ctx);
	if (moved)
		tmm_guide_replan(ctx);
	if (tmm_share_iteration_end(ctx, tmm_guide_demand(ctx)))
		tmm_guide_replan(ctx);
	tmm_stats_shm_publish(ctx);
	return 0;
}

int tmm_iteration_end(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_ITERATION_END);
	int rc;

	if (entered < 0)
		return entered;
	rc = iteration_end(ctx);
	tmm_guard_leave(ctx, entered);
	return rc;
}
