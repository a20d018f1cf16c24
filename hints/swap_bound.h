/* SPDX-License-Identifier: MIT */
/*
 * swap_bound.h — the fewest bytes any plan must copy to and from the
 * device per step, under a budget, for a recorded iteration repeated step
 * after step.  Policy-free analysis: no plan is made, and the answer holds
 * for every plan of swaps, prefetches and drops (bench/bench_scaling
 * turns it into a lower bound on the step; a planner may use it to know
 * when no plan can do better).
 *
 * The model (swap_bound.c argues each step):
 *
 * - At each op, every tensor it accesses is wholly on the device, within
 *   the budget; the runtime holds an op to this (lib/exec/run.c).
 * - The tensors that outlive the step (made before the iteration and not
 *   destroyed in it: weights, optimizer state) are the ones whose bytes
 *   must be kept: one that is not on the device when an op reads it is
 *   loaded (host to device).  The ones made and destroyed within the step
 *   (activations, gradients, workspaces) take room only while an op
 *   accesses them: the bound takes them as dropped and made again for
 *   free the rest of the time (a relaxation: it only lowers the bound,
 *   which stays valid).  An op's write-only output needs no load.
 * - An access through a TSPLIT cut (trace access .slices) holds only a
 *   slice at a time, so it is not held to the above (a relaxation).
 * - Host to device: byte-granular Belady (MIN) over `passes` repetitions
 *   of the step, from the best possible content of the device at the
 *   start: the bytes whose next use is furthest leave first.  Any plan's
 *   steady step costs at least that over `passes` steps, divided by
 *   `passes`.
 * - Device to host: a kept tensor written in the step and away from the
 *   device before the value written is read again must have been copied
 *   out; the same Belady, counting the misses that imply one.
 *
 * Each is also at least the simple count of what cannot stay over the
 * step boundary: the read (or written) kept bytes less the budget.
 *
 * tmm_swap_bound_step turns the same counts into time: cut the step into
 * windows of ops; each window lasts at least its ops' compute, and at
 * least the copies it needs that cannot have been made before it began
 * over the link's rate; the step at least the sum over the windows.
 */
#ifndef TMM_SWAP_BOUND_H
#define TMM_SWAP_BOUND_H

#include <stdint.h>

#include "lib/io/trace.h"

/* Steps the bench repeats the trace over: the bound loses at most
 * about a budget's worth of bytes over all of them at the ends, so more
 * is tighter; the cost is linear. */
#define TMM_SWAP_BOUND_PASSES 8

/* The places tmm_swap_bound_step may cut a step at, evenly spread over
 * its ops: the best cutting among them is kept; the cost grows as the
 * square. */
#define TMM_SWAP_BOUND_CUTS 48

struct tmm_swap_bound {
	uint64_t kept;	    /* bytes of the tensors that outlive the step */
	double h2d_bytes;   /* per step, at least, whatever the plan */
	double d2h_bytes;   /* per step, at least, whatever the plan */
	/* The simple counts alone (kept bytes read, or written, less the
	 * budget; 0 where they fit), for comparison. */
	double h2d_simple, d2h_simple;
};

/*
 * Fills *b for trace t run step after step within `budget` device bytes,
 * Belady over `passes` (>= 1) repetitions.  Pure: reads t only.  Returns
 * 0, -EINVAL (t or b NULL, passes 0) or -ENOMEM.
 */
int tmm_swap_bound(const struct tmm_trace *t, uint64_t budget,
		   unsigned passes, struct tmm_swap_bound *b);

/*
 * A lower bound on one steady step of trace t within `budget` device
 * bytes, in ns, from its ops' times and the copies each window of ops
 * needs (point 6 of swap_bound.c), over links of h2d_gbps and d2h_gbps
 * (bytes per ns; 0: that way not counted).  op_ns[i] is the least time
 * op i of t takes under any plan (t->n_ops of them: the unconstrained
 * run's, where an op's algorithm depends on the room it has); NULL: the
 * trace's own times.  Pure: reads t and op_ns only.  Returns 0, -EINVAL
 * (t or ns NULL) or -ENOMEM.
 */
int tmm_swap_bound_step(const struct tmm_trace *t, const double *op_ns,
			uint64_t budget, double h2d_gbps, double d2h_gbps,
			double *ns);

#endif /* TMM_SWAP_BOUND_H */
