/*
 * test_compact.c — a large allocation in a fragmented pool moves tensors
 * on the device instead of evicting them, and loses no byte.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "tensormm.h"

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

int main(void)
{
	Suite *s = suite_create("compact");
	TCase *tc = tcase_create("compact");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, compaction_makes_a_hole_without_evicting);
	tcase_add_test(tc, the_moves_out_of_a_window_stay_out_of_it);
	tcase_add_test(tc, without_room_to_move_eviction_still_works);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
