/* SPDX-License-Identifier: MIT */
/*
 * dp_mlp.h — the MLP's side of dp_grads.h, for examples/mlp_dp: its
 * parameters as a struct dp_model (layer by layer, last layer first, W
 * then b; one group a layer), its optimizer (SGD with momentum, the
 * momentum kept here since mlp_config.after_backward makes the model run
 * none), the ZeRO-1 update of a bucket's part, and the
 * mlp_config.after_backward hook that hands each layer's gradients to
 * the trainer.
 */
#ifndef DP_MLP_H
#define DP_MLP_H

#include <stdbool.h>

#include "dp_grads.h"
#include "mlp_model.h"
#include "tensormm.h"

struct dp_mlp;

/*
 * Describes the MLP of mc (its shape, lr, momentum, and mc->kernels'
 * sgd_momentum, or the CPU loops' where NULL: read now, so set the
 * kernels first) and, unless zero, makes its momentum (persistent
 * tensors in ctx, zeroed; with ZeRO the trainer makes the parts).
 * Returns 0 or a negative errno (with ctx's message for a libtensormm
 * failure).
 */
int dp_mlp_open(tmm_ctx *ctx, const struct mlp_config *mc, bool zero,
		struct dp_mlp **out);
void dp_mlp_close(tmm_ctx *ctx, struct dp_mlp *d);

/* The model for dp_setup.model, valid while d is open. */
const struct dp_model *dp_mlp_model(struct dp_mlp *d);

/* The trainer the hook hands the gradients to. */
void dp_mlp_attach(struct dp_mlp *d, struct dp_trainer *t);

/* The mlp_config.after_backward hook; arg is the struct dp_mlp. */
int dp_mlp_after_backward(tmm_ctx *ctx, const struct mlp_layer_grads *g,
			  void *arg);

#endif /* DP_MLP_H */
