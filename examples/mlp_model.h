/* SPDX-License-Identifier: MIT */
/*
 * mlp_model.h — a multilayer perceptron trained through libtensormm.
 *
 * Real CPU math (the simulator's backed memory is host memory) on synthetic
 * data, written as a framework would: weights and momentum are PERSISTENT
 * tensors made once; every step creates fresh activation and gradient
 * tensors, runs forward, loss, backward and SGD-with-momentum ops through
 * tmm_run, and destroys them.  Used by the demo (examples/mlp.c) and by the
 * end-to-end test that checks a run under memory pressure is bit-identical
 * to an unconstrained one.  With the CPU loops, the ops with a batch
 * dimension can be split along it into micro-ops (TSPLIT: tmm_op.run_slice
 * and slice_extent), with bit-identical results.
 */
#ifndef MLP_MODEL_H
#define MLP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensormm.h"

/* The shape an op callback works on (its `user` argument). */
struct mlp_dims {
	unsigned b, i, o; /* batch, inputs, outputs */
	float lr, momentum;
	int has_dx;	  /* fc_backward: a third output receives dX */
};

/*
 * The op callbacks, for a device whose memory the host cannot touch (the
 * GPU example supplies cuBLAS and CUDA kernels; NULL in mlp_config means
 * the CPU loops of mlp_model.c, the only ones that split).  Each takes
 * the tensors in the order the CPU loop of the same name documents, and
 * `user` is a struct mlp_dims.
 */
struct mlp_kernels {
	tmm_run_fn fc_forward, relu_forward, relu_backward, softmax_xent;
	tmm_run_fn fc_backward, sgd_momentum;
};

/*
 * One layer's gradients, as the backward pass leaves them (for data
 * parallelism, examples/mlp_dp.c): after the backward of `layer` in
 * micro-batch `micro`, dw[k] and db[k] are that layer's gradients of
 * micro-batches k = 0 .. micro, each summed over its own samples only
 * (and divided by mlp_config.batch, as the loss is), kept until the step
 * ends.  w and b are the layer's parameters.
 */
struct mlp_layer_grads {
	unsigned layer, micro;
	tmm_tensor w, b;
	const tmm_tensor *dw, *db;
};

struct mlp_config {
	unsigned batch;	  /* samples per step */
	unsigned inputs;  /* features per sample */
	unsigned width;	  /* units per hidden layer */
	unsigned layers;  /* hidden layers (>= 1) */
	unsigned classes; /* output classes (>= 2) */
	unsigned steps;	  /* training steps (iterations) */
	float lr, momentum;
	uint64_t seed;	  /* data and initial weights */
	/* Called after each step when not NULL (the tests install a plan
	 * there); a nonzero return stops the training with that value. */
	int (*after_step)(tmm_ctx *ctx, unsigned step, void *arg);
	void *after_step_arg;
	const struct mlp_kernels *kernels; /* NULL: the CPU loops */
	/* Called with each op just before tmm_run when not NULL (a test
	 * reads the descriptors there: which ops split, and how); a
	 * nonzero return stops the training with that value. */
	int (*before_op)(tmm_ctx *ctx, const tmm_op *op, void *arg);
	void *before_op_arg;
	/* Rehearse the first step (tmm_rehearsal_begin/end) before
	 * training: the plan comes from predicted op times and the first
	 * real step is already guided. */
	bool rehearse;
	/*
	 * Data parallelism and gradient accumulation (examples/mlp_dp.c).
	 * micro: micro-batches of `batch` samples per step (0 counts as 1),
	 * each through forward, loss and backward in turn, their gradients
	 * kept apart.  shards, shard: the data set is that of a step of
	 * batch x micro x shards samples, of which this context trains part
	 * `shard` (0 .. shards-1; 0 and 0 count as one shard, the whole).
	 */
	unsigned micro, shards, shard;
	/* When not NULL, the model runs no optimizer and makes no momentum:
	 * after each layer's backward (last layer first, micro-batch by
	 * micro-batch) it calls this, which reduces the gradients and
	 * updates the parameters when it will; a nonzero return stops the
	 * training with that value. */
	int (*after_backward)(tmm_ctx *ctx, const struct mlp_layer_grads *g,
			      void *arg);
	void *after_backward_arg;
};

/* A small default that still needs several MiB of device memory. */
void mlp_config_default(struct mlp_config *cfg);

/* The CPU loops, the kernels used when mlp_config.kernels is NULL: what
 * a device without its own kernels runs as their host twins (the CUDA
 * test double's, tests/test_cuda_train.c). */
const struct mlp_kernels *mlp_cpu_kernels(void);

/*
 * Trains cfg->steps steps in ctx.  losses (cfg->steps floats, may be NULL)
 * receives the loss of each step; when weights is not NULL, *weights
 * receives a malloc'd copy of every weight and bias after training (the
 * bytes a run must reproduce) and *weights_len its length.  Progress lines
 * ("step 3 loss 2.1973") go to `log` when not NULL.
 * Returns 0 or the negative errno of the failing libtensormm call (its
 * message is in tmm_last_error(ctx)).
 */
int mlp_train(tmm_ctx *ctx, const struct mlp_config *cfg, float *losses,
	      uint8_t **weights, size_t *weights_len, FILE *log);

#endif /* MLP_MODEL_H */
