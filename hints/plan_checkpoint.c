/* SPDX-License-Identifier: MIT */
/*
 * plan_checkpoint.c — sqrt(n) checkpointing (Chen, Xu, Zhang, Guestrin,
 * "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174,
 * 2016).
 *
 * The forward pass is cut into about sqrt(n) segments of about sqrt(n)
 * layers.  The feature map at each cut (a checkpoint) is kept; every other
 * feature map is dropped after its last forward use and recomputed from
 * the checkpoint before it when the backward pass needs it.  The runtime's
 * collective recomputation keeps what one backward step regenerates for
 * the next ones, as Chen's segment-at-a-time recomputation does.
 *
 * Cuts may only be made at articulation points: a feature map that is the
 * only one the rest of the forward pass reads from what came before it
 * (the output of a residual block, not a tensor inside one).  n is the
 * number of articulation points; the checkpoints are every
 * round(sqrt(n))-th of them.  Like Chen's method the plan ignores the
 * budget; it says whether it fits.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "analysis.h"
#include "layers.h"
#include "planners.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

/* The index of the last forward op, or TMM_TRACE_NONE if none. */
static uint32_t forward_ops(const struct tmm_trace *tr)
{
	uint32_t last = TMM_TRACE_NONE;

	for (uint32_t o = 0; o < tr->n_ops; o++) {
		if (tmm_op_is_backward(tr, o))
			break;
		last = o;
	}
	return last;
}

/*
 * Marks in is_cut[] the articulation points: for each forward op o, the
 * tensors it writes that are read by later forward ops; o's output is an
 * articulation point when it is the only tensor crossing from ops <= o
 * to ops > o.
 */
static int articulation(const struct tmm_analysis *an, uint32_t n_fwd,
			uint32_t *cut_tensor)
{
	const struct tmm_trace *tr = an->trace;
	int64_t *cross = tmm_calloc(n_fwd + 1, sizeof(int64_t));

	if (!cross)
		return -1;
	for (uint32_t o = 0; o < n_fwd; o++)
		cut_tensor[o] = TMM_TRACE_NONE;
	for (uint32_t t = 0; t < tr->n_tensors; t++) {
		uint32_t p = tmm_first_writer_op(an, t), q = 0;

		if (p == TMM_TRACE_NONE || p >= n_fwd ||
		    !tmm_made_fresh(an, t))
			continue;
		for (uint32_t k = 0; k < an->life[t].n_acc; k++) {
			uint32_t op = tr->accesses[tmm_access_of(an, t, k)].op;

			if (op < n_fwd && op > q)
				q = op;
		}
		if (q <= p)
			continue;
		/* t crosses the boundaries after ops p .. q-1. */
		cross[p] += 1;
		cross[q] -= 1;
		if (cut_tensor[p] == TMM_TRACE_NONE)
			cut_tensor[p] = t;
		else
			cut_tensor[p] = TMM_TRACE_NONE - 1; /* several */
	}
	for (uint32_t o = 0; o < n_fwd; o++) {
		if (o)
			cross[o] += cross[o - 1];
		if (cross[o] != 1 || cut_tensor[o] >= TMM_TRACE_NONE - 1)
			cut_tensor[o] = TMM_TRACE_NONE;
	}
	free(cross);
	return 0;
}

int tmm_plan_checkpoint(const struct tmm_planner_input *in,
			struct tmm_plan *out)
{
	const struct tmm_trace *tr = in->trace;
	struct tmm_analysis an;
	struct tmm_eviction_set set = { 0 };
	uint32_t last_fwd = forward_ops(tr), n_fwd, n_cuts = 0, every;
	uint32_t *cut = NULL;
	bool *keep = NULL;
	int rc = tmm_plan_init(out, tr, "checkpoint");

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&an, &set);
	n_fwd = last_fwd == TMM_TRACE_NONE ? 0 : last_fwd + 1;
	cut = tmm_malloc(sizeof(uint32_t) * (n_fwd + 1));
	keep = tmm_calloc(tr->n_tensors + 1, sizeof(bool));
	if (!cut || !keep || articulation(&an, n_fwd, cut) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t o = 0; o < n_fwd; o++)
		n_cuts += cut[o] != TMM_TRACE_NONE;
	every = (uint32_t)lround(sqrt((double)n_cuts));
	if (every < 1)
		every = 1;
	for (uint32_t o = 0, seen = 0; o < n_fwd; o++) {
		if (cut[o] == TMM_TRACE_NONE)
			continue;
		if (++seen % every == 0)
			keep[cut[o]] = true;
	}
	for (uint32_t t = 0; t < tr->n_tensors && rc == 0; t++) {
		uint32_t back, evict = tmm_feature_map(&an, t, &back);

		if (evict == TMM_TRACE_NONE || keep[t] ||
		    !tmm_recomputable(&an, t, evict, back, NULL))
			continue;
		rc = tmm_eviction_add(&set, (struct tmm_eviction){
			.tensor = t, .evict = evict, .back = back,
			.drop = true });
	}
	if (rc == 0)
		rc = tmm_emit(&an, set.ev, set.n, out);
out:
	free(cut);
	free(keep);
	tmm_eviction_set_free(&set);
	tmm_analysis_free(&an);
	return rc;
}
