/* SPDX-License-Identifier: MIT */
/*
 * tracker.h — the access tracker (Capuchin §5.2's TAT).
 *
 * Between tmm_iteration_begin and tmm_iteration_end it records every
 * tensor access, every op with its duration and its inputs and outputs
 * (the lineage), tensor creation and destruction times, and what the
 * runtime did (swaps, drops, recomputations) into a struct tmm_trace
 * (trace.h).  The first complete iteration is kept as the input of the
 * planner; every iteration is appended to the trace file when
 * TENSORMM_TRACE names one.
 *
 * During a rehearsal (rehearse.h) the times are those of its predicted
 * clock, the op durations are predictions, and the rehearsed iteration
 * becomes the first one but is not written to the trace file.
 *
 * The hot path (tmm_tracker_op) reuses the arrays of the previous
 * iteration, so once the first iteration has sized them it allocates
 * nothing.
 */
#ifndef TMM_TRACKER_H
#define TMM_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"
#include "lib/io/trace.h"

/* Sets up ctx->tracker and opens the trace file when configured.
 * Returns 0, -ENOMEM, or an I/O error with the message in err. */
int tmm_tracker_create(struct tmm_ctx *ctx, char *err, size_t errlen);
void tmm_tracker_destroy(struct tmm_ctx *ctx);

/* Iteration boundaries (called by tmm_iteration_begin/end). */
void tmm_tracker_iteration_begin(struct tmm_ctx *ctx);
void tmm_tracker_iteration_end(struct tmm_ctx *ctx);

/*
 * Makes the current trace's op times the measured ones, where the backend
 * times kernels after they are queued (CUDA): until then an op lasts 0 ns
 * in the trace.  Called by tmm_iteration_end before anything reads the
 * iteration's times (the guide's drift check), and by
 * tmm_tracker_iteration_end; the second call does nothing.
 */
void tmm_tracker_settle_op_times(struct tmm_ctx *ctx);

/* Is an iteration being recorded? */
bool tmm_tracker_recording(const struct tmm_ctx *ctx);

/* A tensor was made / is about to be destroyed. */
void tmm_tracker_tensor_made(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);
void tmm_tracker_tensor_gone(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* flags[i] of tmm_tracker_op: recs[i] already appears earlier in the
 * op's list (an output that is also an input). */
#define TMM_TRACK_REPEAT 0x1u
/* ... or recs[i] is an output the op declares it reads
 * (tmm_op.accumulate): one access, read and written. */
#define TMM_TRACK_ACCUMULATE 0x4u

/* The access of an op's i-th tensor among the op's accesses (a tensor
 * listed twice has one), or -1 when it was listed before: its access is
 * an earlier tensor's.  flags[] marks repeats as tmm_run found them. */
static inline int tmm_track_access_of(const uint8_t *flags, unsigned i)
{
	int distinct = 0;

	if (flags[i] & TMM_TRACK_REPEAT)
		return -1;
	for (unsigned j = 0; j < i; j++)
		distinct += !(flags[j] & TMM_TRACK_REPEAT);
	return distinct;
}

/*
 * Records one op that ran: its tensors recs[0 .. n) (inputs, then
 * outputs; flags[i] as above), its measured start on the backend clock, its duration and the
 * stall it waited before it could start.  One access is recorded per
 * distinct tensor.  *first_access receives the index of the op's first
 * access and *n_accesses their number (0 when not recording).
 */
void tmm_tracker_op(struct tmm_ctx *ctx, const tmm_op *op,
		    struct tmm_tensor_rec *const *recs, const uint8_t *flags,
		    unsigned n, uint64_t start_ns, uint64_t duration_ns,
		    uint64_t stall_ns, uint32_t *first_access,
		    uint32_t *n_accesses);

/*
 * The op about to be recorded begins its kernels now (backends that time
 * ops later, kernel_times): every bracket from here to tmm_tracker_op is
 * the op's, so that a split op is timed over all its pieces.  Called
 * after the recomputations that made its inputs, which are not its time.
 */
void tmm_tracker_op_kernels(struct tmm_ctx *ctx);

/* The op just recorded ran as micro-ops (TMM_TRACE_OP_SPLIT). */
void tmm_tracker_op_was_split(struct tmm_ctx *ctx);

/* Records a direct access (tmm_acquire); returns its index as above. */
void tmm_tracker_direct(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			bool read, bool write, uint32_t *first_access,
			uint32_t *n_accesses);

/*
 * The host reads t's bytes (tmm_tensor_read): marks it
 * TMM_TT_READ_AFTER_LAST in the iteration being recorded, and a view's
 * parent with it; the next recorded access of it clears the mark, so at
 * the iteration's end it stands on the tensors read after their last
 * access.  A flag set, nothing allocated: a tensor not yet in the trace
 * (made before the iteration and not accessed in it so far) is left
 * unmarked, since its last access, if any, is still to come.
 */
void tmm_tracker_host_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Records what the runtime did to t (NULL: to no tensor in particular). */
void tmm_tracker_event(struct tmm_ctx *ctx, enum tmm_trace_event_kind kind,
		       struct tmm_tensor_rec *t);

/* Records t's swap-out with no copy (TMM_EVF_CLEAN). */
void tmm_tracker_event_clean(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);
/* A DROP with TMM_EVF_DEAD: t's bytes discarded dead (lib/move/dead.h). */
void tmm_tracker_event_dead(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* How many times the tracker has grown an array: constant once the
 * first iteration has sized them (the tests hold it to that). */
uint64_t tmm_tracker_grows(const struct tmm_ctx *ctx);

/* The trace being recorded (valid until the iteration ends). */
const struct tmm_trace *tmm_tracker_current(const struct tmm_ctx *ctx);

/* The first complete iteration's trace, or NULL before it has ended. */
const struct tmm_trace *tmm_tracker_first(const struct tmm_ctx *ctx);

/*
 * Whether t is written in an iteration, by an op or the host: in the
 * first complete iteration's trace (the one plans are made from), or so
 * far in the one being recorded.  Linear in the trace: for rare questions
 * (read-mostly advice), not the hot path.
 */
bool tmm_tracker_written(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t);

/* The live tensor a key names in the iteration being recorded, or NULL. */
struct tmm_tensor_rec *tmm_tracker_tensor_of_key(struct tmm_ctx *ctx,
						 uint64_t key);

/* The key of a tensor in the iteration being recorded. */
uint64_t tmm_tracker_key(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t);

#endif /* TMM_TRACKER_H */
