/* SPDX-License-Identifier: MIT */
/*
 * uvm_way.c — mode=uvm's way of moving tensors and mode=auto's choice of
 * mode, from the device's rates (see uvm_way.h).
 *
 * Why a copy can win: on the H100 that was measured, cudaMemPrefetchAsync
 * to the host moved 8.7 GB/s and a pinned copy 55 (docs/gpu-h100.md), so
 * a tensor leaving by prefetch cost six times its copy.  Coming back, a
 * prefetch of host pages moved 49 GB/s, but a tensor that left by copy
 * has no host pages: a prefetch of its discarded range only makes fresh
 * device pages (90 GB/s there), which the copy then fills at 52.
 */
#include "uvm_way.h"

/* ns per byte of moving at `gbps`; `none` when the rate is unknown. */
static double per_byte(double gbps, double none)
{
	return gbps > 0 ? 1.0 / gbps : none;
}

/* The pinned round trip, in ns a byte: swap mode's way. */
static double pinned_ns_per_byte(const struct tmm_uvm_rates *r)
{
	return per_byte(r->d2h_gbps, 0) + per_byte(r->h2d_gbps, 0);
}

double tmm_uvm_copy_way_ns_per_byte(const struct tmm_uvm_rates *r)
{
	return per_byte(r->copy_d2h_gbps, per_byte(r->d2h_gbps, 0)) +
	       per_byte(r->copy_h2d_gbps, per_byte(r->h2d_gbps, 0)) +
	       per_byte(r->fresh_gbps, 0);
}

/* The prefetch round trip, in ns a byte; a prefetch's unknown rate is
 * the pinned one. */
static double prefetch_ns_per_byte(const struct tmm_uvm_rates *r)
{
	return per_byte(r->prefetch_d2h_gbps, per_byte(r->d2h_gbps, 0)) +
	       per_byte(r->prefetch_h2d_gbps, per_byte(r->h2d_gbps, 0));
}

bool tmm_uvm_way_copy(const struct tmm_uvm_rates *r,
		      enum tmm_uvm_swap_path asked)
{
	if (asked != TMM_UVM_PATH_AUTO)
		return asked == TMM_UVM_PATH_COPY || asked == TMM_UVM_PATH_MIX;
	/* The rates' choice, on a GPU too.  The H200 once ended a copy-way
	 * run with one bias tensor wrong (1 of 3, at 45de6ad), and auto took
	 * the prefetch on a GPU from 844ee9b to f15ab58.  Since the host
	 * reads such a tensor by a copy from its device pages (tmm_uvm_read)
	 * the same cell ran bit-identical 13 times of 13 there, and every
	 * other copy-way run too (docs/gpu-h200-goals.md). */
	return tmm_uvm_copy_way_ns_per_byte(r) <
	       0.95 * prefetch_ns_per_byte(r);
}

double tmm_uvm_move_cost_ratio(const struct tmm_uvm_rates *r, bool copy)
{
	double pinned = pinned_ns_per_byte(r);

	if (!(pinned > 0))
		return 1;
	if (copy)
		return tmm_uvm_copy_way_ns_per_byte(r) / pinned;
	if (!(r->prefetch_d2h_gbps > 0) || !(r->prefetch_h2d_gbps > 0))
		return 1;
	return prefetch_ns_per_byte(r) / pinned;
}

struct tmm_auto_mode_choice
tmm_auto_mode_choose(const struct tmm_auto_mode_facts *f)
{
	struct tmm_auto_mode_choice c = { .mode = TMM_MODE_SWAP };

	if (!f->concurrent_managed) {
		c.why = TMM_AUTO_WHY_NO_CONCURRENT;
		return c;
	}
	if (!f->budget_presses) {
		c.mode = TMM_MODE_UVM;
		c.why = TMM_AUTO_WHY_NO_PRESSURE;
		return c;
	}
	c.copy = tmm_uvm_way_copy(&f->rates, f->asked);
	if (c.copy && f->copies_block_host) {
		c.why = TMM_AUTO_WHY_HELD_COPIES;
		return c;
	}
	c.ratio = tmm_uvm_move_cost_ratio(&f->rates, c.copy);
	if (c.ratio <= TMM_AUTO_UVM_MOVE_COST_MAX) {
		c.mode = TMM_MODE_UVM;
		c.why = TMM_AUTO_WHY_CHEAP_MOVES;
	} else {
		c.why = TMM_AUTO_WHY_SLOW_MOVES;
	}
	return c;
}
