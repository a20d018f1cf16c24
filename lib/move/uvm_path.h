/* SPDX-License-Identifier: MIT */
/*
 * uvm_path.h — mode=uvm's two ways of moving an evicted tensor, and the
 * copy way itself (uvm_path.c).
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
 * discards the pages instead of giving a block back.  Which way a context
 * takes, from the device's rates, is hints/uvm_way.h's to say.
 */
#ifndef TMM_UVM_PATH_H
#define TMM_UVM_PATH_H

#include "lib/core/context.h"

/*
 * HOST (with t->host) -> SWAPPING_IN: a prefetch makes t's pages on the
 * device, and a copy on the same engine fills them from t->host; t is
 * RESIDENT, its host buffer given back, when the copy is retired.
 * Returns 0 or a backend error (t unchanged).
 */
int tmm_uvm_copy_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

#endif /* TMM_UVM_PATH_H */
