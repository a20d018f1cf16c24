/* SPDX-License-Identifier: MIT */
/*
 * bench_uvm.c — managed memory without hints against the swap engine, on
 * the simulated GPU (a benchmark, not a test).
 *
 * Trains the MLP of examples/ for a few steps with the whole device, then
 * at 200% (room for its tensors in whole managed pages, which the peak in
 * bytes does not have), 100%, 50% and 30% of that run's peak, in
 * mode=uvm with no plan and uvm_cap=driver (the simulated driver faults
 * and evicts on its own), in mode=uvm with uvm_cap=library (the library
 * swaps out before its count of pages passes the budget, the driver
 * keeping the whole device, as CUDA's does), in mode=uvm with
 * uvm_cap=both, the default (the library swaps out first, the driver
 * takes what it cannot), and in mode=swap (the runtime's passive
 * swapping).  For each it prints the
 * simulated time of the last iteration and what moved.  Every time here is
 * SIMULATED on the profile named, not measured: it is the model's verdict
 * (docs/uvm-model.md), good for comparing the two modes, not for absolute
 * figures.
 *
 *   bench/bench_uvm [profile]     (default p100-pcie3-16g)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "mlp_model.h"
#include "tensormm.h"

#define STEPS 5

static void model(struct mlp_config *mc)
{
	mlp_config_default(mc);
	mc->steps = STEPS;
	mc->layers = 5;
	mc->width = 192;
	mc->batch = 64;
}

/* Trains under `config`; fills st.  Returns 0 or exits with a message. */
static void train(const char *config, struct tmm_stats *st)
{
	struct mlp_config mc;
	tmm_ctx *ctx;
	int rc;

	model(&mc);
	if (tmm_ctx_create(&ctx, config) != 0) {
		fprintf(stderr, "bench_uvm: %s\n", tmm_last_error(NULL));
		exit(1);
	}
	rc = mlp_train(ctx, &mc, NULL, NULL, NULL, NULL);
	if (rc != 0) {
		fprintf(stderr, "bench_uvm: %s: %s\n", config,
			tmm_last_error(ctx));
		exit(1);
	}
	st->version = TMM_STATS_VERSION;
	tmm_stats_get(ctx, st);
	tmm_ctx_destroy(ctx);
}

static double mib(unsigned long long bytes)
{
	return (double)bytes / (1 << 20);
}

int main(int argc, char **argv)
{
	static const unsigned percents[] = { 200, 100, 50, 30 };
	const char *profile = argc > 1 ? argv[1] : "p100-pcie3-16g";
	struct tmm_stats ref, st;
	struct mlp_config mc;
	char config[192], machine[384];

	model(&mc);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,sim_profile=%s,mode=swap",
		 profile);
	train(config, &ref);
	bench_describe_machine(machine, sizeof(machine));
	printf("bench_uvm: MLP (%u hidden layers of %u, batch %u), %u steps, "
	       "policy none (no hints)\n", mc.layers, mc.width, mc.batch,
	       STEPS);
	printf("SIMULATED on %s (virtual times from the profile; host: %s)\n",
	       profile, machine);
	printf("unconstrained peak %.2f MiB; budgets are percentages of it\n\n",
	       mib(ref.device_peak));
	printf("%-8s %-7s %10s %8s %8s %10s %9s %10s %8s %12s %12s\n",
	       "mode", "budget", "iter (ms)", "batches", "faults",
	       "fault MiB", "evictions", "wrote MiB", "passive",
	       "swap-out MiB", "swap-in MiB");
	for (size_t i = 0; i < sizeof(percents) / sizeof(percents[0]); i++) {
		unsigned long long budget =
			ref.device_peak * percents[i] / 100;

		/* uvm: the driver holds the budget; uvm-lib: the
		 * library; uvm-both: the library first (the default). */
		static const char *const modes[][2] = {
			{ "uvm", "uvm,uvm_cap=driver" },
			{ "uvm-lib", "uvm,uvm_cap=library" },
			{ "uvm-both", "uvm,uvm_cap=both" },
			{ "swap", "swap" },
		};

		for (int m = 0; m < 4; m++) {
			snprintf(config, sizeof(config),
				 "backend=sim,sim_memory=backed,sim_profile="
				 "%s,mode=%s,budget=%lluB", profile,
				 modes[m][1], budget);
			train(config, &st);
			printf("%-8s %6u%% %10.3f %8llu %8llu %10.2f %9llu "
			       "%10.2f %8llu %12.2f %12.2f\n", modes[m][0],
			       percents[i],
			       (double)st.last_iteration_ns / 1e6,
			       (unsigned long long)st.uvm_fault_batches,
			       (unsigned long long)st.uvm_faults,
			       mib(st.uvm_fault_bytes),
			       (unsigned long long)st.uvm_evictions,
			       mib(st.uvm_eviction_bytes),
			       (unsigned long long)st.passive_evictions,
			       mib(st.swap_out_bytes), mib(st.swap_in_bytes));
		}
	}
	printf("\niter: the last of the %u iterations; batches, faults, "
	       "evictions, passive (the library's evictions) and MiB are "
	       "totals over the run\n", STEPS);
	return 0;
}
