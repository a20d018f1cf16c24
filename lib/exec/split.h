/* SPDX-License-Identifier: MIT */
/*
 * split.h — running an op as micro-ops (TSPLIT §IV-B).
 *
 * An op whose descriptor has a slice_extent can be cut along the
 * outermost dimension of its sliced tensors.  When the plan being
 * followed has a SPLIT action at the op's first access, tmm_run calls
 * the op's run_slice once per contiguous row range instead of run once,
 * bracketing each call as its own kernel so that every micro-op pays its
 * launch (the overhead that makes splitting a trade, TSPLIT §V).
 *
 * Memory reuse (Eq. 5), in swap mode: when the plan also evicts the op's
 * first tensor, a sliced input, at this op, that input gives its rows
 * back from the front as the micro-ops consume them (tmm_pool_trim), and
 * the op's first sliced output is placed just below it, starting D bytes
 * lower, and grows into them (tmm_pool_extend).  D is the most that the
 * output's written rows ever run ahead of the input's freed ones: one
 * output part when rows are the same size.  Where that space is taken,
 * the output is allocated whole as usual (correct, no saving) and
 * counted in split_fallbacks.
 *
 * The eviction is the plan's, carried out during the op instead of after
 * it, and the guide counts its action as done:
 *  - EVICT_DROP: the rows are simply given back; the input is dropped
 *    after the op (it must be recomputable but for this op's pin);
 *  - EVICT_SWAP (TSPLIT's "swap" for a split tensor): after each part,
 *    the copy of the rows it read to the input's host buffer is queued,
 *    not waited for; rows are given back only once their copy is
 *    complete, and the host waits for a copy only when the output is
 *    about to grow into its rows (or at the end).  The wait is a stall,
 *    the swap cost of Eq. 6.  With rows of the same size the next part
 *    writes the rows the last one read, so it waits for that part's
 *    whole copy; an output with smaller rows grows slower than the
 *    input frees its rows, and the copies run beside later parts.
 *    After the op the input is HOST, all its bytes on the host, counted
 *    as one swap-out; its PREFETCH brings it back as any other.
 *
 * An output that the plan swaps out at the op's own access of it leaves
 * part by part as its rows are written (split_stream.h), with or without
 * the reuse above.  In mode=uvm the micro-ops run, with no reuse and no
 * streaming: the plan's evictions fire after the op.
 */
#ifndef TMM_SPLIT_H
#define TMM_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"
#include "lib/core/split_op.h"

/*
 * Checks the op's TSPLIT fields against its tensors recs[0 .. n_inputs +
 * n_outputs): run_slice needs slice_extent >= 1, slice_extent without
 * run_slice is for a phantom (cost-only) device, and every sliced
 * tensor's bytes are whole rows.  Returns 0 or -EINVAL with the op and
 * tensor named in ctx->error.
 */
int tmm_split_check_op(struct tmm_ctx *ctx, const tmm_op *op,
		       struct tmm_tensor_rec *const *recs);

/*
 * The micro-ops the plan runs this op as (its first tensor `first` is
 * about to be accessed), or 0 to run it whole: no SPLIT there, or an op
 * that cannot be split.  *evicts_first: how the plan evicts `first`
 * there (TMM_SPLIT_KEEPS_INPUT when the op runs whole).
 */
uint32_t tmm_split_parts(struct tmm_ctx *ctx, const tmm_op *op,
			 const struct tmm_tensor_rec *first,
			 enum tmm_split_evict *evicts_first);

/*
 * What the op needs less than all its tensors together (tmm_run's check
 * that an op fits the budget) when it runs as `parts` micro-ops whose
 * output grows into the rows its first tensor gives back (`how` not
 * TMM_SPLIT_KEEPS_INPUT, swap mode): its first sliced output's bytes
 * less the lead D below the input (one part's output rows).  In a
 * rehearsal (nothing runs, no plan yet) an op that could reuse so is
 * taken to need no more than the budget, so that the planner sees it and
 * can split it (TSPLIT: an op larger than the device trains split).
 * 0 otherwise.
 */
uint64_t tmm_split_need_less(struct tmm_ctx *ctx, const tmm_op *op,
			     struct tmm_tensor_rec *const *recs,
			     uint32_t parts, enum tmm_split_evict how);

/* A swapped input's copy of bytes [.., end) to the host, not yet
 * known to be complete. */
struct tmm_split_copy {
	uint64_t end;
	tmm_event done;
};

/* One split op's memory reuse (Eq. 5); in NULL: none. */
struct tmm_split_reuse {
	struct tmm_tensor_rec *in, *out;
	enum tmm_split_evict how; /* how `in` leaves */
	uint64_t in_row, out_row; /* bytes per row */
	uint64_t lead;		  /* D: out starts this far below in */
	uint64_t trimmed;	  /* bytes of in given back so far */
	uint64_t copied;	  /* swapped: bytes of in on the host */
	uint64_t issued;	  /* ... and whose copy is queued */
	/* Swapped: the copies queued and not yet waited for, oldest
	 * first (copies[waited .. n_copies)); NULL when there was no
	 * memory for them: each copy is then waited for at once. */
	struct tmm_split_copy *copies;
	uint32_t n_copies, waited;
};

/* The most micro-ops tmm_split_place_output cuts an op into when the
 * plan's parts leave a lead larger than the free space below the input
 * (each one more launch; a power of two, as the plans' parts are). */
#define TMM_SPLIT_MAX_PARTS 4096u

/*
 * Called by tmm_run once the inputs are resident and before the outputs
 * are (recs as in tmm_run): sets up *r when the op qualifies for reuse
 * (its first tensor a sliced input that the plan evicts here as `how`
 * says and that nothing else holds, every output empty; a dropped input
 * recomputable, a swapped one with its host buffer taken), placing the
 * first sliced output below the input; otherwise leaves r->in NULL,
 * counting a fallback when only the place was missing.  Where the free
 * space right below the input is smaller than the lead of *parts parts
 * and the pool has no room for the whole output, *parts is doubled (up
 * to TMM_SPLIT_MAX_PARTS and the op's rows) until the lead fits: the op
 * then runs as that many micro-ops (TSPLIT's micro-tensors each take
 * their own memory, §IV-B; ours share the input's block, so the rows
 * ahead are what must find room).  Where the whole output has room, it
 * falls back instead: more micro-ops would only cost launches.
 */
void tmm_split_place_output(struct tmm_ctx *ctx, const tmm_op *op,
			    struct tmm_tensor_rec *const *recs,
			    uint32_t *parts, enum tmm_split_evict how,
			    struct tmm_split_reuse *r);

/*
 * After the op (its tensors unpinned), or after it failed: evicts the
 * shrinking input, as the plan asked (or because its front rows are
 * gone): drops it, or, swapped, copies any rows not on the host yet and
 * makes it HOST.  After the op, tells the guide, whose eviction at
 * `first_access` is then counted as carried out.  A failed op that gave
 * no rows back leaves its input whole and resident.  Nothing when r->in
 * is NULL.
 */
void tmm_split_finish(struct tmm_ctx *ctx, struct tmm_split_reuse *r,
		      uint32_t first_access, bool succeeded);

/* The rows [*begin, *end) of part k of `parts` over `extent` rows: as
 * equal as can be, the longer parts first. */
void tmm_split_range(uint64_t extent, uint32_t parts, uint32_t k,
		     uint64_t *begin, uint64_t *end);

/*
 * Runs the op as `parts` micro-ops over the device pointers ptrs (inputs,
 * then outputs), adding their backend time to *ns; with reuse (r->in),
 * the output grows before each part and the input shrinks after it,
 * its rows copied to the host first when it is swapped; with a streamed
 * output (s->out, split_stream.h), each part's output rows are queued
 * for the host after it.  Returns 0, or a
 * negative errno with ctx->error set (the callback's failure, or the
 * backend's).
 */
struct tmm_split_stream;
int tmm_split_run(struct tmm_ctx *ctx, const tmm_op *op, void *const *ptrs,
		  uint32_t parts, struct tmm_split_reuse *r,
		  struct tmm_split_stream *s, uint64_t *ns);

#endif /* TMM_SPLIT_H */
