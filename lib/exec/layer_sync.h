/* SPDX-License-Identifier: MIT */
/*
 * layer_sync.h — a plan's layer-synchronous copies (TMM_ACT_SYNC,
 * plan.h): vDNN's offload and prefetch, which the layer after waits for.
 *
 * vDNN (Rhu et al., MICRO 2016, §III) offloads a layer's input feature
 * maps while the layer computes, and the next layer does not start until
 * that offload is done; in the backward pass the prefetch of the maps of
 * the layer before runs while the current layer's backward computes, and
 * the layer before waits for it.  Here:
 *
 *  - A SYNC EVICT_SWAP of a tensor that the op of its trigger only reads
 *    has its copy queued before that op (after the compute issued so far,
 *    so it runs beside the op), while the tensor stays resident for the
 *    op to read.  After the op the guide's EVICT_SWAP makes the tensor
 *    SWAPPING_OUT with that copy, and compute waits for it: the op after
 *    starts once the copy ends, and the device memory is given back then.
 *    A SYNC swap whose copy could not start before the op (the op writes
 *    the tensor, holds it more than once, or mode=uvm) is copied after the
 *    op and waited for all the same.
 *  - A SYNC PREFETCH fired after an op runs beside the op after it, and
 *    compute waits for it when that op is done.  Its memory is taken as
 *    an allocation's (guide.c: tmm_mover_swap_in, which may evict): vDNN
 *    allocates the prefetched maps; it has no prefetch to skip.
 *
 * Each wait is a compute-engine wait on the copy's event (CUDA:
 * cudaStreamWaitEvent), counted in stall_ns; the simulator charges the
 * same time as stall.  The state lives in the guide (guide_state.h).
 */
#ifndef TMM_LAYER_SYNC_H
#define TMM_LAYER_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"

/*
 * Called by tmm_run once every tensor of the op is resident and placed,
 * before the op runs whole (not split), inside an iteration: starts the
 * copies of the plan's SYNC swap-outs of tensors the op only reads, at
 * the op's own access of them (recs and flags as in tmm_run).  A copy
 * that cannot start is left to the guide, after the op.
 */
void tmm_layer_sync_begin(struct tmm_ctx *ctx, const tmm_op *op,
			  struct tmm_tensor_rec *const *recs,
			  const uint8_t *flags, unsigned n);

/*
 * The guide's EVICT_SWAP of t: when t's copy was started before the op,
 * t becomes SWAPPING_OUT with it (true); else false, and the caller
 * swaps t out itself.
 */
bool tmm_layer_sync_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* After a SYNC EVICT_SWAP: compute waits for t's copy while t is
 * SWAPPING_OUT.  Returns 0 or a backend error with its message. */
int tmm_layer_sync_wait_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* A SYNC PREFETCH of t was fired: compute waits for it after the next op
 * (tmm_layer_sync_after_op). */
void tmm_layer_sync_prefetched(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * After an op, before its actions fire: compute waits for the SYNC
 * prefetches fired before the op that are still arriving.  Returns 0 or
 * a backend error.
 */
int tmm_layer_sync_after_op(struct tmm_ctx *ctx);

/*
 * After the op's actions fired, or when the op failed or left its plan:
 * the copies started before it that no action took are waited for and
 * their host buffers given back; the tensors stay resident.  With
 * `forget_prefetches` (the iteration ends or leaves its plan), the
 * prefetches waiting for a next op are forgotten too.
 */
void tmm_layer_sync_abandon(struct tmm_ctx *ctx, bool forget_prefetches);

#endif /* TMM_LAYER_SYNC_H */
