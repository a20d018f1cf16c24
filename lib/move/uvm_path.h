/* SPDX-License-Identifier: MIT */
/*
 * uvm_path.h — which way mode=uvm moves an evicted tensor, and the copy
 * way itself (uvm_path.c).
 *
 * Two ways out and back:
 *   prefetch  cudaMemPrefetchAsync to the host, and back to the device
 *             (mover_uvm.c): the driver moves the pages.
 *   copy      a pinned copy of the bytes to a host buffer, then a discard
 *             of the pages (no write-back); back, a prefetch makes fresh
 *             pages on the device and a pinned copy fills them.
 * A tensor that left by copy holds its bytes in t->host, as in swap mode,
 * until it is back; its managed range keeps its address.  The way out is
 * swap mode's own copy (tmm_mover_copy_out, swap_engine.h), whose retire
 * discards the pages instead of giving a block back.
 */
#ifndef TMM_UVM_PATH_H
#define TMM_UVM_PATH_H

#include <stdbool.h>

#include "lib/backend/backend.h"
#include "lib/base/tunables_table.h"
#include "lib/core/context.h"

/*
 * Whether evictions go by copy: `asked` unless it is auto, else whether
 * the copy round trip, bytes / d2h + bytes / fresh + bytes / h2d, is
 * cheaper by a twentieth than the prefetch one, bytes / prefetch_d2h +
 * bytes / prefetch_h2d, with the device's rates (a rate of 0 is free for
 * fresh pages, and the pinned rate for a prefetch).  On the H100 that was
 * measured, 0.057 ns/B against 0.135 (docs/gpu-h100.md).
 */
bool tmm_uvm_path_copy(const struct tmm_device_info *info,
		       enum tmm_uvm_swap_path asked);

/*
 * The copy way's round trip, in ns a byte: a pinned copy out, the fresh
 * pages its discarded range needs back on the device (made by a
 * prefetch: uvm_fresh_gbps, free where 0), and a pinned copy in.
 */
double tmm_uvm_copy_way_ns_per_byte(const struct tmm_device_info *info);

/*
 * What mode=uvm pays to move a byte out and back, over what swap mode's
 * pinned copies pay, with the device's rates: by copy (copy true)
 * tmm_uvm_copy_way_ns_per_byte over the pinned round trip, whose fresh
 * pages make the difference; by prefetch, bytes / prefetch_d2h + bytes /
 * prefetch_h2d over bytes / d2h + bytes / h2d.  1 where a rate is
 * unknown.  On the H100 that was measured, by prefetch, 3.6; on the
 * H200, by copy 1.87 (fresh pages at 31.6 GB/s, copies at 55) and by
 * prefetch 3.7 (9.9 GB/s out).
 */
double tmm_uvm_move_cost_ratio(const struct tmm_device_info *info,
			       bool copy);

/*
 * HOST (with t->host) -> SWAPPING_IN: a prefetch makes t's pages on the
 * device, and a copy on the same engine fills them from t->host; t is
 * RESIDENT, its host buffer given back, when the copy is retired.
 * Returns 0 or a backend error (t unchanged).
 */
int tmm_uvm_copy_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

#endif /* TMM_UVM_PATH_H */
