/* SPDX-License-Identifier: MIT */
/*
 * plan_vdnn.c — vDNN (Rhu et al., "vDNN: Virtualized Deep Neural
 * Networks for Scalable, Memory-Efficient Neural Network Design",
 * MICRO 2016).
 *
 * vDNN is static: in the forward pass it offloads the input feature maps
 * of every convolution (vDNN_conv) or of every layer (vDNN_all) once the
 * layer has used them, and in the backward pass it prefetches the feature
 * maps of the layer before the one running ("one layer ahead").  It does
 * not look at the budget; the plan says whether it fits.
 *
 * Our choices: a feature map is offloaded after its last forward access
 * (a map read by several forward layers stays until the last one), and
 * the prefetch of a map fires at the first access of the nearest earlier
 * backward layer of the policy's kind.
 */
#include <stdlib.h>

#include "analysis.h"
#include "layers.h"
#include "planners.h"
#include "tensormm.h"

static int vdnn(const struct tmm_planner_input *in, struct tmm_plan *out,
		const char *name, uint32_t kinds)
{
	const struct tmm_trace *tr = in->trace;
	struct tmm_analysis an;
	struct tmm_eviction_set set = { 0 };
	int rc = tmm_plan_init(out, tr, name);

	if (rc == 0)
		rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = tmm_liveness(&an, &set);
	for (uint32_t t = 0; t < tr->n_tensors && rc == 0; t++) {
		uint32_t back, evict = tmm_feature_map(&an, t, &back);
		bool input_of_layer = kinds == TMM_KINDS_ALL;

		if (evict == TMM_TRACE_NONE)
			continue;
		/* Is it read by a forward layer of the policy's kind? */
		for (uint32_t k = 0; k < an.life[t].n_acc; k++) {
			uint32_t a = tmm_access_of(&an, t, k);
			uint32_t op = tr->accesses[a].op;

			if (a > evict)
				break;
			if ((tr->accesses[a].flags & TMM_TA_READ) &&
			    op < tr->n_ops &&
			    (kinds & (1u << tr->ops[op].kind)))
				input_of_layer = true;
		}
		if (!input_of_layer)
			continue;
		rc = tmm_eviction_add(&set, (struct tmm_eviction){
			.tensor = t, .evict = evict, .back = back,
			.in_trigger = tmm_layer_ahead(&an, evict, back, kinds),
		});
	}
	if (rc == 0)
		rc = tmm_emit(&an, set.ev, set.n, out);
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
