/* SPDX-License-Identifier: MIT */
/*
 * test_replan.c — re-planning when op latencies drift (TENSILE §IV-E):
 * the EWMA and the drift on hand-made traces, the retimed trace, and the
 * MLP example on the simulator with jitter: a drift past the threshold
 * makes new plans, and training stays bit-identical.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/base/fault.h"
#include "mlp_model.h"
#include "lib/exec/replan.h"
#include "tensormm.h"

/* Three ops of durations d[0..3), back to back from 100 ns with a 10 ns
 * gap between them; one access each, and one direct access (no op) 5 ns
 * into the gap after the second. */
struct small {
	struct tmm_trace t;
	struct tmm_trace_tensor tensor;
	struct tmm_trace_op ops[3];
	uint32_t op_tensors[3];
	struct tmm_trace_access acc[4];
};

static void small_trace(struct small *s, const uint64_t d[3])
{
	uint64_t now = 100;

	memset(s, 0, sizeof(*s));
	s->tensor = (struct tmm_trace_tensor){ .key = 0x1000, .bytes = 64,
					       .producer = TMM_TRACE_NONE,
					       .name = TMM_TRACE_NONE };
	for (uint32_t o = 0; o < 3; o++) {
		s->ops[o] = (struct tmm_trace_op){
			.name = TMM_TRACE_NONE, .first = o, .n_inputs = 1,
			.begin_ns = now, .end_ns = now + d[o],
		};
		now += d[o] + 10;
	}
	for (uint32_t k = 0, o = 0; k < 4; k++) {
		if (k == 2) {
			s->acc[k] = (struct tmm_trace_access){
				.op = TMM_TRACE_NONE,
				.begin_ns = s->ops[1].end_ns + 5,
				.end_ns = s->ops[1].end_ns + 5,
				.flags = TMM_TA_READ };
			continue;
		}
		s->acc[k] = (struct tmm_trace_access){
			.op = o, .begin_ns = s->ops[o].begin_ns,
			.end_ns = s->ops[o].end_ns, .flags = TMM_TA_READ };
		o++;
	}
	s->t.tensors = &s->tensor;
	s->t.n_tensors = 1;
	s->t.ops = s->ops;
	s->t.n_ops = 3;
	s->t.op_tensors = s->op_tensors;
	s->t.n_op_tensors = 3;
	s->t.accesses = s->acc;
	s->t.n_accesses = 4;
}

/*
 * Made with ops of 1000 ns (s = 3000).  An iteration at 2000 ns each
 * moves every average to 0.3 * 2000 + 0.7 * 1000 = 1300: s' = 3900, a
 * drift of 0.3.  Past 0.25, not past 0.35; after a new plan the baseline
 * is 3900, and a second iteration at 2000 (averages 1510) drifts by
 * 630 / 3900 = 0.16.
 */
START_TEST(ewma_and_drift)
{
	static const uint64_t slow[3] = { 2000, 2000, 2000 };
	static const uint64_t fast[3] = { 1000, 1000, 1000 };
	struct tmm_replan *rp;
	struct small base, cur;

	small_trace(&base, fast);
	small_trace(&cur, slow);
	ck_assert_int_eq(tmm_replan_create(&rp), 0);
	ck_assert_int_eq(tmm_replan_reset(rp, &base.t), 0);
	ck_assert(!tmm_replan_observe(rp, &cur.t, 0.35));
	ck_assert_int_eq(tmm_replan_reset(rp, &base.t), 0);
	ck_assert(tmm_replan_observe(rp, &cur.t, 0.25));
	ck_assert_double_eq_tol(tmm_replan_drift(rp), 0.3, 1e-9);
	tmm_replan_planned(rp);
	ck_assert(!tmm_replan_observe(rp, &cur.t, 0.25));
	ck_assert_double_eq_tol(tmm_replan_drift(rp), 630.0 / 3900, 1e-9);
	/* 0 never re-plans. */
	ck_assert(!tmm_replan_observe(rp, &cur.t, 0));
	tmm_replan_destroy(rp);
}
END_TEST

/* An op the plan split (TMM_TRACE_OP_SPLIT) is slower by its micro-ops'
 * launches: that is no drift.  The same op ten times slower unsplit is. */
START_TEST(a_split_op_is_no_drift)
{
	static const uint64_t fast[3] = { 1000, 1000, 1000 };
	static const uint64_t split[3] = { 1000, 10000, 1000 };
	struct tmm_replan *rp;
	struct small base, cur;

	small_trace(&base, fast);
	small_trace(&cur, split);
	ck_assert_int_eq(tmm_replan_create(&rp), 0);
	ck_assert_int_eq(tmm_replan_reset(rp, &base.t), 0);
	cur.ops[1].flags |= TMM_TRACE_OP_SPLIT;
	ck_assert(!tmm_replan_observe(rp, &cur.t, 0.1));
	ck_assert_double_eq_tol(tmm_replan_drift(rp), 0, 1e-12);
	cur.ops[1].flags &= ~TMM_TRACE_OP_SPLIT;
	ck_assert(tmm_replan_observe(rp, &cur.t, 0.1));
	tmm_replan_destroy(rp);
}
END_TEST

/* The retimed trace: ops last their averages, gaps are kept, a direct
 * access keeps its distance from the op before it. */
START_TEST(retimed_trace)
{
	static const uint64_t slow[3] = { 2000, 2000, 2000 };
	static const uint64_t fast[3] = { 1000, 1000, 1000 };
	struct tmm_replan *rp;
	struct small base, cur, other;
	struct tmm_trace out;

	small_trace(&base, fast);
	small_trace(&cur, slow);
	ck_assert_int_eq(tmm_replan_create(&rp), 0);
	ck_assert_int_eq(tmm_replan_reset(rp, &base.t), 0);
	(void)tmm_replan_observe(rp, &cur.t, 0.1);
	ck_assert_int_eq(tmm_replan_trace(rp, &base.t, &out), 0);
	ck_assert_uint_eq(out.ops[0].begin_ns, 100);
	ck_assert_uint_eq(out.ops[0].end_ns, 1400);
	ck_assert_uint_eq(out.ops[1].begin_ns, 1410);
	ck_assert_uint_eq(out.ops[1].end_ns, 2710);
	ck_assert_uint_eq(out.ops[2].begin_ns, 2720);
	ck_assert_uint_eq(out.accesses[1].begin_ns, 1410);
	ck_assert_uint_eq(out.accesses[2].begin_ns, 2715);
	ck_assert_uint_eq(out.accesses[3].end_ns, 4020);
	ck_assert_uint_eq(out.n_accesses, 4);
	tmm_trace_free(&out);
	/* Another op count is another program. */
	small_trace(&other, fast);
	other.t.n_ops = 2;
	ck_assert_int_eq(tmm_replan_trace(rp, &other.t, &out), -EINVAL);
	tmm_replan_destroy(rp);
}
END_TEST

/*
 * The first plan's trace (tmm_trace_without_stalls): an op that waited
 * for the memory manager before it began (op 2, 300 ns of a 310 ns gap;
 * op 1's 50 ns exceed its 10 ns gap) begins that much earlier, durations
 * stay, a direct access keeps its distance from the op before it, and a
 * tensor made and freed inside moves with the ops.  The retimed trace of
 * a drift leaves the stalls out the same way.
 */
START_TEST(the_first_plan_waits_for_no_stall)
{
	static const uint64_t d[3] = { 1000, 1000, 1000 };
	struct tmm_replan *rp;
	struct small base;
	struct tmm_trace out;

	small_trace(&base, d);
	base.ops[1].stall_ns = 50;
	base.ops[2].begin_ns += 300;
	base.ops[2].end_ns += 300;
	base.ops[2].stall_ns = 300;
	base.acc[3].begin_ns += 300;
	base.acc[3].end_ns += 300;
	base.tensor.alloc_ns = base.ops[2].begin_ns + 100;
	base.tensor.free_ns = base.ops[2].end_ns + 50;
	ck_assert_int_eq(tmm_trace_without_stalls(&base.t, &out), 0);
	ck_assert_uint_eq(out.ops[0].begin_ns, 100);
	ck_assert_uint_eq(out.ops[0].end_ns, 1100);
	ck_assert_uint_eq(out.ops[1].begin_ns, 1100);
	ck_assert_uint_eq(out.ops[1].end_ns, 2100);
	ck_assert_uint_eq(out.accesses[2].begin_ns, 2105);
	ck_assert_uint_eq(out.ops[2].begin_ns, 2110);
	ck_assert_uint_eq(out.ops[2].end_ns, 3110);
	ck_assert_uint_eq(out.accesses[3].begin_ns, 2110);
	ck_assert_uint_eq(out.tensors[0].alloc_ns, 2210);
	ck_assert_uint_eq(out.tensors[0].free_ns, 3160);
	ck_assert_uint_eq(out.ops[2].stall_ns, 300);
	tmm_trace_free(&out);

	ck_assert_int_eq(tmm_replan_create(&rp), 0);
	ck_assert_int_eq(tmm_replan_reset(rp, &base.t), 0);
	ck_assert_int_eq(tmm_replan_trace(rp, &base.t, &out), 0);
	ck_assert_uint_eq(out.ops[2].begin_ns, 2110);
	tmm_trace_free(&out);
	tmm_replan_destroy(rp);
}
END_TEST

/*
 * No memory for the lean copy (each of its allocations failing in turn,
 * the fault site host_alloc): -ENOMEM, with nothing left allocated (the
 * sanitizer pass's leak check), and the guide makes the first plan from
 * the trace as measured (plan_first).  Every allocation is reached before
 * one more succeeds.
 */
START_TEST(no_memory_for_the_lean_trace)
{
	static const uint64_t d[3] = { 1000, 1000, 1000 };
	struct small base;
	struct tmm_trace out;
	char spec[32];
	int failed = 0, rc = -ENOMEM;

	small_trace(&base, d);
	for (int n = 1; rc == -ENOMEM && n < 32; n++) {
		snprintf(spec, sizeof(spec), "%s@%d", TMM_SITE_HOST_ALLOC, n);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = tmm_trace_without_stalls(&base.t, &out);
		ck_assert_int_eq(tmm_fault_set(NULL), 0);
		if (rc == -ENOMEM)
			failed++;
	}
	ck_assert_int_eq(rc, 0);
	/* Its two timelines, then the copy's arrays (tensors, ops,
	 * op_tensors, accesses: the small trace has no events or
	 * strings). */
	ck_assert_int_eq(failed, 6);
	ck_assert_uint_eq(out.n_accesses, 4);
	tmm_trace_free(&out);
}
END_TEST

#define STEPS 6

static void train(const char *config, uint8_t **weights, size_t *len,
		  struct tmm_stats *st)
{
	struct mlp_config mc;
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	mlp_config_default(&mc);
	mc.steps = STEPS;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	ck_assert_msg(mlp_train(ctx, &mc, NULL, weights, len, NULL) == 0,
		      "training under '%s' failed: %s", config,
		      tmm_last_error(ctx));
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/*
 * With 30% jitter on every op, a 1% threshold is crossed: the planner
 * runs again.  With re-planning off it runs once.  The weights are the
 * same bytes as without any budget either way.
 */
START_TEST(jitter_makes_new_plans)
{
	static const char *const base =
		"backend=sim,sim_memory=backed,mode=swap,sim_jitter=0.3,"
		"sim_seed=7,log=error";
	char config[512];
	uint8_t *ref, *w;
	size_t ref_len, len;
	struct tmm_stats st;

	train(base, &ref, &ref_len, &st);
	snprintf(config, sizeof(config),
		 "%s,budget=60%%,policy=tensile,replan_drift=0.01", base);
	train(config, &w, &len, &st);
	printf("mlp tensile 60%%, jitter 0.3, replan_drift 0.01: %llu plans "
	       "in %d steps, passive evictions %llu\n",
	       (unsigned long long)st.plans_made, STEPS,
	       (unsigned long long)st.passive_evictions);
	ck_assert_uint_gt(st.plans_made, 1);
	ck_assert_uint_eq(len, ref_len);
	ck_assert(memcmp(w, ref, len) == 0);
	free(w);
	snprintf(config, sizeof(config),
		 "%s,budget=60%%,policy=tensile,replan_drift=0", base);
	train(config, &w, &len, &st);
	ck_assert_uint_eq(st.plans_made, 1);
	ck_assert_uint_eq(len, ref_len);
	ck_assert(memcmp(w, ref, len) == 0);
	free(w);
	free(ref);
}
END_TEST

/*
 * A plan that does not fit is said once: re-planning on drift after every
 * guided iteration makes such a plan each time, and only the first is a
 * warning (the others are info).  Issue #23: the warning used to be
 * printed at every iteration.
 */
START_TEST(an_unfit_plan_warns_once)
{
	static const char *const base =
		"backend=sim,sim_memory=backed,mode=swap,sim_jitter=0.3,"
		"sim_seed=7,log=error";
	char config[512], line[2048];
	uint8_t *w;
	size_t len;
	struct tmm_stats st;
	unsigned warned = 0;
	FILE *log;
	int saved;

	train(base, &w, &len, &st);
	free(w);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,sim_jitter=0.3,"
		 "sim_seed=7,log=warn,policy=capuchin,replan_drift=0.01,"
		 "budget=%lluB", (unsigned long long)(st.device_peak / 5));
	log = tmpfile();
	ck_assert_ptr_nonnull(log);
	fflush(stderr);
	saved = dup(2);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(log), 2), 0);
	train(config, &w, &len, &st);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, 2), 0);
	close(saved);
	free(w);
	rewind(log);
	while (fgets(line, sizeof(line), log)) {
		if (strstr(line, "does not fit"))
			warned++;
		fputs(line, stdout);
	}
	fclose(log);
	printf("mlp capuchin at 20%% of its peak, replan_drift 0.01: %llu "
	       "plans, %u warnings that one does not fit\n",
	       (unsigned long long)st.plans_made, warned);
	ck_assert_uint_gt(st.plans_made, 2);
	ck_assert_uint_eq(warned, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("replan");
	TCase *tc = tcase_create("replan");

	tcase_add_test(tc, ewma_and_drift);
	tcase_add_test(tc, a_split_op_is_no_drift);
	tcase_add_test(tc, retimed_trace);
	tcase_add_test(tc, the_first_plan_waits_for_no_stall);
	tcase_add_test(tc, no_memory_for_the_lean_trace);
	tcase_add_test(tc, jitter_makes_new_plans);
	tcase_add_test(tc, an_unfit_plan_warns_once);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
