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
 * actually happened.  The `auto` policy uses it to pick between plans.
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

#include "lib/io/plan.h"
#include "lib/io/trace.h"

struct tmm_ctx;

/* The device a trial runs on: a copy of the context's simulated one. */
struct tmm_trial_device {
	char profile[48];  /* sim profile name */
	uint64_t capacity; /* sim capacity, bytes */
	uint64_t budget;   /* bytes the plan must fit in */
	bool uvm;	   /* mode=uvm, else swap */
};

/* A passive eviction in a guided iteration: which tensor had to leave,
 * and for the op at which access. */
struct tmm_trial_eviction {
	uint32_t tensor; /* index in the trace that was replayed */
	uint32_t access; /* the first access of the op that needed room */
};

struct tmm_trial_result {
	bool trained;		    /* no passive eviction, no divergence */
	uint64_t passive_evictions; /* in the guided iterations */
	uint64_t divergences;
	uint64_t iteration_ns;	    /* the last iteration, simulated */
	uint64_t device_peak;
	/* The guided iterations' passive evictions, in order (what a plan
	 * would have to schedule to need none; see hints/plan_repair.h):
	 * passive_evictions of them, less any of a tensor the trace does
	 * not list.  Freed by tmm_trial_result_free. */
	struct tmm_trial_eviction *evicted;
	uint32_t n_evicted;
};

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

/* Frees what tmm_trial_run allocated in *r (r->evicted); r stays
 * usable, with no evictions listed. */
void tmm_trial_result_free(struct tmm_trial_result *r);

#endif /* TMM_TRIAL_H */
