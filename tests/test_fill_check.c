/* SPDX-License-Identifier: MIT */
/*
 * test_fill_check.c — tmm_tensor_fill, an output declared accumulated
 * (tmm_op.accumulate), and the checking mode (check=on) that makes a
 * forgotten declaration show on every run (issue #23).
 *
 * The program: each step adds a 1 MiB input x into an accumulator acc,
 * then runs ops over big scratch tensors that push acc off a small
 * device, so that acc comes back for the next step's add only if the
 * library knows the add reads it.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "lib/base/fault.h"
#include "tensormm.h"

#define MIB (1u << 20)
#define STEPS 4

/* acc[i] += x[i], bytes mod 256: reads its output's old bytes. */
static int add_into(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const uint8_t *x = in[0];
	uint8_t *acc = out[0];

	(void)user;
	(void)stream;
	for (size_t i = 0; i < MIB; i++)
		acc[i] = (uint8_t)(acc[i] + x[i]);
	return 0;
}

/* out = in + 1: an ordinary op over the big tensors. */
static int bump(void *const *in, void *const *out, void *user, void *stream)
{
	size_t bytes = *(const size_t *)user;
	const uint8_t *a = in[0];
	uint8_t *b = out[0];

	(void)stream;
	for (size_t i = 0; i < bytes; i++)
		b[i] = (uint8_t)(a[i] + 1);
	return 0;
}

/*
 * Runs the program under `config`; declare says whether the add declares
 * acc accumulated.  Returns how many of acc's bytes differ from what the
 * sums must give (x[i] = i mod 251 + 1, added STEPS times onto zeros).
 */
static size_t run_program(const char *config, bool declare)
{
	static const unsigned char acc_flag[1] = { 1 };
	static uint8_t x_bytes[MIB], got[MIB];
	static size_t big = 4 * MIB;
	tmm_tensor x, acc, a, b;
	size_t wrong = 0;
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (size_t i = 0; i < MIB; i++)
		x_bytes[i] = (uint8_t)(i % 251 + 1);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_ACTIVATION, "x", &x),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, x, 0, x_bytes, MIB), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_GRADIENT, "acc",
					   &acc), 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, acc, 0), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, big, TMM_ACTIVATION, "a", &a),
			 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, a, 7), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, big, TMM_ACTIVATION, "b", &b),
			 0);
	for (unsigned s = 0; s < STEPS; s++) {
		tmm_op add = { .name = "add_into", .kind = TMM_OP_ELEMENTWISE,
			       .inputs = &x, .n_inputs = 1, .outputs = &acc,
			       .n_outputs = 1, .run = add_into,
			       .accumulate = declare ? acc_flag : NULL };
		tmm_op ab = { .name = "bump", .kind = TMM_OP_ELEMENTWISE,
			      .flags = TMM_OP_PURE, .inputs = &a,
			      .n_inputs = 1, .outputs = &b, .n_outputs = 1,
			      .run = bump, .user = &big };
		tmm_op ba = ab;

		ba.inputs = &b;
		ba.outputs = &a;
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		ck_assert_msg(tmm_run(ctx, &add) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_msg(tmm_run(ctx, &ab) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_msg(tmm_run(ctx, &ba) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	}
	ck_assert_int_eq(tmm_tensor_read(ctx, acc, 0, got, MIB), 0);
	for (size_t i = 0; i < MIB; i++)
		wrong += got[i] != (uint8_t)(STEPS * x_bytes[i]);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return wrong;
}

static const char *const modes[] = { "swap", "uvm" };

/* Declared, the sums are right under pressure, with or without check. */
START_TEST(a_declared_accumulator_survives_pressure)
{
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=9MiB,"
		 "policy=none,check=%s,log=error", modes[_i / 2],
		 _i % 2 ? "on" : "off");
	ck_assert_uint_eq(run_program(config, true), 0);
	/* The hazard the declaration is for: undeclared, under the same
	 * pressure, swap mode hands the add memory without acc's sums (in
	 * uvm mode with no plan the driver keeps every page's bytes). */
	if (_i == 0)
		ck_assert_uint_gt(run_program(config, false), 0);
}
END_TEST

/* Undeclared, check=on poisons acc before every add: the sums are wrong
 * on every run, with room to spare too, where without the check they
 * would be right until memory ran short. */
START_TEST(check_shows_an_undeclared_accumulator)
{
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=100%%,"
		 "check=on,log=error", modes[_i]);
	ck_assert_uint_gt(run_program(config, false), MIB / 2);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=100%%,"
		 "check=off,log=error", modes[_i]);
	ck_assert_uint_eq(run_program(config, false), 0);
}
END_TEST

/* Every byte set, in both modes, also over a tensor swapped out; and
 * the bad cases refused. */
START_TEST(fill_sets_every_byte)
{
	static uint8_t got[3 * MIB];
	char config[128];
	tmm_tensor t, other;
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=%s,budget=4MiB,log=error",
		 modes[_i]);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 3 * MIB, TMM_ACTIVATION, "t",
					   &t), 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, t, 0x5A), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 3 * MIB, TMM_ACTIVATION,
					   "other", &other), 0);
	/* other takes the device: t leaves it, then is filled again */
	ck_assert_int_eq(tmm_tensor_fill(ctx, other, 1), 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, t, 0xC3), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, got, 3 * MIB), 0);
	for (size_t i = 0; i < 3 * MIB; i++)
		ck_assert_uint_eq(got[i], 0xC3);
	ck_assert_int_eq(tmm_tensor_read(ctx, other, 0, got, 3 * MIB), 0);
	for (size_t i = 0; i < 3 * MIB; i++)
		ck_assert_uint_eq(got[i], 1);
	ck_assert_int_eq(tmm_tensor_fill(ctx, t, 256), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "0 to 255"));
	ck_assert_int_eq(tmm_tensor_fill(ctx, t, -1), -EINVAL);
	ck_assert_int_eq(tmm_tensor_fill(ctx, TMM_TENSOR_NULL, 0), -EBADF);
	ck_assert_int_eq(tmm_tensor_fill(NULL, t, 0), -EBADF);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A pure op cannot accumulate: refused, naming both. */
START_TEST(a_pure_accumulator_is_refused)
{
	static const unsigned char flag[1] = { 1 };
	tmm_tensor x, acc;
	tmm_ctx *ctx;
	tmm_op op;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,log=error"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_ACTIVATION, "x", &x),
			 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, x, 1), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_GRADIENT, "acc",
					   &acc), 0);
	op = (tmm_op){ .name = "add", .flags = TMM_OP_PURE, .inputs = &x,
		       .n_inputs = 1, .outputs = &acc, .n_outputs = 1,
		       .run = add_into, .accumulate = flag };
	ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "TMM_OP_PURE"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A fill the device refuses (site copy): tmm_tensor_fill and check=on's
 * poison fail with the call named, the tensor keeps its bytes, and the
 * context goes on once the device does. */
START_TEST(a_refused_fill_fails_cleanly)
{
	static uint8_t got[MIB];
	tmm_tensor x, acc;
	tmm_ctx *ctx;
	tmm_op op;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,check=on,log=error,"
					"fault=copy@1"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_ACTIVATION, "x", &x),
			 0);
	ck_assert_int_eq(tmm_tensor_fill(ctx, x, 3), -EIO);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "fill"));
	ck_assert_int_eq(tmm_tensor_fill(ctx, x, 3), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, MIB, TMM_GRADIENT, "acc",
					   &acc), 0);
	op = (tmm_op){ .name = "add", .inputs = &x, .n_inputs = 1,
		       .outputs = &acc, .n_outputs = 1, .run = add_into };
	/* The next fill is the poison before the callback. */
	ck_assert_int_eq(tmm_fault_set("copy@1"), 0);
	ck_assert_int_eq(tmm_run(ctx, &op), -EIO);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "check=on"));
	ck_assert_int_eq(tmm_tensor_read(ctx, x, 0, got, MIB), 0);
	for (size_t i = 0; i < MIB; i++)
		ck_assert_uint_eq(got[i], 3);
	ck_assert_int_eq(tmm_run(ctx, &op), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fill_check");
	TCase *tc = tcase_create("fill_check");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, a_declared_accumulator_survives_pressure, 0,
			    4);
	tcase_add_loop_test(tc, check_shows_an_undeclared_accumulator, 0, 2);
	tcase_add_loop_test(tc, fill_sets_every_byte, 0, 2);
	tcase_add_test(tc, a_pure_accumulator_is_refused);
	tcase_add_test(tc, a_refused_fill_fails_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
