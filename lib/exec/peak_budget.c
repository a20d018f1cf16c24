/* SPDX-License-Identifier: MIT */
/*
 * peak_budget.c — budget=N%peak: a budget that is a share of what the
 * program needs, not of the device (see peak_budget.h).
 *
 * Users think of memory pressure as "this model at 40% of its peak"; the
 * benchmarks and examples measured the peak in a run of their own and
 * wrote the bytes into a second one.  Here the first iteration runs with
 * the whole device budget, which measures the peak, and the budget drops
 * to its share before the plan of the next iterations is made, by the
 * same way a shared device's budget moves (gpu_share.c): the pool's limit
 * (in uvm mode the driver's, or with uvm_cap=library the library's
 * count of pages) goes down and what is over it is evicted.  A share
 * below what the largest op needs could run nothing, so the budget stops
 * there, with a warning that names the knob.
 */
#include <stdio.h>

#include "peak_budget.h"
#include "lib/mem/pool.h"
#include "lib/move/mover.h"

bool tmm_peak_budget_apply(struct tmm_ctx *ctx)
{
	struct tmm_pool_stats ps;
	uint64_t peak, target, before = ctx->budget;
	char b1[32], b2[32], b3[32];
	int rc;

	if (!ctx->cfg.budget.of_peak || ctx->peak_budget_set)
		return false;
	ctx->peak_budget_set = true;
	/* In mode=uvm, the peak of what holds the budget: the driver's
	 * pages, or with uvm_cap=library the library's count (CUDA's
	 * driver reports none). */
	if (ctx->mode == TMM_MODE_UVM &&
	    ctx->cfg.uvm_cap == TMM_UVM_CAP_LIBRARY) {
		peak = ctx->uvm_held_peak;
	} else if (ctx->mode == TMM_MODE_UVM) {
		peak = ctx->c.uvm_resident_peak;
	} else {
		tmm_pool_get_stats(ctx->pool, &ps);
		peak = ps.peak;
	}
	target = (uint64_t)((long double)peak * ctx->cfg.budget.percent /
			    100);
	target -= target % TMM_POOL_ALIGN;
	if (target < ctx->largest_op_need) {
		tmm_log(ctx, TMM_LOG_WARN,
			"budget=%g%%peak: %s of the first iteration's %s peak "
			"is less than its largest op needs; the budget is %s, "
			"that op's need (raise the percentage, or split the "
			"op)", ctx->cfg.budget.percent,
			tmm_fmt_bytes(target, b1, sizeof(b1)),
			tmm_fmt_bytes(peak, b2, sizeof(b2)),
			tmm_fmt_bytes(ctx->largest_op_need, b3, sizeof(b3)));
		target = ctx->largest_op_need;
	}
	if (target >= before || target == 0)
		return false;
	/* Tensors an acquire pins stay (-EBUSY): the limit holds, and the
	 * next allocations evict down to it. */
	rc = tmm_mover_set_limit(ctx, target);
	if (rc < 0 && rc != -EBUSY)
		tmm_log(ctx, TMM_LOG_WARN, "%s", ctx->error);
	ctx->budget = target;
	tmm_log(ctx, TMM_LOG_INFO,
		"budget=%g%%peak: the first iteration peaked at %s, so the "
		"budget is %s (was %s)", ctx->cfg.budget.percent,
		tmm_fmt_bytes(peak, b1, sizeof(b1)),
		tmm_fmt_bytes(target, b2, sizeof(b2)),
		tmm_fmt_bytes(before, b3, sizeof(b3)));
	return true;
}
