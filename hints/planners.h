/* SPDX-License-Identifier: MIT */
/*
 * planners.h — the planners, one plan_*.c each (passive and none share
 * plan_none.c); policies.c runs them by name.
 *
 * Each makes the plan of one policy into *out (initialised by it) from
 * in->trace, in->device and in->budget: a pure function, no I/O.  Each
 * returns 0 or -ENOMEM, and sets out->fits and out->predicted_peak.
 */
#ifndef TMM_PLANNERS_H
#define TMM_PLANNERS_H

#include "lib/io/plan.h"
#include "planner_input.h"

/* passive: no action at all (passive mode; in uvm mode, the driver). */
/* A planner. */
typedef int tmm_planner_fn(const struct tmm_planner_input *in,
			   struct tmm_plan *out);

int tmm_plan_passive(const struct tmm_planner_input *in,
		     struct tmm_plan *out);

/* none: liveness only: a tensor the program keeps after its last access
 * is swapped out there when memory is short. */
int tmm_plan_none(const struct tmm_planner_input *in, struct tmm_plan *out);

/* vDNN (Rhu et al., MICRO '16): offload the inputs of convolutions, or
 * of every layer, in the forward pass; prefetch one layer ahead in the
 * backward pass. */
int tmm_plan_vdnn_conv(const struct tmm_planner_input *in,
		       struct tmm_plan *out);
int tmm_plan_vdnn_all(const struct tmm_planner_input *in,
		      struct tmm_plan *out);

/* Chen et al. (2016): sqrt(n) checkpoints at articulation points of the
 * forward pass; every other feature map is recomputed. */
int tmm_plan_checkpoint(const struct tmm_planner_input *in,
			struct tmm_plan *out);

/* SuperNeurons (PPoPP '18, §3): liveness, offload of convolution outputs
 * through the LRU tensor cache, cost-aware recomputation. */
int tmm_plan_superneurons(const struct tmm_planner_input *in,
			  struct tmm_plan *out);

/* Capuchin (ASPLOS '20, §4): swap by free time, then MSPS
 * recomputation. */
int tmm_plan_capuchin(const struct tmm_planner_input *in,
		      struct tmm_plan *out);

/* TENSILE (Zhang et al., §IV): peak analysis, greedy swaps scheduled on
 * one-at-a-time copy engines, across-iteration swaps of optimizer-updated
 * tensors, then MSPS recomputation. */
int tmm_plan_tensile(const struct tmm_planner_input *in,
		     struct tmm_plan *out);

/* TSPLIT (Nie et al., §IV): walk the ops; at each op over the budget,
 * take the smallest extra time per byte saved among swapping or
 * recomputing a tensor the op does not use and splitting the op into
 * micro-ops while its sliced input leaves slice by slice. */
int tmm_plan_tsplit(const struct tmm_planner_input *in,
		    struct tmm_plan *out);

/* stream (ours): Belady's rule over every tensor, weights and optimizer
 * state included: at each shortage the tensor needed furthest ahead
 * leaves, and is prefetched as late as the host-to-device engine lets it
 * land in time (plan_stream.c). */
int tmm_plan_stream(const struct tmm_planner_input *in,
		    struct tmm_plan *out);

/* auto (ours): every planner above but passive makes a plan; on the
 * simulator each is tried on a twin and the best for in->auto_goal is
 * kept (plan_auto.c), elsewhere the one the common forecast
 * (plan_forecast.h) says fits and runs fastest. */
int tmm_plan_auto(const struct tmm_planner_input *in, struct tmm_plan *out);

/*
 * How auto ranks two plans by their trials for `goal`: < 0 when a's is
 * the better, > 0 when b's is, 0 when the trials alone do not tell.  For
 * fit, a plan that trains without passive eviction comes first, then the
 * faster iteration, then fewer passive evictions; for speed, the faster
 * iteration comes first.
 */
int tmm_auto_trial_order(const struct tmm_trial_result *a,
			 const struct tmm_trial_result *b,
			 enum tmm_auto_goal goal);

#endif /* TMM_PLANNERS_H */
