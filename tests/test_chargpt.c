/* SPDX-License-Identifier: MIT */
/*
 * test_chargpt.c — the pre-allocated trainer (examples/chargpt_model.c)
 * under every policy, in both modes, at 25%, 30% and 50% of its peak.
 *
 * Its tensors are views: each layer's activations are views of one
 * buffer, each parameter a view of one buffer, each gradient of another;
 * and parents are used whole: a fill zeroes the gradient buffer, one op
 * updates every parameter, one read returns them.  Every run must give
 * the unconstrained run's losses and final weights bit for bit, keep to
 * its budget once the budget has dropped and the pages over it have left
 * (from step 3 on), and have moved bytes (swapped, evicted, dropped), so
 * that a wrong byte in a view moved on its own would show.
 *
 * The budget is budget=N%peak: the first iteration runs with the whole
 * device and measures the peak, and the budget drops to N% of it.  Below
 * what the largest op needs (here AdamW, on four whole buffers) it would
 * stop at that need (tensormm(7)); the sizes are chosen so that every
 * share is above it, and each run checks that it was.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chargpt_model.h"
#include "check_main.h"
#include "tensormm.h"

#define STEPS 5

static const char *const policies[] = {
	"passive", "none", "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile", "tsplit", "auto",
};
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))
static const char *const modes[] = { "swap", "uvm" };
static const unsigned percents[] = { 25, 30, 50 };
#define N_CELLS (N_POLICIES * 2 * 3)

struct run {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	struct tmm_stats first; /* after step 1: the budget and the peak */
	struct tmm_stats st;	/* at the end */
};

/*
 * after_step hook.  After step 1, measured with the whole device, the
 * budget has just dropped to its share: keeps the statistics.  After step
 * 2 starts the device peak again, so that the peak at the end is that of
 * the later steps.  Not after step 1: in mode=uvm the pages over the new
 * budget leave only as step 2 faults others in, so until then the bytes
 * in use, which the peak starts from, are still the first step's.
 */
static int note_steps(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct run *r = arg;

	if (step == 1) {
		r->first.version = TMM_STATS_VERSION;
		ck_assert_int_eq(tmm_stats_get(ctx, &r->first), 0);
	} else if (step == 2) {
		ck_assert_int_eq(tmm_stats_reset_peak(ctx), 0);
	}
	return 0;
}

/* Trains in a context made from `config`; returns the training's result
 * (the context's message on stderr when it is not 0). */
static int train(const char *config, struct run *r)
{
	struct chargpt_config cc;
	tmm_ctx *ctx;
	int rc;

	chargpt_config_default(&cc);
	cc.steps = STEPS;
	cc.after_step = note_steps;
	cc.after_step_arg = r;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s: %s", config,
		      tmm_last_error(NULL));
	rc = chargpt_train(ctx, &cc, r->losses, &r->weights, &r->len, NULL);
	if (rc)
		fprintf(stderr, "training under '%s' failed: %s (%s)\n",
			config, tmm_last_error(ctx), tmm_strerror(rc));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return rc;
}

static struct run reference;

/* The unconstrained run, made once: it moves nothing, and it learns. */
static const struct run *reference_run(void)
{
	struct run *r = &reference;

	if (!r->weights) {
		ck_assert_int_eq(train("backend=sim,sim_memory=backed,"
				       "mode=swap", r), 0);
		ck_assert_uint_eq(r->st.swap_out_count, 0);
		ck_assert_uint_eq(r->st.drops, 0);
		ck_assert_uint_eq(r->st.iterations, STEPS);
		ck_assert_float_lt(r->losses[STEPS - 1], r->losses[0]);
	}
	return r;
}

/* Checks a run against the reference, bit for bit. */
static void same_bytes(const struct run *got, const char *what)
{
	const struct run *ref = reference_run();

	ck_assert_uint_eq(got->len, ref->len);
	ck_assert_msg(memcmp(got->weights, ref->weights, ref->len) == 0,
		      "%s: weights differ", what);
	ck_assert_msg(memcmp(got->losses, ref->losses, sizeof(ref->losses))
			      == 0,
		      "%s: losses differ (last %.9g, reference %.9g)", what,
		      (double)got->losses[STEPS - 1],
		      (double)ref->losses[STEPS - 1]);
}

/* Bytes the run moved off the device: swapped or evicted by the runtime,
 * evicted by the (simulated) driver, or dropped to be recomputed. */
static uint64_t moved_bytes(const struct tmm_stats *st)
{
	return st->swap_out_bytes + st->uvm_eviction_bytes + st->drop_bytes;
}

/* Cell i: policy i % N_POLICIES, mode (i / N_POLICIES) % 2, budget
 * percents[i / (2 * N_POLICIES)]. */
START_TEST(every_policy_mode_and_budget)
{
	const char *policy = policies[_i % N_POLICIES];
	const char *mode = modes[(_i / N_POLICIES) % 2];
	unsigned percent = percents[_i / (2 * N_POLICIES)];
	struct run got = { 0 };
	char config[160], what[96];
	int rc;

	reference_run();
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=%u%%peak,"
		 "policy=%s,log=error", mode, percent, policy);
	snprintf(what, sizeof(what), "%s, %s at %u%%peak", policy, mode,
		 percent);
	rc = train(config, &got);
	ck_assert_msg(rc == 0, "%s: training failed: %s", what,
		      tmm_strerror(rc));
	same_bytes(&got, what);
	ck_assert_uint_eq(got.st.iterations, STEPS);

	/* The share held: the budget is N% of the first step's peak, not
	 * raised to the largest op's need (the sizes make that lower). */
	ck_assert_msg(got.first.budget <= got.first.device_peak * percent /
						   100,
		      "%s: the budget (%llu B) is above %u%% of the peak "
		      "(%llu B): it stopped at the largest op's need", what,
		      (unsigned long long)got.first.budget, percent,
		      (unsigned long long)got.first.device_peak);
	ck_assert_uint_le(got.st.device_peak, got.first.budget);
	ck_assert_msg(moved_bytes(&got.st) > 0, "%s: nothing moved", what);
	ck_assert_uint_eq(got.st.plans_made, 1);
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
	fprintf(stderr, "%-12s %-4s %u%%peak: budget %.0f KiB of %.0f, "
		"swapped %llu KiB, driver evicted %llu KiB, dropped %llu KiB, "
		"divergences %llu\n", policy, mode, percent,
		got.first.budget / 1024.0, got.first.device_peak / 1024.0,
		(unsigned long long)got.st.swap_out_bytes >> 10,
		(unsigned long long)got.st.uvm_eviction_bytes >> 10,
		(unsigned long long)got.st.drop_bytes >> 10,
		(unsigned long long)got.st.plan_divergences);
	free(got.weights);
}
END_TEST

/*
 * check=on poisons every output an op does not say it reads.  The sum of
 * the micro-batches' gradients reads the view it adds into, and says so
 * (tmm_op.accumulate): the bytes stay the reference's.
 */
START_TEST(declared_reads_survive_check_on)
{
	struct run got = { 0 };

	reference_run();
	ck_assert_int_eq(train("backend=sim,sim_memory=backed,mode=swap,"
			       "budget=30%peak,check=on,log=error", &got), 0);
	same_bytes(&got, "check=on at 30%peak");
	free(got.weights);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chargpt");
	TCase *tc = tcase_create("views");
	SRunner *sr;
	int status;

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, every_policy_mode_and_budget, 0,
			    (int)N_CELLS);
	tcase_add_test(tc, declared_reads_survive_check_on);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* In-process, so that the reference run is made once. */
	srunner_set_fork_status(sr, CK_NOFORK);
	status = check_run_all(sr);
	free(reference.weights);
	return status;
}
