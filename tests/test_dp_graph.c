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
 *
 * Out of host memory: each allocation of the rewrite fails in turn (the
 * fault site host_alloc, which dp_graph.c's allocations ask), with and
 * without a lag and ZeRO-1; each must give -ENOMEM and leave the graph as
 * zoo_build made it (and *info zero), and the same call without the fault
 * must then give the graph of a run that never failed.  The sanitizers'
 * pass of `make check` sees any leak on those paths.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dp_graph.h"
#include "lib/base/fault.h"
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

/* Whether a and b are the same graph: ops, their tensor lists, tensors. */
static void same_graph(const struct zgraph *a, const struct zgraph *b,
		       const char *what)
{
	ck_assert_msg(a->nop == b->nop && a->nt == b->nt &&
			      a->nids == b->nids && a->n_forward == b->n_forward,
		      "%s: %u ops, %u tensors, %llu ids, forward %u; not %u, "
		      "%u, %llu, %u", what, a->nop, a->nt,
		      (unsigned long long)a->nids, a->n_forward, b->nop, b->nt,
		      (unsigned long long)b->nids, b->n_forward);
	for (uint32_t i = 0; i < a->nop; i++) {
		const struct zg_op *x = &a->op[i], *y = &b->op[i];

		ck_assert_msg(!strcmp(x->name, y->name) && x->kind == y->kind &&
				      x->flags == y->flags &&
				      x->n_in == y->n_in &&
				      x->n_out == y->n_out &&
				      x->flops == y->flops &&
				      x->bytes == y->bytes &&
				      x->net_bytes == y->net_bytes,
			      "%s: op %u is %s, not %s (or its cost differs)",
			      what, i, x->name, y->name);
		ck_assert_msg(!memcmp(zg_inputs(a, i), zg_inputs(b, i),
				      x->n_in * sizeof(zg_t)) &&
				      !memcmp(zg_outputs(a, i), zg_outputs(b, i),
					      x->n_out * sizeof(zg_t)),
			      "%s: op %u (%s) has other tensors", what, i,
			      x->name);
	}
	for (zg_t t = 0; t < a->nt; t++)
		ck_assert_msg(a->t[t].bytes == b->t[t].bytes &&
				      a->t[t].producer == b->t[t].producer &&
				      a->t[t].last_use == b->t[t].last_use,
			      "%s: tensor %s differs", what, a->t[t].name);
}

/* The MLP with its id lists full (zoo_build leaves them room to grow),
 * so that every collective the rewrite adds must grow them. */
static void build(struct zgraph *g)
{
	struct zoo_args a = { .batch = 64, .scale = 1 };
	zg_t *ids;
	unsigned char *sliced;

	ck_assert_int_eq(zoo_build(zoo_find("mlp_compute"), &a, g), 0);
	ids = realloc(g->ids, g->nids * sizeof(*ids));
	sliced = realloc(g->sliced, g->nids);
	ck_assert(ids && sliced);
	g->ids = ids;
	g->sliced = sliced;
	g->cids = g->csliced = g->nids;
}

/*
 * Every host allocation of one rewrite (4 ranks, 1 MiB buckets) failing
 * in turn, until the rewrite makes fewer calls than the one to fail: the
 * fixed buffers, then the growth of the id lists at each collective.
 */
static void each_allocation_fails(bool zero1, unsigned lag)
{
	struct zgraph ref, pristine;
	struct dp_graph_info ref_info;
	unsigned long k, calls = 0;
	char spec[32], what[96];

	build(&ref);
	ck_assert_int_eq(dp_graph_make(&ref, 4, 1u << 20, zero1, lag,
				       &ref_info), 0);
	ck_assert_uint_gt(ref_info.collectives, 2);
	build(&pristine);
	for (k = 1;; k++) {
		struct zgraph g;
		struct dp_graph_info info;
		int rc;

		build(&g);
		snprintf(spec, sizeof(spec), "host_alloc@%lu", k);
		snprintf(what, sizeof(what), "ZeRO-1 %s, lag %u, %s",
			 zero1 ? "on" : "off", lag, spec);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = dp_graph_make(&g, 4, 1u << 20, zero1, lag, &info);
		calls = tmm_fault_calls("host_alloc");
		ck_assert_int_eq(tmm_fault_set(""), 0);
		if (calls < k) {
			/* No call failed: the run that never failed. */
			ck_assert_int_eq(rc, 0);
			same_graph(&g, &ref, what);
			zg_free(&g);
			break;
		}
		ck_assert_msg(rc == -ENOMEM, "%s: %d", what, rc);
		ck_assert_msg(info.collectives == 0 && info.grad_bytes == 0 &&
				      info.last_bucket == 0,
			      "%s: info not cleared", what);
		same_graph(&g, &pristine, what);
		/* Made again, without the fault: as if it never failed. */
		ck_assert_int_eq(dp_graph_make(&g, 4, 1u << 20, zero1, lag,
					       &info), 0);
		same_graph(&g, &ref, what);
		ck_assert_uint_eq(info.collectives, ref_info.collectives);
		ck_assert_uint_eq(info.grad_bytes, ref_info.grad_bytes);
		zg_free(&g);
	}
	/* The seven buffers, then the two id lists of every collective. */
	ck_assert_uint_ge(k, 7 + 2 * (unsigned long)ref_info.collectives);
	zg_free(&ref);
	zg_free(&pristine);
}

START_TEST(out_of_memory_leaves_the_graph)
{
	each_allocation_fails(false, 0);
	each_allocation_fails(false, 1);
	each_allocation_fails(true, 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dp_graph");
	TCase *tc = tcase_create("lag");
	TCase *oom = tcase_create("out_of_memory");

	tcase_add_test(tc, lag_zero_exposes_every_reduction);
	tcase_add_test(tc, lag_one_hides_all_but_the_last);
	tcase_add_test(tc, one_rank_is_left_alone);
	suite_add_tcase(s, tc);
	tcase_add_test(oom, out_of_memory_leaves_the_graph);
	suite_add_tcase(s, oom);
	return s;
}

int main(void)
{
	return check_main(suite);
}
