/* SPDX-License-Identifier: MIT */
/*
 * test_dp_graph.c — bench/dp_graph.c, one rank's data-parallel graph: the
 * collectives it adds and where the optimizer steps go with and without
 * an update lag.
 *
 * The MLP of the zoo updates each layer as soon as its gradients are
 * ready (update_early).  With lag 0 each step then follows the
 * collective that reduces its gradients with no compute between, so the
 * reduction cannot hide; with lag 1 the backward of the next bucket runs
 * between them, save for the last bucket, which no backward follows.  In
 * both, every op of the model is kept, each step comes after the
 * collective that reduces its gradients, and no op after a step touches
 * the weight it updated (the backward reads each weight before its
 * update).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dp_graph.h"
#include "zoo.h"

/* The zoo's compute-bound MLP, batch 64, as `ranks` ranks' graph. */
static void make(struct zgraph *g, unsigned ranks, unsigned lag,
		 struct dp_graph_info *info)
{
	struct zoo_args a = { .batch = 64, .scale = 1 };

	ck_assert_int_eq(zoo_build(zoo_find("mlp_compute"), &a, g), 0);
	ck_assert(g->update_early);
	/* 1 MiB buckets: every layer's gradients close one. */
	ck_assert_int_eq(dp_graph_make(g, ranks, 1u << 20, false, lag, info),
			 0);
}

static bool op_has(const struct zgraph *g, uint32_t i, zg_t t, bool inputs)
{
	const zg_t *l = inputs ? zg_inputs(g, i) : zg_outputs(g, i);
	uint32_t n = inputs ? g->op[i].n_in : g->op[i].n_out;

	for (uint32_t k = 0; k < n; k++)
		if (l[k] == t)
			return true;
	return false;
}

/* The last collective before op i that reduces tensor t, or UINT32_MAX. */
static uint32_t reduced_at(const struct zgraph *g, uint32_t i, zg_t t)
{
	for (uint32_t j = i; j-- > 0;)
		if (g->op[j].kind == TMM_OP_COLLECTIVE && op_has(g, j, t, true))
			return j;
	return UINT32_MAX;
}

/* Per optimizer step: the compute ops between its gradients' collective
 * and itself.  Returns how many steps have none; *steps counts them. */
static unsigned exposed_steps(const struct zgraph *g, unsigned *steps)
{
	unsigned none = 0;

	*steps = 0;
	for (uint32_t i = 0; i < g->nop; i++) {
		const zg_t *in = zg_inputs(g, i);
		uint32_t at = UINT32_MAX, between = 0;

		if (g->op[i].kind != TMM_OP_OPTIMIZER)
			continue;
		(*steps)++;
		for (uint32_t k = 0; k < g->op[i].n_in; k++)
			if (g->t[in[k]].kind == TMM_GRADIENT) {
				at = reduced_at(g, i, in[k]);
				ck_assert_msg(at != UINT32_MAX, "step %s reads "
					      "an unreduced gradient",
					      g->op[i].name);
			}
		for (uint32_t j = at + 1; j < i; j++)
			between += g->op[j].kind != TMM_OP_COLLECTIVE &&
				   g->op[j].kind != TMM_OP_OPTIMIZER;
		none += between == 0;
	}
	return none;
}

/* No op after a step touches the weight it updated (the next step's
 * forward is after the graph). */
static void weights_read_before_update(const struct zgraph *g)
{
	for (uint32_t i = 0; i < g->nop; i++) {
		zg_t w;

		if (g->op[i].kind != TMM_OP_OPTIMIZER)
			continue;
		w = zg_inputs(g, i)[0];
		for (uint32_t j = i + 1; j < g->nop; j++)
			ck_assert_msg(g->op[j].kind == TMM_OP_COLLECTIVE ||
				      (!op_has(g, j, w, true) &&
				       !op_has(g, j, w, false)),
				      "%s touches %s after its update",
				      g->op[j].name, g->t[w].name);
	}
}

START_TEST(lag_zero_exposes_every_reduction)
{
	struct zgraph g;
	struct dp_graph_info info;
	unsigned steps;

	make(&g, 4, 0, &info);
	ck_assert_uint_gt(info.collectives, 2);
	ck_assert_uint_eq(exposed_steps(&g, &steps), steps);
	weights_read_before_update(&g);
	zg_free(&g);
}
END_TEST

START_TEST(lag_one_hides_all_but_the_last)
{
	struct zgraph g, base;
	struct dp_graph_info info, base_info;
	unsigned steps, exposed;

	make(&g, 4, 1, &info);
	make(&base, 4, 0, &base_info);
	exposed = exposed_steps(&g, &steps);
	ck_assert_uint_gt(steps, 2);
	/* The last bucket's steps (a layer's weights and bias at most). */
	ck_assert_uint_le(exposed, 2);
	weights_read_before_update(&g);
	/* The same ops and collectives, only moved. */
	ck_assert_uint_eq(g.nop, base.nop);
	ck_assert_uint_eq(info.collectives, base_info.collectives);
	ck_assert_uint_eq(info.grad_bytes, base_info.grad_bytes);
	for (uint32_t i = 0; i < base.nop; i++) {
		bool found = false;

		for (uint32_t j = 0; j < g.nop && !found; j++)
			found = !strcmp(g.op[j].name, base.op[i].name);
		ck_assert_msg(found, "%s lost", base.op[i].name);
	}
	zg_free(&g);
	zg_free(&base);
}
END_TEST

START_TEST(one_rank_is_left_alone)
{
	struct zgraph g, base;
	struct dp_graph_info info;
	struct zoo_args a = { .batch = 64, .scale = 1 };

	make(&g, 1, 1, &info);
	ck_assert_int_eq(zoo_build(zoo_find("mlp_compute"), &a, &base), 0);
	ck_assert_uint_eq(info.collectives, 0);
	ck_assert_uint_eq(g.nop, base.nop);
	for (uint32_t i = 0; i < g.nop; i++)
		ck_assert_str_eq(g.op[i].name, base.op[i].name);
	zg_free(&g);
	zg_free(&base);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dp_graph");
	TCase *tc = tcase_create("lag");

	tcase_add_test(tc, lag_zero_exposes_every_reduction);
	tcase_add_test(tc, lag_one_hides_all_but_the_last);
	tcase_add_test(tc, one_rank_is_left_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
