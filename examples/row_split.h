/* SPDX-License-Identifier: MIT */
/*
 * row_split.h — what the examples share to let the runtime split their ops
 * into TSPLIT micro-ops (tmm_op.run_slice; TSPLIT §IV-B).
 *
 * Each splittable kernel of the examples is written once, as a loop over a
 * row range [begin, end) of its sample dimension; the whole op is that
 * loop over every row, so a split run and a whole run execute the very
 * same arithmetic in the same order.  An output summed over the rows (a
 * weight gradient) is zeroed by the micro-op that starts at row 0 and then
 * accumulated row by row, in order, which is what the whole op does: the
 * sums come out bit-identical however the rows are cut.
 */
#ifndef ROW_SPLIT_H
#define ROW_SPLIT_H

#include <stddef.h>

#include "tensormm.h"

/* How an op may be split; an op whose kernel cannot be has none. */
struct row_split {
	tmm_run_slice_fn run_slice;
	size_t rows;		     /* slice_extent: rows of the samples */
	const unsigned char *sliced; /* tmm_op.sliced; NULL: every tensor */
};

/* Gives op the TSPLIT fields of s (none when s is NULL). */
void row_split_describe(tmm_op *op, const struct row_split *s);

/*
 * Starts an output summed over the rows: zeroes its `bytes` on the
 * micro-op that begins at row 0 (the whole op is one such), and leaves
 * the partial sums of earlier micro-ops alone on the others.
 */
void row_split_start_sum(void *sum, size_t bytes, size_t begin);

#endif /* ROW_SPLIT_H */
