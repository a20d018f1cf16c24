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
 * liveness=discard the guide discards it instead, unless the recorded
 * iteration (the trace plans are made from) shows the host reading it
 * after its last access (TMM_TT_READ_AFTER_LAST, lib/io/trace.h: a
 * trainer reading its loss once the step's ops are done): such a tensor
 * is copied as before.  The program's word is that every step reads
 * after the last access what the recorded one did, no more: a read the
 * recorded iteration did not make (a loss printed every 100th step) of a
 * discarded tensor fails before the next write, naming the tunable
 * (tmm_tensor_no_data).
 */
#ifndef TMM_DEAD_H
#define TMM_DEAD_H

#include <stdbool.h>

#include "lib/core/context.h"
#include "lib/io/plan.h"
#include "lib/io/trace.h"

/*
 * Frees t's device memory without copying its bytes: t becomes EMPTY and
 * dead (a read before a write fails, naming liveness).  Only a RESIDENT
 * tensor that nothing else holds: not pinned, no view and no parent, not
 * needed by a dropped tensor's recomputation.  Returns true when done,
 * false when t is not such a tensor (the caller evicts it as before).
 */
bool tmm_dead_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * The tensors trace t shows made and destroyed in the iteration and not
 * read by the host after their last access (no TMM_TT_READ_AFTER_LAST),
 * which a plan's EVICT_SWAP with no back-access may discard dead: each
 * with, in `until`, 0 when no EVICT_DROP of plan p recomputes from it,
 * else 1 + the latest trigger of those that do (an eviction at or before
 * that trigger must copy it, since the drop's recomputation reads it).
 * *dead (from malloc, sorted by key; NULL when *n is 0) receives them.
 * Made once a plan is installed, so that an eviction looks its tensor up
 * instead of scanning the plan.  Returns 0 or -ENOMEM.
 */
int tmm_dead_list(const struct tmm_plan *p, const struct tmm_trace *t,
		  struct tmm_kept_source **dead, uint32_t *n);

/* May the EVICT_SWAP `a`, with no back-access, discard its tensor (in
 * dead[0 .. n), tmm_dead_list's)? */
bool tmm_dead_at(const struct tmm_kept_source *dead, uint32_t n,
		 const struct tmm_plan_action *a);

#endif /* TMM_DEAD_H */
