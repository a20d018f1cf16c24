/* SPDX-License-Identifier: MIT */
/*
 * uvm_mix.h — mode=uvm's ways chosen per tensor: which of a plan's swaps
 * go by migration beside the copy way (issue #19 §2: "the plan decides
 * per tensor and per direction which path moves it").
 *
 * On CUDA a copy of managed memory returns to the host only once it has
 * run, so mode=uvm's copy way cannot hide its copies under compute: on
 * the H200 every step by it took the unconstrained step plus its bytes
 * out and in at the pinned rate (docs/gpu-h200-goals.md).  A prefetch
 * does not hold the host, but moves to the host far slower (9.9 GB/s
 * there, against 55 by copy).  So the two ways are mixed: a swap whose
 * round trip by prefetch fits, on an engine of its own (the migrate
 * engine, lib/backend/backend.h), between its eviction and its
 * back-access goes that way, flagged TMM_ACT_MIGRATE, and costs compute
 * nothing; the rest go by copy, each holding the host for its bytes.
 *
 * The engine is one in-order queue: each flagged swap's migration out
 * starts once its trigger's op has ended and the engine is free, and its
 * migration back likewise after its prefetch's trigger; both at the
 * device's managed rates, each plus the link's latency.  Swaps are taken
 * in the order of their evictions, each kept only if every swap taken
 * so far is then still back before its back-access begins.  Times are
 * the trace's ideal ones: the copies left to hold the host only stretch
 * them, so a swap that fits here fits in the run.
 *
 * A swap is a candidate where its bytes would move by copy and its
 * migration costs no more than that copy saves:
 *   - it has a back-access in the iteration and a PREFETCH for it fired
 *     at or after the eviction (a swap across the iteration's boundary
 *     keeps the copy way, which the guide's first swap-outs use);
 *   - it is not layer-synchronous (vDNN's copies are the policy's);
 *   - the tensor was written since it last left (else the copy way's
 *     clean copy moves nothing: lib/move/clean_copy.h), and is written
 *     again before it next leaves (else that next eviction, which the
 *     planner counted clean, would move its bytes: a migration leaves
 *     no host copy once the tensor is back).
 * The iteration is taken as a cycle: before its first write the
 * tensor's last write is the previous iteration's.
 */
#ifndef TMM_UVM_MIX_H
#define TMM_UVM_MIX_H

#include "lib/io/plan.h"
#include "planner_input.h"

/*
 * Flags TMM_ACT_MIGRATE on the EVICT_SWAP actions of p that go by
 * migration, where in->migrate_d2h_gbps and in->migrate_h2d_gbps are
 * both set (else p is left as it is), clearing it from the others first
 * so that a plan passed again gets the same flags.  p's actions must be
 * sorted by trigger.  Returns the number of swaps flagged, or -ENOMEM (p
 * then unchanged).
 */
int tmm_uvm_mix(const struct tmm_planner_input *in, struct tmm_plan *p);

#endif /* TMM_UVM_MIX_H */
