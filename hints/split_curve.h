/* SPDX-License-Identifier: MIT */
/*
 * split_curve.h — what splitting an op into micro-ops does to the memory
 * curve (TSPLIT §IV-B, Eq. 5), for the planners that split.
 *
 * A split op runs as `parts` micro-ops over row ranges of its sliced
 * tensors.  When the plan drops or swaps out the op's first tensor, a
 * sliced input, at the op's first access, the runtime lets that input go
 * slice by slice as the micro-ops finish with it (a swapped slice once
 * its copy to the host is complete), while the output grows a slice at a
 * time into the room (lib/exec/split.c).  So the op never holds all of both:
 * its accesses hold (parts - 1) / parts * min(size(in), size(out)) less
 * than the curve of whole tensors says.  Without that eviction the input
 * stays whole to the end of the op, and a split saves nothing: the model
 * says so too.
 *
 * Time, for the planners that price a split: a swapped input's copies
 * are queued as the parts end and waited for only when the output grows
 * into their rows (tmm_split_input_stall_ns).  A split op's output that
 * the plan swaps out at the op leaves part by part too
 * (lib/exec/split_stream.c): that lowers no curve (its rows stay until their
 * copies are over, as a swap-out's do), it only ends the swap earlier,
 * which plan_tsplit.c prices.
 */
#ifndef TMM_SPLIT_CURVE_H
#define TMM_SPLIT_CURVE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"

/* One split op. */
struct tmm_split {
	uint32_t first;	 /* the op's first access (the SPLIT's trigger) */
	uint32_t parts;	 /* micro-ops, 2 .. the op's rows */
	uint32_t input;	 /* trace tensor: the sliced input that shrinks */
	uint32_t output; /* trace tensor: the sliced output that grows */
};

/* Eq. 5: the bytes a split into `parts` saves at its op. */
uint64_t tmm_split_saving(const struct tmm_analysis *an,
			  const struct tmm_split *s);

/*
 * The sliced input and output of the op whose first access is `first`
 * that a split trades against each other, as the runtime picks them
 * (lib/exec/split.c): the op's first tensor, a sliced input made before the
 * op, and its first sliced output; and every output of the op is new.
 * False when the op cannot be split or has no such pair (a split would
 * then save nothing).
 */
bool tmm_split_pair(const struct tmm_analysis *an, uint32_t first,
		    uint32_t *input, uint32_t *output);

/* Whether evictions ev[0..n) drop or swap out s's input at s's first
 * access, which a split needs to save anything: the runtime reuses the
 * rows of an input that leaves there, and only of one that does. */
bool tmm_split_evicts_input(const struct tmm_analysis *an,
			    const struct tmm_split *s,
			    const struct tmm_eviction *ev, uint32_t n);

/*
 * The time a split op of `op_ns` (its micro-ops' compute, together)
 * waits for its input's copies to the host when the input is swapped out
 * at the op, on an idle copy engine, as the runtime runs it
 * (lib/exec/split.c): part k's rows are copied as it ends, and waited for
 * only before the output grows into them, the output starting D bytes
 * below the input (Eq. 5's lead: one part's output rows).  With rows of
 * one size every part waits for the copy of the part before (the sum of
 * the parts' copies, each paying the copy latency); an output with
 * smaller rows needs the input's rows later, and the copies run beside
 * the parts.  *copies_end: when the last copy ends, from the op's start.
 */
uint64_t tmm_split_input_stall_ns(const struct tmm_analysis *an,
				  const struct tmm_split *s, uint64_t op_ns,
				  uint64_t *copies_end);

/*
 * The memory curve of tmm_curve under evictions ev[0..n), lowered at each
 * op of splits sp[0..ns) whose input those evictions take at the op by
 * that split's saving.  Returns the peak; *peak_at (may be NULL) receives
 * its access.
 */
uint64_t tmm_curve_split(const struct tmm_analysis *an,
			 const struct tmm_eviction *ev, uint32_t n,
			 const struct tmm_split *sp, uint32_t ns,
			 uint64_t *curve, uint32_t *peak_at);

/*
 * tmm_emit with splits: the evictions' actions, a SPLIT per split, and
 * plan->predicted_peak and plan->fits from tmm_curve_split.  Returns 0
 * or -ENOMEM.
 */
int tmm_emit_split(const struct tmm_analysis *an,
		   const struct tmm_eviction *ev, uint32_t n,
		   const struct tmm_split *sp, uint32_t ns,
		   struct tmm_plan *plan);

#endif /* TMM_SPLIT_CURVE_H */
