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
 * Memory reuse (Eq. 5), in swap mode: when the plan also drops the op's
 * first tensor, a sliced input, at this op, that input gives its rows
 * back from the front as the micro-ops consume them (tmm_pool_trim), and
 * the op's first sliced output is placed just below it, starting D bytes
 * lower, and grows into them (tmm_pool_extend).  D is the most that the
 * output's written rows ever run ahead of the input's freed ones: one
 * output part when rows are the same size.  Where that space is taken,
 * the output is allocated whole as usual (correct, no saving) and
 * counted in split_fallbacks.  The input is dropped after the op.
 *
 * Not done yet: a swapped (EVICT_SWAP) input still leaves whole after
 * the op, and an output with an EVICT_SWAP at the op is not streamed out
 * part by part.  In mode=uvm the micro-ops run, with no reuse.
 */
#ifndef TMM_SPLIT_H
#define TMM_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "context.h"

/*
 * Checks the op's TSPLIT fields against its tensors recs[0 .. n_inputs +
 * n_outputs): run_slice needs slice_extent >= 1, slice_extent without
 * run_slice is for a phantom (cost-only) device, and every sliced
 * tensor's bytes are whole rows.  Returns 0 or -EINVAL with the op and
 * tensor named in ctx->error.
 */
int tmm_split_check_op(struct tmm_ctx *ctx, const tmm_op *op,
		       struct tmm_tensor_rec *const *recs);

/* Whether the op cuts its i-th tensor (inputs first) into rows. */
static inline int tmm_split_sliced(const tmm_op *op, unsigned i)
{
	return op->slice_extent && (!op->sliced || op->sliced[i]);
}

/*
 * The micro-ops the plan runs this op as (its first tensor `first` is
 * about to be accessed), or 0 to run it whole: no SPLIT there, or an op
 * that cannot be split.  *drops_first: the plan drops `first` there.
 */
uint32_t tmm_split_parts(struct tmm_ctx *ctx, const tmm_op *op,
			 const struct tmm_tensor_rec *first,
			 bool *drops_first);

/* One split op's memory reuse (Eq. 5); in NULL: none. */
struct tmm_split_reuse {
	struct tmm_tensor_rec *in, *out;
	uint64_t in_row, out_row; /* bytes per row */
	uint64_t lead;		  /* D: out starts this far below in */
	uint64_t trimmed;	  /* bytes of in given back so far */
};

/*
 * Called by tmm_run once the inputs are resident and before the outputs
 * are (recs as in tmm_run): sets up *r when the op qualifies for reuse
 * (its first tensor a sliced input dropped here that nothing else holds,
 * every output empty), placing the first sliced output below the input;
 * otherwise leaves r->in NULL, counting a fallback when only the place
 * was missing.
 */
void tmm_split_place_output(struct tmm_ctx *ctx, const tmm_op *op,
			    struct tmm_tensor_rec *const *recs,
			    uint32_t parts, struct tmm_split_reuse *r);

/*
 * After the op (its tensors unpinned), or after it failed: drops the
 * shrinking input, as the plan asked (or because its front rows are
 * gone), and tells the guide, whose EVICT_DROP at `first_access` is then
 * counted as carried out.  Nothing when r->in is NULL.
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
 * the output grows before each part and the input shrinks after it.
 * Returns 0, or a negative errno with ctx->error set (the callback's
 * failure, or the backend's).
 */
int tmm_split_run(struct tmm_ctx *ctx, const tmm_op *op, void *const *ptrs,
		  uint32_t parts, struct tmm_split_reuse *r, uint64_t *ns);

#endif /* TMM_SPLIT_H */
