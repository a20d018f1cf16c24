/* SPDX-License-Identifier: MIT */
/*
 * test_forecast.c — the forecast of a plan (hints/plan_forecast.c) on
 * small hand-made timelines with known answers: a late prefetch, a
 * prefetch ordered after every stream, a copy that holds the host, copies
 * by a kernel that slow compute, dead and clean tensors that leave the
 * link free, an engine busier than the iteration, and how early
 * prefetches land.  Split from test_planners.c,
 * which keeps the planners' own cases.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "hints/analysis.h"
#include "hints/plan_forecast.h"
#include "hints/planner.h"
#include "tensormm.h"

#include "trace_builder.h"

/*
 * Four ops of 1000 ns reading X: op 0 writes A (1.5 MB: 1500 ns at 1000
 * GB/s), ops 1 and 2 write small outputs, op 3 reads A (accesses 0-1,
 * 2-3, 4-5, 6-7).  Returns A.
 */
static uint32_t a_read_three_ops_later(struct builder *b)
{
	uint32_t x, a, y1, y2, y3;

	b_init(b);
	x = b_tensor(b, 1000, false);
	a = b_tensor(b, 1500 * 1000, true);
	y1 = b_tensor(b, 256, true);
	y2 = b_tensor(b, 256, true);
	y3 = b_tensor(b, 256, true);
	b_op(b, TMM_OP_PURE, 1000, &x, 1, &a, 1);
	b_op(b, TMM_OP_PURE, 1000, &x, 1, &y1, 1);
	b_op(b, TMM_OP_PURE, 1000, &x, 1, &y2, 1);
	b_op(b, TMM_OP_PURE, 1000, &a, 1, &y3, 1);
	return a;
}

/* A plan of one swap of A: out after op 0, prefetched after op 1, back
 * for op 3 (accesses 1, 3 and 6). */
static void swap_a_out_and_back(struct tmm_plan *p, const struct builder *b,
				uint32_t a)
{
	ck_assert_int_eq(tmm_plan_init(p, &b->t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 1,
				      b->tensors[a].key, 6, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 3,
				      b->tensors[a].key, 6, 0), 0);
}

/* The forecast of one swap on a known timeline.  A is written by op 0,
 * untouched by ops 1 and 2, read by op 3; every op takes 1000 ns and a
 * copy of A takes S each way, S = 1500 ns.  Out after op 0 (the copy ends
 * at 1000 + S = 2500), prefetched after op 1 (it may start only when the
 * swap-out is done: 2500, lands at 4000), needed when op 3 starts at
 * 3000: a stall of 1000 ns. */
START_TEST(forecast_times_a_late_prefetch)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a;
	uint64_t s_ns;

	a = a_read_three_ops_later(&b);
	in = input(&b, 1ull << 30, 1000);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	s_ns = tmm_swap_ns(&an, an.life[a].bytes, false);
	ck_assert_uint_eq(s_ns, tmm_swap_ns(&an, an.life[a].bytes, true));

	swap_a_out_and_back(&p, &b, a);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	ck_assert_uint_eq(f.compute_ns, 4000);
	ck_assert_uint_eq(f.stall_ns, 1000 + s_ns + s_ns - 3000);
	ck_assert_uint_eq(f.recompute_ns, 0);
	ck_assert_uint_eq(f.total_ns, f.compute_ns + f.stall_ns);
	/* A is back for op 3, where the peak is anyway. */
	ck_assert_uint_eq(f.peak, an.base_peak);
	ck_assert(f.fits);
	tmm_plan_free(&p);

	/* Without the prefetch it comes back on demand at op 3: the copy
	 * starts at 3000 and op 3 waits for all of it. */
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 1,
				      b.tensors[a].key, 6, 0), 0);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	ck_assert_uint_eq(f.stall_ns, s_ns);
	tmm_plan_free(&p);

	/* Dropped instead: op 0 runs again, 1000 ns, no copy. */
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_DROP, 1,
				      b.tensors[a].key, 6, 0), 0);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	ck_assert_uint_eq(f.stall_ns, 0);
	ck_assert_uint_eq(f.recompute_ns, 1000);
	ck_assert_uint_eq(f.total_ns, 5000);
	tmm_plan_free(&p);

	/* No plan at a budget below the peak: passive mode's estimate. */
	tmm_analysis_free(&an);
	in = input(&b, an.base_peak / 2, 1000);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	ck_assert(!f.fits);
	ck_assert_uint_gt(f.passive_ns, 0);
	tmm_plan_free(&p);
	tmm_analysis_free(&an);
}
END_TEST

/*
 * Where the backend orders a prefetch after every stream (CUDA's, in
 * mode=uvm: prefetch_after_evictions), a prefetch waits for the swap-outs
 * queued before it, not only its own tensor's.  A and B (1.5 MB, S = 1500
 * ns each way) are written by ops 0 and 1 and read by op 3; A leaves after
 * op 0 (out 1000 to 2500), B after op 1 (out 2500 to 4000), and A's
 * prefetch is asked for as op 1 ends (2000); B comes back on demand.
 * Ordered behind A's swap-out alone, A lands at 4000 and op 3, due at
 * 3000, waits 1000 for it, then S for B: 2500.  Behind B's too, A starts
 * at 4000, lands at 5500, and B's copy follows: 4000, S more.
 */
START_TEST(a_prefetch_after_every_stream_waits_for_earlier_evictions)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t x, a, bt, y2, y3, out[] = { 0 }, reads[2];
	uint64_t s_ns, stall[2];

	b_init(&b);
	x = b_tensor(&b, 1000, false);
	a = b_tensor(&b, 1500 * 1000, true);
	bt = b_tensor(&b, 1500 * 1000, true);
	y2 = b_tensor(&b, 256, true);
	y3 = b_tensor(&b, 256, true);
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &a, 1);  /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &bt, 1); /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &y2, 1); /* 4, 5 */
	reads[0] = a;
	reads[1] = bt;
	out[0] = y3;
	b_op(&b, TMM_OP_PURE, 1000, reads, 2, out, 1); /* 6, 7, 8 */
	for (int after = 0; after < 2; after++) {
		in = input(&b, 1ull << 30, 1000);
		in.prefetch_after_evictions = after;
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		s_ns = tmm_swap_ns(&an, an.life[a].bytes, false);
		ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 1,
					      b.tensors[a].key, 6, 0), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 3,
					      b.tensors[bt].key, 7, 0), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 3,
					      b.tensors[a].key, 6, 0), 0);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		ck_assert_uint_eq(f.compute_ns, 4000);
		stall[after] = f.stall_ns;
		tmm_plan_free(&p);
		tmm_analysis_free(&an);
	}
	ck_assert_uint_eq(stall[0], 1000 + 2 * s_ns - 3000 + s_ns);
	ck_assert_uint_eq(stall[1], 1000 + 3 * s_ns - 3000 + s_ns);
}
END_TEST

/*
 * Where a copy of managed memory holds the host until it has run (CUDA's,
 * in mode=uvm by copy: uvm_copies_serial), compute waits for each copy.
 * A (1.5 MB, S = 1500 ns each way) is written by op 0 and read by op 3
 * (ops of 1000 ns); it leaves after op 0 and its prefetch is asked for as
 * op 1 ends.  Queued, the copy out runs 1000 to 2500 beside op 1, the copy
 * back 2500 to 4000, and op 3, due at 3000, waits 1000.  Holding the host,
 * op 1 starts once the copy out ends (2500), the copy back runs from its
 * end (3500) to 5000, and ops 2 and 3 follow: 2S of stall, none hidden.
 */
START_TEST(a_copy_that_holds_the_host_is_not_hidden)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a;
	uint64_t s_ns = 0, stall[2], total[2];

	a = a_read_three_ops_later(&b);
	for (int serial = 0; serial < 2; serial++) {
		in = input(&b, 1ull << 30, 1000);
		in.uvm_copies_serial = serial;
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		s_ns = tmm_swap_ns(&an, an.life[a].bytes, false);
		ck_assert_uint_eq(s_ns, tmm_swap_ns(&an, an.life[a].bytes,
						    true));
		swap_a_out_and_back(&p, &b, a);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		ck_assert_uint_eq(f.compute_ns, 4000);
		stall[serial] = f.stall_ns;
		total[serial] = f.total_ns;
		tmm_plan_free(&p);
		tmm_analysis_free(&an);
	}
	ck_assert_uint_gt(s_ns, 1000);
	ck_assert_uint_eq(stall[0], 1000 + 2 * s_ns - 3000);
	ck_assert_uint_eq(stall[1], 2 * s_ns);
	ck_assert_uint_eq(total[1], 4000 + 2 * s_ns);
}
END_TEST

/*
 * The same swap of A flagged TMM_ACT_MIGRATE (uvm_mix.h), copies holding
 * the host: with a migrate engine as fast as the link it goes there,
 * beside compute, and op 3 waits only for the late prefetch, as when
 * the copies were queued (1000 + 2S - 3000); at half the link's rate
 * each way it leaves at 1000 + 2S and is back at 1000 + 4S.  Without a
 * migrate engine (no mix asked for) the flag changes nothing: 2S, held.
 */
START_TEST(a_migrated_swap_does_not_hold_the_host)
{
	static const double rate[3] = { 1000, 500, 0 };
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a;
	uint64_t s_ns, stall[3];

	a = a_read_three_ops_later(&b);
	for (int i = 0; i < 3; i++) {
		in = input(&b, 1ull << 30, 1000);
		in.uvm_copies_serial = true;
		in.migrate_d2h_gbps = in.migrate_h2d_gbps = rate[i];
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 1,
					      b.tensors[a].key, 6, 0), 0);
		p.actions[0].flags = TMM_ACT_MIGRATE;
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 3,
					      b.tensors[a].key, 6, 0), 0);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		stall[i] = f.stall_ns;
		tmm_plan_free(&p);
		tmm_analysis_free(&an);
	}
	s_ns = 1500; /* 1.5 MB at 1000 GB/s, no latency */
	ck_assert_uint_eq(stall[0], 1000 + 2 * s_ns - 3000);
	ck_assert_uint_eq(stall[1], 1000 + 4 * s_ns - 3000);
	ck_assert_uint_eq(stall[2], 2 * s_ns);
}
END_TEST

/*
 * Moves made by a kernel on the device (moves_compute_share, mode=uvm by
 * the library's copy kernel) slow the ops they run beside by their share
 * of the overlap.  A's swap as above, S = 1500: out over [1000, 2500),
 * beside op 1; with share 1/2, op 1 ends at 2500, the prefetch runs over
 * [2500, 4000), beside op 2, which ends at 4000 too, and op 3 waits for
 * nothing: 500 + 500 ns slowed, no stall.  Share 0: no slowing, op 3
 * waits 1000.  A share over 1 counts as 1: ops 1 and 2 take twice their
 * time, and the prefetch, from 3000, is in by op 3 at 5000.
 */
START_TEST(copies_by_a_kernel_slow_the_ops_beside_them)
{
	static const double share[3] = { 0, 0.5, 3 };
	static const uint64_t slowed[3] = { 0, 1000, 2000 };
	static const uint64_t stall[3] = { 1000, 0, 0 };
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_plan p;
	struct tmm_planner_input in;
	uint32_t a = a_read_three_ops_later(&b);

	for (int i = 0; i < 3; i++) {
		in = input(&b, 1ull << 30, 1000);
		in.moves_compute_share = share[i];
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		ck_assert_uint_eq(tmm_swap_ns(&an, an.life[a].bytes, false),
				  1500);
		swap_a_out_and_back(&p, &b, a);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		ck_assert_uint_eq(f.compute_ns, 4000);
		ck_assert_uint_eq(f.copier_ns, slowed[i]);
		ck_assert_uint_eq(f.stall_ns, stall[i]);
		ck_assert_uint_eq(f.total_ns, 4000 + slowed[i] + stall[i]);
		tmm_plan_free(&p);

		/* With no moves, nothing is slowed. */
		ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		ck_assert_uint_eq(f.copier_ns, 0);
		ck_assert_uint_eq(f.total_ns, 4000);
		tmm_plan_free(&p);
		tmm_analysis_free(&an);
	}
}
END_TEST

/*
 * liveness=discard (tmm_leaves_free): a dead tensor's eviction copies
 * nothing in the run, so the forecast books no time of the engine to the
 * host for it.  D (1.5 MB, made and freed in the iteration) leaves after
 * its last access; A (1.5 MB) leaves right after, and is prefetched for
 * op 3.  With keep, A's copy out queues behind D's and op 3 waits longer
 * for A; with discard, A's copy starts at once.  Read by the host after
 * its last access, D is copied either way.
 */
START_TEST(a_dead_tensor_leaves_the_forecasts_link_free)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast keep, discard, read;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t x, d, a, y1, y2, y3;
	uint64_t s_ns;

	b_init(&b);
	x = b_tensor(&b, 1000, false);
	d = b_tensor(&b, 1500 * 1000, true);
	a = b_tensor(&b, 1500 * 1000, true);
	y1 = b_tensor(&b, 256, true);
	y2 = b_tensor(&b, 256, true);
	y3 = b_tensor(&b, 256, true);
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &d, 1);    /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 1000, &d, 1, &a, 1);    /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &y1, 1);   /* 4, 5 */
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &y2, 1);   /* 6, 7 */
	b_op(&b, TMM_OP_PURE, 1000, &a, 1, &y3, 1);   /* 8, 9 */
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 2,
				      b.tensors[d].key, TMM_PLAN_NONE, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 3,
				      b.tensors[a].key, 8, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 5,
				      b.tensors[a].key, 8, 0), 0);
	tmm_plan_sort(&p);

	in = input(&b, 1ull << 30, 1000);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	s_ns = tmm_swap_ns(&an, an.life[a].bytes, false);
	ck_assert(!tmm_leaves_free(&an, d, TMM_TRACE_NONE));
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &keep), 0);
	tmm_analysis_free(&an);

	in.liveness_discard = true;
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert(tmm_leaves_free(&an, d, TMM_TRACE_NONE));
	ck_assert(!tmm_leaves_free(&an, d, 8)); /* it comes back: a swap */
	ck_assert(!tmm_leaves_free(&an, x, TMM_TRACE_NONE)); /* made before */
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &discard), 0);
	tmm_analysis_free(&an);
	/* A waited behind D's copy (s_ns) with keep, not with discard. */
	ck_assert_uint_eq(keep.stall_ns, discard.stall_ns + s_ns);

	b.tensors[d].flags |= TMM_TT_READ_AFTER_LAST;
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert(!tmm_leaves_free(&an, d, TMM_TRACE_NONE));
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &read), 0);
	ck_assert_uint_eq(read.stall_ns, keep.stall_ns);
	tmm_analysis_free(&an);
	tmm_plan_free(&p);
}
END_TEST

/*
 * The step of the clean-copy case below: W (1.5 MB, made before the
 * iteration) is read by op0 and op1 (which also writes it where
 * `written`), op1 makes A (1.5 MB), op2 and op3 read a small X, op4 reads
 * A.  The plan: W out after op0 and prefetched back for op1 (a copy: it
 * was never on the host), W out again after op1 for good, A out after
 * op1 and prefetched during op2 for op4.  Returns W's forecast stall with
 * and without clean copies in *with, *without, and W's copy time.
 */
static uint64_t clean_case(bool written, uint64_t *with, uint64_t *without)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t w, x, a, y[4], wa[2];
	uint32_t op1_end, a_back;
	uint64_t s_ns;

	b_init(&b);
	w = b_tensor(&b, 1500 * 1000, false);
	x = b_tensor(&b, 1000, false);
	a = b_tensor(&b, 1500 * 1000, true);
	for (int i = 0; i < 4; i++)
		y[i] = b_tensor(&b, 256, true);
	wa[0] = w;
	wa[1] = a;
	b_op(&b, TMM_OP_PURE, 1000, &w, 1, &y[0], 1); /* accesses 0, 1 */
	/* 2, 3 (and 4: A, where op1 writes W too) */
	b_op(&b, TMM_OP_PURE, 1000, &w, 1, written ? wa : &a,
	     written ? 2 : 1);
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &y[1], 1);
	b_op(&b, TMM_OP_PURE, 1000, &x, 1, &y[2], 1);
	b_op(&b, TMM_OP_PURE, 1000, &a, 1, &y[3], 1);
	b_free_after_last_use(&b);
	op1_end = written ? 4 : 3;
	a_back = op1_end + 5;
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 0,
				      b.tensors[w].key, 2, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 1,
				      b.tensors[w].key, 2, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, op1_end - 1,
				      b.tensors[w].key, TMM_PLAN_NONE, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, op1_end,
				      b.tensors[a].key, a_back, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, op1_end + 2,
				      b.tensors[a].key, a_back, 0), 0);
	tmm_plan_sort(&p);

	in = input(&b, 1ull << 30, 1000);
	for (int clean = 0; clean < 2; clean++) {
		in.clean_copies = clean;
		ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
		s_ns = tmm_swap_ns(&an, an.life[w].bytes, false);
		ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
		*(clean ? with : without) = f.stall_ns;
		tmm_analysis_free(&an);
	}
	tmm_plan_free(&p);
	return s_ns;
}

/*
 * Where the runtime keeps clean copies (swap mode, mode=uvm by copy), a
 * tensor back from the host and not written since leaves again with no
 * copy (lib/move/clean_copy.h), and the forecast gives that eviction no
 * time of the engine to the host: A's copy out no longer waits behind
 * W's second one.  Written in between, W's second eviction copies again.
 */
START_TEST(a_clean_tensor_leaves_the_forecasts_link_free)
{
	uint64_t with, without, written_with, written_without, s_ns;

	s_ns = clean_case(false, &with, &without);
	ck_assert_uint_gt(without, 0);
	ck_assert_uint_eq(without, with + s_ns);
	(void)clean_case(true, &written_with, &written_without);
	ck_assert_uint_eq(written_with, written_without);
	ck_assert_uint_eq(written_without, without);
}
END_TEST

/*
 * Iterations repeat, so the engine to the host must move each
 * iteration's evictions within it.  W comes back at the start of the
 * iteration (its prefetch pairs with the eviction at the end of the one
 * before) and leaves again at the end; no op waits for that copy out in
 * the iteration it is made, but the next one's prefetch does.  With the
 * link to the host ten times slower than the other way (a prefetch to
 * the host, on the measured H100), the copy out is longer than the rest
 * of the iteration, and the forecast says the iteration is that long.
 */
START_TEST(an_engine_busier_than_the_iteration_sets_its_length)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t w, x, y[3];
	uint64_t out_ns, in_ns;

	b_init(&b);
	w = b_tensor(&b, 4000 * 1000, false);
	x = b_tensor(&b, 1000, false);
	for (int i = 0; i < 3; i++)
		y[i] = b_tensor(&b, 256, true);
	b_op(&b, TMM_OP_PURE, 100000, &x, 1, &y[0], 1); /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 100000, &x, 1, &y[1], 1); /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 100000, &w, 1, &y[2], 1); /* 4, 5 */
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH, 0,
				      b.tensors[w].key, 4, 0), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 4,
				      b.tensors[w].key, TMM_PLAN_NONE, 0), 0);
	tmm_plan_sort(&p);
	in = input(&b, 1ull << 30, 40);
	in.device.d2h_gbps = 4;
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	out_ns = tmm_swap_ns(&an, an.life[w].bytes, false);
	in_ns = tmm_swap_ns(&an, an.life[w].bytes, true);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	/* 1 ms out, 0.1 ms in, 0.3 ms of ops: the copy out is the
	 * iteration. */
	ck_assert_uint_gt(out_ns, f.compute_ns + in_ns);
	ck_assert_uint_eq(f.total_ns, out_ns);
	ck_assert_uint_eq(f.stall_ns, out_ns - f.compute_ns);
	/* Both ways at 40 GB/s, the ops are the iteration again. */
	tmm_analysis_free(&an);
	in.device.d2h_gbps = 40;
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	ck_assert_uint_eq(f.total_ns, f.compute_ns);
	tmm_analysis_free(&an);
	tmm_plan_free(&p);
}
END_TEST

/* The forecast of W evicted after op 0 and prefetched after op `after`
 * for op 3, on 100 us ops and a 10 us copy each way. */
static struct tmm_forecast lead_case(int after)
{
	struct builder b;
	struct tmm_analysis an;
	struct tmm_forecast f;
	struct tmm_planner_input in;
	struct tmm_plan p;
	uint32_t w, x, y[4];

	b_init(&b);
	w = b_tensor(&b, 400 * 1000, false);
	x = b_tensor(&b, 1000, false);
	for (int i = 0; i < 4; i++)
		y[i] = b_tensor(&b, 256, true);
	b_op(&b, TMM_OP_PURE, 100000, &w, 1, &y[0], 1); /* accesses 0, 1 */
	b_op(&b, TMM_OP_PURE, 100000, &x, 1, &y[1], 1); /* 2, 3 */
	b_op(&b, TMM_OP_PURE, 100000, &x, 1, &y[2], 1); /* 4, 5 */
	b_op(&b, TMM_OP_PURE, 100000, &w, 1, &y[3], 1); /* 6, 7 */
	b_free_after_last_use(&b);
	ck_assert_int_eq(tmm_plan_init(&p, &b.t, "t"), 0);
	ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_EVICT_SWAP, 0,
				      b.tensors[w].key, 6, 0), 0);
	if (after > 0)
		ck_assert_int_eq(tmm_plan_add(&p, TMM_ACT_PREFETCH,
					      (uint32_t)(2 * after),
					      b.tensors[w].key, 6, 0), 0);
	tmm_plan_sort(&p);
	in = input(&b, 1ull << 30, 40);
	ck_assert_int_eq(tmm_analysis_init(&an, &in), 0);
	ck_assert_int_eq(tmm_forecast_plan(&an, &p, &f), 0);
	tmm_analysis_free(&an);
	tmm_plan_free(&p);
	return f;
}

/*
 * The forecast says how early its prefetches land: W's, fired after op 1,
 * lands at 210 us and op 3 begins at 300 (a lead of 90 us); fired after
 * op 2 it lands 10 us late (no lead, and the stall); with no prefetch,
 * none is waited for.  auto breaks ties of the forecast iteration by the
 * larger least lead: a plan whose copies land just in time is the first
 * to be late where the forecast is optimistic (stream's, on the
 * transfer-bound MLP at 30% in mode=uvm with the host ahead: 40.4 ms where
 * the four plans tied with it ran at 32.9, simulated).
 */
START_TEST(the_forecast_says_how_early_prefetches_land)
{
	struct tmm_forecast f = lead_case(1);

	/* Within the builder's few ns between ops. */
	ck_assert_uint_eq(f.stall_ns, 0);
	ck_assert_uint_le(f.least_lead_ns, 90000);
	ck_assert_uint_ge(f.least_lead_ns, 89990);
	f = lead_case(2);
	ck_assert_uint_ge(f.stall_ns, 9990);
	ck_assert_uint_le(f.stall_ns, 10010);
	ck_assert_uint_eq(f.least_lead_ns, 0);
	f = lead_case(0);
	ck_assert_uint_eq(f.least_lead_ns, UINT64_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("forecast");
	TCase *tc = tcase_create("forecast");

	tcase_add_test(tc, forecast_times_a_late_prefetch);
	tcase_add_test(tc, a_prefetch_after_every_stream_waits_for_earlier_evictions);
	tcase_add_test(tc, a_copy_that_holds_the_host_is_not_hidden);
	tcase_add_test(tc, a_migrated_swap_does_not_hold_the_host);
	tcase_add_test(tc, copies_by_a_kernel_slow_the_ops_beside_them);
	tcase_add_test(tc, a_dead_tensor_leaves_the_forecasts_link_free);
	tcase_add_test(tc, a_clean_tensor_leaves_the_forecasts_link_free);
	tcase_add_test(tc, an_engine_busier_than_the_iteration_sets_its_length);
	tcase_add_test(tc, the_forecast_says_how_early_prefetches_land);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
