/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_uvm_compact.c — mode=uvm's compaction (uvm_compact) on the
 * cuda backend, over the CUDA test double (tests/cudafake/), whose race
 * detector sees every unordered pair, its device lagging the host.
 *
 * Three kept blocks of 4 MiB lie between two small tensors that kernels
 * wrote; a 10 MiB tensor takes the kept pages: the small tensors' moves
 * (copies on the compute stream) must read them after their kernels and
 * land before the host reads them, and the large tensor's kernel must
 * write the window after the moves have read it.  Four orders of the
 * double's streams are tried, and the bytes checked after each.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "fill_twin.h"
#include "lib/core/context.h"
#include "tensormm.h"

#define MIB ((size_t)1 << 20)
#define SMALL (256 * (size_t)1024)
#define KEPT_BYTES (4 * MIB)
#define BIG_BYTES (10 * MIB)
#define SEEDS 4

/* What a fill kernel writes: the tensor whole, with one byte. */
struct fill {
	size_t bytes;
	uint8_t value;
};

static int fill_run(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const struct fill *f = user;

	(void)in;
	return fill_twin_launch(out[0], f->bytes, f->value, stream);
}

/* A tensor of `bytes` that a kernel fills with value: the large one's
 * overwrites whatever is left in its window. */
static tmm_tensor made(tmm_ctx *ctx, size_t bytes, uint8_t value)
{
	struct fill want = { bytes, value };
	tmm_tensor t;
	tmm_op op = { .name = "fill", .outputs = &t, .n_outputs = 1,
		      .run = fill_run, .user = &want };

	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, NULL,
					   &t), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	return t;
}

static void expect_bytes(tmm_ctx *ctx, tmm_tensor t, uint8_t value)
{
	static uint8_t buf[SMALL];

	ck_assert_msg(tmm_tensor_read(ctx, t, 0, buf, SMALL) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < SMALL; i++)
		ck_assert_msg(buf[i] == value, "byte %zu is %#x, not %#x", i,
			      buf[i], value);
}

static uint64_t moves(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st.compaction_moves;
}

START_TEST(the_moves_come_between_the_kernels)
{
	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor k[3], s1, s2, big;
		tmm_ctx *ctx;
		uint64_t before;

		ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=uvm,"
						   "budget=64MiB,cupti=off,"
						   "stats_shm=off,"
						   "policy=none") == 0,
			      "%s", tmm_last_error(NULL));
		ck_assert_msg(ctx->be.info.uvm_fresh_gbps > 0,
			      "the double measured no rate of fresh pages: "
			      "no compaction");
		/* The first iteration measures; the second has a plan. */
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, made(ctx, SMALL, 1)),
				 0);
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		k[0] = made(ctx, KEPT_BYTES, 0x10);
		s1 = made(ctx, SMALL, 0x11);
		k[1] = made(ctx, KEPT_BYTES, 0x12);
		s2 = made(ctx, SMALL, 0x22);
		k[2] = made(ctx, KEPT_BYTES, 0x13);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(tmm_tensor_destroy(ctx, k[i]), 0);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		before = moves(ctx);
		big = made(ctx, BIG_BYTES, 0x5b);
		ck_assert_uint_eq(moves(ctx) - before, 2);
		expect_bytes(ctx, s1, 0x11);
		expect_bytes(ctx, s2, 0x22);
		expect_bytes(ctx, big, 0x5b);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		ck_assert_msg(cudafake_races() == 0, "seed %u: %u race(s), "
			      "the first: %s", seed, cudafake_races(),
			      cudafake_races() ? cudafake_race(0) : "");
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_uvm_compact");
	TCase *tc = tcase_create("uvm");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_moves_come_between_the_kernels);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
