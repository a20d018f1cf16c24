/* SPDX-License-Identifier: MIT */
/*
 * split.c — running an op as micro-ops (TSPLIT §IV-B); see split.h.
 *
 * Each micro-op is its own kernel bracket with the op's cost scaled by
 * its share of the rows: on the simulator every bracket also pays the
 * profile's launch_ns, so a split op is slower by (parts - 1) launches,
 * as on a real GPU, and a planner that splits pays for it in the trace.
 *
 * The input's rows are freed only once nothing needs them on the device:
 * a dropped input's as soon as the part that read them ends, a swapped
 * input's once their copy to the host is known to be complete: the host
 * waits for a copy (the oldest ones first: the D2H engine runs them in
 * order) only when the output must grow into rows that it holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/guard.h"
#include "lib/record/guide_state.h"
#include "lib/move/mover.h"
#include "lib/mem/pool.h"
#include "recompute.h"
#include "split.h"
#include "split_stream.h"
#include "lib/base/xalloc.h"

static uint64_t align_down(uint64_t bytes)
{
	return bytes / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
}

static uint64_t align_up(uint64_t bytes)
{
	return align_down(bytes + TMM_POOL_ALIGN - 1);
}

int tmm_split_check_op(struct tmm_ctx *ctx, const tmm_op *op,
		       struct tmm_tensor_rec *const *recs)
{
	unsigned n = op->n_inputs + op->n_outputs;
	char label[64];

	if (op->run_slice && op->slice_extent < 1)
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has a run_slice callback "
				"but slice_extent 0; set slice_extent to the "
				"rows of its sliced tensors",
				ctx->current_op);
	if (op->slice_extent && !op->run_slice && !ctx->be.info.phantom)
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' has slice_extent %zu but no "
				"run_slice callback (only a phantom simulated "
				"device splits cost-only ops); set run_slice "
				"or leave slice_extent 0",
				ctx->current_op, op->slice_extent);
	for (unsigned i = 0; op->slice_extent && i < n; i++) {
		if (!tmm_split_sliced(op, i) ||
		    recs[i]->bytes % op->slice_extent == 0)
			continue;
		return tmm_fail(ctx, -EINVAL,
				"tmm_run: op '%s' cuts its %s %u (tensor %s, "
				"%llu bytes) into %zu rows, which do not "
				"divide its bytes; fix slice_extent or clear "
				"the tensor's flag in sliced",
				ctx->current_op,
				i < op->n_inputs ? "input" : "output",
				i < op->n_inputs ? i : i - op->n_inputs,
				tmm_tensor_label(recs[i], label,
						 sizeof(label)),
				(unsigned long long)recs[i]->bytes,
				op->slice_extent);
	}
	return 0;
}

uint32_t tmm_split_parts(struct tmm_ctx *ctx, const tmm_op *op,
			 const struct tmm_tensor_rec *first,
			 enum tmm_split_evict *evicts_first)
{
	uint32_t parts;

	*evicts_first = TMM_SPLIT_KEEPS_INPUT;
	if (op->slice_extent < 2 || (!op->run_slice && op->run))
		return 0;
	parts = tmm_guide_split_parts(ctx, first, evicts_first);
	if (parts < 2) {
		/* An eviction with no split is the guide's, after the op. */
		*evicts_first = TMM_SPLIT_KEEPS_INPUT;
		return 0;
	}
	/* The plan was made from an earlier iteration: an op that has
	 * fewer rows now is cut into as many as it has. */
	if (parts > op->slice_extent)
		parts = (uint32_t)op->slice_extent;
	if (ctx->mode == TMM_MODE_UVM && !ctx->split_uvm_noted) {
		/* The micro-ops run over the managed tensors all the same;
		 * only the slice-by-slice eviction is swap mode's. */
		ctx->split_uvm_noted = true;
		tmm_log(ctx, TMM_LOG_INFO,
			"mode=uvm: split ops run as micro-ops, but their "
			"inputs are evicted whole after the op");
	}
	return parts;
}

void tmm_split_range(uint64_t extent, uint32_t parts, uint32_t k,
		     uint64_t *begin, uint64_t *end)
{
	uint64_t base = extent / parts, extra = extent % parts;

	*begin = k * base + (k < extra ? k : extra);
	*end = *begin + base + (k < extra ? 1 : 0);
}

/* Could t be dropped if this op did not hold it?  The question leaves
 * the program's last message as it was. */
static bool droppable_but_for_this_op(struct tmm_ctx *ctx,
				      struct tmm_tensor_rec *t)
{
	char saved[sizeof(ctx->error)];
	bool ok;

	memcpy(saved, ctx->error, sizeof(saved));
	t->pins--;
	ok = tmm_recompute_check(ctx, t) == 0;
	t->pins++;
	memcpy(ctx->error, saved, sizeof(saved));
	return ok;
}

/* D of Eq. 5: before part k writes its rows, the output's block must
 * reach past them, into no input row that part k has yet to read. */
static uint64_t output_lead(const struct tmm_split_reuse *r, uint64_t extent,
			    uint32_t parts)
{
	uint64_t lead = TMM_POOL_ALIGN;

	for (uint32_t k = 0; k < parts; k++) {
		uint64_t begin, end, written, freed;

		tmm_split_range(extent, parts, k, &begin, &end);
		written = align_up(end * r->out_row);
		freed = align_down(begin * r->in_row);
		if (written > freed && written - freed > lead)
			lead = written - freed;
	}
	return align_up(lead);
}

uint64_t tmm_split_need_less(struct tmm_ctx *ctx, const tmm_op *op,
			     struct tmm_tensor_rec *const *recs,
			     uint32_t parts, enum tmm_split_evict how)
{
	struct tmm_split_reuse r = { 0 };
	struct tmm_tensor_rec *out = NULL;
	uint64_t whole, need = 0, lead;

	if (op->slice_extent < 2 || !op->n_inputs || !tmm_split_sliced(op, 0) ||
	    ctx->mode == TMM_MODE_UVM)
		return 0;
	for (unsigned i = op->n_inputs; !out && i < op->n_inputs + op->n_outputs;
	     i++)
		if (tmm_split_sliced(op, i) && recs[i] != recs[0])
			out = recs[i];
	if (!out)
		return 0;
	whole = tmm_mover_footprint(ctx, out->bytes);
	if (ctx->rehearsal) {
		/* The op's tensors together, less what brings them to the
		 * budget. */
		for (unsigned i = 0; i < op->n_inputs + op->n_outputs; i++)
			need += tmm_mover_footprint(ctx, recs[i]->bytes);
		return need > ctx->budget ? need - ctx->budget : 0;
	}
	if (parts < 2 || how == TMM_SPLIT_KEEPS_INPUT)
		return 0;
	r.in_row = recs[0]->bytes / op->slice_extent;
	r.out_row = out->bytes / op->slice_extent;
	lead = output_lead(&r, op->slice_extent, parts);
	return whole > lead ? whole - lead : 0;
}

void tmm_split_place_output(struct tmm_ctx *ctx, const tmm_op *op,
			    struct tmm_tensor_rec *const *recs,
			    uint32_t *parts, enum tmm_split_evict how,
			    struct tmm_split_reuse *r)
{
	uint32_t planned = *parts;
	struct tmm_tensor_rec *in = recs[0], *out = NULL;
	unsigned n = op->n_inputs + op->n_outputs;
	bool whole_fits;
	uint64_t offset;

	memset(r, 0, sizeof(*r));
	if (*parts < 2 || how == TMM_SPLIT_KEEPS_INPUT ||
	    ctx->mode == TMM_MODE_UVM || !op->n_inputs ||
	    !tmm_split_sliced(op, 0) || in->state != TMM_TS_RESIDENT ||
	    in->pins != 1 || in->acquires || !in->block)
		return;
	/* Outputs that held nothing cannot be what the input's
	 * recomputation reads, nor the input itself, nor hold bytes that
	 * the output's first rows would overwrite. */
	for (unsigned i = op->n_inputs; i < n; i++) {
		if (recs[i]->state != TMM_TS_EMPTY)
			return;
		if (!out && tmm_split_sliced(op, i))
			out = recs[i];
	}
	if (!out)
		return;
	if (how == TMM_SPLIT_DROPS_INPUT
		    ? !droppable_but_for_this_op(ctx, in)
		    : !tmm_mover_swap_out_take_host(ctx, in))
		return;
	r->in_row = in->bytes / op->slice_extent;
	r->out_row = out->bytes / op->slice_extent;
	offset = in->block->offset;
	/* The free space right below the input may hold the lead of more
	 * parts than the plan asked for, not of as many: the smaller
	 * micro-ops cost launches, a fallback costs the whole output.
	 * Where the pool has room for it now, the whole output costs
	 * nothing more, and more parts would cost launches (with the host
	 * ahead of its device the space below is often a bias's few KiB:
	 * 2048 parts, before). */
	whole_fits = tmm_pool_fits(ctx->pool, out->bytes);
	for (;;) {
		r->lead = output_lead(r, op->slice_extent, *parts);
		if (offset >= r->lead &&
		    tmm_mover_place_at(ctx, out, offset - r->lead, r->lead) == 0)
			break;
		if (whole_fits || *parts >= TMM_SPLIT_MAX_PARTS ||
		    2 * (uint64_t)*parts > op->slice_extent ||
		    r->lead <= TMM_POOL_ALIGN) {
			r->lead = 0;
			break;
		}
		*parts *= 2;
	}
	if (!r->lead) {
		/* The space below the input is taken: the output goes
		 * wherever tmm_run puts it, whole. */
		*parts = planned;
		if (how == TMM_SPLIT_SWAPS_INPUT)
			tmm_mover_swap_out_cancel(ctx, in);
		ctx->c.split_fallbacks++;
		return;
	}
	r->in = in;
	r->out = out;
	r->how = how;
	/* Without room to note the copies, each is waited for at once. */
	if (how == TMM_SPLIT_SWAPS_INPUT)
		r->copies = tmm_calloc(*parts, sizeof(*r->copies));
}

/* The input gives back its whole aligned rows below `bytes`. */
static void trim_input(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		       uint64_t bytes)
{
	uint64_t freed = align_down(bytes);

	if (freed <= r->trimmed ||
	    freed - r->trimmed >= r->in->block->size)
		return; /* the last rows go with the eviction */
	/* Without a record to free them, the rows stay until the
	 * eviction; the output's next growth then reports it. */
	if (tmm_pool_trim(ctx->pool, r->in->block, freed - r->trimmed) == 0)
		r->trimmed = freed;
}

/* Swapped: waits for the queued copies, oldest first, until bytes
 * [0, bytes) of the input are on the host (all of them: UINT64_MAX). */
static int wait_copies(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		       uint64_t bytes)
{
	while (r->copies && r->waited < r->n_copies && r->copied < bytes) {
		struct tmm_split_copy *c = &r->copies[r->waited++];
		int rc = tmm_mover_swap_out_wait(ctx, &c->done);

		if (rc < 0)
			return rc;
		r->copied = c->end;
	}
	return 0;
}

/* The copies' records go; a copy still not waited for (after a backend
 * error) is waited for first, so that nothing reads the host buffer once
 * it is given back. */
static void forget_copies(struct tmm_ctx *ctx, struct tmm_split_reuse *r)
{
	while (r->copies && r->waited < r->n_copies)
		tmm_mover_swap_out_wait(ctx, &r->copies[r->waited++].done);
	free(r->copies);
	r->copies = NULL;
}

/* Before part k: the output's block covers the rows it will write,
 * which the input must have given back first: a swapped input's once
 * their copy is complete. */
static int grow_output(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		       uint64_t end)
{
	uint64_t want = align_up(end * r->out_row);
	int rc;

	if (want < r->lead || want <= r->out->block->size)
		return 0;
	if (r->how == TMM_SPLIT_SWAPS_INPUT &&
	    r->trimmed < want - r->lead) {
		rc = wait_copies(ctx, r, want - r->lead);
		if (rc < 0)
			return rc;
		trim_input(ctx, r, r->copied);
	}
	if (tmm_pool_extend(ctx->pool, r->out->block,
			    want - r->out->block->size) < 0)
		return tmm_fail(ctx, -ENOMEM,
				"op '%s': its output could not grow into the "
				"rows its input gave back (out of host "
				"memory for the pool's records?)",
				ctx->current_op);
	return 0;
}

/* Swapped: queues the copy of the input's bytes [r->issued, end) to the
 * host, noted to be waited for when its rows are needed; without room
 * to note it, waited for now. */
static int queue_copy(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		      uint64_t end)
{
	struct tmm_split_copy *c;
	int rc;

	if (end <= r->issued)
		return 0;
	if (!r->copies) {
		rc = tmm_mover_swap_out_piece(ctx, r->in, r->issued,
					      end - r->issued);
		if (rc == 0)
			r->issued = r->copied = end;
		return rc;
	}
	c = &r->copies[r->n_copies];
	c->done = (tmm_event){ 0 };
	rc = tmm_mover_swap_out_piece_async(ctx, r->in, r->issued,
					    end - r->issued, &c->done);
	if (rc < 0)
		return rc;
	c->end = end;
	r->n_copies++;
	r->issued = end;
	return 0;
}

/* After part k: the rows [0, end) of the input have been read.  A
 * dropped input's are given back; a swapped input's copy is queued, and
 * its rows wait for it. */
static int input_done_with(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
			   uint64_t end)
{
	uint64_t read = end * r->in_row;

	if (r->how == TMM_SPLIT_SWAPS_INPUT)
		return queue_copy(ctx, r, read);
	trim_input(ctx, r, read);
	return 0;
}

/* After the op: the input, dropped row by row, is dropped. */
static int finish_drop(struct tmm_ctx *ctx, struct tmm_split_reuse *r)
{
	char label[64];
	int rc = tmm_recompute_drop(ctx, r->in);

	if (rc == 0)
		return 0;
	/* Checked before the op: only a broken invariant ends here. */
	tmm_log(ctx, TMM_LOG_ERROR,
		"op '%s': tensor %s gave its rows back to the pool but could "
		"not be dropped: %s",
		ctx->current_op, tmm_tensor_label(r->in, label, sizeof(label)),
		ctx->error);
	return rc;
}

/* After the op, or after it failed part way: the input, swapped row by
 * row, has its last rows copied and is HOST.  The op's own message, if
 * it failed, stays the program's last. */
static int finish_swap(struct tmm_ctx *ctx, struct tmm_split_reuse *r)
{
	struct tmm_tensor_rec *in = r->in;
	char saved[sizeof(ctx->error)], label[64];
	int rc;

	memcpy(saved, ctx->error, sizeof(saved));
	rc = wait_copies(ctx, r, UINT64_MAX);
	if (rc == 0)
		rc = tmm_mover_swap_out_piece(ctx, in, r->copied,
					      in->bytes - r->copied);
	if (rc == 0) {
		tmm_mover_swap_out_end(ctx, in);
		return 0;
	}
	/* Its front rows now hold the output's: with the rest not on the
	 * host, nothing holds its bytes.  Say so, and let a later read
	 * fail rather than return what the output left there. */
	tmm_log(ctx, TMM_LOG_ERROR,
		"op '%s': tensor %s gave its first rows to the op's output "
		"but the rest could not be copied to the host (%s); its bytes "
		"are lost",
		ctx->current_op, tmm_tensor_label(in, label, sizeof(label)),
		ctx->error);
	memcpy(ctx->error, saved, sizeof(saved));
	forget_copies(ctx, r);
	tmm_mover_release(ctx, in);
	return rc;
}

void tmm_split_finish(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		      uint32_t first_access, bool succeeded)
{
	int rc;

	if (!r->in)
		return;
	if (!succeeded && !r->trimmed) {
		/* Whole still: the input stays as it was. */
		if (r->how == TMM_SPLIT_SWAPS_INPUT) {
			forget_copies(ctx, r);
			tmm_mover_swap_out_cancel(ctx, r->in);
		}
		return;
	}
	rc = r->how == TMM_SPLIT_DROPS_INPUT ? finish_drop(ctx, r)
					     : finish_swap(ctx, r);
	forget_copies(ctx, r);
	if (rc == 0 && succeeded)
		ctx->split_evicted_access = first_access;
}

int tmm_split_run(struct tmm_ctx *ctx, const tmm_op *op, void *const *ptrs,
		  uint32_t parts, struct tmm_split_reuse *r,
		  struct tmm_split_stream *s, uint64_t *ns)
{
	struct tmm_backend *be = &ctx->be;
	struct tmm_callback_frame cb;
	int rc;

	for (uint32_t k = 0; k < parts; k++) {
		uint64_t begin, end, part_ns = 0;
		double share;
		struct tmm_cost cost;

		tmm_split_range(op->slice_extent, parts, k, &begin, &end);
		if (r->in) {
			rc = grow_output(ctx, r, end);
			if (rc < 0)
				return rc;
		}
		share = (double)(end - begin) / (double)op->slice_extent;
		cost = (struct tmm_cost){ .flops = op->cost.flops * share,
					  .bytes = op->cost.bytes * share };
		rc = be->ops->kernel_begin(be, &cost);
		if (rc < 0)
			return tmm_fail(ctx, rc, "%s", be->error);
		tmm_callback_begin(ctx, ctx->current_op, op->outputs,
				   op->n_outputs, &cb);
		rc = op->run_slice
			     ? op->run_slice(ptrs, ptrs + op->n_inputs,
					     (size_t)begin, (size_t)end,
					     op->user, be->ops->compute_stream(be))
			     : 0;
		tmm_callback_end(ctx);
		if (rc != 0) {
			be->ops->kernel_end(be, &cost, &part_ns);
			return tmm_fail_callback(
				ctx, rc < 0 ? rc : -EIO, &cb,
				"op '%s' failed: its run_slice callback "
				"returned %d (%s) on rows [%llu, %llu)",
				ctx->current_op, rc, tmm_strerror(rc),
				(unsigned long long)begin,
				(unsigned long long)end);
		}
		rc = be->ops->kernel_end(be, &cost, &part_ns);
		if (rc < 0)
			return tmm_fail(ctx, rc, "%s", be->error);
		*ns += part_ns;
		ctx->c.micro_ops++;
		if (r->in) {
			rc = input_done_with(ctx, r, end);
			if (rc < 0)
				return rc;
		}
		/* After the input's copy: that one is waited for, this
		 * one runs beside the next part. */
		if (s->out) {
			rc = tmm_split_stream_rows(ctx, s, end);
			if (rc < 0)
				return rc;
		}
	}
	ctx->c.split_ops++;
	return 0;
}
