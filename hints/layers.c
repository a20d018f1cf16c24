/* SPDX-License-Identifier: MIT */
/*
 * layers.c — the layer view of a trace (see layers.h).
 */
#include "layers.h"
#include "tensormm.h"

uint32_t tmm_first_writer_op(const struct tmm_analysis *an, uint32_t t)
{
	const struct tmm_trace *tr = an->trace;

	for (uint32_t k = 0; k < an->life[t].n_acc; k++) {
		uint32_t a = tmm_access_of(an, t, k);

		if (tr->accesses[a].flags & TMM_TA_WRITE)
			return tr->accesses[a].op;
	}
	return TMM_TRACE_NONE;
}

uint32_t tmm_feature_map(const struct tmm_analysis *an, uint32_t t,
			 uint32_t *back)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_life *l = &an->life[t];
	uint32_t w = tmm_first_writer_op(an, t);

	*back = TMM_TRACE_NONE;
	if (!tmm_made_fresh(an, t) ||
	    tr->tensors[t].kind == TMM_SCRATCH || w == TMM_TRACE_NONE ||
	    tmm_op_is_backward(tr, w))
		return TMM_TRACE_NONE;
	for (uint32_t k = 0; k + 1 < l->n_acc; k++) {
		uint32_t a = tmm_access_of(an, t, k);
		uint32_t b = tmm_access_of(an, t, k + 1);

		if (tmm_op_is_backward(tr, tr->accesses[a].op))
			return TMM_TRACE_NONE; /* no forward-only prefix */
		if (tmm_op_is_backward(tr, tr->accesses[b].op)) {
			if (tr->accesses[a].op == tr->accesses[b].op)
				return TMM_TRACE_NONE;
			*back = b;
			return a;
		}
	}
	return TMM_TRACE_NONE;
}

uint32_t tmm_layer_ahead(const struct tmm_analysis *an, uint32_t evict,
			 uint32_t back, uint32_t kinds)
{
	const struct tmm_trace *tr = an->trace;
	uint32_t back_op = tr->accesses[back].op;
	uint32_t k = back;

	while (k > evict + 1) {
		uint32_t op = tr->accesses[--k].op;

		if (op == back_op || op >= tr->n_ops ||
		    !tmm_op_is_backward(tr, op) ||
		    !(kinds & (1u << tr->ops[op].kind)))
			continue;
		/* The first access of that layer's op. */
		while (k > evict + 1 && tr->accesses[k - 1].op == op)
			k--;
		return k;
	}
	return evict;
}

uint32_t tmm_layer_ahead_beside(const struct tmm_analysis *an,
				uint32_t evict, uint32_t back, uint32_t kinds)
{
	uint32_t k = tmm_layer_ahead(an, evict, back, kinds);

	/* tmm_layer_ahead returns evict, or an access after it. */
	return k > evict ? k - 1 : evict;
}
