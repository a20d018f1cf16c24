/* SPDX-License-Identifier: MIT */
/*
 * uvm_fresh.h — mode=uvm's fresh pages: a range whose pages are not on
 * the device, made there by a prefetch before the kernel that writes it
 * rather than by its faults (uvm_fresh.c).  mover_uvm.h includes it; the
 * compaction of mode=uvm (uvm_compact.h) makes its moves' destinations
 * so.
 */
#ifndef TMM_UVM_FRESH_H
#define TMM_UVM_FRESH_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/core/context.h"

/*
 * t is an output the next kernel writes whole, and held nothing before
 * the op: with uvm_fresh=prefetch, or auto where the device measured the
 * rate of a prefetch of fresh pages (info.uvm_fresh_gbps: 90 against 8.5
 * GB/s for faults on the measured H100), its range is prefetched to the
 * device on the compute stream, just before the kernel.  Returns 0 or a
 * backend error; nothing is lost either way, the kernel's faults would
 * make the pages too.
 */
int tmm_uvm_prefetch_fresh(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Whether t's range is known to be on the device still: its pages were
 * noted there and nothing took them off since, and the arena never held
 * more live bytes than the driver keeps on the device (mover_uvm.c). */
bool tmm_uvm_known_on_device(const struct tmm_ctx *ctx,
			     const struct tmm_tensor_rec *t);

/*
 * The same for a range with no tensor of its own, or none yet: a
 * recomputation's outputs (recompute.c), whose pages the drop discarded
 * or which are a scratch block's.  Without it the re-run's kernel made
 * them by faults, at the first-touch rate (8.5 GB/s on the measured H100,
 * against 90 for a prefetch), for every byte recomputed (issue #19).
 */
int tmm_uvm_prefetch_fresh_range(struct tmm_ctx *ctx, void *ptr,
				 size_t bytes);

#endif /* TMM_UVM_FRESH_H */
