/* SPDX-License-Identifier: MIT */
/*
 * test_planners.c — the planners on small hand-made traces with known
 * answers: the sqrt(n) checkpoints of a linear chain, Capuchin's choice
 * by free time and by memory saving per second, liveness, the memory
 * curve under evictions, and auto's choice by the forecast (TENSILE's are
 * in test_plan_tensile.c, the forecast's own cases in test_forecast.c).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "hints/analysis.h"
#include "hints/plan_forecast.h"
#include "hints/planner.h"
#include "hints/planners.h"
#include "lib/base/fault.h"
#include "tensormm.h"

#include "trace_builder.h"

/*
 * A linear chain of 16 layers: f_i reads T_{i-1} and writes T_i; the
 * backward step of layer i reads T_{i-1} and T_i.  T_1 .. T_15 are the
 * articulation points (T_16 feeds no later forward layer), more than
 * sqrt(16) = 4, so every ceil(15 / 4) = 4th is a checkpoint: T_4, T_8
 * and T_12 are kept (Chen's segments of about sqrt(n) layers) and every
 * other feature map is dropped after its forward use, its drop flagged
 * to keep what the segment's recomputation makes.
 */
START_TEST(checkpoint_of_a_linear_chain)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t t[17];
	struct tmm_planner_input in;
	char err[256];

	b_init(&b);
	t[0] = b_tensor(&b, 1024, false);
	b.tensors[t[0]].producer = TMM_TRACE_NONE;
	for (int i = 1; i <= 16; i++)
		t[i] = b_tensor(&b, 1024, true);
	for (int i = 1; i <= 16; i++)
		b_op(&b, TMM_OP_PURE, 100, &t[i - 1], 1, &t[i], 1);
	for (int i = 16; i >= 1; i--) {
		uint32_t pair[2] = { t[i - 1], t[i] };

		b_op(&b, TMM_OP_BACKWARD, 100, pair, 2, NULL, 0);
	}
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	in = input(&b, 1ull << 30, 10);
	ck_assert_int_eq(tmm_plan_checkpoint(&in, &p), 0);
	for (int i = 1; i <= 16; i++) {
		bool kept = i == 4 || i == 8 || i == 12;

		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_DROP, t[i]) ==
				      (kept ? 0u : 1u),
			      "T%d: %u drops", i,
			      count(&p, &b, TMM_ACT_EVICT_DROP, t[i]));
	}
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, t[0]), 0);
	for (uint32_t i = 0; i < p.n_actions; i++)
		if (p.actions[i].type == TMM_ACT_EVICT_DROP)
			ck_assert_uint_eq(p.actions[i].flags, TMM_ACT_KEEP);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * A stem y_0 = s(x) and four residual blocks, y_k = g(f(y_{k-1})) +
 * y_{k-1}, with a backward pass reading g_k, a_k and y_{k-1}.
 */
static void residual_blocks(struct builder *b, uint32_t y[5], uint32_t a[5],
			    uint32_t g[5])
{
	uint32_t x;
	char err[256];

	b_init(b);
	x = b_tensor(b, 1024, false);
	b->tensors[x].producer = TMM_TRACE_NONE;
	y[0] = b_tensor(b, 1024, true);
	b_op(b, TMM_OP_PURE, 100, &x, 1, &y[0], 1);
	for (int k = 1; k <= 4; k++) {
		uint32_t sum[2];

		a[k] = b_tensor(b, 1024, true);
		g[k] = b_tensor(b, 1024, true);
		y[k] = b_tensor(b, 1024, true);
		sum[0] = g[k];
		sum[1] = y[k - 1];
		b_op(b, TMM_OP_PURE, 100, &y[k - 1], 1, &a[k], 1);
		b_op(b, TMM_OP_PURE, 100, &a[k], 1, &g[k], 1);
		b_op(b, TMM_OP_PURE, 100, sum, 2, &y[k], 1);
	}
	for (int k = 4; k >= 1; k--) {
		b_op(b, TMM_OP_BACKWARD, 100, &g[k], 1, NULL, 0);
		b_op(b, TMM_OP_BACKWARD, 100, &a[k], 1, NULL, 0);
		b_op(b, TMM_OP_BACKWARD, 100, &y[k - 1], 1, NULL, 0);
	}
	b_free_after_last_use(b);
	ck_assert_int_eq(tmm_trace_validate(&b->t, err, sizeof(err)), 0);
}

/*
 * The residual blocks above: inside a block two tensors cross each boundary, so only y_0 ..
 * y_3 are articulation points (y_4 feeds no later forward op).  Four is
 * no more than ceil(sqrt(13 forward ops)) = 4: OpenAI's memory mode keeps
 * all of them, and drops every tensor inside a block.
 */
START_TEST(checkpoint_at_articulation_points_of_residual_blocks)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t y[5], a[5], g[5];
	char err[256];

	residual_blocks(&b, y, a, g);
	in = input(&b, 1ull << 30, 10);
	ck_assert_int_eq(tmm_plan_checkpoint(&in, &p), 0);
	for (int k = 0; k <= 4; k++) {
		if (k < 4)
			ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_DROP,
					    y[k]) == 0,
				      "y%d is a checkpoint, yet dropped", k);
		if (k == 0)
			continue;
		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_DROP, a[k]) == 1,
			      "a%d is not dropped", k);
		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_DROP, g[k]) == 1,
			      "g%d is not dropped", k);
	}
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * vDNN on the residual blocks: a_k and g_k, each read by one forward op,
 * are offloaded; y_0 .. y_3, which the next block's f and its sum both
 * read, stay (hints/plan_vdnn.c: a map several forward ops read is no
 * single layer's input).
 */
START_TEST(vdnn_keeps_a_residual_input)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t y[5], a[5], g[5];
	char err[256];

	residual_blocks(&b, y, a, g);
	in = input(&b, 1ull << 30, 10);
	ck_assert_int_eq(tmm_plan_vdnn_all(&in, &p), 0);
	tmm_plan_sort(&p); /* as tmm_policy_make does */
	for (int k = 0; k <= 3; k++)
		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_SWAP, y[k]) == 0,
			      "y%d, read by two forward ops, is offloaded", k);
	for (int k = 1; k <= 4; k++) {
		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_SWAP, a[k]) == 1,
			      "a%d is not offloaded", k);
		ck_assert_msg(count(&p, &b, TMM_ACT_EVICT_SWAP, g[k]) == 1,
			      "g%d is not offloaded", k);
	}
	ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) == 0, "%s", err);
	tmm_plan_free(&p);
}
END_TEST

/*
 * Two tensors, A and B, each read again much later; the budget needs one
 * of them out.  A's gap is longer, so its free time is larger: Capuchin
 * swaps A (§4.5: "select ... from the top of the list").
 */
START_TEST(capuchin_swaps_the_largest_free_time_first)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a, bt, x[8], w;
	char err[256];

	b_init(&b);
	w = b_tensor(&b, 256, false);
	a = b_tensor(&b, 1 << 20, true);
	bt = b_tensor(&b, 1 << 20, true);
	/* Not pure: swapping is the only way to make room.  A is made
	 * first and read last, B made later and read before A: A's gap
	 * is the longer. */
	b_op(&b, 0, 1000, &w, 1, &a, 1);
	for (int i = 0; i < 8; i++) {
		x[i] = b_tensor(&b, 4096, true);
		b_op(&b, TMM_OP_PURE, 1000000, &w, 1, &x[i], 1);
		if (i == 3)
			b_op(&b, 0, 1000, &w, 1, &bt, 1);
	}
	b_op(&b, 0, 1000, &bt, 1, NULL, 0);
	b_op(&b, 0, 1000, &a, 1, NULL, 0);
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	/* Both big tensors do not fit together; one must go. */
	in = input(&b, (uint64_t)(1.5 * (1 << 20)), 10);
	ck_assert_int_eq(tmm_plan_capuchin(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, a), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, bt), 0);
	ck_assert(p.fits);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/*
 * Capuchin §4.4–4.5's lineage T1 -> T2 -> T3 -> T4, each read again in
 * the backward pass, with a link too slow to swap anything in time.
 * T2 is large and cheap to recompute: the largest MSPS, recomputed
 * first, and enough on its own.
 */
START_TEST(capuchin_recomputes_by_msps)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t t[5];
	uint64_t sizes[5] = { 4096, 65536, 1 << 20, 65536, 1 << 20 };
	uint64_t cost[5] = { 0, 5000, 100, 5000, 5000 };
	/* (T2 is t[2].) */
	char err[256];

	b_init(&b);
	t[0] = b_tensor(&b, sizes[0], false);
	for (int i = 1; i <= 4; i++)
		t[i] = b_tensor(&b, sizes[i], true);
	for (int i = 1; i <= 4; i++)
		b_op(&b, TMM_OP_PURE, cost[i], &t[i - 1], 1, &t[i], 1);
	for (int i = 4; i >= 1; i--)
		b_op(&b, TMM_OP_BACKWARD, 1000, &t[i], 1, NULL, 0);
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_trace_validate(&b.t, err, sizeof(err)), 0);

	/* The peak (everything, 2.1 MiB at T4's making) is over a 1.6 MiB
	 * budget (target: a fifth less, as T2 and T4 are large).  T2 and
	 * T4 each hold 1 MiB, but T2 takes 100 ns to recompute and T4 5
	 * us: T2 has the larger MSPS and, once dropped, leaves enough room
	 * (1.13 MiB at most).  A swap at 1 MB/s would stall for ever. */
	in = input(&b, 1600 * 1024, 0.001);
	ck_assert_int_eq(tmm_plan_capuchin(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, t[2]), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, t[1]), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, t[3]), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, t[4]), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, t[2]), 0);
	ck_assert(p.fits);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);
}
END_TEST

/* The curve: a dropped tensor is out between its two accesses; its
 * evicted source comes back with it (collective recomputation). */
START_TEST(curve_under_evictions)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_planner_input in;
	uint64_t curve[MAX_A];
	uint32_t w, x, y, z;

	b_init(&b);
	w = b_tensor(&b, 256, false);
	x = b_tensor(&b, 1024, true);
	y = b_tensor(&b, 2048, true);
	z = b_tensor(&b, 4096, true);
	b_op(&b, TMM_OP_PURE, 10, &w, 1, &x, 1);   /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 10, &x, 1, &y, 1);   /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 10, &w, 1, &z, 1);   /* 4, 5 */
	b_op(&b, 0, 10, &z, 1, NULL, 0);	    /* 6 */
	b_op(&b, 0, 10, &y, 1, NULL, 0);	    /* 7 */
	b_op(&b, 0, 10, &x, 1, NULL, 0);	    /* 8 */
	b_free_after_last_use(&b);
	in = input(&b, 1 << 20, 10);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_uint_eq(an.base_peak, 256 + 1024 + 2048 + 4096);
	/* An op's output is held from the op's first access. */
	ck_assert_uint_eq(an.base[0], 256 + 1024);
	ck_assert_uint_eq(an.base[6], 256 + 1024 + 2048 + 4096);
	ck_assert_uint_eq(an.base[8], 256 + 1024);
	{
		/* Drop y after access 3, back at 7; drop x after 2, back
		 * at 8: y's recomputation at 7 needs x back at 7. */
		struct tmm_eviction ev[2] = {
			{ .tensor = y, .evict = 3, .back = 7, .drop = true },
			{ .tensor = x, .evict = 2, .back = 8, .drop = true },
		};

		tmm_curve(&an, ev, 2, curve, NULL);
		ck_assert_uint_eq(curve[5], 256 + 4096);
		ck_assert_uint_eq(curve[6], 256 + 4096);
		ck_assert_uint_eq(curve[7], 256 + 1024 + 2048);
	}
	tmm_analysis_free(&an);
}
END_TEST

/* Liveness: a tensor the program frees long after its last access is
 * swapped out after that access, with no back-access, when memory is
 * short; not when the iteration fits as it is. */
START_TEST(liveness_returns_idle_memory)
{
	struct builder b;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t w, big, x[4];
	char err[256];

	b_init(&b);
	w = b_tensor(&b, 256, false);
	big = b_tensor(&b, 1 << 20, true);
	b_op(&b, TMM_OP_PURE, 100, &w, 1, &big, 1);
	b_op(&b, 0, 100, &big, 1, NULL, 0);
	for (int i = 0; i < 4; i++) {
		x[i] = b_tensor(&b, 1 << 19, true);
		b_op(&b, TMM_OP_PURE, 1000000, &w, 1, &x[i], 1);
	}
	/* Everything is freed at the end of the step. */
	for (uint32_t i = 0; i < b.t.n_tensors; i++)
		if (b.tensors[i].flags & TMM_TT_MADE_INSIDE) {
			b.tensors[i].flags |= TMM_TT_FREED_INSIDE;
			b.tensors[i].free_ns = b.now;
		}
	in = input(&b, 2 << 20, 10);
	ck_assert_int_eq(tmm_plan_none(&in, &p), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, big), 1);
	ck_assert_uint_eq(p.actions[0].back_access, TMM_PLAN_NONE);
	ck_assert_uint_eq(p.actions[0].trigger, 2);
	ck_assert_int_eq(tmm_plan_validate(&p, &b.t, err, sizeof(err)), 0);
	tmm_plan_free(&p);

	in = input(&b, 4 << 20, 10);
	ck_assert_int_eq(tmm_plan_none(&in, &p), 0);
	ck_assert_uint_eq(p.n_actions, 0);
	ck_assert(p.fits);
	tmm_plan_free(&p);
}
END_TEST

/* Every planner but passive and auto, by name. */
static const char *const names[] = {
	"none", "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile", "tsplit", "stream",
};

/* An 8-layer net, forward and backward, convolutions and activations in
 * turn; forward layer i takes 1000 ns, or 1000 * i when `uneven`. */
static void eight_layers(struct builder *b, bool uneven)
{
	uint32_t t[9];

	b_init(b);
	t[0] = b_tensor(b, 4096, false);
	for (int i = 1; i <= 8; i++)
		t[i] = b_tensor(b, 65536, true);
	for (int i = 1; i <= 8; i++) {
		b_op(b, TMM_OP_PURE, 1000 * (uneven ? (uint64_t)i : 1),
		     &t[i - 1], 1, &t[i], 1);
		b->ops[b->t.n_ops - 1].kind = i % 2 ? TMM_OP_CONV : TMM_OP_ACT;
	}
	for (int i = 8; i >= 1; i--) {
		uint32_t pair[2] = { t[i - 1], t[i] };

		b_op(b, TMM_OP_BACKWARD, 1000, pair, 2, NULL, 0);
		b->ops[b->t.n_ops - 1].kind = i % 2 ? TMM_OP_CONV : TMM_OP_ACT;
	}
	b_free_after_last_use(b);
}

/* Every planner, by name, on one trace: a plan that holds. */
START_TEST(every_planner_makes_a_valid_plan)
{
	struct builder b;
	char err[256];

	eight_layers(&b, false);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct tmm_planner_input in = input(&b, 300 * 1024, 10);
		struct tmm_plan p;

		ck_assert_int_eq(tmm_planner_make(names[i], &in, &p, err,
						  sizeof(err)), 0);
		ck_assert_str_eq(p.policy, names[i]);
		ck_assert_msg(tmm_plan_validate(&p, &b.t, err,
						sizeof(err)) == 0,
			      "%s: %s", names[i], err);
		ck_assert_uint_gt(p.predicted_peak, 0);
		if (strcmp(names[i], "none") != 0)
			ck_assert_msg(p.n_actions > 0, "%s planned nothing",
				      names[i]);
		tmm_plan_free(&p);
	}
	{
		struct tmm_planner_input in = input(&b, 300 * 1024, 10);
		struct tmm_plan p;

		ck_assert_int_eq(tmm_planner_make("no-such-policy", &in, &p, err,
						  sizeof(err)), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "unknown policy"));
	}
}
END_TEST

/*
 * An MLP of `n` layers as examples/mlp_gpu trains it, whose ops touch
 * several tensors each: forward i reads a[i-1] and w[i] and writes a[i];
 * backward i reads a[i-1], w[i] and g[i] and writes g[i-1] and dw[i]; then
 * each weight's update reads dw[i] and writes w[i].
 */
static void mlp_layers(struct builder *b, int n)
{
	uint32_t a[9], w[9], g[9], dw[9];

	b_init(b);
	a[0] = b_tensor(b, 65536, false);
	for (int i = 1; i <= n; i++) {
		w[i] = b_tensor(b, 65536, false);
		a[i] = b_tensor(b, 65536, true);
	}
	for (int i = 1; i <= n; i++) {
		uint32_t in[2] = { a[i - 1], w[i] };

		b_op(b, TMM_OP_PURE, 1000, in, 2, &a[i], 1);
	}
	g[n] = b_tensor(b, 65536, true);
	b_op(b, TMM_OP_PURE, 100, &a[n], 1, &g[n], 1);
	for (int i = n; i >= 1; i--) {
		uint32_t in[3] = { a[i - 1], w[i], g[i] }, out[2];

		g[i - 1] = b_tensor(b, 65536, true);
		dw[i] = b_tensor(b, 65536, true);
		out[0] = g[i - 1];
		out[1] = dw[i];
		b_op(b, TMM_OP_BACKWARD, 2000, in, 3, out, 2);
	}
	for (int i = 1; i <= n; i++)
		b_op(b, TMM_OP_PURE, 100, &dw[i], 1, &w[i], 1);
	b_free_after_last_use(b);
}

/*
 * A prefetch fired after an access of the op that needs the tensor
 * comes too late: the op has already brought it back on demand, so the
 * runtime skips the prefetch, and the plan's curve, which had the tensor
 * out until then, was wrong over that op.  Capuchin and TSPLIT moved a
 * prefetch as late as the access before its back-access, inside the same
 * op where it has several (186 actions skipped in 7 steps of issue #19's
 * compute-bound MLP at 40%, simulated); no planner may.
 */
START_TEST(no_prefetch_fires_inside_the_op_that_needs_it)
{
	struct builder b;
	char err[256];
	unsigned checked = 0;

	mlp_layers(&b, 8);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (uint64_t kib = 320; kib <= 960; kib += 64) {
			struct tmm_planner_input in =
				input(&b, kib * 1024, 10);
			struct tmm_plan p;

			ck_assert_int_eq(tmm_planner_make(names[i], &in, &p,
							  err, sizeof(err)),
					 0);
			for (uint32_t k = 0; k < p.n_actions; k++) {
				const struct tmm_plan_action *a = &p.actions[k];

				if (a->type != TMM_ACT_PREFETCH ||
				    a->back_access == TMM_PLAN_NONE ||
				    a->back_access <= a->trigger)
					continue; /* none, or a wrap-around */
				checked++;
				ck_assert_msg(b.t.accesses[a->trigger].op !=
						      b.t.accesses[a->back_access]
							      .op,
					      "%s at %llu KiB: the prefetch "
					      "for access %u fires after "
					      "access %u of the same op",
					      names[i],
					      (unsigned long long)kib,
					      a->back_access, a->trigger);
			}
			tmm_plan_free(&p);
		}
	ck_assert_uint_gt(checked, 0);
}
END_TEST

/*
 * A swap's span ends where its tensor is back on the device: after its
 * prefetch's trigger op, but never later than the start of the op that
 * needs it, which brings it back on demand when the prefetch comes too
 * late (a plan read from a file may have one: tmm_last_in_trigger bounds
 * only the planners').  Op 3 reads A and B (accesses 6 and 7).
 */
START_TEST(a_swap_is_back_by_the_op_that_needs_it)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_planner_input in;
	uint32_t x, a, bt, y, ab[2], gone, returns;

	b_init(&b);
	x = b_tensor(&b, 256, false);
	a = b_tensor(&b, 1024, true);
	bt = b_tensor(&b, 1024, true);
	y = b_tensor(&b, 256, true);
	b_op(&b, TMM_OP_PURE, 10, &x, 1, &a, 1);  /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 10, &x, 1, &bt, 1); /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 10, &x, 1, &y, 1);  /* 4, 5 */
	ab[0] = bt;
	ab[1] = a;
	b_op(&b, 0, 10, ab, 2, NULL, 0);	   /* 6, 7 */
	b_free_after_last_use(&b);
	in = input(&b, 1 << 20, 10);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_uint_eq(tmm_last_in_trigger(&an, 1, 7), 5);
	{
		/* Prefetched after op 1: back from op 2 on. */
		struct tmm_eviction e = { .tensor = a, .evict = 1, .back = 7,
					  .in_trigger = 3 };

		tmm_eviction_span(&an, &e, &gone, &returns);
		ck_assert_uint_eq(gone, 2);
		ck_assert_uint_eq(returns, 4);
		/* After access 6, inside op 3: on demand as op 3 starts. */
		e.in_trigger = 6;
		tmm_eviction_span(&an, &e, &gone, &returns);
		ck_assert_uint_eq(returns, 6);
	}
	tmm_analysis_free(&an);
}
END_TEST

/*
 * A planner that runs out of host memory fails with -ENOMEM and a
 * message, whatever *out held before: the caller's plan is typically an
 * uninitialised local (issue #21: `auto` failing in its analysis left it
 * so, and the plan freed then was garbage).  Every one of the first
 * allocations of each planner fails in turn.
 */
START_TEST(a_planner_out_of_memory_frees_only_its_own)
{
	static const char *const all[] = {
		"auto", "none", "vdnn-conv", "vdnn-all", "checkpoint",
		"superneurons", "capuchin", "tensile", "tsplit", "stream",
	};
	struct builder b;
	char err[256], spec[32];

	eight_layers(&b, false);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		for (unsigned k = 1; k <= 24; k++) {
			struct tmm_planner_input in = input(&b, 300 * 1024,
							    10);
			struct tmm_plan p;
			int rc;

			memset(&p, 0xA5, sizeof(p)); /* as the stack may be */
			snprintf(spec, sizeof(spec), "host_alloc@%u", k);
			ck_assert_int_eq(tmm_fault_set(spec), 0);
			rc = tmm_planner_make(all[i], &in, &p, err,
					      sizeof(err));
			ck_assert_int_eq(tmm_fault_set(""), 0);
			ck_assert_msg(rc == 0 || rc == -ENOMEM,
				      "%s, %s: %d", all[i], spec, rc);
			if (rc == 0)
				tmm_plan_free(&p);
			else
				ck_assert_ptr_nonnull(strstr(err,
							     "out of memory"));
		}
}
END_TEST

/* The host allocations policy auto makes for `in`, counted with a fault
 * armed past them; the plan must come out. */
static unsigned long auto_allocations(struct tmm_planner_input *in)
{
	struct tmm_plan p;
	char err[256];
	unsigned long n;

	ck_assert_int_eq(tmm_fault_set("host_alloc@100000000"), 0);
	ck_assert_int_eq(tmm_planner_make("auto", in, &p, err, sizeof(err)),
			 0);
	n = tmm_fault_calls("host_alloc");
	ck_assert_int_eq(tmm_fault_set(""), 0);
	tmm_plan_free(&p);
	return n;
}

/*
 * Where the moves go at other rates than the link (mode=uvm by
 * prefetch), auto prices its candidates again after making them
 * (plan_auto.c, price_at_move_rates): the allocations past those of
 * the plain run are that pricing's.  Each failing fails the plan with
 * -ENOMEM and its message, but for the memory curve's scratch, without
 * which the forecast takes the curve without evictions (pessimistic):
 * then the plan is whole and valid.
 */
START_TEST(auto_out_of_memory_while_pricing_fails_cleanly)
{
	struct builder b;
	struct tmm_planner_input in;
	unsigned long plain, priced, failed = 0;
	char err[256], spec[32];

	eight_layers(&b, false);
	in = input(&b, 300 * 1024, 10);
	plain = auto_allocations(&in);
	in.moves_h2d_gbps = 5;
	in.moves_d2h_gbps = 1;
	priced = auto_allocations(&in);
	ck_assert_uint_gt(priced, plain);
	for (unsigned long k = plain + 1; k <= priced; k++) {
		struct tmm_plan p;
		int rc;

		memset(&p, 0xA5, sizeof(p));
		snprintf(spec, sizeof(spec), "host_alloc@%lu", k);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = tmm_planner_make("auto", &in, &p, err, sizeof(err));
		ck_assert_int_eq(tmm_fault_set(""), 0);
		if (rc == 0) {
			/* tmm_curve's own buffers: without them it gives
			 * the curve without evictions, pessimistic. */
			ck_assert_msg(tmm_plan_validate(&p, &b.t, err,
							sizeof(err)) == 0,
				      "%s: %s", spec, err);
			tmm_plan_free(&p);
			continue;
		}
		ck_assert_msg(rc == -ENOMEM, "%s: %d", spec, rc);
		ck_assert_ptr_nonnull(strstr(err, "out of memory"));
		failed++;
	}
	ck_assert_uint_gt(failed, 0);
}
END_TEST

/* auto, with no twin to try plans on, keeps the plan the forecast likes
 * best: none of the candidates that fits runs shorter. */
START_TEST(auto_keeps_the_best_forecast)
{
	struct builder b;
	char err[256];
	struct tmm_planner_input in;
	struct tmm_analysis an;
	struct tmm_forecast chosen, f;
	struct tmm_plan p, q;
	bool any_fits = false;

	eight_layers(&b, true);
	in = input(&b, 300 * 1024, 10);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_int_eq(tmm_planner_make("auto", &in, &p, err, sizeof(err)),
			 0);
	ck_assert_msg(strncmp(p.policy, "auto+", 5) == 0, "%s", p.policy);
	ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &chosen), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_int_eq(tmm_planner_make(names[i], &in, &q, err,
						  sizeof(err)), 0);
		ck_assert_int_eq(tmm_forecast_plan(&an, &q, &f), 0);
		if (f.fits && q.fits) {
			any_fits = true;
			ck_assert_msg(chosen.fits && p.fits,
				      "%s fits, auto's choice %s does not",
				      names[i], p.policy);
			ck_assert_msg(chosen.total_ns <= f.total_ns,
				      "%s forecasts %llu ns, auto's %s %llu",
				      names[i],
				      (unsigned long long)f.total_ns,
				      p.policy,
				      (unsigned long long)chosen.total_ns);
		}
		tmm_plan_free(&q);
	}
	ck_assert(any_fits);
	tmm_plan_free(&p);
	tmm_analysis_free(&an);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("planners");
	TCase *tc = tcase_create("planners");

	tcase_add_test(tc, checkpoint_of_a_linear_chain);
	tcase_add_test(tc, auto_out_of_memory_while_pricing_fails_cleanly);
	tcase_add_test(tc, checkpoint_at_articulation_points_of_residual_blocks);
	tcase_add_test(tc, vdnn_keeps_a_residual_input);
	tcase_add_test(tc, capuchin_swaps_the_largest_free_time_first);
	tcase_add_test(tc, capuchin_recomputes_by_msps);
	tcase_add_test(tc, curve_under_evictions);
	tcase_add_test(tc, liveness_returns_idle_memory);
	tcase_add_test(tc, every_planner_makes_a_valid_plan);
	tcase_add_test(tc, no_prefetch_fires_inside_the_op_that_needs_it);
	tcase_add_test(tc, a_swap_is_back_by_the_op_that_needs_it);
	tcase_add_test(tc, a_planner_out_of_memory_frees_only_its_own);
	tcase_add_test(tc, auto_keeps_the_best_forecast);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
