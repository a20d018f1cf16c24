/* SPDX-License-Identifier: MIT */
/*
 * test_share_devices.c — Check suite for ranks on simulated devices (issue
 * #26 §1 and §3's last bullet): the `device` tunable on the simulator
 * (a virtual device 0 to 63, shown in the statistics; past 63, or a CUDA
 * UUID, -ENODEV; a bad value -EINVAL naming TENSORMM_DEVICE), the share
 * segment keyed by it (processes on one device split its budget, one on
 * another device has the whole of its own), and four processes on one
 * device whose budgets sum to the device, one of which, killed with
 * SIGKILL, gives its part back to the other three.
 *
 * The other processes are share_member.h's.  Each test puts its ranks
 * on devices picked from its pid, so that two runs of the suite at once
 * (or another suite with share=auto on device 0) do not share a budget.
 */
#include "check_main.h"
#include "lib/base/pool_align.h"
#include "lib/core/context.h"
#include "lib/share/gpu_share.h"
#include "share_member.h"
#include "tensormm.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every context here: a 64 MiB device and no live-statistics segment,
 * which a member killed by a test would leave behind in /dev/shm. */
#define BASE "backend=sim,mode=swap,sim_capacity=64M,stats_shm=off,"
#define CAPACITY (64ull << 20)

/* A device of this run's own: 2 to 61, so that the next one is one too. */
static int own_device(void)
{
	return 2 + (int)(getpid() % 60);
}

static void collect(void *arg, const char *text, size_t len)
{
	strncat(arg, text, len);
}

static void error_has(const char *want)
{
	ck_assert_msg(strstr(tmm_last_error(NULL), want), "\"%s\" is not in "
		      "\"%s\"", want, tmm_last_error(NULL));
}

static uint64_t reservation(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st.share_reservation;
}

/* ------------------------------------------------------------------------
 * The tunable on the simulator
 * ---------------------------------------------------------------------- */

START_TEST(the_device_shows_in_the_statistics)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	static char text[8192];
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, BASE "device=5") == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(ctx->be.info.index, 5);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_int_eq(st.device_index, 5);
	text[0] = '\0';
	ck_assert_int_eq(tmm_stats_print(ctx, collect, text, 0), 0);
	ck_assert_msg(strstr(text, "p100-pcie3-16g device 5 (SIMULATED"),
		      "%s", text);
	text[0] = '\0';
	ck_assert_int_eq(tmm_stats_print(ctx, collect, text, TMM_STATS_JSON), 0);
	ck_assert_msg(strstr(text, "\"device_index\":5,"), "%s", text);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	/* current is virtual device 0, and an older struct stops short of
	 * the field. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "log=error"), 0);
	st = (struct tmm_stats){ .version = TMM_STATS_VERSION,
				 .device_index = 99 };
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_int_eq(st.device_index, 0);
	st = (struct tmm_stats){ .version = 6, .device_index = 99 };
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_int_eq(st.device_index, 99);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_device_the_simulator_lacks_is_refused)
{
	tmm_ctx *ctx = (tmm_ctx *)1;

	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "device=63"), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "device=64"), -ENODEV);
	ck_assert_ptr_null(ctx);
	error_has("device=64");
	error_has("the simulator has 64 virtual devices, 0 to 63");
	error_has("TENSORMM_DEVICE");

	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "device=GPU-0123abcd-"
					"4567-89ef-0123-456789abcdef"),
			 -ENODEV);
	error_has("GPU-0123abcd-4567-89ef-0123-456789abcdef");
	error_has("named by index");

	/* Syntax: -EINVAL, whichever source gave it. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "device=gpu1"), -EINVAL);
	error_has("device=gpu1 (config string)");
	error_has("TENSORMM_DEVICE");
	ck_assert_int_eq(setenv("TENSORMM_DEVICE", "-1", 1), 0);
	ck_assert_int_eq(tmm_ctx_create(&ctx, BASE "device=1"), -EINVAL);
	ck_assert_int_eq(unsetenv("TENSORMM_DEVICE"), 0);
	error_has("environment variable TENSORMM_DEVICE");
}
END_TEST

/* ------------------------------------------------------------------------
 * The share segment, keyed by the device
 * ---------------------------------------------------------------------- */

START_TEST(ranks_on_one_device_split_it_and_another_device_is_whole)
{
	char one[200], other[200], name_one[TMM_SHARE_NAME_MAX],
		name_other[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	struct member m;
	tmm_ctx *a, *b;
	int d = own_device();

	snprintf(one, sizeof(one), BASE "share=auto,device=%d", d);
	snprintf(other, sizeof(other), BASE "share=auto,device=%d", d + 1);
	segment_name(one, name_one, sizeof(name_one));
	segment_name(other, name_other, sizeof(name_other));
	ck_assert_str_ne(name_one, name_other);
	ck_assert_int_eq(tmm_share_peek(name_one, &v), -ENOENT);

	/* Another process on device d, then this one. */
	member_start(&m, one);
	ck_assert_int_eq(heard(&m), 'j');
	ck_assert_msg(tmm_ctx_create(&a, one) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_uint_gt(reservation(a), 0);
	ck_assert_uint_le(reservation(a), CAPACITY - MEMBER_BYTES);
	ck_assert_int_eq(tmm_share_peek(name_one, &v), 0);
	ck_assert_uint_eq(v.members, 2);
	ck_assert_uint_eq(v.capacity, CAPACITY);
	ck_assert_uint_le(v.reserved, CAPACITY);

	/* On device d + 1 the device is this context's alone. */
	ck_assert_msg(tmm_ctx_create(&b, other) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_uint_eq(reservation(b), CAPACITY);
	ck_assert_int_eq(tmm_share_peek(name_other, &v), 0);
	ck_assert_uint_eq(v.members, 1);
	ck_assert_int_eq(tmm_share_peek(name_one, &v), 0);
	ck_assert_uint_eq(v.members, 2);

	ck_assert_int_eq(tmm_ctx_destroy(b), 0);
	ck_assert_int_eq(tmm_share_peek(name_other, &v), -ENOENT);
	ck_assert_int_eq(tmm_ctx_destroy(a), 0);
	member_end(&m, false);
	ck_assert_int_eq(tmm_share_peek(name_one, &v), -ENOENT);
}
END_TEST

/* ------------------------------------------------------------------------
 * Four ranks on one device, one killed
 * ---------------------------------------------------------------------- */

#define RANKS 4

/* This process's iteration, then the segment's view: the members follow
 * their targets at their next op, every millisecond. */
static void look(tmm_ctx *ctx, const char *name, struct tmm_share_view *v)
{
	nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_share_peek(name, v), 0);
}

/* Looks until `members` members hold the whole device between them (to
 * the pool's alignment each), for at most 10 s. */
static void until_whole(tmm_ctx *ctx, const char *name, unsigned members,
			struct tmm_share_view *v)
{
	for (int i = 0; i < 2000; i++) {
		look(ctx, name, v);
		if (v->members == members &&
		    v->reserved + members * TMM_POOL_ALIGN >= CAPACITY)
			return;
	}
	ck_abort_msg("%u members never held the device: %u members hold "
		     "%llu of %llu bytes", members, v->members,
		     (unsigned long long)v->reserved,
		     (unsigned long long)CAPACITY);
}

START_TEST(four_ranks_on_one_device_and_one_killed)
{
	char config[200], name[TMM_SHARE_NAME_MAX];
	struct member m[RANKS - 1];
	struct tmm_share_view v;
	uint64_t before;
	tmm_ctx *ctx;

	snprintf(config, sizeof(config), BASE "share=auto,device=%d",
		 own_device());
	segment_name(config, name, sizeof(name));
	for (int i = 0; i < RANKS - 1; i++) {
		member_start(&m[i], config);
		ck_assert_int_eq(heard(&m[i]), 'j');
	}
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	/* The four budgets sum to the device, and no more. */
	until_whole(ctx, name, RANKS, &v);
	ck_assert_uint_le(v.reserved, CAPACITY);
	ck_assert_uint_le(v.reserved_max, CAPACITY);
	before = reservation(ctx);
	ck_assert_uint_gt(before, 0);
	ck_assert_uint_lt(before, CAPACITY);

	/* One is killed: the three left take its part between them. */
	member_end(&m[1], true);
	until_whole(ctx, name, RANKS - 1, &v);
	ck_assert_uint_le(v.reserved_max, CAPACITY);
	ck_assert_uint_gt(reservation(ctx), before);

	member_end(&m[0], false);
	member_end(&m[2], false);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("share_devices");
	TCase *tunable = tcase_create("tunable");
	TCase *procs = tcase_create("procs");

	tcase_add_test(tunable, the_device_shows_in_the_statistics);
	tcase_add_test(tunable, a_device_the_simulator_lacks_is_refused);
	suite_add_tcase(s, tunable);
	tcase_set_timeout(procs, 120);
	tcase_add_test(procs,
		       ranks_on_one_device_split_it_and_another_device_is_whole);
	tcase_add_test(procs, four_ranks_on_one_device_and_one_killed);
	suite_add_tcase(s, procs);
	return check_run_all(srunner_create(s));
}
