/*
 * backend_sim.h — what only the simulated GPU can tell.
 *
 * The runtime sees the simulator through struct tmm_backend_ops like any
 * other device.  Tests and the benchmark also want the simulator's own
 * bookkeeping (how busy each engine was, how long the host stalled), which
 * a real GPU cannot report the same way; this accessor gives it to them.
 */
#ifndef TMM_BACKEND_SIM_H
#define TMM_BACKEND_SIM_H

#include <stdint.h>

#include "backend.h"

/* The simulator, one of the backends built into this library. */
extern const struct tmm_backend_ops tmm_backend_sim_ops;

/* The simulator's counters, all since open(); times in virtual ns. */
struct tmm_sim_counters {
	uint64_t engine_ns[TMM_ENGINE_COUNT]; /* each engine's current time */
	uint64_t busy_ns[TMM_ENGINE_COUNT];   /* time each engine did work */
	uint64_t bytes_h2d, bytes_d2h;	      /* copied and prefetched */
	uint64_t copies_h2d, copies_d2h;      /* copies and prefetches */
	uint64_t stall_ns;		      /* compute (the host) waiting
					       * in event_sync/engine_wait */
	uint64_t dev_allocated, dev_peak;     /* dev_alloc bytes live, max */
	uint64_t kernels;		      /* kernel_end calls */
};

/*
 * Copies the counters of an open sim backend into *c.  Returns 0, or
 * -EINVAL when be is not an open sim backend or c is NULL.
 */
int tmm_sim_get_counters(const struct tmm_backend *be,
			 struct tmm_sim_counters *c);

#endif /* TMM_BACKEND_SIM_H */
