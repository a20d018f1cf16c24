/* SPDX-License-Identifier: MIT */
/*
 * plan_checkpoint.c — sqrt(n) checkpointing (Chen, Xu, Zhang, Guestrin,
 * "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174,
 * 2016), with the checkpoints chosen as OpenAI's gradient-checkpointing
 * "memory" mode chooses them (the implementation Capuchin compared with).
 *
 * From Chen et al. (§4.1, Algorithm 1 and its sqrt(n) strategy): the n
 * layers of the forward pass are cut into about sqrt(n) segments; only
 * the output at each cut (a checkpoint) is kept, every other feature map
 * is dropped after its last forward use; in the backward pass each
 * segment's forward is computed again from the checkpoint before it, once,
 * and what it computes is kept until the segment's backward has used it
 * (one extra forward pass in all).  Like Chen's method the plan ignores
 * the budget; it says whether it fits.
 *
 * From OpenAI's "memory" mode: on a graph that is not a chain, a cut may
 * only be made at an articulation point (a tensor that alone carries the
 * forward pass from what came before it to what comes after: the output
 * of a residual block, not a tensor inside one).  When there are no more
 * articulation points than about sqrt(n), all of them are checkpoints;
 * otherwise every step-th from the step-th on, step = ceil(#points /
 * sqrt(n)).
 *
 * Our choices:
 *  - n is the number of forward ops (Chen's layers; OpenAI counts the
 *    forward graph's tensors, about one per op in our traces).
 *  - The segment recomputation is the runtime's: a dropped map's
 *    back-access regenerates it and, collectively, the dropped maps it is
 *    made from back to the checkpoint.  Each drop is flagged
 *    TMM_ACT_KEEP (plan.h), so those stay until their own back-access as
 *    in Chen's segments, rather than being dropped again and recomputed
 *    once more when memory is short (which would be the memory-centric
 *    recomputation of SuperNeurons, not Chen's).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "analysis.h"
#include "idle_state.h"
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

/*
 * Every step-th articulation point is a checkpoint (1: all of them):
 * OpenAI's rule, which keeps them all when there are no more than about
 * sqrt(n), n the forward ops, and else about sqrt(n) evenly spaced.
 */
static uint32_t checkpoint_step(uint32_t n_points, uint32_t n_ops)
{
	double root = sqrt((double)n_ops);

	if (n_points == 0 || (double)n_points <= ceil(root))
		return 1;
	return (uint32_t)ceil((double)n_points / root);
}

int tmm_plan_checkpoint(const struct tmm_planner_input *in,
			struct tmm_plan *out)
{
	const struct tmm_trace *tr = in->trace;
	struct tmm_analysis an;
	struct tmm_eviction_set set = { 0 };
	uint32_t last_fwd = forward_ops(tr), n_fwd, n_cuts = 0, step;
	uint32_t *cut = NULL;
	bool *keep = NULL;
	int rc = tmm_plan_init(out, tr, "checkpoint");

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&an, &set);
	if (rc == 0)
		rc = tmm_idle_state(&an, &set);
	n_fwd = last_fwd == TMM_TRACE_NONE ? 0 : last_fwd + 1;
	cut = tmm_malloc(sizeof(uint32_t) * (n_fwd + 1));
	keep = tmm_calloc(tr->n_tensors + 1, sizeof(bool));
	if (!cut || !keep || articulation(&an, n_fwd, cut) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t o = 0; o < n_fwd; o++)
		n_cuts += cut[o] != TMM_TRACE_NONE;
	step = checkpoint_step(n_cuts, n_fwd);
	for (uint32_t o = 0, seen = 0; o < n_fwd; o++) {
		if (cut[o] == TMM_TRACE_NONE)
			continue;
		if (seen >= step - 1 && (seen + 1) % step == 0)
			keep[cut[o]] = true;
		seen++;
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
	/* Chen's segments keep what their recomputation made (plan.h). */
	for (uint32_t i = 0; rc == 0 && i < out->n_actions; i++)
		if (out->actions[i].type == TMM_ACT_EVICT_DROP)
			out->actions[i].flags |= TMM_ACT_KEEP;
out:
	free(cut);
	free(keep);
	tmm_eviction_set_free(&set);
	tmm_analysis_free(&an);
	return rc;
}
