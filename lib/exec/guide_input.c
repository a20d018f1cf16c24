/* SPDX-License-Identifier: MIT */
/*
 * guide_input.c — what the guide hands the planners (guide_input.h): the
 * trace, the budget, the policies' tunables, the device as the backend
 * measured it, the rates the moves go at, and the twin's device.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guide_input.h"
#include "lib/core/context.h"

int tmm_guide_twin_device(const struct tmm_ctx *ctx,
			  struct tmm_trial_device *dev)
{
	if (!ctx->be.info.simulated || strcmp(ctx->be.ops->name, "sim") != 0)
		return -ENODEV;
	memset(dev, 0, sizeof(*dev));
	snprintf(dev->profile, sizeof(dev->profile), "%s",
		 ctx->cfg.sim_profile);
	dev->capacity = ctx->be.info.capacity;
	dev->budget = ctx->budget;
	dev->uvm = ctx->mode == TMM_MODE_UVM;
	dev->chunks = ctx->va_bytes != 0;
	dev->uvm_swap_path = (unsigned)ctx->cfg.uvm_swap_path;
	dev->uvm_fresh = (unsigned)ctx->cfg.uvm_fresh;
	dev->uvm_cap = (unsigned)ctx->cfg.uvm_cap;
	dev->uvm_keep = ctx->cfg.uvm_keep;
	dev->uvm_compact = ctx->cfg.uvm_compact;
	dev->liveness_discard = ctx->cfg.liveness_discard;
	dev->host_ahead = ctx->cfg.sim_host_ahead;
	/* The backend's: uvm_copier=kernel frees the host of them. */
	dev->managed_copy_held = ctx->be.info.managed_copies_block_host;
	/* ... and moves them at its own rate and cost, which a twin by the
	 * copy engines would not see (auto then took plans for them). */
	dev->copy_kernel = ctx->cfg.uvm_copier == TMM_UVM_COPIER_KERNEL;
	dev->copy_kernel_gbps = ctx->cfg.sim_copy_kernel_gbps;
	dev->copy_kernel_sm = ctx->cfg.sim_copy_kernel_sm;
	return 0;
}

struct tmm_planner_input tmm_guide_planner_input(const struct tmm_ctx *ctx,
						 const struct tmm_trace *t)
{
	const struct tmm_device_info *d = &ctx->be.info;

	struct tmm_planner_input in = {
		.trace = t,
		.budget = ctx->budget,
		.auto_goal = ctx->cfg.auto_goal,
		.auto_rungs = ctx->cfg.auto_rungs,
		.offload_idle = ctx->cfg.offload_idle,
		.tsplit_no_retry = !ctx->cfg.tsplit_retry,
		.liveness_discard = ctx->cfg.liveness_discard,
		.clean_copies = ctx->mode != TMM_MODE_UVM || ctx->uvm_copy_out,
		.prefetch_after_evictions = ctx->mode == TMM_MODE_UVM &&
					    d->prefetch_after_copies,
		.uvm_copies_serial = ctx->mode == TMM_MODE_UVM &&
				     ctx->uvm_copy_out &&
				     d->managed_copies_block_host,
		.device = { .capacity = d->capacity,
			    .h2d_gbps = d->h2d_gbps,
			    .d2h_gbps = d->d2h_gbps,
			    .copy_latency_ns = d->copy_latency_ns,
			    .launch_ns = d->launch_ns,
			    .net_shares_link = d->net_shares_link,
			    .net_gbps = d->net_gbps,
			    .net_latency_ns = d->net_latency_ns },
	};

	/* Where copies hold the host, mix asks for the swaps that fit by
	 * migration beside them (hints/uvm_mix.h). */
	if (in.uvm_copies_serial &&
	    ctx->cfg.uvm_swap_path == TMM_UVM_PATH_MIX) {
		in.migrate_h2d_gbps = d->uvm_prefetch_h2d_gbps;
		in.migrate_d2h_gbps = d->uvm_prefetch_d2h_gbps;
	}
	/* By the copy kernel (uvm_copier=kernel), the copy way's tensors
	 * leave and come back at its rates, measured at open: a few blocks
	 * reading over the link need not match a copy engine; and its
	 * blocks take their share of compute while they run. */
	if (ctx->mode == TMM_MODE_UVM && ctx->uvm_copy_out &&
	    !d->managed_copies_block_host) {
		in.moves_h2d_gbps = d->kernel_copy_h2d_gbps;
		in.moves_d2h_gbps = d->kernel_copy_d2h_gbps;
		in.moves_compute_share = d->kernel_copy_share;
	}
	/* By prefetch, tensors leave and come back at the managed rates
	 * (9.3-10.5 GB/s to the host on the H200, against 54 by pinned
	 * copy): what auto prices its candidates at (plan_auto.c). */
	if (ctx->mode == TMM_MODE_UVM && !ctx->uvm_copy_out) {
		in.moves_h2d_gbps = d->uvm_prefetch_h2d_gbps;
		in.moves_d2h_gbps = d->uvm_prefetch_d2h_gbps;
		in.read_mostly_frozen = ctx->cfg.uvm_read_mostly;
	}
	return in;
}

struct tmm_uvm_rates tmm_guide_uvm_rates(const struct tmm_device_info *d)
{
	return (struct tmm_uvm_rates){
		.h2d_gbps = d->h2d_gbps,
		.d2h_gbps = d->d2h_gbps,
		.prefetch_h2d_gbps = d->uvm_prefetch_h2d_gbps,
		.prefetch_d2h_gbps = d->uvm_prefetch_d2h_gbps,
		.fresh_gbps = d->uvm_fresh_gbps,
		.copy_h2d_gbps = d->kernel_copy_h2d_gbps,
		.copy_d2h_gbps = d->kernel_copy_d2h_gbps,
	};
}
