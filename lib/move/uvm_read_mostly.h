/* SPDX-License-Identifier: MIT */
/*
 * uvm_read_mostly.h — a frozen tensor's eviction by prefetch in mode=uvm,
 * with no bytes moved (the uvm_read_mostly tunable; the plan's advice
 * comes from hints/read_mostly.h).
 *
 * A tensor advised read-mostly has its pages duplicated when the device
 * reads them: the host keeps its copy.  Evicted by prefetch, a prefetch
 * to the host finds that copy and moves nothing, but it leaves the
 * device's copy too (CUDA makes a read-only copy at the destination of a
 * prefetch of a read-mostly range).  What frees the device is lifting the
 * advice with the host the preferred location: the copies collapse onto
 * the host's (Runtime API, cudaMemAdviseUnsetReadMostly).  Advice is not
 * ordered in a stream, though: it takes effect at the call, where a
 * kernel queued before the eviction may still read the pages.  So the
 * advice is lifted only once the eviction's prefetch, which the backend
 * orders after every stream's work, has completed: the tensor waits on
 * the context's list until then (tmm_uvm_read_mostly_progress, from
 * tmm_mover_progress).  Until then its device copy still holds pages,
 * as a migration in flight does.  Coming back, a tensor still waiting
 * simply leaves the list; one whose advice was lifted is advised again
 * before its prefetch, so that its host copy stays.
 */
#ifndef TMM_UVM_READ_MOSTLY_H
#define TMM_UVM_READ_MOSTLY_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"

/* The plan advice a tensor holds (t->uvm_advised), unset when its range
 * goes to another tensor (mover_uvm.c). */
#define ADVISED_PREFERRED 0x1u
#define ADVISED_ACCESSED_BY 0x2u
#define ADVISED_READ_MOSTLY 0x4u
/* Read-mostly lifted for an eviction (or to be, once on the list):
 * given again when the tensor comes back. */
#define ADVISED_READ_MOSTLY_AWAY 0x8u
#define ADVISED_READ_MOSTLY_PENDING 0x10u
/* Read-mostly since an eviction's prefetch gave the host a whole copy:
 * unless the iteration writes it, the next eviction moves nothing (a
 * tensor advised while its pages were on the device alone has no host
 * copy until its first eviction). */
#define ADVISED_READ_MOSTLY_HOSTED 0x20u

/* Whether evicting t by prefetch moves none of its bytes. */
bool tmm_uvm_read_mostly_clean(const struct tmm_ctx *ctx,
			       const struct tmm_tensor_rec *t);

/*
 * t, advised read-mostly, has just had its eviction's prefetch queued
 * (its event in t->copy): its advice is lifted once that completes.
 * Where the list cannot grow (host_alloc), the advice stays, logged, and
 * the device keeps t's copy: only room is lost.
 */
void tmm_uvm_read_mostly_leave(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Lifts the advice of the tensors on the list whose eviction completed. */
void tmm_uvm_read_mostly_progress(struct tmm_ctx *ctx);

/*
 * t comes back to the device: off the list where it waits, or advised
 * read-mostly again where its advice was lifted.  Where the backend
 * refuses the advice, t comes back without it, logged: a later eviction
 * moves its bytes, and nothing else changes.
 */
void tmm_uvm_read_mostly_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* t's range goes to another tensor, or t goes: off the list. */
void tmm_uvm_read_mostly_forget(struct tmm_ctx *ctx,
				struct tmm_tensor_rec *t);

#endif /* TMM_UVM_READ_MOSTLY_H */
