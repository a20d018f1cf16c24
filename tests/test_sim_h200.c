/* SPDX-License-Identifier: MIT */
/*
 * test_sim_h200.c — the simulator reproduces what the H200 lent for issue
 * #19 measured with today's runtime (issue #19 §4: after the changes, the
 * sim and the GPU must agree again).
 *
 * docs/gpu-h200-goals.md holds the runs of bench_gpu_train (the training
 * of examples/mlp_gpu) on that card at commit d277e91, whose runtime is
 * today's but for mode=auto's choice and the forecast of held copies,
 * which the cells below do not depend on: mode is named in each, and the
 * forecast change left the plans of the GPU's cells alone on the double.
 * The profile h200-sxm-pcie5-141g carries the card's measured link and
 * managed-memory rates (sim_profile.c); here the zoo's copies of the two
 * MLP shapes run on it with the host ahead of the device, as a GPU's is,
 * and each cell's ratio to its own unconstrained run must land within
 * 25% of the card's, one parameter set for every cell of both shapes.
 *
 * Not held, and why (docs/gpu-h200-goals.md, "The simulator against the
 * H200"):
 *  - swap mode and uvm+auto on the transfer-bound shape at 30%: the card
 *    ran its unconstrained step in 54.1 ms where the profile's roofline
 *    gives 32.2 (the compute-bound one: 53.4 against 59.2).  Likely,
 *    not measured: its GEMMs are a quarter the size, and
 *    examples/mlp_gpu's bias gradients and loss were kernels of few
 *    threads whose time grows with the batch (no longer, since
 *    2b8fe7e; not measured on a GPU since), while the simulator
 *    prices every op by one efficiency; so its transfer-bound step has
 *    room to hide what the card's could not (1.00x in swap mode against
 *    1.41x there, where the card waited 16 ms a step for late
 *    prefetches).
 *  - uvm+auto by prefetch at compute 40%: 1.34x against 1.88x; the
 *    simulator's auto finds a plan that moves less (its bound 1.34x).
 *
 * Capuchin's mode=uvm cells are held since its prefetches stopped firing
 * inside the op that needs their tensor (tmm_last_in_trigger): before,
 * 1.97x against 1.51x, and by prefetch 3.70x against 2.79x.
 *
 * And the law the card showed for mode=uvm by copy, that every step took
 * the unconstrained step plus its copies at the pinned rate, holds on
 * the simulator by the same cause, a copy of managed memory holding the
 * host (sim_managed_copy=held): queued instead, the copies hide.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "sim_step.h"
#include "tensormm.h"

#define SIM                                                                  \
	"backend=sim,sim_memory=phantom,sim_profile=h200-sxm-pcie5-141g,"    \
	"sim_host=ahead"
#define TOLERANCE 0.25
/* The card's pinned copies, each way (docs/gpu-h200-goals.md). */
#define PINNED_GBPS 55.3

/* A cell the card measured at d277e91: step ms and the unconstrained
 * step of the same call (docs/gpu-h200-goals.md). */
struct cell {
	const char *model;
	unsigned batch;
	double fraction; /* budget, of the unconstrained peak */
	const char *mode, *policy;
	double gpu_ms, gpu_free_ms;
	const char *extra; /* more of the config, or NULL */
};

/* mode=uvm's other way, out by prefetch at 9.9 GB/s, as the card ran it
 * at f15ab58 (the runtime of d277e91 but for auto's choice of way). */
#define BY_PREFETCH ",uvm_swap_path=prefetch"

static const struct cell cells[] = {
	/* compute-bound: width 4096, 12 layers, batch 2048, 40% */
	{ "mlp_compute", 2048, 0.4, "swap", "auto", 55.4, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "swap", "tensile", 55.2, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "swap", "capuchin", 100.9, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "swap", "tsplit", 86.4, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "uvm", "auto", 88.4, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "uvm", "tensile", 88.6, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "uvm", "tsplit", 81.3, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "uvm", "capuchin", 80.6, 53.4, NULL },
	{ "mlp_compute", 2048, 0.4, "uvm", "tensile", 104.9, 53.1,
	  BY_PREFETCH },
	/* the report's ratio, 2.79x, of the call's 53.1 ms */
	{ "mlp_compute", 2048, 0.4, "uvm", "capuchin", 148.1, 53.1,
	  BY_PREFETCH },
	{ "mlp_compute", 2048, 0.4, "uvm", "tsplit", 152.0, 53.1,
	  BY_PREFETCH },
	/* no memory pressure: policy none at twice the peak */
	{ "mlp_compute", 2048, 2.0, "uvm", "none", 54.5, 53.4, NULL },
	/* transfer-bound: width 1024, 24 layers, batch 8192, 30% */
	{ "mlp_transfer", 8192, 0.3, "uvm", "tensile", 74.2, 54.1, NULL },
	{ "mlp_transfer", 8192, 0.3, "uvm", "capuchin", 74.3, 54.1, NULL },
	{ "mlp_transfer", 8192, 0.3, "uvm", "tsplit", 73.7, 54.1, NULL },
	{ "mlp_transfer", 8192, 2.0, "uvm", "none", 54.2, 54.1, NULL },
};

/* The unconstrained run of a model; its peak sets the budgets. */
static struct sim_step unconstrained(const char *model, unsigned batch)
{
	return sim_median_step(model, batch, SIM ",mode=swap,policy=none");
}

static struct sim_step constrained(const char *model, unsigned batch,
				   const struct sim_step *free_run,
				   double fraction, const char *mode,
				   const char *policy, const char *extra)
{
	char config[384];

	snprintf(config, sizeof(config), "%s,mode=%s,policy=%s,budget=%lluB%s",
		 SIM, mode, policy,
		 (unsigned long long)((double)free_run->peak * fraction),
		 extra);
	return sim_median_step(model, batch, config);
}

START_TEST(each_cell_lands_near_the_h200)
{
	const struct cell *c = &cells[_i];
	struct sim_step free_run = unconstrained(c->model, c->batch);
	struct sim_step s = constrained(c->model, c->batch, &free_run,
				    c->fraction, c->mode, c->policy,
				    c->extra ? c->extra : "");
	double ratio = (double)s.ns / (double)free_run.ns;
	double gpu = c->gpu_ms / c->gpu_free_ms;

	printf("%-12s %4.0f%% %-4s %-9s%s sim %5.2fx  h200 %5.2fx\n",
	       c->model, 100 * c->fraction, c->mode, c->policy,
	       c->extra ? c->extra : "", ratio, gpu);
	ck_assert_msg(ratio > gpu * (1 - TOLERANCE) &&
			      ratio < gpu * (1 + TOLERANCE),
		      "%s at %.0f%%, mode=%s, policy=%s%s: %.2fx on the sim, "
		      "%.2fx on the H200 (docs/gpu-h200-goals.md)", c->model,
		      100 * c->fraction, c->mode, c->policy,
		      c->extra ? c->extra : "", ratio, gpu);
}
END_TEST

/* The unconstrained steps and peaks: the compute-bound step near the
 * card's 53.4 ms, and both peaks the card's to the MiB (3663 and 3360),
 * or a budget fraction would mean other bytes. */
START_TEST(the_compute_bound_step_takes_what_the_h200_took)
{
	struct sim_step c = unconstrained("mlp_compute", 2048);
	struct sim_step t = unconstrained("mlp_transfer", 8192);
	double ms = (double)c.ns / 1e6;

	ck_assert_uint_eq(c.peak >> 20, 3663);
	ck_assert_uint_eq(t.peak >> 20, 3360);
	ck_assert_msg(ms > 53.4 * (1 - TOLERANCE) &&
			      ms < 53.4 * (1 + TOLERANCE),
		      "the unconstrained compute-bound step: %.1f ms on the "
		      "sim, 53.4 ms on the H200", ms);
}
END_TEST

/*
 * The card's law for mode=uvm by copy: step = unconstrained + (out + in)
 * / 55.3 GB/s, within -2.4% to +3.7% over its 30 runs.  On the simulator,
 * copies held (the default) follow it within 5% for uvm+auto and
 * uvm+tensile at compute 40%; queued, the same bytes hide under compute
 * and the step falls well below the sum.
 */
START_TEST(held_copies_add_up_as_on_the_h200)
{
	static const char *const policy[] = { "auto", "tensile" };
	struct sim_step free_run = unconstrained("mlp_compute", 2048);

	for (unsigned p = 0; p < 2; p++) {
		struct sim_step held = constrained("mlp_compute", 2048, &free_run,
					       0.4, "uvm", policy[p], "");
		struct sim_step queued = constrained(
			"mlp_compute", 2048, &free_run, 0.4, "uvm", policy[p],
			",sim_managed_copy=queued");
		double sum = (double)free_run.ns +
			     (double)(held.out + held.in) / PINNED_GBPS;
		double err = (double)held.ns / sum - 1;

		printf("uvm+%s compute 40%%: held %.1f ms, sum %.1f ms "
		       "(%+.1f%%), queued %.1f ms\n", policy[p],
		       (double)held.ns / 1e6, sum / 1e6, 100 * err,
		       (double)queued.ns / 1e6);
		ck_assert_uint_gt(held.out + held.in, 1000000000);
		ck_assert_msg(err > -0.05 && err < 0.05,
			      "uvm+%s held: %.1f ms against the sum %.1f ms",
			      policy[p], (double)held.ns / 1e6, sum / 1e6);
		ck_assert_msg((double)queued.ns < 0.85 * sum,
			      "uvm+%s queued: %.1f ms, the sum %.1f ms",
			      policy[p], (double)queued.ns / 1e6, sum / 1e6);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_h200");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 180);
	tcase_add_loop_test(tc, each_cell_lands_near_the_h200, 0,
			    (int)(sizeof(cells) / sizeof(cells[0])));
	tcase_add_test(tc, the_compute_bound_step_takes_what_the_h200_took);
	tcase_add_test(tc, held_copies_add_up_as_on_the_h200);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
