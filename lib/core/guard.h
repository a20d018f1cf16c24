/* SPDX-License-Identifier: MIT */
/*
 * guard.h — who may call into a context now: one thread at a time, and,
 * from inside a user callback, only the calls that read.
 *
 * Every public call that takes a context brackets its work with
 * tmm_guard_enter and tmm_guard_leave.  Entering swaps the calling
 * thread's id into ctx->owner (one compare-and-swap, the only cost on the
 * hot path) and leaving stores zero: a second thread that finds another
 * owner is refused with -EBUSY rather than corrupting the tensor table
 * under the first.  The owner's id is pthread_self(), which every live
 * thread has to itself.
 *
 * A callback (an op's run or run_slice, also when recomputation re-runs
 * it) runs with ctx->owner still held by its thread, so a call from
 * inside it finds its own thread as the owner: that is reentrancy, not
 * concurrency.  Then ctx->callback names the op, and the call's row of
 * the table in guard.c says whether it may go on (it only reads) or is
 * refused with -EBUSY and a message saying why: a callback runs in the
 * middle of tmm_run, between the pinning of the op's tensors and the
 * recording of its accesses, with the op's device pointers handed out.
 *
 * A refusal from another thread cannot write ctx->error, which the owner
 * may be writing at that moment: its message is kept in the refused
 * thread's own storage, where tmm_last_error finds it (guard.c).
 */
#ifndef TMM_GUARD_H
#define TMM_GUARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "context.h"

/* The public calls that take a context: the rows of guard.c's table. */
enum tmm_call {
	TMM_CALL_CTX_DESTROY,
	TMM_CALL_TENSOR_CREATE,
	TMM_CALL_TENSOR_VIEW,
	TMM_CALL_TENSOR_DESTROY,
	TMM_CALL_TENSOR_READ,
	TMM_CALL_TENSOR_WRITE,
	TMM_CALL_TENSOR_FILL,
	TMM_CALL_TENSOR_BYTES,
	TMM_CALL_RUN,
	TMM_CALL_ACQUIRE,
	TMM_CALL_RELEASE,
	TMM_CALL_WORKSPACE,
	TMM_CALL_WORKSPACE_RELEASE,
	TMM_CALL_ITERATION_BEGIN,
	TMM_CALL_ITERATION_END,
	TMM_CALL_REHEARSAL_BEGIN,
	TMM_CALL_REHEARSAL_END,
	TMM_CALL_STATS_GET,
	TMM_CALL_STATS_PRINT,
	TMM_CALL_STATS_RESET_PEAK,
	TMM_CALL_RELEASE_CACHED,
	TMM_CALL_CUDNN_ALGO,
	TMM_CALL_COUNT
};

/* What tmm_guard_enter returns when it lets a call in. */
#define TMM_GUARD_OUTER 1  /* the thread took the context: leave frees it */
#define TMM_GUARD_NESTED 0 /* a read from inside a callback of the owner */

/*
 * The slow path of tmm_guard_enter: the context has an owner, `holder`.
 * Returns TMM_GUARD_NESTED for an allowed call from inside a callback, or
 * -EBUSY with the message where tmm_last_error finds it.
 */
int tmm_guard_contended(struct tmm_ctx *ctx, uintptr_t holder,
			enum tmm_call call);

/*
 * Lets a public call into ctx: TMM_GUARD_OUTER or TMM_GUARD_NESTED, to be
 * handed to tmm_guard_leave; or -EBADF (not a context, no message) or
 * -EBUSY (another thread is in a call on it, or the call is not allowed
 * inside the callback running now).
 */
static inline int tmm_guard_enter(struct tmm_ctx *ctx, enum tmm_call call)
{
	uintptr_t holder = 0;

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	/* Acquire: what the previous owner wrote is visible to this one. */
	if (atomic_compare_exchange_strong_explicit(
		    &ctx->owner, &holder, (uintptr_t)pthread_self(),
		    memory_order_acquire, memory_order_relaxed))
		return TMM_GUARD_OUTER;
	return tmm_guard_contended(ctx, holder, call);
}

/* Ends a call that tmm_guard_enter let in with `entered`. */
static inline void tmm_guard_leave(struct tmm_ctx *ctx, int entered)
{
	if (entered == TMM_GUARD_OUTER)
		atomic_store_explicit(&ctx->owner, 0, memory_order_release);
}

/* What tmm_fail_callback needs of the moment a callback began. */
struct tmm_callback_frame {
	unsigned fails;		/* ctx->fails before the callback */
};

/*
 * Marks the callback of op `op` (its output handles outputs[0 ..
 * n_outputs)) as running, until tmm_callback_end: the calls made from
 * inside it are held to guard.c's table.  Callbacks do not nest: the one
 * thing that runs a callback within a call, recomputation, is among what
 * a callback may not do (a dropped tensor's read is refused), so there is
 * nothing to save and put back.
 */
static inline void tmm_callback_begin(struct tmm_ctx *ctx, const char *op,
				      const tmm_tensor *outputs,
				      unsigned n_outputs,
				      struct tmm_callback_frame *f)
{
	f->fails = atomic_load_explicit(&ctx->fails, memory_order_relaxed);
	ctx->callback = op;
	ctx->callback_outputs = outputs;
	ctx->callback_n_outputs = n_outputs;
}

static inline void tmm_callback_end(struct tmm_ctx *ctx)
{
	ctx->callback = NULL;
}

/*
 * tmm_fail for a callback that returned an error: the message is `fmt`'s,
 * followed by the message of a call that failed inside the callback (a
 * refusal, most often: the reason the callback gave up), so that
 * tmm_last_error still says what the callback ran into.
 */
int tmm_fail_callback(struct tmm_ctx *ctx, int code,
		      const struct tmm_callback_frame *f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Inside a callback: may tmm_tensor_read read tensor t (handle h)?  0, or
 * -EBUSY with a message: the op's own outputs are being written, and a
 * dropped tensor would have to be recomputed, running another op inside
 * this one.
 */
int tmm_guard_read_in_callback(struct tmm_ctx *ctx, tmm_tensor h,
			       const struct tmm_tensor_rec *t);

#endif /* TMM_GUARD_H */
