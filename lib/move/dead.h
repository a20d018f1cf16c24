/* SPDX-License-Identifier: MIT */
/*
 * dead.h — liveness=discard: a tensor whose bytes no one will read again
 * leaves the device without a copy.
 *
 * A program that frees a step's tensors when the step ends (as
 * examples/mlp_model.c does) holds each one idle from its last access to
 * the end; a plan evicts it there to make room (hints/analysis.h,
 * tmm_liveness).  By default the eviction copies it to the host, since a
 * read after the last access must still find the bytes: in the
 * data-parallel MLP on the H100 profile that was 672 of the 2297 MiB a
 * step copied out, on a link that was full (simulated).  With
 * liveness=discard the program says it reads no such tensor: the guide
 * discards it instead, and a read before the next write fails, naming
 * the tunable (tmm_tensor_no_data).
 */
#ifndef TMM_DEAD_H
#define TMM_DEAD_H

#include <stdbool.h>

#include "lib/core/context.h"

/*
 * Frees t's device memory without copying its bytes: t becomes EMPTY and
 * dead (a read before a write fails, naming liveness).  Only a RESIDENT
 * tensor that nothing else holds: not pinned, no view and no parent, not
 * needed by a dropped tensor's recomputation.  Returns true when done,
 * false when t is not such a tensor (the caller evicts it as before).
 */
bool tmm_dead_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

#endif /* TMM_DEAD_H */
