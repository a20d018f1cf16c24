/* SPDX-License-Identifier: MIT */
/*
 * mlp_gpu.c — the MLP demo on a real GPU: the training program of
 * examples/mlp.c (same model, initialisation, data, loss and steps, from
 * mlp_model.c) with its ops on the device: matrix products by
 * cublasSgemm, the element-wise work by the kernels of
 * mlp_gpu_kernels.cu (both in mlp_gpu_train.c, which the test on the
 * CUDA test double runs too: tests/test_mlp_gpu_fake.c).
 *
 * It trains once with 90% of the free device memory, which must not swap,
 * to measure the peak device memory,
 * then with a budget of a fraction of that peak (30% by default) in
 * mode=swap and in mode=uvm, and checks that each constrained run's
 * losses and final weights are bit-identical to the unconstrained run's.
 * Exit status: 0 when they are, 1 when not or on an error, 77 when there
 * is no GPU (the test suites' "skipped").
 *
 * Determinism: every kernel computes each output in one thread in a
 * fixed order, and cuBLAS is set up to give bit-identical results run to
 * run on one GPU (mlp_gpu_train.c says how).
 *
 *   examples/mlp_gpu [--fraction F] [--steps N] [--layers N] [--width N]
 *                    [--batch N]
 *
 * In mode=uvm the CUDA driver cannot be capped (backend.h): the budget
 * bounds what the runtime plans for, not the pages the driver keeps,
 * unless uvm_cap=library has the library hold them (tensormm(7)).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "demo_run.h"
#include "mlp_gpu_train.h"
#include "mlp_model.h"
#include "tensormm.h"

/* ---- the demo --------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlp_gpu [--fraction F] [--steps N] [--layers N] "
		"[--width N] [--batch N]\n"
		"  --fraction F  device budget as a fraction of the "
		"unconstrained peak, 0 < F <= 1 (default 0.3)\n"
		"  --steps N     training steps (default 12)\n"
		"  --layers N    hidden layers (default 6)\n"
		"  --width N     units per hidden layer (default 256)\n"
		"  --batch N     samples per step (default 128)\n");
}

static bool same(const struct mlp_gpu_result *a,
		 const struct mlp_gpu_result *b, unsigned steps)
{
	return a->len == b->len && !memcmp(a->weights, b->weights, a->len) &&
	       !memcmp(a->losses, b->losses, steps * sizeof(float));
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "swap", "uvm" };
	struct mlp_gpu_result free_run = { 0 }, tight[2] = { { 0 } };
	struct mlp_config mc;
	double fraction = 0.3;
	unsigned long long budget;
	char config[160];
	bool ok = true;
	int n = 0;

	mlp_config_default(&mc);
	{
		const struct demo_opt opts[] = {
			{ "--fraction", DEMO_FRACTION, &fraction, 0 },
			{ "--steps", DEMO_COUNT, &mc.steps, 0 },
			{ "--layers", DEMO_COUNT, &mc.layers, 63 },
			{ "--width", DEMO_COUNT, &mc.width, 0 },
			{ "--batch", DEMO_COUNT, &mc.batch, 0 },
		};
		int parsed = demo_parse_args("mlp_gpu", argc, argv, opts,
					 sizeof(opts) / sizeof(opts[0]), usage);

		if (parsed)
			return parsed == 1 ? 0 : 2;
	}


	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		(void)cudaGetLastError();
		printf("mlp_gpu: no CUDA device; skipped\n");
		return 77;
	}
	if (mlp_gpu_blas_open(mc.batch))
		return 1;

	printf("libtensormm demo: an MLP (%u hidden layers of %u, batch %u) "
	       "on the GPU, cuBLAS\n\n", mc.layers, mc.width, mc.batch);
	printf("1) unconstrained run, to measure the peak device memory\n");
	/* Most of the free device memory (the rest is left to cuBLAS and
	 * the driver): a fixed size such as 1 GiB would swap at the
	 * larger shapes, and a fraction of a constrained peak could then
	 * fall below the largest op. */
	if (mlp_gpu_train("backend=cuda,mode=swap,budget=90%", &mc,
			  &free_run, NULL))
		return 1;
	if (free_run.swap_outs) {
		printf("mlp_gpu: the unconstrained run swapped %llu times: "
		       "the model needs more than 90%% of the free device "
		       "memory; use a smaller --width, --layers or --batch\n",
		       free_run.swap_outs);
		return 1;
	}
	budget = (unsigned long long)((double)free_run.peak * fraction);
	printf("\n2) budget %.0f%% of that peak (%.2f MiB), in both modes\n",
	       100.0 * fraction, budget / 1048576.0);
	for (int m = 0; m < 2; m++) {
		bool same_bits;

		snprintf(config, sizeof(config),
			 "backend=cuda,mode=%s,budget=%lluB", modes[m], budget);
		if (mlp_gpu_train(config, &mc, &tight[m], NULL))
			return 1;
		same_bits = same(&free_run, &tight[m], mc.steps);
		printf("   mode=%s: weights and losses bit-identical to the "
		       "unconstrained run: %s\n", modes[m],
		       same_bits ? "yes" : "NO");
		if (m == 0 && tight[m].peak > budget) {
			printf("   mode=swap: peak above the budget: NO\n");
			ok = false;
		}
		ok = ok && same_bits;
	}
	printf("\nfinal loss %.4f\n", free_run.losses[mc.steps - 1]);
	mlp_gpu_blas_close();
	free(free_run.losses);
	free(free_run.weights);
	for (int m = 0; m < 2; m++) {
		free(tight[m].losses);
		free(tight[m].weights);
	}
	return ok ? 0 : 1;
}
