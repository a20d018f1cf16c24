/* SPDX-License-Identifier: MIT */
/*
 * test_tsplit.c — the tsplit planner (TSPLIT §IV) on small hand-made
 * traces with known answers: an op whose input and output do not fit
 * together is split into as many parts as it takes, no more and no more
 * than its rows; a far-away tensor whose swap costs nothing is swapped
 * instead; an op that cannot be split never is; an input that cannot be
 * recomputed is swapped out slice by slice instead; and the split memory
 * model saves nothing unless the input is dropped or swapped out at the
 * op, which is when the runtime lets its rows go slice by slice
 * (lib/exec/split.c); and an op is split to stream out an output that must
 * leave right after it, where that is cheaper than its swap after the op
 * (lib/exec/split_stream.c); and a recomputation's chain of dropped
 * sources ends on the device at its back-access, never in a swap.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "hints/analysis.h"
#include "lib/base/fault.h"
#include "hints/planner.h"
#include "hints/planners.h"
#include "hints/split_curve.h"
#include "tensormm.h"
#include "trace_builder.h"

#define MiB (1ull << 20)
#define LAUNCH_NS 5000

/* Makes the last op's accesses sliced into `rows` rows. */
static void b_sliced(struct builder *b, uint32_t rows)
{
	uint32_t op = b->t.n_ops - 1;

	for (uint32_t k = 0; k < b->t.n_accesses; k++)
		if (b->accesses[k].op == op)
			b->accesses[k].slices = rows;
}

/*
 * x (made before the iteration) and a chain: A reads x and writes a, B
 * reads a and writes b, C reads b, D reads a again (accesses 0-1, 2-3, 4,
 * 5).  Budget 10 MiB: the 5 MiB tensors set the margin at a fifth of it,
 * so plans aim at 8 MiB.  B holds x + 10 MiB, over the budget, and only
 * splitting B while a leaves there lowers it: x is A's source, a and b
 * are B's own.  a is dropped (and recomputed from x for D) when A is
 * pure (`a_flags`), else swapped out (and back for D).  Ops take `op_ns`.
 */
static void chain_d(struct builder *b, uint64_t x_bytes, uint32_t rows,
		    uint64_t op_ns, unsigned a_flags, unsigned d_flags,
		    uint32_t *a_out)
{
	uint32_t x, a, t;

	b_init(b);
	x = b_tensor(b, x_bytes, false);
	a = b_tensor(b, 5 * MiB, true);
	t = b_tensor(b, 5 * MiB, true);
	b_op(b, a_flags, op_ns, &x, 1, &a, 1);
	b_op(b, TMM_OP_PURE, op_ns, &a, 1, &t, 1);
	if (rows)
		b_sliced(b, rows);
	b_op(b, TMM_OP_BACKWARD, op_ns, &t, 1, NULL, 0);
	b_op(b, d_flags, op_ns, &a, 1, NULL, 0);
	b_free_after_last_use(b);
	*a_out = a;
}

/* The chain with D in the backward pass. */
static void chain(struct builder *b, uint64_t x_bytes, uint32_t rows,
		  uint64_t op_ns, unsigned a_flags, uint32_t *a_out)
{
	chain_d(b, x_bytes, rows, op_ns, a_flags, TMM_OP_BACKWARD, a_out);
}

static struct tmm_planner_input tsplit_input(const struct builder *b)
{
	struct tmm_planner_input in = input(b, 10 * MiB, 10);

	in.device.launch_ns = LAUNCH_NS;
	return in;
}

/* The SPLIT of plan p, or NULL. */
static const struct tmm_plan_action *split_in(const struct tmm_plan *p)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == TMM_ACT_SPLIT)
			return &p->actions[i];
	return NULL;
}

static void make(const struct builder *b, struct tmm_plan *p)
{
	struct tmm_planner_input in = tsplit_input(b);
	char err[256];

	ck_assert_int_eq(tmm_planner_make("tsplit", &in, p, err,
					  sizeof(err)), 0);
	ck_assert_msg(tmm_plan_validate(p, &b->t, err, sizeof(err)) == 0,
		      "%s", err);
}

/*
 * With x at 0.25 MiB, B is 2.25 MiB over: two parts save 2.5 MiB (Eq. 5),
 * which is enough, and more parts would only add launches.  With x at
 * 1 MiB B is 3 MiB over: two parts are not enough, four save 3.75 MiB.
 * Either
 * way a leaves B slice by slice (an EVICT_DROP at B's read of it, back for
 * D; the SPLIT at B's first access) and the plan fits at the predicted
 * peak.
 */
START_TEST(split_into_as_many_parts_as_it_takes)
{
	static const struct {
		uint64_t x;
		uint32_t parts;
	} cases[] = { { MiB / 4, 2 }, { 1 * MiB, 4 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct builder b;
		struct tmm_plan p;
		const struct tmm_plan_action *s;
		uint32_t a;

		chain(&b, cases[i].x, 64, 1000000, TMM_OP_PURE, &a);
		make(&b, &p);
		s = split_in(&p);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_eq(s->parts, cases[i].parts);
		ck_assert_uint_eq(s->trigger, 2); /* B's first access */
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, a), 1);
		ck_assert(p.fits);
		ck_assert_uint_eq(p.predicted_peak,
				  cases[i].x + 10 * MiB -
					  (cases[i].parts - 1) * MiB * 5 /
						  cases[i].parts);
		tmm_plan_free(&p);
	}
}
END_TEST

/* An op of 3 rows can be split in two at most: B, 3 MiB over, stays
 * 0.5 MiB over, and the plan says so. */
START_TEST(never_more_parts_than_rows)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t a;

	chain(&b, 1 * MiB, 3, 1000000, TMM_OP_PURE, &a);
	make(&b, &p);
	ck_assert_ptr_nonnull(split_in(&p));
	ck_assert_uint_eq(split_in(&p)->parts, 2);
	ck_assert(!p.fits);
	ck_assert_uint_eq(p.predicted_peak, 1 * MiB + 10 * MiB - 5 * MiB / 2);
	tmm_plan_free(&p);
}
END_TEST

/* The same chain with B not splittable: no SPLIT, and nothing else can
 * lower B, so the plan does not fit. */
START_TEST(an_op_that_cannot_be_split_is_not)
{
	struct builder b;
	struct tmm_plan p;
	uint32_t a;

	chain(&b, 1 * MiB, 0, 1000000, TMM_OP_PURE, &a);
	make(&b, &p);
	ck_assert_ptr_null(split_in(&p));
	ck_assert(!p.fits);
	ck_assert_uint_eq(p.predicted_peak, 11 * MiB);
	tmm_plan_free(&p);
}
END_TEST

/*
 * F writes f (4.5 MiB) first, D reads it last; between them A writes a,
 * B reads a and writes b (3 MiB each, B splittable), C reads b.  B holds
 * 10.5 MiB, 2.5 over the 8 MiB target.  With 1 ms ops, f's copies
 * (0.5 ms each way) hide behind A and C: swapping it costs nothing and
 * saves all that is needed, where a split costs launches.  tsplit swaps f
 * and splits nothing.
 */
START_TEST(a_free_swap_beats_a_split)
{
	const uint64_t ns = 1000000;
	struct builder b;
	struct tmm_plan p;
	uint32_t f, a, t;

	b_init(&b);
	f = b_tensor(&b, 9 * MiB / 2, true);
	a = b_tensor(&b, 3 * MiB, true);
	t = b_tensor(&b, 3 * MiB, true);
	b_op(&b, TMM_OP_PURE, ns, NULL, 0, &f, 1);
	b_op(&b, TMM_OP_PURE, ns, NULL, 0, &a, 1);
	b_op(&b, TMM_OP_PURE, ns, &a, 1, &t, 1);
	b_sliced(&b, 64);
	b_op(&b, TMM_OP_BACKWARD, ns, &t, 1, NULL, 0);
	b_op(&b, TMM_OP_BACKWARD, ns, &f, 1, NULL, 0);
	b_free_after_last_use(&b);
	make(&b, &p);
	ck_assert(p.fits);
	ck_assert_ptr_null(split_in(&p));
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, f), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, f), 1);
	/* f is back for C, with b: the peak is there now. */
	ck_assert_uint_eq(p.predicted_peak, 15 * MiB / 2);
	tmm_plan_free(&p);
}
END_TEST

/* Eq. 5 in the curve: a split lowers its op by (p-1)/p of the smaller
 * tensor only while the input leaves there, dropped or swapped out: an
 * eviction of it anywhere else saves nothing at the op. */
START_TEST(split_saves_only_when_the_input_leaves)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_planner_input in;
	struct tmm_split s = { .first = 2, .parts = 4 };
	struct tmm_eviction e;
	uint64_t curve[MAX_A];
	uint32_t a, at;

	chain(&b, 1 * MiB, 64, 1000, TMM_OP_PURE, &a);
	in = tsplit_input(&b);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert(tmm_split_pair(&an, 2, &s.input, &s.output));
	ck_assert_uint_eq(s.input, a);
	ck_assert_uint_eq(tmm_split_saving(&an, &s), 15 * MiB / 4);
	ck_assert_uint_eq(tmm_curve_split(&an, NULL, 0, &s, 1, curve, &at),
			  11 * MiB);
	ck_assert_uint_eq(at, 2);
	/* Freed after D, its last access: whole at B. */
	e = (struct tmm_eviction){ .tensor = a, .evict = 5,
				   .back = TMM_TRACE_NONE, .in_trigger = 5 };
	ck_assert_uint_eq(tmm_curve_split(&an, &e, 1, &s, 1, curve, &at),
			  11 * MiB);
	ck_assert_uint_eq(at, 2);
	for (int drop = 0; drop < 2; drop++) {
		e = (struct tmm_eviction){ .tensor = a, .evict = 2, .back = 5,
					   .in_trigger = 4, .drop = drop };
		ck_assert_uint_eq(tmm_curve_split(&an, &e, 1, &s, 1, curve,
						  &at),
				  1 * MiB + 10 * MiB - 15 * MiB / 4);
		ck_assert_uint_eq(at, 2);
		ck_assert_uint_eq(curve[2], curve[3]);
		/* A: x and a, untouched */
		ck_assert_uint_eq(curve[1], 6 * MiB);
	}
	tmm_analysis_free(&an);
}
END_TEST

/*
 * The chain with A not pure: a cannot be recomputed, so it leaves B
 * swapped out slice by slice, an EVICT_SWAP at B's read of it and a
 * PREFETCH for D, which saves at B what the drop saved (Eq. 5): the same
 * parts as with the drop, and the plan fits.
 */
START_TEST(split_swaps_an_input_it_cannot_recompute)
{
	static const struct {
		uint64_t x;
		uint32_t parts;
	} cases[] = { { MiB / 4, 2 }, { 1 * MiB, 4 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct builder b;
		struct tmm_plan p;
		const struct tmm_plan_action *s;
		uint32_t a;

		chain(&b, cases[i].x, 64, 1000000, 0, &a);
		make(&b, &p);
		s = split_in(&p);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_eq(s->parts, cases[i].parts);
		ck_assert_uint_eq(s->trigger, 2);
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, a), 0);
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a), 1);
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, a), 1);
		for (uint32_t k = 0; k < p.n_actions; k++)
			if (p.actions[k].type == TMM_ACT_EVICT_SWAP)
				ck_assert_uint_eq(p.actions[k].trigger, 2);
		ck_assert(p.fits);
		ck_assert_uint_eq(p.predicted_peak,
				  cases[i].x + 10 * MiB -
					  (cases[i].parts - 1) * MiB * 5 /
						  cases[i].parts);
		tmm_plan_free(&p);
	}
}
END_TEST

/*
 * A writes x (1 MiB); B, splittable into 64 rows and not pure, reads x
 * and writes y (4 MiB); C writes c (6.5 MiB); E a spacer; D reads y
 * last.  C holds y + c, 2.5 MiB over the 8 MiB target, and y, which
 * cannot be recomputed, must leave.  Swapped whole after B, its 0.42 ms copy is
 * C's wait.  Streamed out of B split in p parts (lib/exec/split_stream.c),
 * only the last part's copy is: 1/p of it, for p launches (5 us each),
 * cheapest at p = 8.  tsplit splits B in 8 for it, swaps y at B's write
 * of it (where the runtime streams it), and x stays: the split is not
 * there to reuse it.
 */
START_TEST(split_to_stream_an_output_out)
{
	const uint64_t ns = 1000000;
	struct builder b;
	struct tmm_plan p;
	const struct tmm_plan_action *s;
	uint32_t x, y, c, e;

	b_init(&b);
	x = b_tensor(&b, 1 * MiB, true);
	y = b_tensor(&b, 4 * MiB, true);
	c = b_tensor(&b, 13 * MiB / 2, true);
	e = b_tensor(&b, MiB / 2, true);
	b_op(&b, TMM_OP_PURE, ns, NULL, 0, &x, 1);
	b_op(&b, 0, ns, &x, 1, &y, 1);
	b_sliced(&b, 64);
	b_op(&b, 0, ns, NULL, 0, &c, 1);
	b_op(&b, 0, ns, NULL, 0, &e, 1);
	b_op(&b, TMM_OP_BACKWARD, ns, &y, 1, NULL, 0);
	b_free_after_last_use(&b);
	make(&b, &p);
	ck_assert(p.fits);
	s = split_in(&p);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->parts, 8);
	ck_assert_uint_eq(s->trigger, 1); /* B's read of x */
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, y), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_PREFETCH, y), 1);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, x), 0);
	ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, x), 0);
	for (uint32_t k = 0; k < p.n_actions; k++)
		if (p.actions[k].type == TMM_ACT_EVICT_SWAP)
			ck_assert_uint_eq(p.actions[k].trigger, 2);
	tmm_plan_free(&p);
}
END_TEST

/*
 * The wait of a split op (1 ms, 64 rows, in 4 parts) for its swapped
 * input's copies (4 MiB: 1 MiB a part, 104857 ns at 10 GB/s), as the
 * runtime waits (lib/exec/split.c).  Output rows the size of the input's:
 * each part writes the rows the one before read, and waits for its
 * copy, and the op's end for the last: 4 copies.  Half the size (2 MiB):
 * the output starts half a part below the input and needs its rows at
 * half the pace; part 1 waits for part 0's copy, part 3 finds part 1's
 * over (it ran beside part 2), and the end waits for the last: 2 copies.
 */
START_TEST(split_input_copies_wait_as_the_runtime_does)
{
	static const struct {
		uint64_t out_bytes;
		uint64_t copies;
	} cases[] = { { 4 * MiB, 4 }, { 2 * MiB, 2 } };
	const uint64_t part_copy = MiB / 10; /* ns: 10 bytes a ns */

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct builder b;
		struct tmm_analysis an;
		struct tmm_planner_input in;
		struct tmm_split s = { .first = 1, .parts = 4 };
		uint64_t stall, end;
		uint32_t x, y;

		b_init(&b);
		x = b_tensor(&b, 4 * MiB, true);
		y = b_tensor(&b, cases[i].out_bytes, true);
		b_op(&b, TMM_OP_PURE, 1000000, NULL, 0, &x, 1);
		b_op(&b, TMM_OP_PURE, 1000000, &x, 1, &y, 1);
		b_sliced(&b, 64);
		b_op(&b, TMM_OP_BACKWARD, 1000000, &y, 1, NULL, 0);
		b_free_after_last_use(&b);
		in = tsplit_input(&b);
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		ck_assert(tmm_split_pair(&an, 1, &s.input, &s.output));
		stall = tmm_split_input_stall_ns(&an, &s, 1000000, &end);
		ck_assert_uint_eq(tmm_swap_ns(&an, MiB, false), part_copy);
		ck_assert_uint_eq(stall, cases[i].copies * part_copy);
		ck_assert_uint_eq(end, 1000000 + stall);
		tmm_analysis_free(&an);
	}
}
END_TEST

/*
 * A chain of DEEP pure layers, 2 MiB each, and its backward pass: layer
 * i's gradient op reads h[i-1] and g[i].  Swaps are slow next to the
 * layers (gbps), so the greedy walk recomputes where it can.  TSPLIT
 * recomputes memory-centrically (§V-D): a dropped tensor whose source is
 * dropped too is regenerated through that source, down to a checkpoint on
 * the device, as the runtime does (lib/exec/recompute.c).  What the
 * runtime cannot do within the plan is bring back a source the plan has
 * swapped out: at a dropped tensor's back-access, the chain below it ends
 * on the device, never in a swap.
 */
#define DEEP 12

static void deep_chain(struct builder *b, uint64_t op_ns, uint32_t *h)
{
	uint32_t g[DEEP + 1];

	b_init(b);
	h[0] = b_tensor(b, 2 * MiB, false);
	for (int i = 1; i <= DEEP; i++) {
		h[i] = b_tensor(b, 2 * MiB, true);
		b_op(b, TMM_OP_PURE, op_ns, &h[i - 1], 1, &h[i], 1);
	}
	g[DEEP] = b_tensor(b, 2 * MiB, true);
	b_op(b, TMM_OP_BACKWARD, op_ns, &h[DEEP], 1, &g[DEEP], 1);
	for (int i = DEEP; i >= 1; i--) {
		uint32_t in[2] = { h[i - 1], g[i] };

		g[i - 1] = b_tensor(b, 2 * MiB, true);
		b_op(b, TMM_OP_BACKWARD, op_ns, in, 2, &g[i - 1], 1);
	}
	b_free_after_last_use(b);
}

/* How plan p has tensor t (key) out of the device across access k
 * (evicted before k with its back-access after k): TMM_ACT_EVICT_DROP,
 * TMM_ACT_EVICT_SWAP, or 0 when it is on the device there. */
static int out_across(const struct tmm_plan *p, uint64_t key, uint32_t k)
{
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];

		if ((a->type == TMM_ACT_EVICT_DROP ||
		     a->type == TMM_ACT_EVICT_SWAP) && a->key == key &&
		    a->trigger < k &&
		    (a->back_access == TMM_PLAN_NONE || a->back_access > k))
			return (int)a->type;
	}
	return 0;
}

START_TEST(recomputation_chains_end_on_the_device)
{
	static const double gbps[] = { 0.5, 2, 8 };
	unsigned drops = 0, chains = 0;

	for (size_t c = 0; c < sizeof(gbps) / sizeof(gbps[0]); c++) {
		for (uint64_t budget = 10; budget <= 20; budget += 2) {
			struct builder b;
			struct tmm_planner_input in;
			struct tmm_plan p;
			uint32_t h[DEEP + 1];
			char err[256];

			deep_chain(&b, 200000, h);
			in = input(&b, budget * MiB, gbps[c]);
			ck_assert_int_eq(tmm_planner_make("tsplit", &in, &p,
							  err, sizeof(err)),
					 0);
			for (uint32_t i = 0; i < p.n_actions; i++) {
				const struct tmm_plan_action *a =
					&p.actions[i];
				int layer = -1;

				if (a->type != TMM_ACT_EVICT_DROP)
					continue;
				drops++;
				for (int l = 1; l <= DEEP; l++)
					if (b.tensors[h[l]].key == a->key)
						layer = l;
				ck_assert_int_gt(layer, 0);
				/* Down the chain of dropped sources... */
				int src = layer - 1, how;

				while ((how = out_across(
						&p, b.tensors[h[src]].key,
						a->back_access)) ==
				       TMM_ACT_EVICT_DROP) {
					ck_assert_int_gt(src, 0);
					src--;
				}
				if (src < layer - 1)
					chains++;
				/* ... to a checkpoint on the device. */
				ck_assert_msg(how == 0,
					      "%.1f GB/s, %llu MiB: h[%d] is "
					      "recomputed at access %u from "
					      "h[%d], swapped out there",
					      gbps[c],
					      (unsigned long long)budget,
					      layer, a->back_access, src);
			}
			tmm_plan_free(&p);
		}
	}
	/* The rule was put to work, chains included. */
	ck_assert_uint_gt(drops, 0);
	ck_assert_uint_gt(chains, 0);
}
END_TEST

/*
 * TSPLIT recomputes for the backward layers (§V-D): with D, a's second
 * reader, in the backward pass a leaves B by a drop (recomputed for D),
 * and with D in the forward pass (a residual connection's second read,
 * say) by a swap.
 */
START_TEST(recomputes_for_the_backward_pass_only)
{
	for (int backward = 0; backward < 2; backward++) {
		struct builder b;
		struct tmm_plan p;
		uint32_t a;

		chain_d(&b, 1 * MiB, 64, 1000000, TMM_OP_PURE,
			backward ? TMM_OP_BACKWARD : 0, &a);
		make(&b, &p);
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, a),
				  (backward ? 1 : 0));
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP, a),
				  (backward ? 0 : 1));
		tmm_plan_free(&p);
	}
}
END_TEST

/*
 * A recomputation through a tensor the program has freed needs that
 * tensor kept as a ghost, which the runtime can do only for a tensor on
 * the device when freed (lib/exec/recompute.c).  P makes g from x, Q y
 * from g; the program frees g only after F2, and liveness swaps it out
 * while it idles over the target.  y, read again by the backward op B2,
 * is cheaper to recompute than to swap (slow link, fast ops), but its
 * recomputation would need g: y is swapped.  With g freed right after Q
 * (no idle time for liveness to take) y is dropped.
 */
START_TEST(no_recomputation_through_a_swapped_out_ghost)
{
	for (int late = 0; late < 2; late++) {
		struct builder b;
		struct tmm_plan p;
		struct tmm_planner_input in;
		uint32_t x, g, y, z1, z2;
		char err[256];

		b_init(&b);
		x = b_tensor(&b, 1 * MiB, false);
		g = b_tensor(&b, 4 * MiB, true);
		y = b_tensor(&b, 4 * MiB, true);
		z1 = b_tensor(&b, 6 * MiB, true);
		z2 = b_tensor(&b, 6 * MiB, true);
		b_op(&b, TMM_OP_PURE, 1000, &x, 1, &g, 1);
		b_op(&b, TMM_OP_PURE, 1000, &g, 1, &y, 1);
		b_op(&b, TMM_OP_PURE, 40000000, &y, 1, &z1, 1);
		b_op(&b, TMM_OP_PURE, 40000000, &z1, 1, &z2, 1);
		b_op(&b, TMM_OP_BACKWARD, 40000000, &z2, 1, NULL, 0);
		b_op(&b, TMM_OP_BACKWARD, 40000000, &y, 1, NULL, 0);
		b_free_after_last_use(&b);
		if (late) /* freed at F2's end, not Q's */
			b.tensors[g].free_ns = b.accesses[7].end_ns;
		in = input(&b, 16 * MiB, 0.5);
		ck_assert_int_eq(tmm_planner_make("tsplit", &in, &p, err,
						  sizeof(err)), 0);
		ck_assert_msg(tmm_plan_validate(&p, &b.t, err, sizeof(err)) ==
				      0, "%s", err);
		if (late)
			ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_SWAP,
						g), 1);
		ck_assert_uint_eq(count(&p, &b, TMM_ACT_EVICT_DROP, y),
				  (late ? 0 : 1));
		tmm_plan_free(&p);
	}
}
END_TEST

/*
 * Out of host memory at any allocation, chains and all (the deep chain,
 * where the walk recomputes through dropped tensors): tsplit fails with
 * -ENOMEM and a message, and frees what it took (the sanitizer pass of
 * the suite checks the leaks).  Allocation k fails for k = 1, 2, ...
 * until a plan is made with the fault never reached.
 */
START_TEST(out_of_memory_at_every_allocation)
{
	struct builder b;
	uint32_t h[DEEP + 1];
	unsigned failed = 0;
	bool made = false;

	deep_chain(&b, 200000, h);
	for (unsigned k = 1; !made && k < 100000; k++) {
		struct tmm_planner_input in = input(&b, 14 * MiB, 0.5);
		struct tmm_plan p;
		char err[256], spec[32];
		int rc;

		snprintf(spec, sizeof(spec), "host_alloc@%u", k);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = tmm_planner_make("tsplit", &in, &p, err, sizeof(err));
		/* Made with fewer allocations than k: past the last. */
		made = rc == 0 && tmm_fault_calls("host_alloc") < k;
		ck_assert_int_eq(tmm_fault_set(""), 0);
		ck_assert_msg(rc == 0 || rc == -ENOMEM, "%s: %d", spec, rc);
		if (rc == 0) {
			tmm_plan_free(&p);
		} else {
			failed++;
			ck_assert_ptr_nonnull(strstr(err, "out of memory"));
		}
	}
	ck_assert(made);
	ck_assert_uint_gt(failed, 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tsplit");
	TCase *tc = tcase_create("tsplit");

	tcase_add_test(tc, split_into_as_many_parts_as_it_takes);
	tcase_add_test(tc, never_more_parts_than_rows);
	tcase_add_test(tc, an_op_that_cannot_be_split_is_not);
	tcase_add_test(tc, a_free_swap_beats_a_split);
	tcase_add_test(tc, split_saves_only_when_the_input_leaves);
	tcase_add_test(tc, split_swaps_an_input_it_cannot_recompute);
	tcase_add_test(tc, split_to_stream_an_output_out);
	tcase_add_test(tc, split_input_copies_wait_as_the_runtime_does);
	tcase_add_test(tc, recomputation_chains_end_on_the_device);
	tcase_add_test(tc, recomputes_for_the_backward_pass_only);
	tcase_add_test(tc, no_recomputation_through_a_swapped_out_ghost);
	tcase_add_test(tc, out_of_memory_at_every_allocation);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
