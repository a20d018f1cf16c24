/* SPDX-License-Identifier: MIT */
/*
 * test_compact.c — a large allocation in a fragmented pool moves tensors
 * on the device instead of evicting them, the running op's own inputs
 * included when nothing else makes room, and loses no byte.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/mem/compact.h"
#include "lib/mem/pool.h"
#include "lib/move/mover.h"

#define KIB 1024u
#define SLOTS 16

/* What the op writes into its one output: `bytes` of `value`. */
struct fill_spec {
	size_t bytes;
	int value;
};

static int fill(void *const *in, void *const *out, void *user, void *stream)
{
	const struct fill_spec *f = user;

	(void)in;
	(void)stream;
	memset(out[0], f->value, f->bytes);
	return 0;
}

/* A 64 KiB device filled with SLOTS 4 KiB tensors, tensor i holding
 * bytes i + 1. */
static tmm_ctx *full_pool(tmm_tensor t[SLOTS])
{
	uint8_t page[4 * KIB];
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,budget=64KiB"), 0);
	for (int i = 0; i < SLOTS; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, 4 * KIB,
						   TMM_PERSISTENT, NULL, &t[i]),
				 0);
		memset(page, i + 1, sizeof(page));
		ck_assert_int_eq(tmm_tensor_write(ctx, t[i], 0, page,
						  sizeof(page)), 0);
	}
	return ctx;
}

static void destroy(tmm_ctx *ctx, tmm_tensor *t)
{
	ck_assert_int_eq(tmm_tensor_destroy(ctx, *t), 0);
	*t = (tmm_tensor){ 0 };
}

/* Runs an op that makes a new f->bytes tensor and fills it; returns the
 * context's statistics after it. */
static struct tmm_stats make_big(tmm_ctx *ctx, struct fill_spec *f,
				 tmm_tensor *big)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_op op = { .name = "fill", .kind = TMM_OP_OTHER, .run = fill,
		      .user = f, .outputs = big, .n_outputs = 1 };

	ck_assert_int_eq(tmm_tensor_create(ctx, f->bytes, TMM_ACTIVATION,
					   "big", big), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/* Every byte where it was: the live tensors of full_pool(), and big as
 * f filled it (big may be NULL). */
static void check_kept(tmm_ctx *ctx, const tmm_tensor t[SLOTS],
		       const tmm_tensor *big, const struct fill_spec *f)
{
	uint8_t page[4 * KIB], back[16 * KIB];

	if (big) {
		ck_assert_uint_le(f->bytes, sizeof(back));
		ck_assert_int_eq(tmm_tensor_read(ctx, *big, 0, back, f->bytes),
				 0);
		for (size_t k = 0; k < f->bytes; k++)
			ck_assert_uint_eq(back[k], (unsigned)f->value);
	}
	for (int i = 0; i < SLOTS; i++) {
		if (!t[i].id)
			continue;
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0, page,
						 sizeof(page)), 0);
		for (size_t k = 0; k < sizeof(page); k++)
			ck_assert_uint_eq(page[k], (unsigned)(i + 1));
	}
}

/*
 * A 64 KiB device filled with sixteen 4 KiB tensors, every other one of
 * the first ten then freed: 20 KiB free in 4 KiB holes.  An op making an
 * 8 KiB output fits only if a hole is made; the tensors moved for it must
 * keep their bytes, and nothing may be evicted.
 */
START_TEST(compaction_makes_a_hole_without_evicting)
{
	tmm_tensor t[SLOTS], big;
	struct fill_spec f = { 8 * KIB, 0x5a };
	tmm_ctx *ctx = full_pool(t);
	struct tmm_stats st;

	for (int i = 1; i < 10; i += 2)
		destroy(ctx, &t[i]);
	st = make_big(ctx, &f, &big);
	ck_assert_uint_ge(st.compaction_moves, 1);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_eq(st.swap_out_count, 0);
	ck_assert_uint_le(st.device_peak, 64 * KIB);
	check_kept(ctx, t, &big, &f);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Every window of three slots holds two tensors: the holes (4 KiB each)
 * are four slots apart.  A 12 KiB output moves both tensors of a window
 * out, and the second must not land where the first was: the window ends
 * free, with no eviction, and every byte is kept.
 */
START_TEST(the_moves_out_of_a_window_stay_out_of_it)
{
	tmm_tensor t[SLOTS], big;
	struct fill_spec f = { 12 * KIB, 0x77 };
	tmm_ctx *ctx = full_pool(t);
	struct tmm_stats st;

	for (int i = 1; i < 10; i += 4)
		destroy(ctx, &t[i]);
	st = make_big(ctx, &f, &big);
	ck_assert_uint_eq(st.compaction_moves, 2);
	ck_assert_uint_eq(st.passive_evictions, 0);
	check_kept(ctx, t, &big, &f);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* With no hole to move into, eviction makes the room, as before. */
START_TEST(without_room_to_move_eviction_still_works)
{
	tmm_tensor t[SLOTS], big;
	struct fill_spec f = { 8 * KIB, 0x33 };
	tmm_ctx *ctx = full_pool(t);
	struct tmm_stats st;

	/* One 4 KiB hole: 8 KiB cannot be had by moving. */
	destroy(ctx, &t[3]);
	st = make_big(ctx, &f, &big);
	ck_assert_uint_ge(st.passive_evictions, 1);
	check_kept(ctx, t, NULL, &f);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Every other slot of the full pool holds a swap-in still landing, the
 * slots between free but for the last, a resident tensor: 28 KiB free in
 * 4 KiB holes, and no hole of 8 KiB can be had by moving what has
 * landed.  An op making an 8 KiB output waits for a swap-in to land and
 * moves it, rather than evict the resident tensor, as a host ahead of
 * its device would otherwise each time its prefetches land late.
 */
START_TEST(a_swap_in_landing_is_waited_for_not_evicted_around)
{
	tmm_tensor t[SLOTS], big;
	struct fill_spec f = { 8 * KIB, 0x4c };
	tmm_ctx *ctx = full_pool(t);
	struct tmm_tensor_rec *r[SLOTS];
	struct tmm_stats st;
	uint64_t swapped_out;

	for (int i = 0; i < SLOTS; i++)
		r[i] = tmm_tensor_lookup(ctx, t[i], "test");
	for (int i = 0; i < SLOTS; i += 2)
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r[i], true), 0);
	for (int i = 0; i < SLOTS; i += 2) {
		ck_assert_int_eq(tmm_mover_swap_in(ctx, r[i]), 0);
		ck_assert_uint_eq(r[i]->block->offset % (8 * KIB), 0);
	}
	for (int i = 1; i < SLOTS - 1; i += 2)
		destroy(ctx, &t[i]);
	for (int i = 0; i < SLOTS; i += 2)
		ck_assert_int_eq(r[i]->state, TMM_TS_SWAPPING_IN);
	/* Short of host memory to look, it names none: the caller then
	 * evicts as before (without_room_to_move_eviction_still_works). */
	for (int n = 1; n <= 4; n++) {
		char fault[32];

		snprintf(fault, sizeof(fault), TMM_SITE_HOST_ALLOC "@%d", n);
		ck_assert_int_eq(tmm_fault_set(fault), 0);
		ck_assert_ptr_null(tmm_compact_landing_in_the_way(ctx,
								  8 * KIB));
		ck_assert_int_eq(tmm_fault_set(""), 0);
	}
	ck_assert_ptr_nonnull(tmm_compact_landing_in_the_way(ctx, 8 * KIB));
	/* Waiting makes no hole larger than the free bytes. */
	ck_assert_ptr_null(tmm_compact_landing_in_the_way(ctx, 32 * KIB));
	swapped_out = ctx->c.swap_out_count;
	st = make_big(ctx, &f, &big);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_eq(st.swap_out_count, swapped_out);
	ck_assert_uint_ge(st.compaction_moves, 1);
	ck_assert_int_eq(r[SLOTS - 1]->state, TMM_TS_RESIDENT);
	check_kept(ctx, t, &big, &f);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* The op of the running-op tests: its output is its input's bytes,
 * repeated, each xor 0x5a. */
struct spread_spec {
	size_t in_bytes, out_bytes;
};

static int spread(void *const *in, void *const *out, void *user,
		  void *stream)
{
	const struct spread_spec *sp = user;
	const uint8_t *src = in[0];
	uint8_t *dst = out[0];

	(void)stream;
	for (size_t k = 0; k < sp->out_bytes; k++)
		dst[k] = src[k % sp->in_bytes] ^ 0x5a;
	return 0;
}

/* Byte k of a pattern that a copy out of order or by the wrong distance
 * would not keep. */
static uint8_t pattern(size_t k)
{
	return (uint8_t)(k * 7 % 251);
}

/*
 * A 64 KiB device holding the op's input, `in_kib` KiB written with
 * pattern(), `at_kib` KiB above the bottom, and nothing else: the op's
 * output (`out_kib` KiB) and its input fit together, but the input
 * splits the free bytes so that no hole holds the output, and there is
 * nothing to evict.  The op must run, with no eviction, by moving its
 * own input, and every byte must be right.
 */
static struct tmm_stats run_around_input(size_t at_kib, size_t in_kib,
					 size_t out_kib)
{
	static uint8_t buf[64 * KIB];
	struct spread_spec sp = { in_kib * KIB, out_kib * KIB };
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_tensor below, in, out;
	tmm_op op = { .name = "spread", .kind = TMM_OP_OTHER, .run = spread,
		      .user = &sp, .inputs = &in, .n_inputs = 1,
		      .outputs = &out, .n_outputs = 1 };
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,budget=64KiB"), 0);
	/* Small blocks are carved from the bottom: `below` holds the
	 * first at_kib KiB, the input the next. */
	ck_assert_int_eq(tmm_tensor_create(ctx, at_kib * KIB, TMM_PERSISTENT,
					   "below", &below), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, below, 0, buf, at_kib * KIB),
			 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sp.in_bytes, TMM_PERSISTENT,
					   "in", &in), 0);
	for (size_t k = 0; k < sp.in_bytes; k++)
		buf[k] = pattern(k);
	ck_assert_int_eq(tmm_tensor_write(ctx, in, 0, buf, sp.in_bytes), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, below), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sp.out_bytes, TMM_ACTIVATION,
					   "out", &out), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, in, 0, buf, sp.in_bytes), 0);
	for (size_t k = 0; k < sp.in_bytes; k++)
		ck_assert_uint_eq(buf[k], pattern(k));
	ck_assert_int_eq(tmm_tensor_read(ctx, out, 0, buf, sp.out_bytes), 0);
	for (size_t k = 0; k < sp.out_bytes; k++)
		ck_assert_uint_eq(buf[k], pattern(k % sp.in_bytes) ^ 0x5a);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return st;
}

/* Issue #21: a 4 KiB input 20 KiB up leaves holes of 20 and 40 KiB; a
 * 56 KiB output fits only once the input has moved down. */
START_TEST(the_running_ops_input_moves_to_make_its_output_fit)
{
	struct tmm_stats st = run_around_input(20, 4, 56);

	ck_assert_uint_eq(st.compaction_moves, 1);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_eq(st.swap_out_count, 0);
}
END_TEST

/* A 24 KiB input only 4 KiB up slides by less than its size: it is
 * copied in six pieces that must not overwrite bytes not yet copied. */
START_TEST(an_input_sliding_by_less_than_its_size_keeps_its_bytes)
{
	struct tmm_stats st = run_around_input(4, 24, 40);

	ck_assert_uint_eq(st.compaction_moves, 1);
	ck_assert_uint_eq(st.passive_evictions, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compact");
	TCase *tc = tcase_create("compact");

	tcase_add_test(tc, compaction_makes_a_hole_without_evicting);
	tcase_add_test(tc, the_moves_out_of_a_window_stay_out_of_it);
	tcase_add_test(tc, without_room_to_move_eviction_still_works);
	tcase_add_test(tc, a_swap_in_landing_is_waited_for_not_evicted_around);
	tcase_add_test(tc, the_running_ops_input_moves_to_make_its_output_fit);
	tcase_add_test(tc,
		       an_input_sliding_by_less_than_its_size_keeps_its_bytes);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
