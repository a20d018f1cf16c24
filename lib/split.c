/*
 * split.c — running an op as micro-ops (TSPLIT §IV-B); see split.h.
 *
 * Each micro-op is its own kernel bracket with the op's cost scaled by
 * its share of the rows: on the simulator every bracket also pays the
 * profile's launch_ns, so a split op is slower by (parts - 1) launches,
 * as on a real GPU, and a planner that splits pays for it in the trace.
 */
#include <errno.h>

#include "guide.h"
#include "split.h"

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
			 const struct tmm_tensor_rec *first)
{
	uint32_t parts;

	if (op->slice_extent < 2 || (!op->run_slice && op->run))
		return 0;
	parts = tmm_guide_split_parts(ctx, first);
	if (parts < 2)
		return 0;
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

int tmm_split_run(struct tmm_ctx *ctx, const tmm_op *op, void *const *ptrs,
		  uint32_t parts, uint64_t *ns)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	for (uint32_t k = 0; k < parts; k++) {
		uint64_t begin, end, part_ns = 0;
		double share;
		struct tmm_cost cost;

		tmm_split_range(op->slice_extent, parts, k, &begin, &end);
		share = (double)(end - begin) / (double)op->slice_extent;
		cost = (struct tmm_cost){ op->cost.flops * share,
					  op->cost.bytes * share };
		rc = be->ops->kernel_begin(be, &cost);
		if (rc < 0)
			return tmm_fail(ctx, rc, "%s", be->error);
		rc = op->run_slice
			     ? op->run_slice(ptrs, ptrs + op->n_inputs,
					     (size_t)begin, (size_t)end,
					     op->user, be->ops->compute_stream(be))
			     : 0;
		if (rc != 0) {
			be->ops->kernel_end(be, &cost, &part_ns);
			return tmm_fail(ctx, rc < 0 ? rc : -EIO,
					"op '%s' failed: its run_slice "
					"callback returned %d (%s) on rows "
					"[%llu, %llu)",
					ctx->current_op, rc, tmm_strerror(rc),
					(unsigned long long)begin,
					(unsigned long long)end);
		}
		rc = be->ops->kernel_end(be, &cost, &part_ns);
		if (rc < 0)
			return tmm_fail(ctx, rc, "%s", be->error);
		*ns += part_ns;
		ctx->c.micro_ops++;
	}
	ctx->c.split_ops++;
	return 0;
}
