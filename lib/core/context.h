/* SPDX-License-Identifier: MIT */
/*
 * context.h — the inside of a context and of a tensor (not public).
 *
 * A context owns one backend, one device pool over an arena of `budget`
 * bytes (mode=swap; in mode=uvm tensors are blocks of cached managed
 * segments, lib/mem/uvm_arena.h, and the budget bounds the driver's
 * resident pages), one pinned host pool,
 * and a table of tensor records addressed by generation-tagged handles.
 * lib/ files share these structures; nothing outside lib/ sees them.
 */
#ifndef TMM_CONTEXT_H
#define TMM_CONTEXT_H

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tensormm.h"
#include "lib/backend/backend.h"
#include "lib/base/list.h"
#include "lib/base/tensor_state.h"
#include "lib/base/tunables.h"

struct tmm_pool;
struct tmm_pool_block;
struct tmm_uvm_arena;
struct tmm_hostmem;
struct tmm_tracker;
struct tmm_lineage;
struct tmm_guide;
struct tmm_shm_writer;
struct tmm_rehearsal;
struct tmm_share;
struct tmm_twin_ops;

/* One tensor. */
struct tmm_tensor_rec {
	uint32_t index;		/* slot in the table */
	uint32_t gen;		/* bumped when the slot is freed */
	bool live;
	enum tmm_kind kind;
	enum tmm_tstate state;
	size_t bytes;
	char *name;

	uint32_t pins;		/* > 0: in use by the running op or an
				 * acquire: never evicted */
	uint32_t placing_pins;	/* of pins, those of an op still placing
				 * its tensors (tmm_run, a recomputation):
				 * no one holds its address yet, so
				 * compaction may move it */
	uint32_t placing_level;	/* the innermost placing that pinned it
				 * (ctx->placing_depth then), 0 when none:
				 * a deeper one may evict it, and the
				 * outer one brings it back */
	uint32_t acquires;	/* tmm_acquire nesting */

	void *dev;		/* device address, while on the device */
	tmm_event read_by;	/* valid: a swap-out that a back-access let
				 * go on may still read its device bytes
				 * until this event (mover.c): nothing
				 * writes them before it has passed */
	tmm_event net_by;	/* valid: a collective (TMM_OP_COLLECTIVE)
				 * may still read or write its device bytes
				 * until this event, off the compute
				 * stream's order: every later use, copy,
				 * move or free waits for it
				 * (tmm_tensor_wait_net) */
	struct tmm_pool_block *block;
	void *host;		/* pinned host buffer, while on the host */
	tmm_event copy;		/* the copy in flight (SWAPPING_*) */
	/* A clean copy (clean_copy.h): the host buffer a swap-in came
	 * from, kept while the tensor is on the device; it holds the
	 * bytes of clean_version while `clean`.  NULL: none. */
	void *clean_host;
	uint64_t clean_version;
	bool clean;

	struct tmm_list on_device; /* ctx->device_lru, while on device
				    * (mode=uvm: while its pages count in
				    * ctx->uvm_held, device_mem.h) */
	struct tmm_list in_flight; /* ctx->swapping_out or swapping_in */
	uint64_t last_use;	   /* ctx->use_clock at its last access */
	uint64_t op_mark;	   /* ctx->use_clock of the op that last
				    * listed it: spots repeats in one op */

	/* Tracking (tracker.c): the iteration that made it (0: made
	 * outside iterations) and its creation order there; the iteration
	 * whose trace lists it and its index in that trace. */
	uint64_t made_epoch;
	uint32_t ordinal;
	uint32_t trace_index;
	uint64_t trace_epoch;
	/* Its first bytes were an op's output outside iterations (an init
	 * kernel, set by run.c), not a host write: the op took device room
	 * as any op does, evicting for it, where a host write takes only
	 * what is free.  Traces say so (TMM_TT_FIRST_BYTES_BY_OP), for a
	 * twin to give it its bytes the same way (lib/twin/trial.c). */
	bool first_bytes_by_op;

	/* Recomputation (recompute.c). */
	uint64_t version;	   /* bumped by every write of its bytes */
	uint32_t producer;	   /* lineage op that made its bytes, valid
				    * while producer_epoch is the lineage's */
	uint64_t producer_epoch;
	uint32_t dropped_dependents; /* DROPPED tensors whose lineage
				      * reads this one */
	struct tmm_list dropped;   /* ctx->dropped, while DROPPED */
	bool ghost;		   /* destroyed by the program while the
				    * lineage may still need it: no handle
				    * reaches it (recompute.c) */
	struct tmm_list ghosts;	   /* ctx->ghosts, while a ghost */
	bool regenerated;	   /* made again by a recomputation that was
				    * for another tensor: the first to go
				    * when memory runs short (§5.3) */
	bool keep_regenerated;	   /* dropped by a plan's TMM_ACT_KEEP:
				    * regenerated, it stays until used
				    * (Chen's segment recomputation) */
	bool dead;		   /* EMPTY because liveness=discard dropped
				    * its bytes (lib/move/dead.h) */

	/* Plan execution (guide.c): the PREFETCH action in flight for
	 * it, for the feedback at its back-access. */
	uint32_t pending_prefetch;

	/* mode=uvm (mover_uvm.c): dev is its block of the managed arena
	 * (block, a block of one of ctx->uvm_arena's segments), kept from
	 * its first bytes to its destruction; a swap-out advised its
	 * preferred location to the host; the advice a plan gave it that
	 * is still set (mover_uvm.c's ADVISED_* bits), to be unset before
	 * the block goes to another tensor; the host touched it last
	 * (tmm_tensor_read/write: its pages went to the host). */
	bool uvm_host_preferred;
	uint8_t uvm_advised;
	bool uvm_host_touched;
	/* Away by the migrate engine (a plan's TMM_ACT_MIGRATE while the
	 * run's way is copy): it comes back by a prefetch there too. */
	bool uvm_migrated;

	/* Made during a rehearsal (rehearse.c): it holds no memory and
	 * goes when the rehearsal ends. */
	bool rehearsed;

	/* Views (lib/exec/view.c).  A view names bytes [view_offset,
	 * view_offset + bytes) of view_parent (NULL: not a view) and is
	 * linked in the parent's `views` list by view_link.  Its bytes are
	 * its own; view_ahead: they are newer than the parent's copy of
	 * the range; view_behind: older (the parent was written since).
	 * A parent counts its live views in n_views; view_mark spots a
	 * parent listed in the same op as one of its views. */
	struct tmm_tensor_rec *view_parent;
	size_t view_offset;
	struct tmm_list views;
	struct tmm_list view_link;
	uint32_t n_views;
	bool view_ahead;
	bool view_behind;
	uint64_t view_mark;
};

/* Memory that may be reused only once a copy reading or writing it has
 * completed: a host buffer (host, bytes), or a device block whose bytes a
 * swap-out let go on by a back-access still reads (block). */
struct tmm_deferred {
	void *host;
	size_t bytes;
	struct tmm_pool_block *block;
	tmm_event ev;
};

/* Counters behind tmm_stats_get (see struct tmm_stats for meanings). */
struct tmm_counters {
	uint64_t host_in_use;
	uint64_t swap_out_count, swap_out_bytes;
	uint64_t swap_in_count, swap_in_bytes;
	uint64_t passive_evictions, passive_eviction_bytes;
	uint64_t on_demand_swap_ins;
	uint64_t swap_out_waits;
	uint64_t clean_evictions, clean_eviction_bytes;
	uint64_t swap_out_early; /* retired before their copies ended, the
				  * compute engine waiting for them rather
				  * than the host (swap_engine.h); not in
				  * tmm_stats: a test's window on it */
	uint64_t stall_ns;
	uint64_t ops, accesses;
	uint64_t iterations, last_iteration_ns;
	uint64_t compute_ns;
	uint64_t drops, drop_bytes;
	uint64_t recomputations, recomputed_bytes, recompute_ns;
	uint64_t plan_actions, plan_actions_skipped;
	uint64_t guided_iterations, plan_divergences;
	uint64_t prefetch_late;
	uint64_t prefetch_wait_ns; /* the compute engine's waits for late
				    * prefetches, measured where it runs
				    * (late_prefetch.h) */
	uint64_t dead_discards, dead_discard_bytes; /* lib/move/dead.h */
	uint64_t plans_made, plan_ns, prefetches;
	uint64_t prefetches_gathered; /* mode=uvm: queued in one call with
				       * others (tmm_uvm_batch_flush) */
	uint64_t guided_passive_evictions;
	uint64_t compaction_moves, compaction_bytes;
	uint64_t uvm_fault_batches, uvm_faults, uvm_fault_bytes;
	uint64_t uvm_prefetch_bytes, uvm_evictions, uvm_eviction_bytes;
	uint64_t uvm_remote_bytes, uvm_discard_bytes;
	uint64_t uvm_prefetch_out_bytes; /* evictions by prefetch, mode=uvm */
	/* Of those, the ones on the migrate engine beside the copy way
	 * (TMM_ACT_MIGRATE), and the prefetches that brought them back. */
	uint64_t uvm_migrate_out_bytes, uvm_migrate_in_bytes;
	uint64_t uvm_kernel_copy_bytes; /* the backend's (managed_stats) */
	uint64_t uvm_fault_ns;	/* the driver's fault path */
	uint64_t split_ops, micro_ops, split_fallbacks; /* split.c */
	uint64_t uvm_resident, uvm_resident_peak; /* device_in_use/peak in
						   * mode=uvm */
	uint64_t share_budget_changes;	/* gpu_share.c moved the budget */
};

#define TMM_CTX_MAGIC 0x746d6d63u /* "tmmc" */
#define TMM_TABLE_CHUNK 256u

struct tmm_ctx {
	uint32_t magic;
	uint16_t serial;	/* tags this context's tensor handles */
	struct tmm_config cfg;
	struct tmm_backend be;
	enum tmm_mode_choice mode; /* resolved: SWAP or UVM */
	uint64_t budget;	/* the pool's limit: the whole arena, or
				 * this process's share of it (gpu_share.c) */
	uint64_t arena_bytes;	/* the arena's size (pool=chunks: the
				 * budget, the most the pool may hold) */
	uint64_t va_bytes;	/* pool=chunks: the reserved virtual range
				 * at `arena`; 0 for an arena */
	uint32_t live_views;	/* views alive: 0 keeps tmm_run off view.c's
				 * path */
	uint64_t view_stamp;	/* view.c's op marks */
	uint64_t largest_op_need; /* bytes of the largest op run: the least
				   * budget that can run every op */

	void *arena;		/* the pool's device memory, or with
				 * pool=chunks its virtual range */
	struct tmm_pool *pool;
	struct tmm_hostmem *hostmem;

	/* Tensor table: chunks of records, so pointers stay valid as it
	 * grows; free slots are chained through free_slots. */
	struct tmm_tensor_rec **chunks;
	uint32_t n_chunks, n_slots;
	uint32_t *free_slots;
	uint32_t n_free, cap_free;
	uint32_t retired_slots;	/* slots whose generations are all used:
				 * never reused (tensor_table.c) */
	uint64_t live_tensors;

	struct tmm_list device_lru;   /* on device, least recently used first */
	struct tmm_list swapping_out; /* pending swap-outs, earliest first */
	struct tmm_list swapping_in;  /* pending swap-ins, earliest first */
	struct tmm_list dropped;      /* DROPPED tensors */
	struct tmm_list ghosts;	      /* destroyed, kept for a lineage */
	bool ghosts_back;	      /* a recomputation brought one back
				       * since the last reap */
	struct tmm_deferred *deferred;
	size_t n_deferred, cap_deferred;

	uint64_t use_clock;	/* ticks once per op: the LRU's time */
	uint32_t placing_depth;	/* placings under way: tmm_run's, and a
				 * recomputation's inside it, and so on */
	const char *current_op; /* name of the op running, for messages */
	const char *recompute_for; /* while recomputing: the op that needs
				    * it, also named by tmm_fail */
	bool in_iteration;
	uint64_t iteration_begin_ns;
	uint64_t created_ns;

	struct tmm_tracker *tracker; /* records each iteration */
	struct tmm_lineage *lineage; /* producers of this iteration */
	struct tmm_guide *guide;     /* the plan being followed */
	struct tmm_shm_writer *shm;  /* live counters (stats_shm.c) */
	struct tmm_rehearsal *rehearsal; /* the rehearsal on, or NULL
					  * (rehearse.c) */
	struct tmm_share *share;     /* the GPU's other processes, or NULL
				      * (gpu_share.c) */
	/* How the planners try a plan on a twin of the device
	 * (lib/twin/trial.c), lent by tmm_ctx_create; NULL in a twin. */
	const struct tmm_twin_ops *twin_ops;

	/* mode=uvm: the managed memory of tensors and scratch, in cached
	 * segments (lib/mem/uvm_arena.h); NULL in mode=swap. */
	struct tmm_uvm_arena *uvm_arena;
	/* mode=uvm: the managed ranges of the next kernels (mover_uvm.c). */
	struct tmm_managed_range *uvm_ranges;
	unsigned uvm_n_ranges, uvm_cap_ranges;
	/* mode=uvm: the plan's prefetches to the device gathered while the
	 * guide fires a run of them, each tensor held but still HOST, to
	 * go in one backend call (tmm_uvm_batch_open, mover_uvm.h). */
	struct tmm_uvm_batch {
		struct tmm_tensor_rec **tensors;
		struct tmm_managed_range *ranges;
		unsigned n, cap;
		bool open;
	} uvm_batch;
	/* mode=uvm: read-mostly tensors evicted by prefetch whose advice is
	 * lifted once the prefetch completes (uvm_read_mostly.h). */
	struct tmm_uvm_leaving {
		struct tmm_tensor_rec **tensors;
		unsigned n, cap;
	} uvm_leaving;
	/* budget=N%peak: the budget was set from a measured peak
	 * (peak_budget.c). */
	bool peak_budget_set;
	/* The driver's resident peak when tmm_stats_reset_peak was last
	 * called (0: never): only a higher one is a peak since then. */
	uint64_t uvm_peak_mark;
	/* mode=uvm: the bytes of the whole pages of the tensors in an
	 * on-device state and of the scratch blocks, the library's own
	 * count of what it keeps on the device (device_mem.h), and its
	 * high-water mark since creation or tmm_stats_reset_peak.  With
	 * uvm_cap=library the mover holds it within the budget. */
	uint64_t uvm_held, uvm_held_peak;
	/* mode=uvm evicts by pinned copy, not by prefetch (uvm_path.h);
	 * false once a pinned buffer could not be had */
	bool uvm_copy_out;
	bool uvm_ranges_failed;
	bool split_uvm_noted;	/* split.c logged how uvm mode splits */
	bool host_pinning_noted; /* the backend's host_pinning was logged
				  * (swap_engine.c) */
	uint32_t split_access;	/* the first access of the op tmm_run just
				 * split, for the guide's count of its
				 * SPLIT action; UINT32_MAX: not split */
	uint32_t split_evicted_access; /* ... and of the op whose first
					* tensor it dropped or swapped out
					* row by row */
	struct tmm_tensor_rec *split_streamed; /* the output that op
						* swapped out as it wrote
						* it, or NULL */

	/* The user's workspace (workspace.c), or NULL. */
	struct tmm_pool_block *ws_block;
	size_t ws_bytes;

	/* Scratch for the pointer arrays handed to op callbacks. */
	void **ptr_scratch;
	size_t ptr_scratch_len;

	/* Who is in a call on the context (guard.h): the owner thread's
	 * pthread_self(), 0 when none.  The callback running now, if any:
	 * its op's name and output handles, for the calls made from it. */
	_Atomic uintptr_t owner;
	const char *callback;
	const tmm_tensor *callback_outputs;
	unsigned callback_n_outputs;

	struct tmm_counters c;
	/* Bumped by every tmm_fail: tells whether ctx->error changed since
	 * a moment (a callback's start, another thread's refusal). */
	_Atomic unsigned fails;
	char error[512];
};

/* Sets t->state, which must be a legal transition (tensor_state.c): the
 * mover, the uvm mover and recomputation all move a tensor through its
 * life cycle. */
static inline void tmm_tensor_set_state(struct tmm_tensor_rec *t,
					enum tmm_tstate to)
{
	assert(tmm_tstate_legal(t->state, to));
	t->state = to;
	/* Bytes again, or about to be: no longer discarded dead. */
	t->dead = false;
}

/* A rehearsal in progress (lib/exec/rehearse.c). */
struct tmm_rehearsal {
	uint64_t base_ns;	    /* backend clock at tmm_rehearsal_begin */
	uint64_t predicted_ns;	    /* sum of the rehearsed ops' times */
	struct tmm_counters before; /* ctx->c at tmm_rehearsal_begin */
};

/* The clock of the rehearsed step: the backend's clock when the rehearsal
 * began plus the predicted time of the ops rehearsed so far.  The tracker
 * reads it instead of the backend's while a rehearsal is on, which is why
 * it is here, below both. */
static inline uint64_t tmm_rehearsal_clock(const struct tmm_ctx *ctx)
{
	return ctx->rehearsal->base_ns + ctx->rehearsal->predicted_ns;
}

/* Writes a message into ctx->error (printf-style) and returns `code`;
 * inside a recomputation, tmm_fail_add_context's words follow it. */
int tmm_fail(struct tmm_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Adds to ctx->error, inside a recomputation, "(while recomputing with
 * op X for op Y)", unless it says so already. */
void tmm_fail_add_context(struct tmm_ctx *ctx);

/* Logs at `level` to stderr when TENSORMM_LOG allows it. */
void tmm_log(const struct tmm_ctx *ctx, enum tmm_log_level level,
	     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Validates a context pointer: 0, or -EBADF (with no message: there is no
 * context to hold one). */
static inline int tmm_ctx_check(const struct tmm_ctx *ctx)
{
	return (ctx && ctx->magic == TMM_CTX_MAGIC) ? 0 : -EBADF;
}

/* The record behind a handle, or NULL (with -EBADF in ctx->error) for a
 * null, destroyed or foreign handle. */
struct tmm_tensor_rec *tmm_tensor_lookup(struct tmm_ctx *ctx, tmm_tensor t,
					 const char *caller);

/* The name of a tensor for messages: its name, or "#<slot>". */
const char *tmm_tensor_label(const struct tmm_tensor_rec *t, char *buf,
			     size_t len);

/*
 * The error for a read of t, which holds no bytes (EMPTY): -ENODATA,
 * saying whether it was never written or discarded dead by
 * liveness=discard (lib/move/dead.h).  `call` names what read it.
 */
int tmm_tensor_no_data(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		       const char *call);

/* The record behind a handle, or NULL; sets no message (for handles the
 * library itself keeps). */
struct tmm_tensor_rec *tmm_tensor_find(struct tmm_ctx *ctx, tmm_tensor h);

/* The handle of a live record. */
tmm_tensor tmm_tensor_handle(const struct tmm_ctx *ctx,
			     const struct tmm_tensor_rec *t);

/*
 * A new record (tensor_table.c): live, EMPTY, holding nothing, named
 * `name` (copied; NULL: none).  Returns 0, or -ENOMEM with a message.
 */
int tmm_tensor_new(struct tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		   const char *name, struct tmm_tensor_rec **out);

/* Ends a record that holds nothing any more: its handles go stale, its
 * slot is reused, or retired once it has used its 2^24 generations. */
void tmm_tensor_free(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Orders the compute engine's next work after t's read_by copy, when it
 * is still running, and after a collective still on t (net_by), and
 * forgets them: a compaction calls it before its
 * moves overwrite where t was, a host write before it writes (a release
 * defers the block instead: tmm_mover_device_give_back).  Returns 0, or
 * a backend error with its message in ctx->be.error.
 */
int tmm_tensor_wait_readers(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Hands t an event of the collective that ran last (backend.h's
 * collective_event), replacing the one it held: ops that use t later wait
 * for the collective's network part, which the compute stream does not.
 * Returns 0, or a backend error with its message in ctx->be.error.
 */
int tmm_tensor_mark_net(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Orders `engine`'s next work after the collective that may still use t
 * (t->net_by), and that of the tensor t is a view of: the compute engine
 * before an op or a move, the device-to-host engine before a swap-out's
 * copy.  Once the compute engine or the host (host true: the host waits)
 * has waited, the event is forgotten: later work on t is ordered after
 * that; a copy engine's wait keeps it, for the compute engine's.
 * Returns 0, or a backend error with its message in ctx->be.error.
 */
int tmm_tensor_wait_net(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			enum tmm_engine engine, bool host);

/* The record in slot i (i < ctx->n_slots), live or not. */
struct tmm_tensor_rec *tmm_tensor_at(const struct tmm_ctx *ctx, uint32_t i);

/* Gives back the user's workspace, if any (iteration end, teardown). */
void tmm_workspace_drop(struct tmm_ctx *ctx);

/* Formats a byte count as "1.50 GiB" into buf. */
const char *tmm_fmt_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* TMM_CONTEXT_H */
