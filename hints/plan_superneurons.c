/* SPDX-License-Identifier: MIT */
/*
 * plan_superneurons.c — SuperNeurons (Wang et al., PPoPP 2018, §3).
 *
 * Three layers of technique, each used only while the iteration does not
 * fit:
 * 1. Liveness analysis (§3.2): tensors are freed after their last use.
 *    The program's own frees do this; the trace shows them.
 * 2. The Unified Tensor Pool (§3.3): the outputs of forward convolutions
 *    are offloaded to the host and prefetched one convolution ahead in the
 *    backward pass.  The tensor cache (§3.3.2) transfers only when memory
 *    is short: we offload a convolution output only while the memory curve
 *    is over the target somewhere in its gap, least recently used (the
 *    earliest) first, as the LRU would evict them.
 * 3. Cost-aware recomputation (§3.4): the outputs of cheap layers (POOL,
 *    ACT and normalisation: "POOL, ACT, LRN and BN") are dropped and
 *    recomputed.  A segment is a maximal run of such forward layers.  Its
 *    memory cost is its feature maps plus the largest backward layer that
 *    reads them; when that is at most l_peak (the largest layer) the
 *    segment is recomputed speed-centric (once, the regenerated maps kept:
 *    the runtime's collective recomputation), else memory-centric (each
 *    map dropped again after every backward use, so each backward layer
 *    recomputes what it needs).
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis.h"
#include "idle_state.h"
#include "layers.h"
#include "planners.h"
#include "tensormm.h"

#define CHEAP_KINDS ((1u << TMM_OP_POOL) | (1u << TMM_OP_ACT) | \
		     (1u << TMM_OP_NORM))

struct sn {
	struct tmm_analysis an;
	struct tmm_eviction_set set;
	struct tmm_fit fit;	/* the curve under `set` */
};

static bool over_target(const struct sn *s, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++)
		if (s->fit.curve[k] > s->an.target)
			return true;
	return false;
}

static int take(struct sn *s, struct tmm_eviction e)
{
	int rc = tmm_eviction_add(&s->set, e);

	if (rc == 0)
		tmm_fit_add(&s->an, &s->fit, &e);
	return rc;
}

/* Is memory still short somewhere? */
static bool short_of_memory(struct sn *s)
{
	return !tmm_fit_check(&s->an, &s->fit, &s->set);
}

/* The memory of op o: every tensor it touches (l_i). */
static uint64_t layer_bytes(const struct tmm_analysis *an, uint32_t o)
{
	const struct tmm_trace_op *op = &an->trace->ops[o];
	uint64_t sum = 0;

	for (uint32_t i = 0; i < (uint32_t)op->n_inputs + op->n_outputs; i++)
		sum += an->life[an->trace->op_tensors[op->first + i]].bytes;
	return sum;
}

/* Step 2: the UTP offloads convolution outputs, earliest first. */
static int offload_convs(struct sn *s)
{
	const struct tmm_trace *tr = s->an.trace;

	for (uint32_t t = 0; t < tr->n_tensors && short_of_memory(s); t++) {
		uint32_t back, evict = tmm_feature_map(&s->an, t, &back);
		uint32_t w = tmm_first_writer_op(&s->an, t);
		struct tmm_eviction e;
		uint32_t gone, ret;
		int rc;

		if (evict == TMM_TRACE_NONE || tr->ops[w].kind != TMM_OP_CONV)
			continue;
		e = (struct tmm_eviction){
			.tensor = t, .evict = evict, .back = back,
			.in_trigger = tmm_layer_ahead(&s->an, evict, back,
						      1u << TMM_OP_CONV),
		};
		tmm_eviction_span(&s->an, &e, &gone, &ret);
		if (!over_target(s, gone, ret))
			continue;
		rc = take(s, e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Drops feature map t of a segment, once or after every use. */
static int drop_map(struct sn *s, uint32_t t, bool memory_centric)
{
	uint32_t back, evict = tmm_feature_map(&s->an, t, &back);
	int rc = 0;

	if (!tmm_recomputable(&s->an, t, evict, back, NULL))
		return 0;
	rc = take(s, (struct tmm_eviction){ .tensor = t, .evict = evict,
					    .back = back, .drop = true });
	if (!memory_centric)
		return rc;
	for (uint32_t k = 0; k + 1 < s->an.life[t].n_acc && rc == 0; k++) {
		uint32_t a = tmm_access_of(&s->an, t, k);
		uint32_t b = tmm_access_of(&s->an, t, k + 1);

		if (a < back || s->an.trace->accesses[a].op ==
					s->an.trace->accesses[b].op)
			continue;
		if (tmm_recomputable(&s->an, t, a, b, NULL))
			rc = take(s, (struct tmm_eviction){
				.tensor = t, .evict = a, .back = b,
				.drop = true });
	}
	return rc;
}

/* Step 3: cost-aware recomputation, segment by segment. */
static int recompute_segments(struct sn *s)
{
	const struct tmm_trace *tr = s->an.trace;
	uint64_t l_peak = 0;

	for (uint32_t o = 0; o < tr->n_ops; o++) {
		uint64_t l = layer_bytes(&s->an, o);

		if (l > l_peak)
			l_peak = l;
	}
	for (uint32_t o = 0; o < tr->n_ops && short_of_memory(s);) {
		uint32_t end = o;
		uint64_t maps = 0, l_back = 0;
		bool lowers = false;

		if (tmm_op_is_backward(tr, o))
			break;
		while (end < tr->n_ops && !tmm_op_is_backward(tr, end) &&
		       (CHEAP_KINDS & (1u << tr->ops[end].kind)))
			end++;
		if (end == o) {
			o++;
			continue;
		}
		/* The segment's feature maps: outputs of ops [o, end). */
		for (uint32_t t = 0; t < tr->n_tensors; t++) {
			uint32_t w = tmm_first_writer_op(&s->an, t), back;
			uint32_t evict;

			if (w < o || w >= end)
				continue;
			evict = tmm_feature_map(&s->an, t, &back);
			if (evict == TMM_TRACE_NONE)
				continue;
			maps += s->an.life[t].bytes;
			if (layer_bytes(&s->an, tr->accesses[back].op) > l_back)
				l_back = layer_bytes(&s->an,
						     tr->accesses[back].op);
			lowers |= over_target(s, evict + 1, back);
		}
		for (uint32_t t = 0; lowers && t < tr->n_tensors; t++) {
			uint32_t w = tmm_first_writer_op(&s->an, t);
			int rc;

			if (w < o || w >= end)
				continue;
			rc = drop_map(s, t, maps + l_back > l_peak);
			if (rc < 0)
				return rc;
		}
		o = end;
	}
	return 0;
}

int tmm_plan_superneurons(const struct tmm_planner_input *in,
			  struct tmm_plan *out)
{
	struct sn s = { 0 };
	int rc = tmm_plan_init(out, in->trace, "superneurons");

	if (rc == 0)
		rc = tmm_analysis_init(&s.an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&s.an, &s.set);
	if (rc == 0)
		rc = tmm_idle_state(&s.an, &s.set);
	if (rc == 0)
		rc = tmm_fit_init(&s.an, &s.fit, &s.set);
	if (rc < 0)
		goto out;
	rc = offload_convs(&s);
	if (rc == 0)
		rc = recompute_segments(&s);
	if (rc == 0)
		rc = tmm_emit(&s.an, s.set.ev, s.set.n, out);
out:
	tmm_fit_free(&s.fit);
	tmm_eviction_set_free(&s.set);
	tmm_analysis_free(&s.an);
	return rc;
}
