/* SPDX-License-Identifier: MIT */
/*
 * mlp.c — the multilayer perceptrons of examples/mlp_gpu.
 *
 * The two shapes issue #19 measures on a real GPU (docs/gpu-h100.md), so
 * that the simulator can be held to the same runs: `mlp_compute` is
 * compute-bound, 12 hidden layers of 4096 units (batch 2048 in the GPU
 * runs); `mlp_transfer` is transfer-bound, 24 hidden layers of 1024 units
 * (batch 8192).  As in examples/mlp_model.c: 256 input features, ReLU
 * after every hidden layer, 10 classes, softmax cross-entropy, SGD with
 * momentum.  The width scale multiplies the hidden width.
 */
#include <stdio.h>

#include "zoo.h"

/* examples/mlp_model.c's mlp_config_default: inputs and classes. */
#define MLP_INPUTS 256
#define MLP_CLASSES 10

int zoo_build_mlp(struct zgraph *g, const struct zoo_model *m,
		  const struct zoo_args *a)
{
	unsigned layers = m->variant == 0 ? 12 : 24;
	uint64_t width = (m->variant == 0 ? 4096 : 1024) * (uint64_t)a->scale;
	struct zg_mat h = {
		.t = zg_input(g, "x", (uint64_t)a->batch * MLP_INPUTS * 4,
			      a->batch),
		.rows = a->batch,
		.cols = MLP_INPUTS,
	};
	char n[32];

	/* examples/mlp_model.c updates each layer as soon as its gradient
	 * is ready, and destroys the step's tensors when the step ends. */
	g->update_early = true;
	g->destroy_at_end = true;
	for (unsigned l = 1; l <= layers; l++) {
		snprintf(n, sizeof(n), "fc%u", l);
		h = zg_linear(g, n, h, width, true);
		snprintf(n, sizeof(n), "relu%u", l);
		h = zg_mrelu(g, n, h);
	}
	h = zg_linear(g, "out", h, MLP_CLASSES, true);
	zg_softmax_xent(g, "loss", h);
	return g->err;
}
