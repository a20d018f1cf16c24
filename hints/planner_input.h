/* SPDX-License-Identifier: MIT */
/*
 * planner_input.h — what a planner is given: one recorded iteration, the
 * budget, the device it will run on, and maybe a twin to try plans on.
 *
 * The types every planner and the planners' interface (planner.h) share,
 * apart from the interface so that the planners need not include the
 * function that chooses among them.  A trial's results are here because
 * the twin is lent to the planners as a table of functions (struct
 * tmm_twin_ops) that the runtime fills (lib/twin/trial.c): hints/ calls no
 * lib/ function.
 */
#ifndef TMM_PLANNER_INPUT_H
#define TMM_PLANNER_INPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/base/tunables.h"
#include "lib/io/plan.h"
#include "lib/io/trace.h"

/* The device a plan is for: only what the planners may know of it. */
struct tmm_planner_device {
	uint64_t capacity;	   /* device memory, bytes */
	double h2d_gbps, d2h_gbps; /* host link, GB/s (1e9 bytes/s) */
	uint64_t copy_latency_ns;  /* fixed cost of one copy */
	uint64_t launch_ns;	   /* fixed cost of one op launch: what
				    * each micro-op of a split adds */
	bool net_shares_link;	   /* collectives cross the host link that
				    * swaps use (PCIe), so a copy beside
				    * one is slowed (hints/link_share.c) */
	double net_gbps;	   /* the network a collective's bytes
				    * cross after its arithmetic, GB/s; 0:
				    * unknown (the op's traced time is
				    * then all it holds the link) */
	uint64_t net_latency_ns;   /* fixed cost of one collective */
};

/* The device a trial runs on: a copy of the context's simulated one. */
struct tmm_trial_device {
	char profile[48];  /* sim profile name */
	uint64_t capacity; /* sim capacity, bytes */
	uint64_t budget;   /* bytes the plan must fit in */
	bool uvm;	   /* mode=uvm, else swap */
	bool chunks;	   /* swap mode over mapped chunks (pool=chunks),
			    * where a plan that fits the bytes may still
			    * want more chunks than the pool may map */
	/* mode=uvm's ways, as the context's uvm_swap_path, uvm_fresh and
	 * uvm_cap tunables say them (their choice index), and uvm_keep and
	 * uvm_compact: the twin moves tensors the way the run does, evicts
	 * where it does, and hands freed pages on as it does. */
	unsigned uvm_swap_path, uvm_fresh, uvm_cap;
	bool uvm_keep, uvm_compact;
	/* The liveness tunable: with discard, dead tensors leave without a
	 * copy on the twin as in the run (lib/move/dead.h). */
	bool liveness_discard;
	/* The simulated host runs ahead of its device (sim_host=ahead), as
	 * the run's does: the twin's host then sees copies end as late as
	 * the run's, and a plan that waits on them pays there too. */
	bool host_ahead;
	/* sim_managed_copy=held, as the run's: the twin's copies of managed
	 * memory hold its host as the run's do (backend_sim.c). */
	bool managed_copy_held;
	/* uvm_copier=kernel, as the run's: the twin's copies of managed
	 * memory are the copy kernel's, at the run's sim_copy_kernel_gbps,
	 * taking its sim_copy_kernel_sm of compute (backend_sim_copy.c). */
	bool copy_kernel;
	double copy_kernel_gbps, copy_kernel_sm;
};

/* A passive eviction in a guided iteration: which tensor had to leave,
 * and for the op at which access. */
struct tmm_trial_eviction {
	uint32_t tensor; /* index in the trace that was replayed */
	uint32_t access; /* the first access of the op that needed room */
};

/* What a plan did on the twin. */
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

/* Frees what a trial allocated in *r (r->evicted); r stays usable, with
 * no evictions listed. */
static inline void tmm_trial_result_free(struct tmm_trial_result *r)
{
	free(r->evicted);
	r->evicted = NULL;
	r->n_evicted = 0;
}

/* Trying a plan on a twin: the service the runtime lends the planners. */
struct tmm_twin_ops {
	/*
	 * Replays trace t three times on a twin of dev, the last two under
	 * plan p (made for t), and fills *r (free it with
	 * tmm_trial_result_free).  Returns 0, or a negative errno when the
	 * twin could not run (-ENOMEM, or an op of the trace did not fit the
	 * budget at all: r->trained is false then).
	 */
	int (*run)(const struct tmm_trial_device *dev,
		   const struct tmm_trace *t, const struct tmm_plan *p,
		   struct tmm_trial_result *r);
};

/* A simulated device that plans can be tried on, and the way to try. */
struct tmm_twin {
	struct tmm_trial_device device;
	const struct tmm_twin_ops *ops;
};

struct tmm_planner_input {
	const struct tmm_trace *trace; /* the measured iteration */
	uint64_t budget;	       /* device bytes the plan must fit in */
	struct tmm_planner_device device;
	/* A twin that plans can be tried on, or NULL: a real device, or a
	 * trial already. */
	const struct tmm_twin *twin;
	/*
	 * The rates the run's moves go at where they are not the host
	 * link's, GB/s (0: the link's, device.h2d_gbps and d2h_gbps): in
	 * mode=uvm by prefetch, the device's measured prefetch rates.  The
	 * planners plan by the link; auto prices their plans at these
	 * (plan_auto.c).
	 */
	double moves_h2d_gbps, moves_d2h_gbps;
	/*
	 * Where those moves are made by a kernel on the device (mode=uvm by
	 * the library's copy kernel): the share of the compute rate, 0 to
	 * 1, it takes while it runs beside compute.  The forecast slows each
	 * op by it over the time copies run beside the op.  0: copy
	 * engines, which take none.
	 */
	double moves_compute_share;
	/*
	 * mode=uvm by copy where the copies hold the host and the
	 * uvm_swap_path tunable is mix: the rates of the device's
	 * migrations of managed memory (prefetches), GB/s, at which the
	 * swaps that fit go beside the copies (uvm_mix.h).  0: no mix.
	 */
	double migrate_h2d_gbps, migrate_d2h_gbps;
	enum tmm_auto_goal auto_goal; /* policy auto only */
	unsigned auto_rungs;	      /* policy auto only: the smaller
				       * budgets it plans for too
				       * (plan_auto.c) */
	/* Whether planners swap out state idle across the step boundary
	 * (idle_state.h): ON for every planner that calls
	 * tmm_idle_state; AUTO for auto alone, which then tries a
	 * candidate both ways (plan_auto.c). */
	enum tmm_offload_idle offload_idle;
	/* tsplit only: no second plan with swaps and splits where its
	 * walks leave a bottleneck (the tsplit_retry tunable off: the
	 * paper's Algorithm 2 alone). */
	bool tsplit_no_retry;
	/* The liveness tunable is discard: an eviction with no back-access
	 * of a tensor dead after its last access (made and freed in the
	 * iteration, not read by the host after it) copies nothing in the
	 * run (lib/move/dead.h), so it takes no time of the engine to the
	 * host (tmm_leaves_free). */
	bool liveness_discard;
	/* The runtime keeps clean copies (lib/move/clean_copy.h): swap
	 * mode, and mode=uvm by its copy way.  An eviction of a tensor
	 * back from the host and not written since copies nothing. */
	bool clean_copies;
	/* mode=uvm where the backend orders each prefetch after the work
	 * queued on every stream before it (CUDA's:
	 * tmm_device_info.prefetch_after_copies): a prefetch waits for
	 * every eviction queued before it, not only its own tensor's. */
	bool prefetch_after_evictions;
	/* mode=uvm by its copy way where a copy of managed memory returns to
	 * the host only once done (CUDA's:
	 * tmm_device_info.managed_copies_block_host): compute waits for each
	 * copy out and back, as no kernel is queued meanwhile. */
	bool uvm_copies_serial;
	/* mode=uvm by prefetch with the uvm_read_mostly tunable on: each
	 * persistent tensor the iteration reads and never writes is advised
	 * read-mostly (read_mostly.h), so that the host keeps a copy of its
	 * pages and an eviction of it moves no bytes. */
	bool read_mostly_frozen;
	unsigned auto_threads;	      /* policy auto only: threads that
				       * make the candidates' plans at
				       * once; 0 = one per online CPU, 1 =
				       * none but the caller's (plan_auto.c) */
};

#endif /* TMM_PLANNER_INPUT_H */
