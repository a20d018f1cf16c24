/* SPDX-License-Identifier: MIT */
/*
 * sim_profile.h — hardware profiles of the simulated GPU.
 *
 * One table (sim_profile.c) describes each device the simulator can be:
 * memory, link and compute figures, each with its source in a comment or
 * marked as an estimate.  Planners read these figures too (swap time =
 * latency + bytes / bandwidth), never the simulator's internals.
 */
#ifndef TMM_SIM_PROFILE_H
#define TMM_SIM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tmm_sim_profile {
	const char *name;	 /* "p100-pcie3-16g" */
	const char *description; /* "NVIDIA Tesla P100 PCIe 16 GB" */
	uint64_t capacity;	 /* device memory, bytes */
	double h2d_gbps;	 /* pinned host-to-device, GB/s (1e9 B/s) */
	double d2h_gbps;	 /* pinned device-to-host, GB/s */
	uint64_t copy_latency_ns; /* fixed cost of one copy */
	double fp32_tflops;	 /* peak fp32 */
	double fp16_tflops;	 /* peak fp16 (tensor cores where present) */
	double hbm_gbps;	 /* device memory bandwidth, GB/s */
	uint64_t launch_ns;	 /* fixed cost of one op (kernel launch) */
	double efficiency;	 /* fraction of peak a typical op reaches */
	/* Unified memory (the fault model uses these; issue 7) */
	uint64_t uvm_block_bytes;  /* VA block: 2 MiB */
	uint64_t uvm_page_bytes;   /* migration granule: 64 KiB big page */
	uint32_t uvm_fault_batch;  /* faults serviced per batch: 256 */
	uint64_t uvm_batch_ns;	   /* fixed cost per fault batch (estimate) */
	uint64_t uvm_fault_ns;	   /* cost per fault (estimate) */
	double uvm_fault_gbps;	   /* migration bandwidth on the fault path */
	double uvm_remote_gbps;	   /* access over the bus to pages left on
				    * the host (preferred host + accessed
				    * by the device): no migration */
	/*
	 * The driver's other paths, where they were measured (0: the
	 * profile has no figure, and the path costs what it did before
	 * there was one; see each below).
	 */
	double uvm_first_touch_gbps;	  /* a kernel's first touch of pages
					   * that hold nothing yet (0: free
					   * beyond the fault itself) */
	double uvm_prefetch_h2d_gbps;	  /* cudaMemPrefetchAsync to the
					   * device (0: h2d_gbps) */
	double uvm_prefetch_d2h_gbps;	  /* ... to the host (0: d2h_gbps) */
	double uvm_prefetch_fresh_gbps;	  /* a prefetch to the device of
					   * pages that hold nothing yet
					   * (0: free) */
	double uvm_evict_gbps;		  /* the driver writing back device
					   * pages it evicts for room
					   * (0: d2h_gbps) */
	/*
	 * The network a collective (TMM_OP_COLLECTIVE) crosses, as one rank
	 * sees it (issue 26; sim_network.c charges it).
	 */
	const char *net_link;	  /* which link, in words */
	double net_gbps;	  /* bytes one rank sends per second, GB/s */
	uint64_t net_latency_ns;  /* fixed cost of one collective */
	bool net_over_pcie;	  /* the collective crosses the PCIe link
				   * that the swap copies use, and shares
				   * it with them */
};

/* The profile called `name`, or NULL. */
const struct tmm_sim_profile *tmm_sim_profile_find(const char *name);

/* All profiles; *n receives their number. */
const struct tmm_sim_profile *tmm_sim_profiles(size_t *n);

/* Roofline duration of an op in ns: max(flops / fp32, bytes / hbm) /
 * efficiency + launch. */
uint64_t tmm_sim_op_ns(const struct tmm_sim_profile *p, double flops,
		       double bytes);

/* Duration of one copy of `bytes` in ns: latency + bytes / bandwidth. */
uint64_t tmm_sim_copy_ns(const struct tmm_sim_profile *p, uint64_t bytes,
			 int to_device);

/* Duration of a collective's network part in ns: latency + net_bytes /
 * net bandwidth (0 bytes: 0, no collective on the network). */
uint64_t tmm_sim_net_ns(const struct tmm_sim_profile *p, double net_bytes);

#endif /* TMM_SIM_PROFILE_H */
