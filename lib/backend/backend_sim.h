/* SPDX-License-Identifier: MIT */
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
#include "backend_sim_counters.h" /* struct tmm_sim_counters */

/* The simulator, one of the backends built into this library. */
extern const struct tmm_backend_ops tmm_backend_sim_ops;

/*
 * Copies the counters of an open sim backend into *c.  Returns 0, or
 * -EINVAL when be is not an open sim backend or c is NULL.
 */
int tmm_sim_get_counters(const struct tmm_backend *be,
			 struct tmm_sim_counters *c);

#endif /* TMM_BACKEND_SIM_H */
