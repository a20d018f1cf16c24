/* SPDX-License-Identifier: MIT */
/*
 * rehearse.h — a rehearsal: the first plan from predicted op latencies.
 *
 * TENSILE §I and §III: planning from a measured first iteration means
 * running that iteration in passive mode, where every shortage blocks
 * compute on a swap-out.  TENSILE predicts each op's latency instead and
 * plans before the job runs.  Here the program runs one training step
 * between tmm_rehearsal_begin and tmm_rehearsal_end exactly as it will run
 * it for real; nothing is computed or moved, each op's time is the
 * backend's roofline prediction from its cost hint (op_estimate_ns), and
 * the tracker records the step as it records any iteration.  Its end makes
 * the plan, so the first real iteration is guided.  Re-planning on drift
 * (replan.h) later retimes this trace with measured latencies, as it
 * retimes a measured one.
 *
 * While a rehearsal is on, ctx->rehearsal is not NULL: tmm_run, the host
 * reads and writes and tmm_acquire each test it once and hand over to the
 * functions below.
 */
#ifndef TMM_REHEARSE_H
#define TMM_REHEARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/context.h"

/*
 * tmm_run during a rehearsal, once the op's tensors are looked up and
 * checked (recs, flags and n as tmm_tracker_op takes them): records the
 * op with its predicted duration and runs nothing.  Returns 0.
 */
int tmm_rehearse_op(struct tmm_ctx *ctx, const tmm_op *op,
		    struct tmm_tensor_rec *const *recs, const uint8_t *flags,
		    unsigned n);

/* tmm_tensor_read during a rehearsal: zeros into dst (the tensor's bytes
 * are not computed).  Returns 0. */
int tmm_rehearse_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		      void *dst, size_t bytes);

/* Ends a rehearsal left open when the context is destroyed. */
void tmm_rehearsal_discard(struct tmm_ctx *ctx);

#endif /* TMM_REHEARSE_H */
