/*
 * test_train_e2e.c — a real training run under memory pressure.
 *
 * The MLP of examples/ trains with the whole simulated device, then with
 * budgets of 50% and 30% of that run's peak.  The losses of every step and
 * the final weights must be bit-identical, the device peak must stay
 * within each budget, and swapping must really have happened.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_model.h"
#include "tensormm.h"

struct run {
	float losses[8];
	uint8_t *weights;
	size_t len;
	struct tmm_stats st;
};

static void train(const char *config, struct run *r)
{
	struct mlp_config mc;
	tmm_ctx *ctx;
	int rc;

	mlp_config_default(&mc);
	mc.steps = 6;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	rc = mlp_train(ctx, &mc, r->losses, &r->weights, &r->len, NULL);
	ck_assert_msg(rc == 0, "training under '%s' failed: %s", config,
		      tmm_last_error(ctx));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static void check_fraction(unsigned percent)
{
	struct run free_run = { 0 }, tight = { 0 };
	char config[128];
	uint64_t budget;

	train("backend=sim,sim_memory=backed,mode=swap", &free_run);
	ck_assert_uint_eq(free_run.st.swap_out_count, 0);
	ck_assert_uint_eq(free_run.st.iterations, 6);
	/* Training makes progress: the loss goes down. */
	ck_assert_float_lt(free_run.losses[5], free_run.losses[0]);

	budget = free_run.st.device_peak * percent / 100;
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,budget=%llu",
		 (unsigned long long)budget);
	train(config, &tight);

	ck_assert_uint_eq(tight.len, free_run.len);
	ck_assert_msg(memcmp(tight.weights, free_run.weights, tight.len) == 0,
		      "weights differ at a %u%% budget", percent);
	ck_assert_mem_eq(tight.losses, free_run.losses,
			 sizeof(free_run.losses));
	ck_assert_uint_le(tight.st.device_peak, budget);
	ck_assert_uint_gt(tight.st.swap_out_count, 0);
	ck_assert_uint_gt(tight.st.swap_in_count, 0);
	free(free_run.weights);
	free(tight.weights);
}

START_TEST(mlp_at_50_percent)
{
	check_fraction(50);
}
END_TEST

START_TEST(mlp_at_30_percent)
{
	check_fraction(30);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("train_e2e");
	TCase *tc = tcase_create("mlp");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mlp_at_50_percent);
	tcase_add_test(tc, mlp_at_30_percent);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
