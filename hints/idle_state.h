/* SPDX-License-Identifier: MIT */
/*
 * idle_state.h — persistent state that sits idle across the step
 * boundary, swapped out for the time it is idle (offload_idle).
 *
 * Beyond the papers.  Weights and optimizer state live across
 * iterations, and the paper planners leave them on the device: each
 * plans feature maps.  But some of that state is idle over most of a
 * step.  The momentum of a layer is touched once a step, by the layer's
 * update; the weights of a late layer are read by its forward op near
 * the end of the forward pass and not again until its backward, early in
 * the next backward pass, so from their update to the next step's
 * forward they are idle across the whole start of the forward.  Where
 * the memory curve is over the target while such a tensor idles, it is
 * worth a copy out after its last access of the step and a prefetch
 * before its first access of the next, which is what ZeRO-Offload does
 * by hand with the optimizer state (Ren et al., USENIX ATC 2021).
 *
 * tmm_idle_state adds those swaps to a planner's eviction set before it
 * plans the feature maps, as tmm_liveness does for tensors idle until
 * their destruction, so the planner sees the memory they leave.
 */
#ifndef TMM_IDLE_STATE_H
#define TMM_IDLE_STATE_H

#include "analysis.h"

/*
 * When an->offload_idle is set (the offload_idle tunable, or policy
 * auto's variant of a candidate), adds to set, for each tensor made
 * before the iteration, alive after it, and whose bytes before its first
 * access are wanted (not tmm_made_fresh):
 *   - a swap-out with no back-access after its last access, and
 *   - a prefetch for its first access, out since the iteration began
 *     (evict = TMM_TRACE_NONE; lib/io/plan.h, across iterations),
 * where the idle time across the boundary holds both copies four times
 * over (the link carries the plan's other swaps too), the prefetch can
 * land after the iteration begins, and the curve is over the target
 * somewhere while the tensor is away.  Returns 0 or -ENOMEM; adds
 * nothing when an->offload_idle is clear.
 */
int tmm_idle_state(const struct tmm_analysis *an,
		   struct tmm_eviction_set *set);

/*
 * Whether tmm_idle_state would move any tensor for an analysis like an
 * with offload_idle set (an->offload_idle itself is not read).  Policy
 * auto asks before it makes a variant that would be its base plan
 * again.  A planner whose target is the same or higher (one margin,
 * tmm_analysis_one_margin) moves nothing where this says no.
 */
bool tmm_idle_state_any(const struct tmm_analysis *an);

#endif /* TMM_IDLE_STATE_H */
