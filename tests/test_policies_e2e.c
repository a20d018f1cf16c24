/*
 * test_policies_e2e.c — every planner on the example programs.
 *
 * The MLP and the GPT of examples/ train unconstrained, then under each
 * policy at 50% and 30% of that run's peak.  Every run must give the
 * same losses and final weights, bit for bit, and stay within its
 * budget; the planner must have run once and its plan must have been
 * followed to the end; and when the planner says its plan fits, no
 * guided iteration may need a passive eviction.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_model.h"
#include "guide.h"
#include "mlp_model.h"
#include "tensormm.h"

#define STEPS 4

static const char *const policies[] = {
	"none", "vdnn-conv", "vdnn-all", "checkpoint", "superneurons",
	"capuchin",
};
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

struct run {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	struct tmm_stats st;
	int fits; /* the plan's own verdict: -1 no plan */
};

/* after_step hook: notes whether the plan made after step 1 fits. */
static int note_fit(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct run *r = arg;
	const struct tmm_plan *p = tmm_guide_plan(ctx);

	if (step == 1)
		r->fits = p ? p->fits : -1;
	return 0;
}

static void train(int model, const char *config, struct run *r)
{
	tmm_ctx *ctx;
	int rc;

	r->fits = -1;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	if (model == 0) {
		struct mlp_config mc;

		mlp_config_default(&mc);
		mc.steps = STEPS;
		mc.layers = 5;
		mc.width = 192;
		mc.batch = 64;
		mc.after_step = note_fit;
		mc.after_step_arg = r;
		rc = mlp_train(ctx, &mc, r->losses, &r->weights, &r->len,
			       NULL);
	} else {
		struct gpt_config gc;

		gpt_config_default(&gc);
		gc.steps = STEPS;
		gc.batch = 4;
		gc.after_step = note_fit;
		gc.after_step_arg = r;
		rc = gpt_train(ctx, &gc, r->losses, &r->weights, &r->len,
			       NULL);
	}
	ck_assert_msg(rc == 0, "training under '%s' failed: %s", config,
		      tmm_last_error(ctx));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static struct run reference[2];

static const struct run *reference_of(int model)
{
	if (!reference[model].weights)
		train(model, "backend=sim,sim_memory=backed,mode=swap",
		      &reference[model]);
	return &reference[model];
}

/* _i runs over models x budgets x policies. */
START_TEST(policy_on_example)
{
	int model = _i / (int)(2 * N_POLICIES);
	unsigned percent = (_i / N_POLICIES) % 2 ? 30 : 50;
	const char *policy = policies[_i % N_POLICIES];
	const char *name = model ? "gpt" : "mlp";
	const struct run *ref = reference_of(model);
	uint64_t budget = ref->st.device_peak * percent / 100;
	struct run got = { 0 };
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,budget=%llu,"
		 "policy=%s",
		 (unsigned long long)budget, policy);
	train(model, config, &got);
	ck_assert_uint_eq(got.len, ref->len);
	ck_assert_msg(memcmp(got.weights, ref->weights, ref->len) == 0,
		      "%s, %s at %u%%: weights differ", name, policy,
		      percent);
	ck_assert_msg(memcmp(got.losses, ref->losses, sizeof(got.losses)) ==
			      0,
		      "%s, %s at %u%%: losses differ", name, policy, percent);
	ck_assert_uint_le(got.st.device_peak, budget);
	ck_assert_uint_eq(got.st.plans_made, 1);
	ck_assert_int_ge(got.fits, 0);
	ck_assert_uint_eq(got.st.guided_iterations, STEPS - 1);
	ck_assert_uint_eq(got.st.plan_divergences, 0);
	if (got.fits)
		ck_assert_msg(got.st.guided_passive_evictions == 0,
			      "%s, %s at %u%%: the plan fits, yet guided "
			      "iterations evicted %llu times",
			      name, policy, percent,
			      (unsigned long long)
				      got.st.guided_passive_evictions);
	fprintf(stderr, "%s %-12s %u%%: fits %d, passive evictions %llu "
		"(guided %llu), actions %llu, stall %.3f ms\n",
		name, policy, percent, got.fits,
		(unsigned long long)got.st.passive_evictions,
		(unsigned long long)got.st.guided_passive_evictions,
		(unsigned long long)got.st.plan_actions,
		(double)got.st.stall_ns / 1e6);
	free(got.weights);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policies_e2e");
	TCase *tc = tcase_create("policies");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, policy_on_example, 0, (int)(4 * N_POLICIES));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* In-process, so each reference run is made once. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(reference[0].weights);
	free(reference[1].weights);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
