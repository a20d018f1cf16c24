/* SPDX-License-Identifier: MIT */
/*
 * bench_share.c — several processes training on one simulated GPU with
 * share on (a benchmark, not a test).
 *
 *   bench/bench_share [processes [capacity% [rate0]]]
 *       processes  2 to 4 (default 3), started together
 *       capacity%  the device, in percent of one process's unconstrained
 *                  peak (default 150: too small for them all)
 *       rate0      max_swap_rate of process 0 (default 1; the others 1)
 *
 * The planner is TENSORMM_POLICY's (default none: passive mode).
 *
 * Prints each process's budget and simulated iteration time at every
 * step, then a summary against the same model alone on the device.  The
 * iteration times are virtual nanoseconds of the sim's profile; the
 * budgets are what the split rule gave each process at that step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mlp_model.h"
#include "tensormm.h"

#define STEPS 8
#define MAX_PROCS 4

struct probe {
	unsigned proc;
	uint64_t iteration_ns_sum;
};

static void model(struct mlp_config *mc)
{
	mlp_config_default(mc);
	mc->steps = STEPS;
	mc->layers = 5;
	mc->width = 192;
	mc->batch = 64;
}

static int after_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct probe *p = arg;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	if (tmm_stats_get(ctx, &st) < 0)
		return -1;
	p->iteration_ns_sum += st.last_iteration_ns;
	printf("proc %u  step %u  budget %8.1f KiB  iteration %8.1f us  "
	       "swapped out %8.1f KiB\n",
	       p->proc, step, st.share_reservation / 1024.0,
	       st.last_iteration_ns / 1e3, st.swap_out_bytes / 1024.0);
	fflush(stdout);
	return 0;
}

/* Trains once; returns 0 and fills *st, or -1 with a message. */
static int run(const char *config, struct probe *p, struct tmm_stats *st)
{
	struct mlp_config mc;
	float losses[STEPS];
	uint8_t *weights = NULL;
	size_t len;
	tmm_ctx *ctx;
	int rc;

	model(&mc);
	if (p) {
		mc.after_step = after_step;
		mc.after_step_arg = p;
	}
	if (tmm_ctx_create(&ctx, config) < 0) {
		fprintf(stderr, "bench_share: %s\n", tmm_last_error(NULL));
		return -1;
	}
	rc = mlp_train(ctx, &mc, losses, &weights, &len, NULL);
	if (rc < 0)
		fprintf(stderr, "bench_share: %s\n", tmm_last_error(ctx));
	st->version = TMM_STATS_VERSION;
	tmm_stats_get(ctx, st);
	tmm_ctx_destroy(ctx);
	free(weights);
	return rc < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned procs = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
	unsigned percent = argc > 2 ? (unsigned)atoi(argv[2]) : 150;
	double rate0 = argc > 3 ? atof(argv[3]) : 1.0;
	struct tmm_stats alone;
	uint64_t capacity;
	int go[2], failed = 0;
	pid_t pids[MAX_PROCS];

	if (procs < 2 || procs > MAX_PROCS || percent < 10 || rate0 < 0 ||
	    rate0 > 1) {
		fprintf(stderr, "usage: bench_share [2-4 [capacity%% (>= 10) "
			"[rate0 (0..1)]]]\n");
		return 2;
	}
	if (run("backend=sim,sim_memory=backed,mode=swap", NULL, &alone) < 0)
		return 1;
	capacity = alone.device_peak * percent / 100 / 256 * 256;
	printf("alone: peak %.1f KiB, iteration %.1f us (simulated)\n"
	       "%u processes on a device of %.1f KiB (%u%% of one peak), "
	       "max_swap_rate %.2f for proc 0\n",
	       alone.device_peak / 1024.0, alone.last_iteration_ns / 1e3,
	       procs, capacity / 1024.0, percent, rate0);
	fflush(stdout);
	if (pipe(go) < 0)
		return 1;
	for (unsigned i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			struct probe p = { .proc = i };
			struct tmm_stats st;
			char config[200], byte;

			snprintf(config, sizeof(config),
				 "backend=sim,sim_memory=backed,mode=swap,"
				 "sim_capacity=%llu,share=bench-%d,"
				 "max_swap_rate=%g",
				 (unsigned long long)capacity, (int)getppid(),
				 i == 0 ? rate0 : 1.0);
			/* All start together. */
			if (read(go[0], &byte, 1) != 1)
				_exit(1);
			if (run(config, &p, &st) < 0)
				_exit(1);
			printf("proc %u  done: mean iteration %.1f us "
			       "(%.2fx alone), %llu budget changes\n",
			       i, p.iteration_ns_sum / 1e3 / STEPS,
			       (double)p.iteration_ns_sum / STEPS /
				       (double)alone.last_iteration_ns,
			       (unsigned long long)st.share_budget_changes);
			fflush(stdout);
			_exit(0);
		}
	}
	for (unsigned i = 0; i < procs; i++)
		if (write(go[1], "g", 1) != 1)
			return 1;
	for (unsigned i = 0; i < procs; i++) {
		int status;

		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	}
	return failed;
}
