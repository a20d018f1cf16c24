/* SPDX-License-Identifier: MIT */
/*
 * uvm_path.c — mode=uvm's copy way out and back (see uvm_path.h).
 *
 * Why a copy: on the H100 that was measured, cudaMemPrefetchAsync to the
 * host moved 8.7 GB/s and a pinned copy 55 (docs/gpu-h100.md), so a
 * tensor leaving by prefetch cost six times its copy.  Coming back, a
 * prefetch of host pages moved 49 GB/s, but a tensor that left by copy
 * has no host pages: a prefetch of its discarded range only makes fresh
 * device pages (90 GB/s there), which the copy then fills at 52.
 *
 * The order of the steps is CUDA's: the copy out waits for the compute
 * that last wrote the tensor (an event), and the discard comes only once
 * the copy is seen complete; back in, the prefetch and the copy run on
 * one stream, in that order, and the compute that reads the tensor waits
 * for the copy's event like any swap-in's.
 */
#include <errno.h>

#include "uvm_path.h"
#include "clean_copy.h"
#include "device_mem.h"
#include "swap_engine.h"
#include "lib/mem/uvm_arena.h"

/* ns per byte of moving at `gbps`; `none` when the rate is unknown. */
static double per_byte(double gbps, double none)
{
	return gbps > 0 ? 1.0 / gbps : none;
}

bool tmm_uvm_path_copy(const struct tmm_device_info *info,
		       enum tmm_uvm_swap_path asked)
{
	double copy, prefetch;

	if (asked != TMM_UVM_PATH_AUTO)
		return asked == TMM_UVM_PATH_COPY;
	/* The rates' choice, on a GPU too.  The H200 once ended a copy-way
	 * run with one bias tensor wrong (1 of 3, at 45de6ad), and auto took
	 * the prefetch on a GPU from 844ee9b to f15ab58.  Since the host
	 * reads such a tensor by a copy from its device pages (tmm_uvm_read)
	 * the same cell ran bit-identical 13 times of 13 there, and every
	 * other copy-way run too (docs/gpu-h200-goals.md). */
	copy = tmm_uvm_copy_way_ns_per_byte(info);
	prefetch = per_byte(info->uvm_prefetch_d2h_gbps,
			    per_byte(info->d2h_gbps, 0)) +
		   per_byte(info->uvm_prefetch_h2d_gbps,
			    per_byte(info->h2d_gbps, 0));
	return copy < 0.95 * prefetch;
}

double tmm_uvm_copy_way_ns_per_byte(const struct tmm_device_info *info)
{
	return per_byte(info->d2h_gbps, 0) + per_byte(info->h2d_gbps, 0) +
	       per_byte(info->uvm_fresh_gbps, 0);
}

double tmm_uvm_move_cost_ratio(const struct tmm_device_info *info,
			       bool copy)
{
	double pinned = per_byte(info->d2h_gbps, 0) +
			per_byte(info->h2d_gbps, 0);

	if (!(pinned > 0))
		return 1;
	if (copy)
		return tmm_uvm_copy_way_ns_per_byte(info) / pinned;
	if (!(info->uvm_prefetch_d2h_gbps > 0) ||
	    !(info->uvm_prefetch_h2d_gbps > 0))
		return 1;
	return (per_byte(info->uvm_prefetch_d2h_gbps, 0) +
		per_byte(info->uvm_prefetch_h2d_gbps, 0)) /
	       pinned;
}

int tmm_uvm_copy_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	/* A range with its pages on the device (a kept block, whose last
	 * kernels the copy waits for below) is only written.  Else its
	 * pages are made first, after the discard of the way out, which
	 * the backend orders after the work on the range; the copy
	 * follows on the engine. */
	if (!tmm_uvm_arena_on_device(ctx->uvm_arena, t->dev, t->bytes)) {
		rc = be->ops->prefetch(be, TMM_ENGINE_H2D, t->dev, t->bytes,
				       TMM_LOC_DEVICE, -1);
		if (rc < 0)
			return tmm_mover_backend_error(ctx, rc);
		tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, true);
	}
	/* Retired early, its copy out may still be filling the host
	 * buffer: the copy back comes after compute, which waited for it
	 * (tmm_mover_retire_early), so its event is no longer needed. */
	be->ops->event_release(be, &t->copy);
	rc = tmm_mover_copy_after_compute(ctx, TMM_ENGINE_H2D, t->dev,
					  t->host, t->bytes, &t->copy);
	if (rc < 0)
		return rc;
	/* Its buffer may stay as its clean copy (clean_copy.h). */
	tmm_clean_note_swap_in(t);
	tmm_uvm_arriving(ctx, t);
	return 0;
}
