/* SPDX-License-Identifier: MIT */
/*
 * cuda_um.h — what CUDA's driver did with managed memory, from CUPTI's
 * unified-memory counter records (issue #19: "uvm mode reports the
 * truth").
 *
 * The simulator keeps its driver's books itself; CUDA's driver keeps its
 * own, and CUPTI reads them out as activity records of kind
 * CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER (CUPTI API reference,
 * CUpti_ActivityUnifiedMemoryCounter3): each migration with its bytes,
 * direction and cause, and each group of device page faults with the
 * time the driver took to service it.  cuda_timing.c, which owns the
 * process's CUPTI, turns the counters on for a context in mode=uvm and
 * hands the records here; the sums are what tmm_stats shows as the
 * driver's work.  Records of other devices are left out.
 *
 * The records come when CUPTI's buffers are flushed, at each iteration's
 * end (tmm_cuda_timing_collect), so the sums are as of then.  The
 * functions are built with CUPTI only (TMM_HAVE_CUPTI); the sums'
 * struct is for every cuda build (cuda_timing.h hands it on).
 */
#ifndef TMM_CUDA_UM_H
#define TMM_CUDA_UM_H

#include <stdint.h>

struct tmm_cuda_um_sums {
	uint64_t fault_groups;	 /* GPU_PAGE_FAULT records */
	uint64_t faults;	 /* ... their values: fault groups per page */
	uint64_t fault_ns;	 /* ... from the driver taking each up to the
				  * replay it queued */
	uint64_t fault_bytes;	 /* to the device, moved by the driver:
				  * faults, its own prefetching, access
				  * counters */
	uint64_t prefetch_bytes; /* to the device, by cudaMemPrefetchAsync */
	uint64_t evictions;	 /* moves to the host to make room */
	uint64_t eviction_bytes;
	uint64_t to_host_bytes;	 /* every move to the host, evictions,
				  * prefetches and host touches alike */
};

#ifdef TMM_HAVE_CUPTI
#include <cupti.h>

/* Starts counting anew, for `device` (CUPTI's device id). */
void tmm_cuda_um_reset(uint32_t device);

/* The counters to configure with cuptiActivityConfigureUnifiedMemoryCounter
 * (count in *n): bytes each way and device page faults. */
const CUpti_ActivityUnifiedMemoryCounterConfig *tmm_cuda_um_config(
	uint32_t *n);

/* Adds one record of kind CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
 * thread-safe (CUPTI may deliver on its own thread). */
void tmm_cuda_um_note(const CUpti_Activity *record);

/* The sums since the last reset. */
void tmm_cuda_um_read(struct tmm_cuda_um_sums *out);
#endif /* TMM_HAVE_CUPTI */

#endif /* TMM_CUDA_UM_H */
