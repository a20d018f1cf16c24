/* SPDX-License-Identifier: MIT */
/*
 * guide_input.h — what the guide hands the planners: a context's view of
 * the planner input (hints/planner_input.h), of the twin's device, and of
 * the rates mode=uvm's ways move at (hints/uvm_way.h).
 */
#ifndef TMM_GUIDE_INPUT_H
#define TMM_GUIDE_INPUT_H

#include "hints/planner.h"
#include "lib/backend/backend.h"
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

/* The rates of mode=uvm's two ways on device d, as measured at its open
 * (on the simulator, its profile's). */
struct tmm_uvm_rates tmm_guide_uvm_rates(const struct tmm_device_info *d);

#endif /* TMM_GUIDE_INPUT_H */
