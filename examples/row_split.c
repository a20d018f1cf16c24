/* SPDX-License-Identifier: MIT */
/*
 * row_split.c — the helpers of row_split.h.
 */
#include <string.h>

#include "row_split.h"

void row_split_describe(tmm_op *op, const struct row_split *s)
{
	op->run_slice = s ? s->run_slice : NULL;
	op->slice_extent = s ? s->rows : 0;
	op->sliced = s ? s->sliced : NULL;
}

void row_split_start_sum(void *sum, size_t bytes, size_t begin)
{
	if (begin == 0)
		memset(sum, 0, bytes);
}
