/* SPDX-License-Identifier: MIT */
/*
 * plan_vdnn.c — vDNN (Rhu et al., "vDNN: Virtualized Deep Neural
 * Networks for Scalable, Memory-Efficient Neural Network Design",
 * MICRO 2016).
 *
 * From the paper (§III; its paper is not in the tree, this is from its
 * text as we know it):
 *  - vDNN is static: vDNN_all offloads the input feature maps of every
 *    layer, vDNN_conv those of the convolution layers only.  It does not
 *    look at the budget; the plan says whether it fits.
 *  - The offload of a layer's input maps runs on a memory stream while
 *    the layer's forward computes, and the two synchronise at the end of
 *    the layer: the next layer does not start before the offload is done,
 *    and the maps' device memory is released then.  The transfer time the
 *    layer's compute does not cover is a stall.
 *  - In the backward pass, while a layer's backward computes, vDNN
 *    prefetches the maps of the nearest earlier layer that it offloaded
 *    (searching no further back than the next convolution layer), and the
 *    layer's end waits for that prefetch too.
 *
 * Both copies are plan actions flagged TMM_ACT_SYNC (plan.h), which the
 * runtime executes layer-synchronously (lib/exec/layer_sync.h).
 *
 * Our choices:
 *  - A layer is one op of the trace, its type the op's kind.
 *  - An "input feature map" is a feature map (layers.h) read by a forward
 *    op of the policy's kind; one that the forward pass only writes (the
 *    statistics a norm layer saves) is no layer's input and stays.
 *  - A map that several forward ops read (a residual block's input,
 *    which its first convolution and its sum read; a transformer's
 *    residual stream) stays on the device: it is no single layer's
 *    input.  That is an inference from the two papers that ran vDNN on
 *    ResNets, not their text: neither says how its vDNN treats such a
 *    map.  Offloading it beside its last reader, as this planner did
 *    before, trains twice their batches on ResNet-50 (1050 on the P100
 *    against Capuchin Table 2's 520, 1585 on the TITAN RTX against
 *    TSPLIT Table IV's 783), where VGG-16, which has no such map, lands
 *    on both papers' figures; keeping it lands ResNet-50, -101 and -152
 *    within 35% of both tables (bench/paper_figures.c).
 *  - The layer a prefetch runs beside is the nearest backward op of the
 *    policy's kind before the backward op that reads the map: with
 *    vDNN_all the op right before it, with vDNN_conv the convolution
 *    backward before it, which on a chain is the layer the paper's search
 *    stops at.
 *  - The swap-outs that liveness adds (a tensor the program frees long
 *    after its last use, analysis.h) are ours, not vDNN's: they stay
 *    decoupled.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis.h"
#include "idle_state.h"
#include "layers.h"
#include "planners.h"
#include "tensormm.h"
#include "lib/base/xalloc.h"

/* Flags SYNC the plan's swap-out and prefetch of each eviction in ev. */
static void make_sync(const struct tmm_trace *tr, const struct tmm_eviction *ev,
		      uint32_t n, struct tmm_plan *out, uint32_t *back_of)
{
	for (uint32_t t = 0; t < tr->n_tensors; t++)
		back_of[t] = TMM_TRACE_NONE;
	for (uint32_t i = 0; i < n; i++)
		back_of[ev[i].tensor] = ev[i].back;
	for (uint32_t i = 0; i < out->n_actions; i++) {
		struct tmm_plan_action *a = &out->actions[i];

		if ((a->type != TMM_ACT_EVICT_SWAP &&
		     a->type != TMM_ACT_PREFETCH) ||
		    a->back_access >= tr->n_accesses)
			continue;
		if (back_of[tr->accesses[a->back_access].tensor] ==
		    a->back_access)
			a->flags |= TMM_ACT_SYNC;
	}
}

static int vdnn(const struct tmm_planner_input *in, struct tmm_plan *out,
		const char *name, uint32_t kinds)
{
	const struct tmm_trace *tr = in->trace;
	struct tmm_analysis an;
	struct tmm_eviction_set set = { 0 }, layer = { 0 };
	uint32_t *back_of = NULL;
	int rc = tmm_plan_init(out, tr, name);

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&an, &set);
	if (rc == 0)
		rc = tmm_idle_state(&an, &set);
	for (uint32_t t = 0; t < tr->n_tensors && rc == 0; t++) {
		uint32_t back, evict = tmm_feature_map(&an, t, &back);
		bool input_of_layer = false;
		uint32_t readers = 0, last_reader = TMM_TRACE_NONE;

		if (evict == TMM_TRACE_NONE)
			continue;
		/* Is it read by a forward layer of the policy's kind, and
		 * by how many forward ops? */
		for (uint32_t k = 0; k < an.life[t].n_acc; k++) {
			uint32_t a = tmm_access_of(&an, t, k);
			uint32_t op = tr->accesses[a].op;

			if (a > evict)
				break;
			if ((tr->accesses[a].flags & TMM_TA_READ) &&
			    op != last_reader) {
				readers++;
				last_reader = op;
			}
			if ((tr->accesses[a].flags & TMM_TA_READ) &&
			    op < tr->n_ops &&
			    (kinds & (1u << tr->ops[op].kind)))
				input_of_layer = true;
		}
		/* Read by several forward ops: it stays (header). */
		if (!input_of_layer || readers > 1)
			continue;
		rc = tmm_eviction_add(&layer, (struct tmm_eviction){
			.tensor = t, .evict = evict, .back = back,
			.in_trigger = tmm_layer_ahead_beside(&an, evict, back,
							     kinds),
		});
	}
	for (uint32_t i = 0; i < layer.n && rc == 0; i++)
		rc = tmm_eviction_add(&set, layer.ev[i]);
	if (rc == 0)
		rc = tmm_emit(&an, set.ev, set.n, out);
	if (rc == 0) {
		back_of = tmm_malloc(sizeof(uint32_t) *
				     (tr->n_tensors + 1));
		if (back_of)
			make_sync(tr, layer.ev, layer.n, out, back_of);
		else
			rc = -ENOMEM;
	}
	free(back_of);
	tmm_eviction_set_free(&layer);
	tmm_eviction_set_free(&set);
	tmm_analysis_free(&an);
	return rc;
}

int tmm_plan_vdnn_conv(const struct tmm_planner_input *in,
		       struct tmm_plan *out)
{
	return vdnn(in, out, "vdnn-conv", 1u << TMM_OP_CONV);
}

int tmm_plan_vdnn_all(const struct tmm_planner_input *in,
		      struct tmm_plan *out)
{
	return vdnn(in, out, "vdnn-all", TMM_KINDS_ALL);
}
