/* SPDX-License-Identifier: MIT */
/*
 * uvm_way.h — which way mode=uvm moves an evicted tensor, and which mode
 * mode=auto takes: pure functions of the device's measured rates and
 * flags (uvm_way.c), which lib/ reaches through planner.h.
 *
 * mode=uvm has two ways out and back (lib/move/uvm_path.h):
 *   prefetch  cudaMemPrefetchAsync to the host and back: the driver
 *             moves the pages;
 *   copy      a pinned copy of the bytes out and a discard of the pages;
 *             back, fresh pages made by a prefetch and a pinned copy in.
 */
#ifndef TMM_UVM_WAY_H
#define TMM_UVM_WAY_H

#include <stdbool.h>

#include "lib/base/tunables_table.h"

/* A device's rates for the two ways, GB/s (1e9 bytes/s). */
struct tmm_uvm_rates {
	double h2d_gbps, d2h_gbps; /* pinned copies */
	double prefetch_h2d_gbps;  /* a prefetch of host pages to the
				    * device; 0: the pinned rate */
	double prefetch_d2h_gbps;  /* one to the host; 0: the pinned rate */
	double fresh_gbps;	   /* fresh pages made on the device by a
				    * prefetch; 0: free */
	double copy_h2d_gbps;	   /* the copy way's copies of managed
				    * memory, where they are not the
				    * pinned copies (the library's copy
				    * kernel); 0: the pinned rate */
	double copy_d2h_gbps;
};

/*
 * Whether evictions go by copy: `asked` unless it is auto, else whether
 * the copy round trip, bytes / d2h + bytes / fresh + bytes / h2d, is
 * cheaper by a twentieth than the prefetch one, bytes / prefetch_d2h +
 * bytes / prefetch_h2d.  On the H100 that was measured, 0.049 ns/B
 * against 0.135 (docs/gpu-h100.md); on the H200, 0.068 against 0.133.
 */
bool tmm_uvm_way_copy(const struct tmm_uvm_rates *r,
		      enum tmm_uvm_swap_path asked);

/*
 * The copy way's round trip, in ns a byte: a copy out, the fresh pages
 * its discarded range needs back on the device, and a copy in, each copy
 * at the copy way's rate (copy_*_gbps, else the pinned one).
 */
double tmm_uvm_copy_way_ns_per_byte(const struct tmm_uvm_rates *r);

/*
 * What mode=uvm pays to move a byte out and back, over what swap mode's
 * pinned copies pay: by copy (copy true) tmm_uvm_copy_way_ns_per_byte
 * over the pinned round trip, whose fresh pages make the difference; by
 * prefetch, bytes / prefetch_d2h + bytes / prefetch_h2d over bytes / d2h
 * + bytes / h2d.  1 where a rate is unknown.  On the H100 that was
 * measured, by prefetch, 3.6; on the H200, by copy 1.87 (fresh pages at
 * 31.6 GB/s, copies at 55) and by prefetch 3.7 (9.9 GB/s out).
 */
double tmm_uvm_move_cost_ratio(const struct tmm_uvm_rates *r, bool copy);

/* What mode=auto knows of the device and the run when it chooses. */
struct tmm_auto_mode_facts {
	struct tmm_uvm_rates rates;
	enum tmm_uvm_swap_path asked; /* the uvm_swap_path tunable */
	bool concurrent_managed;      /* managed memory may be prefetched
				       * and advised while kernels run */
	bool budget_presses;	      /* the budget is less than the device
				       * had free, or a share of the peak */
	bool copies_block_host;	      /* a copy of managed memory returns
				       * only once done (CUDA's) */
};

/* Why mode=auto took the mode it took. */
enum tmm_auto_mode_why {
	TMM_AUTO_WHY_NO_CONCURRENT, /* swap: no managed access while
				     * kernels run */
	TMM_AUTO_WHY_NO_PRESSURE,   /* uvm: nothing need move */
	TMM_AUTO_WHY_HELD_COPIES,   /* swap: uvm would copy, holding the
				     * host */
	TMM_AUTO_WHY_CHEAP_MOVES,   /* uvm: its moves cost about swap's */
	TMM_AUTO_WHY_SLOW_MOVES,    /* swap: uvm's moves cost more than
				     * TMM_AUTO_UVM_MOVE_COST_MAX times */
};

struct tmm_auto_mode_choice {
	enum tmm_mode_choice mode; /* TMM_MODE_SWAP or TMM_MODE_UVM */
	enum tmm_auto_mode_why why;
	bool copy;    /* mode=uvm would move tensors by copy */
	double ratio; /* tmm_uvm_move_cost_ratio of that way (the moves'
		       * reasons only) */
};

/*
 * mode=auto takes swap under a budget where mode=uvm would move a byte
 * more than this many times slower than swap mode's pinned copies.
 * Where it was measured the two ends are clear: at a ratio of 1 to 1.3
 * (the copy way on the simulator, its copies queued) uvm+auto was within
 * 10% of swap+auto in 18 of the 20 zoo cells; by prefetch (3.6 on the
 * measured H100: 8.7 GB/s out) it ran at 1.48x the unconstrained step
 * where swap+auto ran at 1.04x (compute-bound MLP at 40%,
 * h100-sxm5-pcie5-80g, simulated).  On the H200 at f15ab58, by copy
 * (1.87: fresh pages at 31.6 GB/s) uvm+auto ran at 1.66x against
 * swap+auto's 1.04x there, and by prefetch (3.7) at 1.88x
 * (docs/gpu-h200-goals.md).
 */
#define TMM_AUTO_UVM_MOVE_COST_MAX 1.5

/*
 * mode=auto: swap where the device cannot prefetch and advise managed
 * memory while kernels run (before Pascal, or not on Linux), and under a
 * budget where mode=uvm's way of moving tensors is slow
 * (TMM_AUTO_UVM_MOVE_COST_MAX) or, by copy, cannot hide under compute
 * (copies_block_host: on the H200 every copy-way step took the
 * unconstrained one plus its copies, where swap mode's hid:
 * docs/gpu-h200-goals.md); else uvm, whose managed memory holds on the
 * device only what the tensors use.  Without pressure the two modes ran
 * alike on the H200 (uvm at 1.00-1.02x of unconstrained), and swap mode
 * would take the whole budget at creation.
 */
struct tmm_auto_mode_choice
tmm_auto_mode_choose(const struct tmm_auto_mode_facts *f);

#endif /* TMM_UVM_WAY_H */
