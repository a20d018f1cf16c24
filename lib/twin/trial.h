/* SPDX-License-Identifier: MIT */
/*
 * trial.h — trying a plan on a virtual twin of the device.
 *
 * A forecast (hints/plan_forecast.h) is a model, and models miss things
 * the runtime does: the pool's holes and placement, compaction, the order
 * in which passive mode picks victims, copies that queue behind each other.
 * When the device is the simulator, nothing is cheaper than the runtime
 * itself: a trial replays a recorded iteration through a private context
 * on the same simulated profile with phantom memory (sizes and times, no
 * bytes), measured in passive mode first as the real run was and then
 * guided by the plan, and reports what
 * actually happened.  The `auto` policy uses it to pick between plans,
 * through the table of hints/planner.h (struct tmm_twin_ops), so that the
 * planners never call into lib/.
 *
 * The replay is the trace's: its tensors made before the iteration are
 * created and written first; in the iteration, tensors are created in the
 * order that gave them their keys, each op runs cost-only with its
 * recorded inputs, outputs, kind, flags and cost hint, a direct access is
 * an acquire and release, and a tensor the program freed is destroyed at
 * the first op that began after it was freed.  The plan's keys are
 * translated to the twin's handles.
 */
#ifndef TMM_TRIAL_H
#define TMM_TRIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hints/planner.h"
#include "lib/io/plan.h"
#include "lib/io/trace.h"

struct tmm_ctx;

/* The trial service that tmm_ctx_create lends every context's planners
 * (lib/root/ctx_create.c); its run is tmm_trial_run. */
extern const struct tmm_twin_ops tmm_twin_ops;

/*
 * Fills *dev from a context on the sim backend.  Returns 0, or -ENODEV
 * when the context's device is not simulated (no twin can be made).
 */
int tmm_trial_device_of(const struct tmm_ctx *ctx,
			struct tmm_trial_device *dev);

/*
 * Replays trace t three times on a twin of dev, the last two under plan p
 * (made for t), and fills *r (free it with tmm_trial_result_free).
 * Returns 0, or a negative errno when the twin could not run (-ENOMEM,
 * or an op of the trace did not fit the budget at all: r->trained is
 * false then).
 */
int tmm_trial_run(const struct tmm_trial_device *dev,
		  const struct tmm_trace *t, const struct tmm_plan *p,
		  struct tmm_trial_result *r);

#endif /* TMM_TRIAL_H */
