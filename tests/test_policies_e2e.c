/* SPDX-License-Identifier: MIT */
/*
 * test_policies_e2e.c — every planner on the example programs.
 *
 * The MLP and the GPT of examples/ train unconstrained, then under each
 * policy at 50% and 30% of that run's peak.  Every run must give the
 * same losses and final weights, bit for bit, and stay within its
 * budget; the planner must have run once and its plan must have been
 * followed to the end; and when the planner says its plan fits, no
 * guided iteration may need a passive eviction.
 *
 * Plan files (TENSORMM_HINTS): a rerun starts guided from its first
 * iteration, with no passive eviction at all; a damaged file, or one made
 * for another program, is refused and the run measures and plans anew.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "gpt_model.h"
#include "lib/exec/guide.h"
#include "mlp_model.h"
#include "lib/io/plan_file.h"
#include "tensormm.h"

#define STEPS 4

static const char *const policies[] = {
	"passive", "none", "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile", "tsplit", "stream", "auto",
	/* Planners with the state idle across the step boundary swapped
	 * out (hints/idle_state.h): prefetches from the step's start. */
	"capuchin,offload_idle=on", "tsplit,offload_idle=on",
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

/* i runs over models x budgets x policies; pool is "arena" or
 * "chunks" (swap mode's pool: one arena, or chunks mapped into a virtual
 * range, lib/mem/pool_map.c). */
static void check_policy(int i, const char *pool)
{
	int model = i / (int)(2 * N_POLICIES);
	unsigned percent = (i / N_POLICIES) % 2 ? 30 : 50;
	const char *policy = policies[i % N_POLICIES];
	const char *name = model ? "gpt" : "mlp";
	const struct run *ref = reference_of(model);
	uint64_t budget = ref->st.device_peak * percent / 100;
	struct run got = { 0 };
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,budget=%lluB,"
		 "policy=%s,pool=%s",
		 (unsigned long long)budget, policy, pool);
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
	fprintf(stderr, "%s %-12s %u%% %s: fits %d, passive evictions %llu "
		"(guided %llu), actions %llu, stall %.3f ms\n",
		name, policy, percent, pool, got.fits,
		(unsigned long long)got.st.passive_evictions,
		(unsigned long long)got.st.guided_passive_evictions,
		(unsigned long long)got.st.plan_actions,
		(double)got.st.stall_ns / 1e6);
	free(got.weights);
}

START_TEST(policy_on_example)
{
	check_policy(_i, "arena");
}
END_TEST

/* The same over chunks: bit-identical, within the budget, and a plan
 * that fits runs without passive evictions there too. */
START_TEST(policy_on_example_over_chunks)
{
	check_policy(_i, "chunks");
}
END_TEST

/* Checks a run against its model's reference, bit for bit. */
static void same_as_reference(int model, const struct run *got)
{
	const struct run *ref = reference_of(model);

	ck_assert_uint_eq(got->len, ref->len);
	ck_assert(memcmp(got->weights, ref->weights, ref->len) == 0);
	ck_assert(memcmp(got->losses, ref->losses, sizeof(got->losses)) == 0);
}

/* The GPT at 50% under capuchin, with plan file `path`. */
static void gpt_with_hints(const char *path, int model, struct run *r)
{
	char config[512];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,budget=%lluB,"
		 "policy=capuchin,hints=%s,log=error",
		 (unsigned long long)(reference_of(model)->st.device_peak / 2),
		 path);
	train(model, config, r);
	same_as_reference(model, r);
}

/* A plan file that the reader accepts. */
static void readable(const char *path)
{
	struct tmm_plan p;
	char err[256];

	ck_assert_msg(tmm_plan_file_read(path, &p, 1, 64ull << 20, err,
					 sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(p.policy, "capuchin");
	ck_assert_uint_gt(p.n_actions, 0);
	tmm_plan_free(&p);
}

START_TEST(hints_file_lets_a_rerun_start_guided)
{
	char dir[] = "/tmp/tmm-hints-XXXXXX", path[64];
	struct run first = { 0 }, again = { 0 };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/gpt.plan", dir);

	gpt_with_hints(path, 1, &first);
	ck_assert_uint_eq(first.st.plans_made, 1);
	ck_assert_uint_gt(first.st.passive_evictions, 0); /* measuring */
	readable(path);

	gpt_with_hints(path, 1, &again);
	ck_assert_uint_eq(again.st.plans_made, 0);
	ck_assert_uint_eq(again.st.guided_iterations, STEPS);
	ck_assert_uint_eq(again.st.plan_divergences, 0);
	ck_assert_uint_gt(again.st.plan_actions, 0);
	ck_assert_uint_eq(again.st.passive_evictions, 0);
	ck_assert_uint_le(again.st.device_peak,
			  reference_of(1)->st.device_peak / 2);
	free(first.weights);
	free(again.weights);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(damaged_or_foreign_hints_file_is_replaced)
{
	char dir[] = "/tmp/tmm-hints-XXXXXX", path[64];
	struct run r = { 0 };
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);

	/* Damaged: a line added after the checksum. */
	gpt_with_hints(path, 1, &r);
	free(r.weights);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fputs("EVICT_DROP 3 i:1 7 -\n", f);
	fclose(f);
	memset(&r, 0, sizeof(r));
	gpt_with_hints(path, 1, &r);
	ck_assert_uint_eq(r.st.plans_made, 1);
	ck_assert_uint_eq(r.st.guided_iterations, STEPS - 1);
	free(r.weights);
	readable(path);

	/* Foreign: the GPT's plan given to the MLP, which leaves it at its
	 * first access; the MLP then plans, and saves its own. */
	memset(&r, 0, sizeof(r));
	gpt_with_hints(path, 0, &r);
	ck_assert_uint_eq(r.st.plans_made, 1);
	ck_assert_uint_ge(r.st.plan_divergences, 1);
	free(r.weights);
	memset(&r, 0, sizeof(r));
	gpt_with_hints(path, 0, &r);
	ck_assert_uint_eq(r.st.plans_made, 0);
	ck_assert_uint_eq(r.st.plan_divergences, 0);
	free(r.weights);

	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policies_e2e");
	TCase *tc = tcase_create("policies");
	SRunner *sr;
	int status;

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, policy_on_example, 0, (int)(4 * N_POLICIES));
	tcase_add_loop_test(tc, policy_on_example_over_chunks, 0,
			    (int)(4 * N_POLICIES));
	tcase_add_test(tc, hints_file_lets_a_rerun_start_guided);
	tcase_add_test(tc, damaged_or_foreign_hints_file_is_replaced);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* In-process, so each reference run is made once. */
	srunner_set_fork_status(sr, CK_NOFORK);
	status = check_run_all(sr);
	free(reference[0].weights);
	free(reference[1].weights);
	return status;
}
