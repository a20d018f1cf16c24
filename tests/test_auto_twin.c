/* SPDX-License-Identifier: MIT */
/*
 * test_auto_twin.c — what policy `auto` knows on the simulator, and how
 * it plans (issue #22: honest auto).
 *
 * - auto_twin=off: auto makes no trial on a twin (counted through a twin
 *   table that wraps the real one) and still plans; with auto_twin=on it
 *   makes trials.
 * - The twin has no jitter: a trial gives the same iteration whatever
 *   the caller's environment says of sim_jitter and sim_seed, where the
 *   same run with jitter differs from seed to seed.
 * - auto's candidates made on several threads give the plan that one
 *   thread makes, byte for byte, on a zoo trace.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "drive.h"
#include "hints/planner.h"
#include "lib/api/lifecycle.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/record/tracker.h"
#include "lib/twin/trial.h"
#include "seen_run.h"
#include "tensormm.h"
#include "zoo.h"

/* ---- a twin table that counts its trials ------------------------------- */

static unsigned trials;

static int counting_run(const struct tmm_trial_device *dev,
			const struct tmm_trace *t, const struct tmm_plan *p,
			struct tmm_trial_result *r)
{
	trials++;
	return tmm_trial_run(dev, t, p, r);
}

static const struct tmm_twin_ops counting_ops = { .run = counting_run };

/* Keeps the first trace, and the plan once there is one. */
static int keep(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct seen *s = arg;
	const struct tmm_plan *p = tmm_guide_plan(ctx);

	(void)step;
	if (s->have || !p || !tmm_tracker_first(ctx))
		return 0;
	seen_take(s, ctx, p);
	return 0;
}

/* Trains the MLP on a context assembled with `ops` under `config`. */
static void train(const char *config, const struct tmm_twin_ops *ops,
		  struct seen *s, struct tmm_stats *st)
{
	seen_train_mlp(config, ops, s ? keep : NULL, s, st);
}

#define SIM "backend=sim,sim_memory=backed,mode=swap,policy=auto," \
	    "budget=60%peak"

/* auto_twin=off: no trial, and a plan all the same; on: trials. */
START_TEST(auto_twin_off_makes_no_trial)
{
	struct tmm_stats st;
	struct seen s = { 0 };

	trials = 0;
	train(SIM ",auto_twin=off", &counting_ops, &s, &st);
	ck_assert_uint_eq(trials, 0);
	ck_assert_uint_ge(st.plans_made, 1);
	ck_assert(s.have);
	ck_assert_msg(strncmp(s.plan.policy, "auto+", 5) == 0, "%s",
		      s.plan.policy);
	seen_free(&s);

	trials = 0;
	train(SIM ",auto_twin=on", &counting_ops, NULL, &st);
	ck_assert_uint_ge(st.plans_made, 1);
	/* One per candidate at least: eight planners. */
	ck_assert_uint_ge(trials, 8);
}
END_TEST

/*
 * The twin has no jitter.  The run's own iteration differs between two
 * seeds at sim_jitter=0.15 (so jitter does something), but a trial of
 * its plan gives one iteration time with the caller's environment asking
 * for jitter under either seed, or for none: the twin spells out every
 * tunable, sim_jitter=0 among them.
 */
START_TEST(the_twin_has_no_jitter)
{
	struct tmm_stats st1, st2;
	struct seen s = { 0 };
	struct tmm_trial_result r;
	uint64_t ns[3];

	train(SIM ",auto_twin=off,sim_jitter=0.15,sim_seed=1", &tmm_twin_ops,
	      &s, &st1);
	train(SIM ",auto_twin=off,sim_jitter=0.15,sim_seed=2", &tmm_twin_ops,
	      NULL, &st2);
	ck_assert_uint_ne(st1.last_iteration_ns, st2.last_iteration_ns);
	ck_assert(s.have);
	for (int i = 0; i < 3; i++) {
		if (i < 2) {
			ck_assert_int_eq(setenv("TENSORMM_SIM_JITTER", "0.15",
						1), 0);
			ck_assert_int_eq(setenv("TENSORMM_SIM_SEED",
						i ? "2" : "1", 1), 0);
		} else {
			unsetenv("TENSORMM_SIM_JITTER");
			unsetenv("TENSORMM_SIM_SEED");
		}
		ck_assert_int_eq(tmm_trial_run(&s.dev, &s.trace, &s.plan, &r),
				 0);
		ns[i] = r.iteration_ns;
		tmm_trial_result_free(&r);
	}
	ck_assert_uint_gt(ns[0], 0);
	ck_assert_uint_eq(ns[0], ns[1]);
	ck_assert_uint_eq(ns[0], ns[2]);
	seen_free(&s);
}
END_TEST

/* zoo_drive's after_iteration hook: keep() for the zoo's driver. */
static int keep_zoo(void *arg, tmm_ctx *ctx, unsigned n)
{
	return keep(ctx, n, arg);
}

static bool same_plan(const struct tmm_plan *a, const struct tmm_plan *b)
{
	return strcmp(a->policy, b->policy) == 0 &&
	       a->n_accesses == b->n_accesses &&
	       a->n_actions == b->n_actions &&
	       a->predicted_peak == b->predicted_peak && a->fits == b->fits &&
	       memcmp(a->access_keys, b->access_keys,
		      sizeof(*a->access_keys) * a->n_accesses) == 0 &&
	       memcmp(a->actions, b->actions,
		      sizeof(*a->actions) * a->n_actions) == 0;
}

/*
 * auto's candidates made on 1, 2 and 8 threads: the same plan, byte for
 * byte, for ResNet-50's trace at half its peak, with no twin (every
 * candidate judged by the forecast) and with one (the trials after).
 */
START_TEST(auto_in_parallel_plans_as_in_serial)
{
	const struct zoo_model *m = zoo_find("resnet50");
	struct zoo_args a = { 16, 1 };
	struct seen s = { 0 };
	struct drive_opts o = {
		.config = "backend=sim,mode=swap,sim_memory=phantom,"
			  "sim_profile=p100-pcie3-16g,policy=none",
		.iterations = 2, .after_iteration = keep_zoo, .after_arg = &s,
	};
	struct drive_result r;
	struct zgraph g;
	struct tmm_planner_input in;
	struct tmm_twin twin;
	uint64_t peak;
	char err[256];

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	ck_assert_msg(zoo_drive(&g, &o, &r) == 0, "%s", r.error);
	zg_free(&g);
	ck_assert(s.have);
	in = (struct tmm_planner_input){ .trace = &s.trace,
					 .device = s.link,
					 .auto_rungs = 0 };
	ck_assert_int_eq(tmm_planner_peak(&in, &peak), 0);
	in.budget = peak / 2;
	twin = (struct tmm_twin){ .device = s.dev, .ops = &tmm_twin_ops };
	twin.device.budget = in.budget;
	for (int with_twin = 0; with_twin < 2; with_twin++) {
		static const unsigned threads[] = { 1, 2, 8 };
		struct tmm_plan p[3];

		in.twin = with_twin ? &twin : NULL;
		for (int i = 0; i < 3; i++) {
			in.auto_threads = threads[i];
			ck_assert_msg(tmm_planner_make("auto", &in, &p[i], err,
						       sizeof(err)) == 0,
				      "%s", err);
		}
		ck_assert_uint_gt(p[0].n_actions, 0);
		for (int i = 1; i < 3; i++)
			ck_assert_msg(same_plan(&p[0], &p[i]),
				      "%u threads: %s with %u actions, one "
				      "thread: %s with %u (twin: %d)",
				      threads[i], p[i].policy, p[i].n_actions,
				      p[0].policy, p[0].n_actions, with_twin);
		for (int i = 0; i < 3; i++)
			tmm_plan_free(&p[i]);
	}
	seen_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auto_twin");
	TCase *tc = tcase_create("auto_twin");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, auto_twin_off_makes_no_trial);
	tcase_add_test(tc, the_twin_has_no_jitter);
	tcase_add_test(tc, auto_in_parallel_plans_as_in_serial);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
