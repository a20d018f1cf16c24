/* SPDX-License-Identifier: MIT */
/*
 * read_mostly.h — frozen tensors advised read-mostly, in mode=uvm by
 * prefetch (issue #19: "read-only weights get cudaMemAdviseSetReadMostly
 * where they help").
 *
 * By prefetch, a tensor leaves the device at the managed rate to the host,
 * on the H100 of docs/gpu-h100.md 8.7 GB/s against a pinned copy's 55.  A
 * tensor the iteration reads and never writes (a frozen weight, as in
 * fine-tuning with a frozen backbone) need not move at all: advised
 * read-mostly, its pages are duplicated when the device reads them, the
 * host keeps its copy, and an eviction only drops the device's (the
 * runtime collapses the duplicates onto the host once the eviction has
 * run, lib/move/uvm_read_mostly.h).
 * Only persistent tensors are advised: a tensor made in the iteration has
 * no host copy to keep, and one the host writes between iterations would
 * have its duplicates collapsed each time.
 */
#ifndef TMM_READ_MOSTLY_H
#define TMM_READ_MOSTLY_H

#include <stdbool.h>

#include "lib/io/plan.h"
#include "planner_input.h"

/*
 * Marks in frozen[0 .. n_tensors) the trace's persistent tensors that it
 * accesses and never writes.
 */
void tmm_frozen_tensors(const struct tmm_trace *t, bool *frozen);

/*
 * Adds to p, where in->read_mostly_frozen, an ADVISE READ_MOSTLY of each
 * frozen tensor after its first access (it holds managed memory from
 * then on), unless p advises it so already.  Returns 0 or -ENOMEM (p is
 * then left with the advice added so far, each a valid action).
 */
int tmm_read_mostly_advise(const struct tmm_planner_input *in,
			   struct tmm_plan *p);

#endif /* TMM_READ_MOSTLY_H */
