/* SPDX-License-Identifier: MIT */
/*
 * guide_input.h — what the guide hands the planners: a context's view of
 * the planner input (hints/planner_input.h) and of the twin's device.
 */
#ifndef TMM_GUIDE_INPUT_H
#define TMM_GUIDE_INPUT_H

#include "hints/planner.h"
#include "lib/io/trace.h"

struct tmm_ctx;

/* What the planners are given for iteration `t`: the budget, the
 * policies' tunables, what they may know of the device, and in mode=uvm
 * by prefetch the rates the moves go at (no twin: make_plan lends it). */
struct tmm_planner_input tmm_guide_planner_input(const struct tmm_ctx *ctx,
						 const struct tmm_trace *t);

/*
 * Fills *dev, the twin a plan for this context can be tried on, from a
 * context on the sim backend.  Returns 0, or -ENODEV when the context's
 * device is not simulated (no twin can be made).
 */
int tmm_guide_twin_device(const struct tmm_ctx *ctx,
			  struct tmm_trial_device *dev);

#endif /* TMM_GUIDE_INPUT_H */
