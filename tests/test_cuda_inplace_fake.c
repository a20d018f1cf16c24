/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_inplace_fake.c — an op that writes its input in place (as a
 * collective's all-reduce does) right after that tensor's swap-out began,
 * on the CUDA test double: the back-access keeps the device bytes and
 * lets the swap-out's copy go on reading them (read_by), so the op's
 * write must wait for that copy.  Without the wait, the double's race
 * detector sees the copy's read and the op's write unordered (found by
 * tests/test_mlp_dp_staged.sh, where tsplit and capuchin swap a gradient
 * out between its backward and its all-reduce).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"
#include "tensormm.h"

#define BYTES (64u << 10)

static void twin_plus_one(void *arg)
{
	uint8_t *p = arg;

	for (size_t i = 0; i < BYTES; i++)
		p[i] = (uint8_t)(p[i] + 1);
}

static int op_plus_one(void *const *in, void *const *out, void *user,
		       void *stream)
{
	struct cudafake_range r = { out[0], BYTES, true };

	(void)in;
	(void)user;
	return cudafake_launch(stream, twin_plus_one, out[0], &r, 1) ==
			       cudaSuccess
		       ? 0
		       : -5;
}

static void in_place_after_swap_out(enum tmm_op_kind kind)
{
	uint8_t *w = malloc(BYTES), *got = malloc(BYTES);
	struct tmm_tensor_rec *r;
	tmm_tensor t;
	tmm_ctx *ctx;
	tmm_op op = { .name = "in_place", .kind = kind, .inputs = &t,
		      .n_inputs = 1, .outputs = &t, .n_outputs = 1,
		      .run = op_plus_one,
		      .cost = { .net_bytes =
				       kind == TMM_OP_COLLECTIVE ? BYTES : 0 } };

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=off,stats_shm=off,"
				     "policy=passive") == 0,
		      "%s", tmm_last_error(NULL));
	for (size_t i = 0; i < BYTES; i++)
		w[i] = (uint8_t)(i * 11 + 5);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT, "g",
					   &t), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, w, BYTES), 0);
	r = tmm_tensor_find(ctx, t);
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	cudafake_reset(3);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_msg(cudafake_races() == 0, "%s", cudafake_race(0));
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, got, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < BYTES; i++)
		ck_assert_uint_eq(got[i], (uint8_t)(w[i] + 1));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	free(w);
	free(got);
}

START_TEST(an_op_writing_in_place_waits_for_the_copy)
{
	in_place_after_swap_out(TMM_OP_ELEMENTWISE);
}
END_TEST

START_TEST(a_collective_writing_in_place_waits_for_the_copy)
{
	in_place_after_swap_out(TMM_OP_COLLECTIVE);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_inplace_fake");
	TCase *tc = tcase_create("in_place");

	tcase_add_test(tc, an_op_writing_in_place_waits_for_the_copy);
	tcase_add_test(tc, a_collective_writing_in_place_waits_for_the_copy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
