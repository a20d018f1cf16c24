/* SPDX-License-Identifier: MIT */
/*
 * backend_sim_counters.h — the simulator's counters.
 *
 * What backend_sim.h gives tests and the benchmark, in a header of its
 * own: both halves of the simulator keep the counters in struct sim
 * (backend_sim_mem.h), and backend_sim_mem.c must not include
 * backend_sim.h, whose module calls into it (that would be a loop).
 */
#ifndef TMM_BACKEND_SIM_COUNTERS_H
#define TMM_BACKEND_SIM_COUNTERS_H

#include <stdint.h>

#include "backend.h"

/* The simulator's counters, all since open(); times in virtual ns. */
struct tmm_sim_counters {
	uint64_t engine_ns[TMM_ENGINE_COUNT]; /* each engine's current time */
	uint64_t busy_ns[TMM_ENGINE_COUNT];   /* time each engine did work */
	uint64_t bytes_h2d, bytes_d2h;	      /* copied and prefetched */
	uint64_t copies_h2d, copies_d2h;      /* copies and prefetches */
	uint64_t stall_ns;		      /* compute (in lockstep, the
					       * host) waiting in
					       * event_sync/engine_wait */
	uint64_t host_wait_ns;		      /* the host waiting for the
					       * device: ahead, wherever
					       * it syncs; either way, in
					       * a held managed copy */
	uint64_t dev_allocated, dev_peak;     /* dev_alloc bytes live, max */
	uint64_t kernels;		      /* kernel_end calls */
	uint64_t managed_allocs;	      /* managed_alloc calls that
					       * succeeded */
	/* The network engine (sim_network.c): collectives run (ops with
	 * cost.net_bytes), the time they held the link, and their bytes. */
	uint64_t collectives, net_busy_ns;
	double net_bytes;
	/* Exposed collective time: compute (or the host) waiting for a
	 * collective's event (TMM_ENGINE_NET), counted only while a
	 * collective held the link, so never more than net_busy_ns over
	 * the same span when the collectives waited for began in it. */
	uint64_t net_wait_ns;
};

#endif /* TMM_BACKEND_SIM_COUNTERS_H */
