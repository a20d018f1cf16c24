/* SPDX-License-Identifier: MIT */
/*
 * link_share.h — keeping a plan's copies off a link while a collective
 * saturates it (issue 26).
 *
 * Where the device's collectives cross the PCIe link that swaps use
 * (tmm_planner_device.net_shares_link), a swap-out or a prefetch that
 * runs while a collective (an op of kind TMM_OP_COLLECTIVE in the trace)
 * holds the link splits it: both take longer.  A collective holds it
 * after its arithmetic, for latency + net_bytes / net_gbps of the device
 * (its bytes cross beside the ops that follow), or for its traced time
 * where the device does not say its network's rate.  This pass moves each such
 * copy to the nearest trigger whose copy misses every collective, where
 * one exists within the copy's room: a prefetch still lands by its
 * back-access (or no later than it did), a swap-out still leaves before
 * its tensor's prefetch and next access, and where it holds its tensor
 * longer (a prefetch moved earlier, a swap-out later), the plan's own
 * memory curve (tmm_curve) has room for it under the target.  Layer-synchronous copies (TMM_ACT_SYNC) are
 * the policy's and stay.  Where the link is the device's own (NVLink),
 * the plan is left as it is.
 */
#ifndef TMM_LINK_SHARE_H
#define TMM_LINK_SHARE_H

#include "lib/io/plan.h"
#include "planner_input.h"

/*
 * Moves the triggers of p's copies off in->trace's collectives as above;
 * p is made for in->trace (its actions in any order).  Returns the number
 * of actions moved, or -ENOMEM (p is then as it was, or partly moved:
 * still a valid plan).
 */
int tmm_link_share_avoid(const struct tmm_planner_input *in,
			 struct tmm_plan *p);

#endif /* TMM_LINK_SHARE_H */
