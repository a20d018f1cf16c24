/* SPDX-License-Identifier: MIT */
/*
 * split_op.h — what splitting means for one op (TSPLIT): which of its
 * tensors it cuts into rows, and how the plan evicts its first tensor at
 * it.
 *
 * The tracker records rows and the plan's cursor answers how many parts,
 * below the code that runs split ops (lib/exec/split.c): so these few
 * words are here, below all three.
 */
#ifndef TMM_SPLIT_OP_H
#define TMM_SPLIT_OP_H

#include "tensormm.h"

/* Whether the op cuts its i-th tensor (inputs first) into rows. */
static inline int tmm_split_sliced(const tmm_op *op, unsigned i)
{
	return op->slice_extent && (!op->sliced || op->sliced[i]);
}

/* How the plan evicts a split op's first tensor at the op. */
enum tmm_split_evict {
	TMM_SPLIT_KEEPS_INPUT,	/* not there: the input stays whole */
	TMM_SPLIT_DROPS_INPUT,	/* EVICT_DROP */
	TMM_SPLIT_SWAPS_INPUT,	/* EVICT_SWAP */
};

#endif /* TMM_SPLIT_OP_H */
