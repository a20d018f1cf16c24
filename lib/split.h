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
 * What this file does not do yet: the slice-by-slice eviction of the
 * plan's EVICT_SWAP / EVICT_DROP inputs and the placement of the output
 * into the rows they free (Eq. 5).  Those evictions fire after the op,
 * whole, as for any op, so results are the plan's and bit-identical; the
 * memory saving of Eq. 5 is still to come.
 */
#ifndef TMM_SPLIT_H
#define TMM_SPLIT_H

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
 * about to be accessed), or 0 to run it whole: no SPLIT there, an op that
 * cannot be split, or a mode in which splitting is not carried out.
 */
uint32_t tmm_split_parts(struct tmm_ctx *ctx, const tmm_op *op,
			 const struct tmm_tensor_rec *first);

/* The rows [*begin, *end) of part k of `parts` over `extent` rows: as
 * equal as can be, the longer parts first. */
void tmm_split_range(uint64_t extent, uint32_t parts, uint32_t k,
		     uint64_t *begin, uint64_t *end);

/*
 * Runs the op as `parts` micro-ops over the device pointers ptrs (inputs,
 * then outputs), adding their backend time to *ns.  Returns 0, or a
 * negative errno with ctx->error set (the callback's failure, or the
 * backend's).
 */
int tmm_split_run(struct tmm_ctx *ctx, const tmm_op *op, void *const *ptrs,
		  uint32_t parts, uint64_t *ns);

#endif /* TMM_SPLIT_H */
