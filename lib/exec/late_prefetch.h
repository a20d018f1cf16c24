/* SPDX-License-Identifier: MIT */
/*
 * late_prefetch.h — which of a plan's prefetches came late, judged where
 * the compute runs (the feedback of Capuchin §4.4).
 *
 * A back-access that finds its prefetched tensor still arriving, as the
 * host sees it, is late only if the compute engine reaches that access
 * before the copy ends.  On the sim the two views are one clock.  On a
 * GPU the host runs ahead of the device: once the host stopped waiting
 * for evictions on the H200, auto's late prefetches rose from 8.2 to
 * 14.0 a step, and the feedback moved each of them earlier every
 * iteration, although the GPU may not have reached those accesses yet
 * (docs/gpu-h200.md).  So the compute engine's wait for the copy is
 * bracketed where it runs (the backend's engine_wait_timed) and read at
 * the iteration's end, when the host waits for the device anyway (the
 * op times are read then).  A wait longer than TMM_LATE_WAIT_NS is
 * late; its length is the compute time the prefetch cost.
 */
#ifndef TMM_LATE_PREFETCH_H
#define TMM_LATE_PREFETCH_H

#include <stdint.h>

#include "lib/core/context.h"

/*
 * Below this a measured wait is the cost of the two points that bracket
 * it (CUDA's event timestamps resolve about half a microsecond; recording
 * one costs the stream a few), not a copy still running.
 */
#define TMM_LATE_WAIT_NS 5000u

/*
 * Plan action `action` prefetched t, and t is accessed while its copy is
 * still in flight on the host's view: orders the compute engine after the
 * copy and notes the wait, measured, for tmm_late_prefetch_settle.  Where
 * the backend cannot measure it, or measuring fails, the access counts
 * as late at once, as the host sees it.
 */
void tmm_late_prefetch_note(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			    uint32_t action);

/*
 * The waits noted so far are read (the host waits for the last of them)
 * and those over TMM_LATE_WAIT_NS counted: the plan action's `late`, the
 * context's prefetch_late and prefetch_wait_ns.  Called when an iteration
 * ends, before the feedback moves late prefetches.  A wait that cannot
 * be read counts as late (the host's view) and is logged once.
 */
void tmm_late_prefetch_settle(struct tmm_ctx *ctx);

/* Lets go of the waits noted, unread (the guide is going away). */
void tmm_late_prefetch_forget(struct tmm_ctx *ctx);

#endif /* TMM_LATE_PREFETCH_H */
