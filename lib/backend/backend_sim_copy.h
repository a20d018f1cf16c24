/* SPDX-License-Identifier: MIT */
/*
 * backend_sim_copy.h — the simulated GPU's copies (backend_sim_copy.c),
 * as backend_sim.c's ops table takes them.  Private to the simulator.
 */
#ifndef TMM_BACKEND_SIM_COPY_H
#define TMM_BACKEND_SIM_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct sim;

/* backend.h's copy_async, copy_sync, copy_on_device and fill. */
int tmm_sim_copy_async(struct tmm_backend *be, enum tmm_engine engine,
		       void *dst, const void *src, size_t bytes);
int tmm_sim_copy_sync(struct tmm_backend *be, void *dst, const void *src,
		      size_t bytes, bool to_device);
int tmm_sim_copy_on_device(struct tmm_backend *be, void *dst,
			   const void *src, size_t bytes);
int tmm_sim_fill(struct tmm_backend *be, void *dst, int byte, size_t bytes);

/* What an op of `d` ns queued on compute now loses to the copy kernels
 * running beside it: sim_copy_kernel_sm of their overlap (0 without
 * uvm_copier=kernel or a share). */
uint64_t tmm_sim_kernel_sm_cost(const struct sim *s, uint64_t d);

#endif /* TMM_BACKEND_SIM_COPY_H */
