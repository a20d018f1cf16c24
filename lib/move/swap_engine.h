/* SPDX-License-Identifier: MIT */
/*
 * swap_engine.h — the swap engine: copies between device and host, their
 * queue, and their completion (see swap_engine.c).
 *
 * Half of the mover (mover.h): the mover decides what moves and makes
 * room; the engine moves bytes it is given memory for and retires the
 * copies lazily in tmm_mover_progress(), which polls their events.  The
 * engine calls nothing of the mover, so the room it needs is always made
 * before it is called.
 */
#ifndef TMM_SWAP_ENGINE_H
#define TMM_SWAP_ENGINE_H

#include <stdbool.h>

#include "lib/core/context.h"

/*
 * tmm_mover_swap_out's copy (mover.h), in swap mode or mode=uvm's copy
 * way: t's bytes go to a pinned host buffer by a device-to-host copy
 * queued after the compute work issued so far; its device memory is
 * given back (swap mode) or its pages discarded (uvm) when the copy is
 * retired.  With `sync`, the host waits for it.  The caller checked t's
 * state.  Returns 0, -ENOMEM (no pinned buffer) or a backend error; on
 * failure t is unchanged.
 */
int tmm_mover_copy_out(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		       bool sync);

/*
 * tmm_mover_swap_out_begin for a split op that holds t: takes t's host
 * buffer for a swap-out in pieces; false, ctx->error as it was, when
 * that cannot be done: the plan's swap is then the guide's, after the
 * op.
 */
bool tmm_mover_swap_out_take_host(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t);

/*
 * A swap-out in pieces, while an op still reads or writes the tensor
 * (split.c: a split op's input leaving row by row, TSPLIT Eq. 5 and 6;
 * split_stream.c: its output leaving as its rows are written).  The tensor
 * stays RESIDENT and pinned throughout; its device rows may be given back
 * to the pool once they are on the host.
 *  - begin: takes t's pinned host buffer.  Returns 0, -EINVAL (not
 *    RESIDENT, already holding a host buffer, or mode=uvm) or -ENOMEM.
 *  - piece: copies bytes [offset, offset + bytes) of t to its host buffer
 *    after the compute work issued so far, and waits for the copy: a
 *    counted stall, after which those device bytes may be reused.
 *    Returns 0 or a backend error.
 *  - piece_async: the same copy, not waited for: compute goes on while
 *    it runs (a split op's output streamed out, split_stream.c).  *last
 *    (zeroed before the first piece) becomes the newest copy's event;
 *    the D2H engine runs in order, so it stands for all of them.  Those
 *    device bytes must not be reused, nor the host buffer given back,
 *    before swap_out_wait.  Returns 0 or a backend error (nothing was
 *    issued; *last is as it was).
 *  - wait: waits for *last, a counted stall, and clears it.  Returns 0
 *    or a backend error.
 *  - end: every byte is on the host; gives back what is left of t's
 *    device block and makes t HOST, counted as one swap-out.
 *  - end_async: every copy of t's bytes is queued, the newest one's
 *    event in *last (cleared): t is SWAPPING_OUT, counted as one
 *    swap-out, and HOST once that copy is retired like any other
 *    swap-out's; compute does not wait for it.  With no copy in *last,
 *    as end.
 *  - cancel: gives the host buffer back; t stays RESIDENT, whole.
 */
int tmm_mover_swap_out_begin(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);
int tmm_mover_swap_out_piece(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			     uint64_t offset, uint64_t bytes);
int tmm_mover_swap_out_piece_async(struct tmm_ctx *ctx,
				   struct tmm_tensor_rec *t, uint64_t offset,
				   uint64_t bytes, tmm_event *last);
int tmm_mover_swap_out_wait(struct tmm_ctx *ctx, tmm_event *last);
void tmm_mover_swap_out_end(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);
void tmm_mover_swap_out_end_async(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t, tmm_event *last);
void tmm_mover_swap_out_cancel(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * The tensor lets go of its device block, which waits on the deferred
 * list while a swap-out that a back-access let go on may still read it
 * (t->read_by), so that no kernel of the block's next tensor writes it
 * under the copy.
 */
void tmm_mover_device_give_back(struct tmm_ctx *ctx,
				struct tmm_tensor_rec *t);

/* Waits for the first deferred device block's copy and gives back every
 * deferred buffer whose copy has ended; false when no block waits. */
bool tmm_mover_wait_deferred_block(struct tmm_ctx *ctx);

/* Waits for t's copy in flight, if any, and completes its transition;
 * for a HOST tensor retired early (below), waits for its host buffer to
 * be filled. */
int tmm_mover_settle(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Whether t's swap-out (in swap mode) may be retired before its copy has
 * ended: not where the pool maps its memory (pool=chunks), whose unmaps
 * the host must order after every copy that reads the bytes.
 */
bool tmm_mover_may_retire_early(const struct tmm_ctx *ctx,
				const struct tmm_tensor_rec *t);

/*
 * Retires SWAPPING_OUT tensor t now that its memory is needed, without
 * the host waiting for the copy: the compute engine waits for it instead
 * and t's block is given back at once.  Whatever may write device memory
 * later is ordered after the compute engine (kernels run on it, copies
 * are queued after it, host copies run on it), so nothing writes the
 * block under the copy; and the host keeps queueing work ahead of the
 * device, where a host wait would let the device run dry (on the H200,
 * passive evictions that waited on the host cost swap mode about a third
 * of its step time).  t becomes HOST with t->copy still valid until the
 * host buffer is filled: tmm_mover_settle waits for it before the host
 * touches the buffer, and giving the buffer back defers it.  Use where
 * tmm_mover_may_retire_early says.  Returns 0 or the error.
 */
int tmm_mover_retire_early(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Retires SWAPPING_IN tensor t before the host has seen its copy end, for
 * the plan's eviction of it: the compute engine waits for the copy (the op
 * that read it has waited already, so this costs nothing there), and
 * everything queued after is ordered after the copy, so t is RESIDENT for
 * the host from here on; its host buffer, given back, waits on the
 * deferred list until the copy has read it.  Without this a host that runs
 * ahead of the device (CUDA's) finds t still arriving at the plan's
 * swap-out of it, long after the device has used it, and skips the
 * swap-out.  Returns 0 (nothing to do where t is not arriving) or the
 * error.
 */
int tmm_mover_retire_in_early(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * t is going away with a copy in flight, or a HOST tensor retired early
 * whose buffer is still being filled: where tmm_mover_may_retire_early
 * allows (a copy back too), the compute engine waits for the copy, t
 * leaves its in-flight list, and its host buffer, given back, waits on
 * the deferred list; t keeps its block for the caller to give back.  So
 * destroying a tensor never has the host wait for its copy (the H200 run
 * had it, once per tensor its plan moved and the step then freed).
 * Returns 0 (nothing left in flight), or -EAGAIN where it may not, or the
 * error (the caller then settles t on the host).
 */
int tmm_mover_abandon_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * A copy the device cannot report on (its event failed): completes t's
 * transition anyway, so it leaves its in-flight list.  Only where t or
 * the context is going away.
 */
void tmm_mover_retire_failed_copy(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t);

/* Retires every copy that has completed (cheap when none has). */
void tmm_mover_progress(struct tmm_ctx *ctx);

/* Waits for every copy in flight and retires it. */
int tmm_mover_drain(struct tmm_ctx *ctx);

/*
 * Queues the host-to-device copy that brings HOST tensor t back into the
 * device memory it was given: t is SWAPPING_IN, counted as a swap-in.
 * On a backend error the memory is given back.  Returns 0 or the error.
 */
int tmm_mover_swap_in_copy(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* mode=uvm: the mover's entry points hand over to mover_uvm.c. */
static inline bool tmm_mover_uvm(const struct tmm_ctx *ctx)
{
	return ctx->mode == TMM_MODE_UVM;
}

/* The first tensor of a list of copies in flight, the earliest queued. */
#define IN_FLIGHT_FIRST(list) \
	tmm_container_of((list)->next, struct tmm_tensor_rec, in_flight)

/* The host waits for ev, and the time is counted as stall.  Returns 0 or
 * the backend's error (no message). */
int tmm_mover_host_wait(struct tmm_ctx *ctx, const tmm_event *ev);

/* The host waits for swap-in `in` to land, and for the swap-ins queued
 * before it, which retire first (tmm_mover_progress): its block may then
 * move or be evicted like any resident tensor's.  Returns 1, 0 where it
 * is not retired even so, or a backend error with its message. */
int tmm_mover_wait_landed(struct tmm_ctx *ctx, struct tmm_tensor_rec *in);

/* Later compute waits for ev.  Returns 0 or the backend's error. */
int tmm_mover_compute_wait(struct tmm_ctx *ctx, const tmm_event *ev);

/* The backend's error rc with its message in ctx->error; returns rc. */
int tmm_mover_backend_error(struct tmm_ctx *ctx, int rc);

/*
 * Queues a copy on a copy engine, ordered after the compute work issued so
 * far: the source may still be being written, or the destination still
 * being read, by kernels already queued.  Returns 0 or a backend error
 * with its message.
 */
int tmm_mover_copy_after_compute(struct tmm_ctx *ctx, enum tmm_engine engine,
				 void *dst, const void *src, size_t bytes,
				 tmm_event *done);

/* A pinned host buffer of t's size for t->host.  Returns 0 or an error
 * with a message. */
int tmm_mover_host_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Gives t's host buffer back, once the copy of event `ev` (NULL: none)
 * has completed. */
void tmm_mover_host_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			      tmm_event *ev);

#endif /* TMM_SWAP_ENGINE_H */
