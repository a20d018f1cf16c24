/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu_train.h — the training of examples/mlp_gpu on the GPU: the
 * MLP's ops as cuBLAS sgemms and the kernels of mlp_gpu_kernels.h, and
 * one training run in a context.  examples/mlp_gpu.c drives it; the test
 * on the CUDA test double (tests/test_mlp_gpu_fake.c) runs the same code
 * with the double's cuBLAS and the kernels' host twins.
 * bench/bench_gpu_train.c runs its own contexts with the same ops
 * (mlp_gpu_ops, mlp_gpu_blas_forget_stream).
 */
#ifndef MLP_GPU_TRAIN_H
#define MLP_GPU_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mlp_model.h"

/* One training run's results. */
struct mlp_gpu_result {
	float *losses;		/* mc->steps of them, malloc'd */
	uint8_t *weights;	/* every weight and bias, malloc'd */
	size_t len;
	unsigned long long peak;
	unsigned long long swap_outs;
};

/*
 * Makes the one cuBLAS handle and its workspace, set up for reproducible
 * results, and the ops' device scratch for batches of up to `batch` rows
 * (12 bytes a row; an op with more rows makes more at its call), all
 * outside the contexts' budgets, so before them (mlp_gpu_train.c);
 * 0, or nonzero with the failing call on stderr.  The close frees them.
 */
int mlp_gpu_blas_open(unsigned batch);
void mlp_gpu_blas_close(void);

/*
 * Forgets the stream the handle was last set to: call it after a context
 * is destroyed, so that the next context's compute stream is set on the
 * handle (with our workspace) even where CUDA hands out the same stream
 * address again.  mlp_gpu_train() calls it itself.
 */
void mlp_gpu_blas_forget_stream(void);

/*
 * The op callbacks for mlp_config.kernels (valid after
 * mlp_gpu_blas_open), for a caller that makes its own contexts.
 */
const struct mlp_kernels *mlp_gpu_ops(void);

/*
 * Trains *mc (its kernels replaced by the GPU's) in a new context of
 * `config`, printing one line of its statistics on stdout; r receives
 * the losses and weights (the caller frees them).  Returns 0, or the
 * failing call's error with its message on stderr.
 */
int mlp_gpu_train(const char *config, const struct mlp_config *mc,
		  struct mlp_gpu_result *r, FILE *log);

#endif /* MLP_GPU_TRAIN_H */
