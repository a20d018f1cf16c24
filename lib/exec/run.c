/* SPDX-License-Identifier: MIT */
/*
 * run.c — running an op: the mechanism under tmm_run (calls.c), the
 * library's own ops (fill.c, view.c) and recomputation's re-runs.
 *
 * tmm_run is the hot path: every tensor access of a training step passes
 * here.  It allocates nothing in steady state (pointer arrays live on the
 * stack, or in a context scratch buffer for ops with many tensors) and does
 * constant work per tensor besides what the mover must do.
 *
 * The order matters: all of the op's tensors are pinned before any is made
 * resident, so bringing one in can never evict another that the op needs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/share/gpu_share.h"
#include "guide.h"
#include "layer_sync.h"
#include "lib/move/clean_copy.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "lib/mem/pool.h"
#include "placing.h"
#include "recompute.h"
#include "run.h"
#include "rehearse.h"
#include "split.h"
#include "split_stream.h"
#include "stats_shm.h"
#include "lib/record/tracker.h"
#include "lib/base/xalloc.h"

/* Ops with up to this many tensors need no scratch buffer. */
#define STACK_TENSORS 16

static void unpin(struct tmm_tensor_rec **recs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		recs[i]->pins--;
}

/*
 * The op's tensors are placed: their addresses are about to be handed to
 * the callback (or fixed by a split's in-place output), so they may no
 * longer move (placing.h).
 */
static void end_placing(struct tmm_ctx *ctx, struct tmm_tensor_rec **recs,
			unsigned n, bool *placing)
{
	if (!*placing)
		return;
	for (unsigned i = 0; i < n; i++)
		tmm_placing_done(recs[i]);
	tmm_placing_end(ctx);
	*placing = false;
}

/* Per-tensor facts of one op, from a single pass over its list. */
/* the tensor appears earlier in the op's list (an output that is also an
 * input) */
#define LISTED_EARLIER TMM_TRACK_REPEAT
/* an output that held nothing before the op */
#define WAS_EMPTY 0x2u
/* an output the op declares it reads (tmm_op.accumulate) */
#define ACCUMULATED TMM_TRACK_ACCUMULATE
/* Whether recs[i]'s bytes before the op are needed: an input, or an
 * output that is also an input or declared accumulated. */
#define NEEDS_DATA(op, flags, i) \
	((i) < (op)->n_inputs || ((flags)[i] & (LISTED_EARLIER | ACCUMULATED)))

/*
 * Marks each distinct tensor of the op with this op's clock tick, noting
 * repeats in flags[], and fails early when the distinct tensors cannot fit
 * in the budget together.  One pass: no pairwise comparison on the hot
 * path.
 */
static int mark_and_check_fits(struct tmm_ctx *ctx, const tmm_op *op,
			       struct tmm_tensor_rec **recs, uint8_t *flags,
			       unsigned n, uint32_t parts,
			       enum tmm_split_evict evicts_first)
{
	uint64_t need = 0, less;
	char b1[32], b2[32];

	for (unsigned i = 0; i < n; i++) {
		struct tmm_tensor_rec *t = recs[i];

		flags[i] = 0;
		if (i >= op->n_inputs && op->accumulate &&
		    op->accumulate[i - op->n_inputs])
			flags[i] = ACCUMULATED;
		if (t->op_mark == ctx->use_clock) {
			flags[i] = LISTED_EARLIER;
			continue;
		}
		t->op_mark = ctx->use_clock;
		need += tmm_mover_footprint(ctx, t->bytes);
	}
	if (need > ctx->largest_op_need)
		ctx->largest_op_need = need;
	/* TSPLIT: a split op whose output grows into its input's rows
	 * needs less than all of both (split.h). */
	less = tmm_split_need_less(ctx, op, recs, parts, evicts_first);
	need = need > less ? need - less : 0;
	if (need <= ctx->budget)
		return 0;
	/* Sharing the GPU, the budget is a part of it that may grow. */
	if (ctx->share && tmm_share_need(ctx, need) == 0)
		return 0;
	return tmm_fail(ctx, -ENOMEM,
			"op '%s' needs %s for its %u input(s) and %u "
			"output(s), more than the whole device budget (%s%s); "
			"raise TENSORMM_BUDGET or split the op",
			ctx->current_op, tmm_fmt_bytes(need, b1, sizeof(b1)),
			op->n_inputs, op->n_outputs,
			tmm_fmt_bytes(ctx->budget, b2, sizeof(b2)),
			ctx->mode == TMM_MODE_UVM &&
					ctx->cfg.uvm_cap == TMM_UVM_CAP_LIBRARY
				? ", which the library holds its pages to: "
				  "TENSORMM_UVM_CAP=library"
				: "");
}

/* The byte the checking mode fills outputs with: 0xFF, a NaN in every
 * IEEE floating-point width and -1 in every integer one. */
#define CHECK_POISON 0xFF

/*
 * check=on, just before the callback: each output the op does not read
 * (neither an input too nor declared accumulated) is filled with
 * CHECK_POISON on the compute stream, so that a callback that reads one
 * anyway gives wrong results on every run, not only on the runs where
 * memory pressure happened to leave other bytes there.
 */
static int poison_outputs(struct tmm_ctx *ctx, const tmm_op *op,
			  struct tmm_tensor_rec *const *recs,
			  void *const *ptrs, const uint8_t *flags)
{
	struct tmm_backend *be = &ctx->be;
	unsigned n = op->n_inputs + op->n_outputs;
	int rc;

	if (be->info.phantom)
		return 0;
	for (unsigned i = op->n_inputs; i < n; i++) {
		if (NEEDS_DATA(op, flags, i))
			continue;
		rc = be->ops->fill(be, ptrs[i], CHECK_POISON, recs[i]->bytes);
		if (rc < 0)
			return tmm_fail(ctx, rc, "check=on: poisoning output "
					"%u of op '%s': %s",
					i - op->n_inputs, ctx->current_op,
					be->error);
	}
	return 0;
}

static int check_op(struct tmm_ctx *ctx, const tmm_op *op)
{
	if (!op)
		return tmm_fail(ctx, -EINVAL, "tmm_run: op is NULL");
	if ((op->n_inputs && !op->inputs) || (op->n_outputs && !op->outputs))
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' declares %u input(s) and %u "
				"output(s) but an array is NULL",
				ctx->current_op, op->n_inputs, op->n_outputs);
	if (!op->run && !ctx->be.info.phantom)
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has no run callback (only a "
				"phantom simulated device runs cost-only ops)",
				ctx->current_op);
	if (op->flags & ~(TMM_OP_PURE | TMM_OP_BACKWARD))
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has unknown flags %#x (only "
				"TMM_OP_PURE and TMM_OP_BACKWARD are defined)",
				ctx->current_op,
				op->flags & ~(TMM_OP_PURE | TMM_OP_BACKWARD));
	if (op->n_inputs > TMM_OP_MAX_TENSORS ||
	    op->n_outputs > TMM_OP_MAX_TENSORS)
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has %u inputs and %u "
				"outputs; at most %u of each",
				ctx->current_op, op->n_inputs, op->n_outputs,
				TMM_OP_MAX_TENSORS);
	if ((op->flags & TMM_OP_PURE) && op->accumulate)
		for (unsigned j = 0; j < op->n_outputs; j++)
			if (op->accumulate[j])
				return tmm_fail(ctx, -EINVAL,
						"tmm_run: op '%s' is declared "
						"TMM_OP_PURE but accumulates "
						"into output %u: its result "
						"depends on that output's old "
						"bytes, so it cannot be "
						"recomputed; drop one of the "
						"two", ctx->current_op, j);
	if ((unsigned)op->kind >= TMM_OP_KIND_COUNT)
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has an unknown kind %d",
				ctx->current_op, (int)op->kind);
	if (op->kind == TMM_OP_COLLECTIVE && (op->flags & TMM_OP_PURE))
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' is a TMM_OP_COLLECTIVE "
				"declared TMM_OP_PURE: its result depends on "
				"other ranks, so it cannot be recomputed; drop "
				"TMM_OP_PURE", ctx->current_op);
	if (op->cost.net_bytes < 0 ||
	    (op->cost.net_bytes > 0 && op->kind != TMM_OP_COLLECTIVE))
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has cost.net_bytes %.0f: "
				"only a TMM_OP_COLLECTIVE moves bytes on the "
				"network, and never a negative count",
				ctx->current_op, op->cost.net_bytes);
	return 0;
}

/* A collective's callback runs on the comm stream, beside later kernels
 * (backend.h's comm_stream); every other op's on the compute stream. */
static void *op_stream(struct tmm_backend *be, const tmm_op *op)
{
	if (op->kind == TMM_OP_COLLECTIVE && be->ops->comm_stream)
		return be->ops->comm_stream(be);
	return be->ops->compute_stream(be);
}

/* The collective just run still reads and writes its tensors off the
 * compute stream: each carries its end until a later user waits. */
static int mark_net(struct tmm_ctx *ctx, struct tmm_tensor_rec **recs,
		    unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = tmm_tensor_mark_net(ctx, recs[i]);

		if (rc < 0)
			return tmm_fail(ctx, rc, "%s", ctx->be.error);
	}
	return 0;
}

/*
 * A collective whose op fails after its callback ran may have left work
 * on the comm stream that reads and writes its tensors: the host waits
 * for it, before the unwinding releases or moves them and so that their
 * later users need not.  Best effort: the op's own error is the one told.
 */
static void settle_failed_collective(struct tmm_ctx *ctx, const tmm_op *op,
				     struct tmm_tensor_rec **recs, unsigned n)
{
	if (op->kind != TMM_OP_COLLECTIVE)
		return;
	for (unsigned i = 0; i < n; i++)
		if (tmm_tensor_mark_net(ctx, recs[i]) == 0)
			(void)tmm_tensor_wait_net(ctx, recs[i],
						  TMM_ENGINE_COMPUTE, true);
}

int tmm_run_op(struct tmm_ctx *ctx, const tmm_op *op)
{
	struct tmm_tensor_rec *stack_recs[STACK_TENSORS], **recs = stack_recs;
	void *stack_ptrs[STACK_TENSORS], **ptrs = stack_ptrs;
	uint8_t stack_flags[STACK_TENSORS], *flags = stack_flags;
	struct tmm_backend *be;
	unsigned n, i, pinned = 0;
	uint64_t ns = 0, start_ns, stall_before;
	uint32_t first_access = 0, n_accesses, parts;
	struct tmm_split_reuse reuse = { .in = NULL };
	struct tmm_split_stream stream = { .out = NULL };
	enum tmm_split_evict evicts_first = TMM_SPLIT_KEEPS_INPUT;
	bool placing = false; /* placing.h */
	struct tmm_callback_frame cb;
	int rc;

	ctx->current_op = op && op->name ? op->name : "(unnamed)";
	rc = check_op(ctx, op);
	if (rc < 0)
		return rc;
	/* Between ops nothing but acquires is pinned: the cheapest moment
	 * to give memory back to another process on the GPU. */
	if (ctx->share)
		tmm_share_op(ctx);
	be = &ctx->be;
	n = op->n_inputs + op->n_outputs;
	if (n > STACK_TENSORS) {
		size_t need = n * (2 * sizeof(void *) + sizeof(uint8_t));

		if (ctx->ptr_scratch_len < need) {
			void *p = tmm_realloc(ctx->ptr_scratch, need);

			if (!p)
				return tmm_fail(ctx, -ENOMEM,
						"op '%s': out of host memory "
						"for its %u tensors' pointers",
						ctx->current_op, n);
			ctx->ptr_scratch = p;
			ctx->ptr_scratch_len = need;
		}
		recs = (struct tmm_tensor_rec **)ctx->ptr_scratch;
		ptrs = (void **)(recs + n);
		flags = (uint8_t *)(ptrs + n);
	}
	for (i = 0; i < n; i++) {
		tmm_tensor h = i < op->n_inputs ? op->inputs[i]
					: op->outputs[i - op->n_inputs];

		recs[i] = tmm_tensor_lookup(ctx, h, ctx->current_op);
		if (!recs[i])
			return -EBADF;
	}
	rc = tmm_split_check_op(ctx, op, recs);
	if (rc < 0)
		return rc;
	/* Asked before the op's accesses are recorded: the plan's SPLIT is
	 * triggered by the first of them. */
	parts = ctx->in_iteration && n
			? tmm_split_parts(ctx, op, recs[0], &evicts_first)
			: 0;
	stall_before = ctx->c.stall_ns;
	/* Overwriting an output must not take away the bytes that a dropped
	 * tensor's recomputation would read (recompute.h). */
	for (i = op->n_inputs; i < n; i++) {
		if (!recs[i]->dropped_dependents)
			continue;
		rc = tmm_recompute_settle_readers(ctx, recs[i]);
		if (rc < 0)
			return rc;
	}
	ctx->use_clock++;
	rc = mark_and_check_fits(ctx, op, recs, flags, n, parts,
				 evicts_first);
	if (rc < 0)
		return rc;
	/* A rehearsal records the op with a predicted time; nothing runs,
	 * nothing moves (rehearse.h). */
	if (ctx->rehearsal)
		return tmm_rehearse_op(ctx, op, recs, flags, n);
	/* Pinned while placing: making one tensor resident never evicts
	 * another the op needs, but compaction may still move any of them,
	 * so that an op whose tensors fit the budget always finds room. */
	tmm_placing_begin(ctx);
	placing = true;
	for (; pinned < n; pinned++)
		tmm_placing_pin(ctx, recs[pinned]);
	for (i = 0; i < n; i++) {
		bool output = i >= op->n_inputs;
		/* An output listed earlier is also an input (or a repeat
		 * of an output already placed), or is declared
		 * accumulated: its bytes are needed. */
		bool need_data = NEEDS_DATA(op, flags, i);

		/* TSPLIT Eq. 5: the output goes below the input it will
		 * grow into, before anything else takes the place. */
		if (i == op->n_inputs &&
		    evicts_first != TMM_SPLIT_KEEPS_INPUT) {
			tmm_split_place_output(ctx, op, recs, &parts,
					       evicts_first, &reuse);
			/* Placed just below the input, the output grows
			 * into it: neither may move from here on. */
			if (reuse.in)
				end_placing(ctx, recs, n, &placing);
		}
		if (output && (recs[i]->state == TMM_TS_EMPTY ||
			       recs[i] == reuse.out))
			flags[i] |= WAS_EMPTY;
		tmm_guide_before_access(ctx, recs[i]);
		rc = tmm_recompute_make_resident(ctx, recs[i], need_data);
		if (rc < 0)
			goto fail;
	}
	/* A recomputation short of room may have swapped out tensors
	 * placed before it (placing.h): they come back now, with nothing
	 * deeper to take them again. */
	for (unsigned k = 0; k < n && placing; k++) {
		if (recs[k]->state == TMM_TS_RESIDENT)
			continue;
		rc = tmm_recompute_make_resident(ctx, recs[k],
						 NEEDS_DATA(op, flags, k));
		if (rc < 0)
			goto fail;
	}
	/* Read only now: placing a later tensor may have moved an earlier
	 * one. */
	end_placing(ctx, recs, n, &placing);
	for (i = 0; i < n; i++)
		ptrs[i] = recs[i]->dev;
	/* A collective still reducing a tensor of the op (its network part
	 * runs beside the compute stream) ends before the op's kernels
	 * read or write it; and a swap-out's copy that a back-access let
	 * go on (read_by) ends before they write it: an op that writes its
	 * input in place, as a collective does, would race with it. */
	for (i = 0; i < n; i++) {
		rc = i >= op->n_inputs
			     ? tmm_tensor_wait_readers(ctx, recs[i])
			     : tmm_tensor_wait_net(ctx, recs[i],
						   TMM_ENGINE_COMPUTE, false);
		if (rc < 0) {
			rc = tmm_fail(ctx, rc, "%s", be->error);
			goto fail;
		}
	}
	/* mode=uvm: the driver takes the kernels' faults now, after the
	 * fresh outputs' pages are made by a prefetch where that is
	 * faster. */
	if (ctx->mode == TMM_MODE_UVM) {
		for (i = op->n_inputs; i < n && rc == 0; i++)
			if ((flags[i] & WAS_EMPTY) && !NEEDS_DATA(op, flags, i))
				rc = tmm_uvm_prefetch_fresh(ctx, recs[i]);
		if (rc == 0)
			rc = tmm_uvm_touch_op(ctx, recs, op->n_inputs, n);
		if (rc < 0)
			goto fail;
	}

	/* The outputs' bytes change from here on, whatever happens next:
	 * no clean copy holds them any more (clean_copy.h). */
	for (i = op->n_inputs; i < n; i++)
		tmm_clean_stale(recs[i]);
	/* vDNN's offload runs beside the layer that reads the map last. */
	if (ctx->in_iteration && !parts)
		tmm_layer_sync_begin(ctx, op, recs, flags, n);
	start_ns = ctx->in_iteration ? be->ops->now_ns(be) : 0;
	tmm_tracker_op_kernels(ctx);
	if (parts) {
		/* TSPLIT: an output the plan swaps out at the op leaves as
		 * its rows are written. */
		tmm_split_stream_begin(ctx, op, recs, flags, parts,
				       &stream);
		rc = tmm_split_run(ctx, op, ptrs, parts, &reuse, &stream,
				   &ns);
		if (rc < 0)
			goto fail;
		goto ran;
	}
	rc = be->ops->kernel_begin(be, &op->cost);
	if (rc < 0) {
		rc = tmm_fail(ctx, rc, "%s", be->error);
		goto fail;
	}
	if (ctx->cfg.check) {
		rc = poison_outputs(ctx, op, recs, ptrs, flags);
		if (rc < 0)
			goto fail;
	}
	tmm_callback_begin(ctx, ctx->current_op, op->outputs, op->n_outputs,
			   &cb);
	rc = op->run ? op->run(ptrs, ptrs + op->n_inputs, op->user,
			       op_stream(be, op))
		     : 0;
	tmm_callback_end(ctx);
	if (rc != 0) {
		/* Close the bracket; the callback's error is what to report. */
		be->ops->kernel_end(be, &op->cost, &ns);
		rc = tmm_fail_callback(ctx, rc < 0 ? rc : -EIO, &cb,
				       "op '%s' failed: its run callback "
				       "returned %d (%s)", ctx->current_op,
				       rc, tmm_strerror(rc));
		settle_failed_collective(ctx, op, recs, n);
		goto fail;
	}
	rc = be->ops->kernel_end(be, &op->cost, &ns);
	if (rc < 0) {
		rc = tmm_fail(ctx, rc, "%s", be->error);
		settle_failed_collective(ctx, op, recs, n);
		goto fail;
	}
ran:
	if (op->kind == TMM_OP_COLLECTIVE) {
		rc = mark_net(ctx, recs, n);
		if (rc < 0)
			goto fail;
	}
	ctx->c.compute_ns += ns;
	ctx->c.ops++;
	ctx->c.accesses += n;
	tmm_stats_shm_op(ctx);
	for (i = 0; i < n; i++) {
		tmm_mover_touch(ctx, recs[i]);
		recs[i]->regenerated = false; /* used: an ordinary tensor */
		recs[i]->keep_regenerated = false;
	}
	if (!ctx->in_iteration) {
		/* Nothing is recorded or planned outside iterations; the
		 * outputs' bytes are new all the same. */
		for (i = op->n_inputs; i < n; i++) {
			if (recs[i]->version == 0)
				recs[i]->first_bytes_by_op = true;
			recs[i]->version++;
			recs[i]->producer_epoch = 0;
		}
		unpin(recs, n);
		tmm_mover_progress(ctx);
		return 0;
	}
	tmm_lineage_record(ctx, op, recs, flags, n);
	tmm_tracker_op(ctx, op, recs, flags, n, start_ns, ns,
		       ctx->c.stall_ns - stall_before, &first_access,
		       &n_accesses);
	if (parts && n_accesses)
		tmm_tracker_op_was_split(ctx);
	ctx->split_access = parts ? first_access : UINT32_MAX;
	ctx->split_evicted_access = UINT32_MAX;
	ctx->split_streamed = NULL;
	unpin(recs, n);
	tmm_split_finish(ctx, &reuse, first_access, true);
	rc = tmm_split_stream_finish(ctx, &stream, true);
	if (rc < 0)
		return rc;
	/* Ghosts brought back for this op give their memory back, now that
	 * what it overwrote has its new version (recompute.h). */
	tmm_recompute_reap(ctx, false);
	/* Step 5 of DESIGN.md's data flow: the plan's actions for these
	 * accesses, now that the op's tensors are free to move. */
	rc = tmm_guide_after_accesses(ctx, first_access, n_accesses);
	ctx->split_streamed = NULL; /* counted, or not in the plan */
	tmm_mover_progress(ctx);
	return rc;

fail:
	/* The copies into the streamed output's host buffer end first:
	 * the output may be released below. */
	tmm_split_stream_finish(ctx, &stream, false);
	tmm_layer_sync_abandon(ctx, false);
	/* An output that held nothing before holds nothing now; tensors
	 * that held bytes keep them where they are. */
	end_placing(ctx, recs, pinned, &placing);
	unpin(recs, pinned);
	for (unsigned j = 0; j < i && j < n; j++)
		if ((flags[j] & WAS_EMPTY) && !recs[j]->pins)
			tmm_mover_release(ctx, recs[j]);
	if (reuse.out && reuse.out->state != TMM_TS_EMPTY &&
	    !reuse.out->pins)
		tmm_mover_release(ctx, reuse.out); /* placed, never reached */
	tmm_split_finish(ctx, &reuse, first_access, false);
	return rc;
}
