/* SPDX-License-Identifier: MIT */
/*
 * test_workspace.c — tmm_workspace on the simulator.
 *
 * A workspace is as large as the pool's largest free block allows, up to
 * max; only a minimum that does not fit makes the runtime evict, and only
 * for that minimum; a context holds one at a time, given back by
 * tmm_workspace_release, the next tmm_workspace or the iteration's end.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"

#define KiB ((size_t)1024)

static tmm_ctx *ctx;

static void setup_swap(void)
{
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "budget=1MiB,stats_shm=off"),
			 0);
}

static void teardown(void)
{
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static struct tmm_stats stats(void)
{
	struct tmm_stats s = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &s), 0);
	return s;
}

/* A tensor of `bytes` filled with `v`, resident on the device. */
static tmm_tensor filled(size_t bytes, unsigned char v)
{
	static unsigned char buf[1024 * 1024];
	tmm_tensor t;

	ck_assert_uint_le(bytes, sizeof(buf));
	memset(buf, v, bytes);
	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, "t",
					   &t), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, buf, bytes), 0);
	return t;
}

START_TEST(empty_device_gives_max)
{
	void *p = NULL;
	size_t got = 0;

	ck_assert_int_eq(tmm_workspace(ctx, KiB, 512 * KiB, &p, &got), 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(got, 512 * KiB);
	/* The backed simulator's memory is the host's: it is usable. */
	memset(p, 0xab, got);
	ck_assert_uint_eq(stats().device_in_use, 512 * KiB);
}
END_TEST

START_TEST(largest_free_block_without_evicting)
{
	tmm_tensor t = filled(768 * KiB, 7);
	unsigned char back[16];
	void *p = NULL;
	size_t got = 0;

	ck_assert_int_eq(tmm_workspace(ctx, KiB, 1024 * KiB, &p, &got), 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(got, 256 * KiB);
	ck_assert_uint_eq(stats().passive_evictions, 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, back, sizeof(back)), 0);
	ck_assert_uint_eq(back[0], 7);
}
END_TEST

START_TEST(min_evicts_only_for_min)
{
	tmm_tensor a = filled(384 * KiB, 1), b = filled(384 * KiB, 2);
	unsigned char back[16];
	void *p = NULL;
	size_t got = 0;

	(void)b;
	/* 256 KiB free; 512 KiB needs one tensor out, and gets no more. */
	ck_assert_int_eq(tmm_workspace(ctx, 512 * KiB, 1024 * KiB, &p, &got),
			 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(got, 512 * KiB);
	ck_assert_uint_eq(stats().passive_evictions, 1);
	/* The evicted tensor's bytes survive on the host. */
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, back, sizeof(back)), 0);
	ck_assert_uint_eq(back[0], 1);
}
END_TEST

START_TEST(min_zero_and_nothing_free_gives_nothing)
{
	void *p = (void *)1;
	size_t got = 1;

	filled(1024 * KiB, 3);
	ck_assert_int_eq(tmm_workspace(ctx, 0, 4 * KiB, &p, &got), 0);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(got, 0);
	ck_assert_uint_eq(stats().passive_evictions, 0);
}
END_TEST

START_TEST(one_at_a_time_and_released)
{
	void *p = NULL;
	size_t got = 0;

	ck_assert_int_eq(tmm_workspace(ctx, 512 * KiB, 512 * KiB, &p, &got),
			 0);
	/* The second replaces the first, whose room counts as free. */
	ck_assert_int_eq(tmm_workspace(ctx, 1024 * KiB, 1024 * KiB, &p, &got),
			 0);
	ck_assert_uint_eq(got, 1024 * KiB);
	ck_assert_uint_eq(stats().device_in_use, 1024 * KiB);
	ck_assert_int_eq(tmm_workspace_release(ctx), 0);
	ck_assert_uint_eq(stats().device_in_use, 0);
	ck_assert_int_eq(tmm_workspace_release(ctx), 0);

	/* An iteration's end gives it back too. */
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_workspace(ctx, KiB, 64 * KiB, &p, &got), 0);
	ck_assert_uint_eq(stats().device_in_use, 64 * KiB);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_uint_eq(stats().device_in_use, 0);
}
END_TEST

static int use_workspace(void *const *in, void *const *out, void *user,
			 void *stream)
{
	unsigned char *ws = user;

	(void)stream;
	memcpy(ws, in[0], 4 * KiB);
	for (size_t i = 0; i < 4 * KiB; i++)
		ws[i] = (unsigned char)(ws[i] + 1);
	memcpy(out[0], ws, 4 * KiB);
	return 0;
}

START_TEST(an_op_uses_it)
{
	tmm_tensor x = filled(4 * KiB, 9), y;
	unsigned char back[4 * 1024];
	void *p = NULL;
	size_t got = 0;

	ck_assert_int_eq(tmm_tensor_create(ctx, 4 * KiB, TMM_ACTIVATION, "y",
					   &y), 0);
	ck_assert_int_eq(tmm_workspace(ctx, 4 * KiB, 64 * KiB, &p, &got), 0);
	tmm_op op = { .name = "ws_op", .inputs = &x, .n_inputs = 1,
		      .outputs = &y, .n_outputs = 1, .run = use_workspace,
		      .user = p };
	ck_assert_int_eq(tmm_run(ctx, &op), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, y, 0, back, sizeof(back)), 0);
	ck_assert_uint_eq(back[0], 10);
	ck_assert_uint_eq(back[sizeof(back) - 1], 10);
}
END_TEST

START_TEST(bad_arguments_say_what_is_wrong)
{
	void *p;
	size_t got;

	ck_assert_int_eq(tmm_workspace(NULL, 1, 2, &p, &got), -EBADF);
	ck_assert_int_eq(tmm_workspace_release(NULL), -EBADF);
	ck_assert_int_eq(tmm_workspace(ctx, 1, 0, &p, &got), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "max must be"));
	ck_assert_int_eq(tmm_workspace(ctx, 8, 4, &p, &got), -EINVAL);
	ck_assert_int_eq(tmm_workspace(ctx, 1, 2, NULL, &got), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "ptr is NULL"));
	ck_assert_int_eq(tmm_workspace(ctx, 1, 2, &p, NULL), -EINVAL);
	ck_assert_int_eq(tmm_workspace(ctx, 2048 * KiB, 4096 * KiB, &p, &got),
			 -ENOMEM);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "TENSORMM_BUDGET"));
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(got, 0);
}
END_TEST

START_TEST(uvm_mode_gives_managed_memory)
{
	tmm_ctx *u;
	void *p = NULL;
	size_t got = 0;

	ck_assert_int_eq(tmm_ctx_create(&u, "backend=sim,mode=uvm,"
					    "budget=1MiB,stats_shm=off"), 0);
	ck_assert_int_eq(tmm_workspace(u, KiB, 64 * KiB, &p, &got), 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(got, 64 * KiB);
	/* Left to tmm_ctx_destroy to give back. */
	ck_assert_int_eq(tmm_ctx_destroy(u), 0);
}
END_TEST

static Suite *workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("swap");

	tcase_add_checked_fixture(tc, setup_swap, teardown);
	tcase_add_test(tc, empty_device_gives_max);
	tcase_add_test(tc, largest_free_block_without_evicting);
	tcase_add_test(tc, min_evicts_only_for_min);
	tcase_add_test(tc, min_zero_and_nothing_free_gives_nothing);
	tcase_add_test(tc, one_at_a_time_and_released);
	tcase_add_test(tc, an_op_uses_it);
	tcase_add_test(tc, bad_arguments_say_what_is_wrong);
	suite_add_tcase(s, tc);
	tc = tcase_create("uvm");
	tcase_add_test(tc, uvm_mode_gives_managed_memory);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(workspace_suite);
}
