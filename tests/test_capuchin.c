/* SPDX-License-Identifier: MIT */
/*
 * test_capuchin.c — Capuchin as its paper describes it (ASPLOS '20,
 * §4.3–4.5), on small hand-made traces and on the zoo's ResNet-50:
 * recomputation only in the backward pass, from sources that are on the
 * device then (never one swapped out, to be swapped in for it); MSPS
 * candidates looked at afresh each round; and a plan that fits on the
 * memory curve training with no passive eviction.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "drive.h"
#include "hints/analysis.h"
#include "hints/msps.h"
#include "hints/planners.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/record/guide_state.h"
#include "lib/record/tracker.h"
#include "tensormm.h"
#include "zoo.h"

#include "trace_builder.h"

/* The trace tensor of plan key `key`, or TMM_TRACE_NONE. */
static uint32_t tensor_of(const struct tmm_trace *t, uint64_t key)
{
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].key == key)
			return i;
	return TMM_TRACE_NONE;
}

/* The op that last wrote tensor x at or before access `at`. */
static uint32_t writer_op(const struct tmm_trace *t, uint32_t x, uint32_t at)
{
	uint32_t op = TMM_TRACE_NONE;

	for (uint32_t k = 0; k <= at && k < t->n_accesses; k++)
		if (t->accesses[k].tensor == x &&
		    (t->accesses[k].flags & TMM_TA_WRITE))
			op = t->accesses[k].op;
	return op;
}

/* Is tensor x swapped out by plan p while op `op` runs?  Out from the op
 * after its EVICT_SWAP's trigger until the op after its PREFETCH's. */
static bool swapped_out_at(const struct tmm_plan *p, const struct tmm_trace *t,
			   uint32_t x, uint32_t op)
{
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *s = &p->actions[i];
		uint32_t back_op = UINT32_MAX;

		if (s->type != TMM_ACT_EVICT_SWAP ||
		    s->key != t->tensors[x].key ||
		    t->accesses[s->trigger].op >= op)
			continue;
		for (uint32_t j = 0; j < p->n_actions; j++) {
			const struct tmm_plan_action *f = &p->actions[j];

			if (f->type == TMM_ACT_PREFETCH && f->key == s->key &&
			    f->back_access == s->back_access)
				back_op = t->accesses[f->trigger].op;
		}
		if (back_op >= op)
			return true;
	}
	return false;
}

/*
 * Checks every drop of plan p against trace t: its back-access is in the
 * backward pass, and none of its producer's inputs is swapped out when
 * it is recomputed.  Returns how many drops it checked.
 */
static unsigned check_drops(const struct tmm_plan *p, const struct tmm_trace *t)
{
	unsigned drops = 0;

	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		uint32_t d, back_op, w;

		if (a->type != TMM_ACT_EVICT_DROP)
			continue;
		drops++;
		d = tensor_of(t, a->key);
		ck_assert_uint_ne(d, TMM_TRACE_NONE);
		back_op = t->accesses[a->back_access].op;
		ck_assert_msg(back_op < t->n_ops &&
				      (t->ops[back_op].flags & TMM_OP_BACKWARD),
			      "tensor %u is recomputed for access %u, in the "
			      "forward pass", d, a->back_access);
		w = writer_op(t, d, a->trigger);
		ck_assert_uint_lt(w, t->n_ops);
		for (uint32_t k = 0; k < t->ops[w].n_inputs; k++) {
			uint32_t x = t->op_tensors[t->ops[w].first + k];

			ck_assert_msg(!swapped_out_at(p, t, x, back_op),
				      "tensor %u is recomputed at op %u from "
				      "tensor %u, swapped out then", d,
				      back_op, x);
		}
	}
	return drops;
}

/*
 * A residual block: X feeds A -> B and is read again by the add that
 * makes C, in the forward pass; the backward pass reads C, B, A and X.
 * The link is too slow for any swap to help.  X's forward gap (from A's
 * making to the add) holds the peak, and X is cheap to make: dropping it
 * there has the largest MSPS, but its recomputation would be in the
 * forward pass.  Capuchin recomputes in the backward pass only.
 */
START_TEST(recomputes_in_the_backward_pass_only)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t w, x, a, bb, c, g[4];
	char err[256];

	b_init(&b);
	w = b_tensor(&b, 4096, false);
	x = b_tensor(&b, 1 << 20, true);
	a = b_tensor(&b, 1 << 20, true);
	bb = b_tensor(&b, 1 << 20, true);
	c = b_tensor(&b, 1 << 20, true);
	for (int i = 0; i < 4; i++)
		g[i] = b_tensor(&b, 4096, true);
	b_op(&b, TMM_OP_PURE, 10, &w, 1, &x, 1);
	b_op(&b, TMM_OP_PURE, 5000, &x, 1, &a, 1);
	b_op(&b, TMM_OP_PURE, 5000, &a, 1, &bb, 1);
	{
		uint32_t xb[2] = { x, bb };

		b_op(&b, TMM_OP_PURE, 5000, xb, 2, &c, 1);
	}
	b_op(&b, TMM_OP_BACKWARD, 1000, &c, 1, &g[0], 1);
	b_op(&b, TMM_OP_BACKWARD, 1000, &bb, 1, &g[1], 1);
	b_op(&b, TMM_OP_BACKWARD, 1000, &a, 1, &g[2], 1);
	b_op(&b, TMM_OP_BACKWARD, 1000, &x, 1, &g[3], 1);
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	in = input(&b, 3500 * 1024, 0.001);
	ck_assert_int_eq(tmm_plan_capuchin(&in, &p), 0);
	ck_assert_uint_ge(check_drops(&p, &b.t), 1);
	tmm_plan_sort(&p); /* as tmm_planner_make does */
	ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_plan_free(&p);
}
END_TEST

/*
 * MSPS looks at its candidates afresh each round.  Candidate A's gap
 * holds nothing over the target on the first curve, so it is passed
 * over; when the curve goes up (a full count after a round), a new round
 * finds it again.  A flag set in the first round and kept would have
 * left it out for good.
 */
START_TEST(msps_candidates_are_fresh_each_round)
{
	struct builder b;
	struct tmm_planner_input in;
	struct tmm_analysis an;
	struct tmm_cands cs;
	uint32_t w, a, g, ia = UINT32_MAX;
	uint64_t *curve;

	b_init(&b);
	w = b_tensor(&b, 4096, false);
	a = b_tensor(&b, 1 << 20, true);
	g = b_tensor(&b, 4096, true);
	b_op(&b, TMM_OP_PURE, 100, &w, 1, &a, 1);
	for (int i = 0; i < 4; i++)
		b_op(&b, TMM_OP_PURE, 1000, &w, 1, NULL, 0);
	b_op(&b, TMM_OP_BACKWARD, 100, &a, 1, &g, 1);
	b_free_after_last_use(&b);

	/* The whole iteration is over this budget: A is a candidate. */
	in = input(&b, 512 * 1024, 0.001);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	curve = calloc(b.t.n_accesses, sizeof(*curve));
	ck_assert_ptr_nonnull(curve);
	memcpy(curve, an.base, sizeof(*curve) * b.t.n_accesses);
	ck_assert_int_eq(tmm_cands_find(&an, curve, &cs), 0);
	for (uint32_t i = 0; i < cs.n; i++)
		if (cs.c[i].tensor == a)
			ia = i;
	ck_assert_uint_ne(ia, UINT32_MAX);
	ck_assert(cs.c[ia].recomputable);

	/* Round 1: the curve is under the target in A's gap. */
	for (uint32_t k = 0; k < b.t.n_accesses; k++)
		curve[k] = an.target / 2;
	ck_assert_int_eq(tmm_msps_best(&an, curve, &cs), -1);
	ck_assert(!cs.c[ia].taken);

	/* Round 2: the full count puts it over again. */
	for (uint32_t k = 0; k < b.t.n_accesses; k++)
		curve[k] = an.target + 1;
	tmm_cands_new_round(&cs);
	ck_assert_int_eq(tmm_msps_best(&an, curve, &cs), (int64_t)ia);

	tmm_cands_free(&cs);
	free(curve);
	tmm_analysis_free(&an);
}
END_TEST

/* What a zoo run under capuchin planned, from the first iteration's
 * trace. */
struct seen {
	struct tmm_trace trace;
	struct tmm_plan plan;
	bool have;
};

static int keep(void *arg, tmm_ctx *ctx, unsigned n)
{
	struct seen *s = arg;
	const struct tmm_plan *p = tmm_guide_plan(ctx);

	if (n != 1 || !p || s->have)
		return 0;
	ck_assert_int_eq(tmm_trace_copy(&s->trace, tmm_tracker_first(ctx)),
			 0);
	ck_assert_int_eq(tmm_plan_copy(&s->plan, p), 0);
	s->have = true;
	return 0;
}

/*
 * ResNet-50 on the simulated P100 (16 GiB) at a batch whose plan fits on
 * the memory curve: the guided iterations make no passive eviction (the
 * runtime frees what the curve says is free, and makes the holes), the
 * recomputations are all in the backward pass, and none reads a tensor
 * swapped out at the time.
 */
START_TEST(resnet50_plan_that_fits_trains_without_passive_eviction)
{
	const struct zoo_model *m = zoo_find("resnet50");
	struct zoo_args za = { 640, 1 };
	struct seen s = { 0 };
	struct drive_opts o = {
		.config = "backend=sim,mode=swap,sim_memory=phantom,"
			  "sim_profile=p100-pcie3-16g,policy=capuchin",
		.iterations = 3, .after_iteration = keep, .after_arg = &s };
	struct drive_result r;
	struct zgraph g;

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &za, &g) == 0, "%s", g.errmsg);
	ck_assert_msg(zoo_drive(&g, &o, &r) == 0, "%s", r.error);
	zg_free(&g);
	ck_assert(s.have);
	ck_assert_msg(s.plan.fits, "the plan does not fit on its curve");
	/* Passive mode had work in the measured iteration: the plan made
	 * the difference. */
	ck_assert_uint_gt(r.it[0].passive_evictions, 0);
	ck_assert_uint_eq(r.st.guided_passive_evictions, 0);
	ck_assert_uint_eq(r.st.plan_divergences, 0);
	ck_assert_uint_gt(check_drops(&s.plan, &s.trace), 10);
	tmm_trace_free(&s.trace);
	tmm_plan_free(&s.plan);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("capuchin");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, recomputes_in_the_backward_pass_only);
	tcase_add_test(tc, msps_candidates_are_fresh_each_round);
	tcase_add_test(tc,
		       resnet50_plan_that_fits_trains_without_passive_eviction);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
