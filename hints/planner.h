/*
 * planner.h — choosing a planner by name (TENSORMM_POLICY).
 *
 * Every planner is a pure function: one recorded iteration and the device
 * it will run on in, a plan out.  No CUDA, no globals, no I/O.
 */
#ifndef TMM_PLANNER_H
#define TMM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/io/plan.h"
#include "lib/io/trace.h"
#include "lib/base/tunables.h"

/* The device a plan is for: only what the planners may know of it. */
struct tmm_planner_device {
	uint64_t capacity;	   /* device memory, bytes */
	double h2d_gbps, d2h_gbps; /* host link, GB/s (1e9 bytes/s) */
	uint64_t copy_latency_ns;  /* fixed cost of one copy */
	uint64_t launch_ns;	   /* fixed cost of one op launch: what
				    * each micro-op of a split adds */
};

struct tmm_trial_device;

struct tmm_planner_input {
	const struct tmm_trace *trace; /* the measured iteration */
	uint64_t budget;	       /* device bytes the plan must fit in */
	struct tmm_planner_device device;
	/* A simulated device that plans can be tried on (lib/twin/trial.h), or
	 * NULL: a real device, or a trial already. */
	const struct tmm_trial_device *twin;
	enum tmm_auto_goal auto_goal; /* policy auto only */
};

/*
 * Makes the plan of policy `policy` into *out (initialised here).  Returns
 * 0, -EINVAL for an unknown policy (message in err), or -ENOMEM.
 */
int tmm_planner_make(const char *policy, const struct tmm_planner_input *in,
		     struct tmm_plan *out, char *err, size_t errlen);

#endif /* TMM_PLANNER_H */
