/* SPDX-License-Identifier: MIT */
/*
 * test_gpu_share.c — Check suite for several processes on one GPU
 * (lib/share/gpu_share.c, lib/share/share_split.c): the split rule as a pure
 * function, the reclaim of a killed member's slot, and three processes
 * training the MLP on one simulated device, joining and leaving while the
 * others run, each bit-identical to an unconstrained run and none ever
 * holding more than its reservation nor all of them more than the device.
 * What a crash or another user leaves at the segment's name is
 * test_share_reliability.c's.
 */
#include "check_main.h"
#include "lib/core/context.h"
#include "lib/share/gpu_share.h"
#include "mlp_model.h"
#include "tensormm.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * The split rule
 * ---------------------------------------------------------------------- */

static uint64_t sum_of(const uint64_t *t, unsigned n)
{
	uint64_t s = 0;

	for (unsigned i = 0; i < n; i++)
		s += t[i];
	return s;
}

START_TEST(split_fits_shares_the_slack_evenly)
{
	struct tmm_share_claim c[2] = { { 100, 0, 1 }, { 200, 0, 1 } };
	uint64_t t[2];

	tmm_share_split(c, 2, 600, 1, t);
	ck_assert_uint_eq(t[0], 250);
	ck_assert_uint_eq(t[1], 350);
}
END_TEST

START_TEST(split_deficit_follows_the_rates)
{
	struct tmm_share_claim c[2] = { { 400, 0, 1 }, { 400, 0, 0.5 } };
	uint64_t t[2];

	/* A deficit of 300, taken 2:1. */
	tmm_share_split(c, 2, 500, 1, t);
	ck_assert_uint_eq(t[0], 200);
	ck_assert_uint_eq(t[1], 300);
}
END_TEST

START_TEST(split_rate_zero_gives_nothing_while_others_can)
{
	struct tmm_share_claim c[2] = { { 400, 0, 1 }, { 400, 0, 0 } };
	uint64_t t[2];

	tmm_share_split(c, 2, 600, 1, t);
	ck_assert_uint_eq(t[0], 200);
	ck_assert_uint_eq(t[1], 400);
}
END_TEST

START_TEST(split_floor_stops_a_giver)
{
	/* The first can give only 100 above its floor: the rate-0 member
	 * gives the other 100. */
	struct tmm_share_claim c[2] = { { 400, 300, 1 }, { 400, 0, 0 } };
	uint64_t t[2];

	tmm_share_split(c, 2, 600, 1, t);
	ck_assert_uint_eq(t[0], 300);
	ck_assert_uint_eq(t[1], 300);
}
END_TEST

START_TEST(split_all_rates_zero_give_evenly)
{
	struct tmm_share_claim c[3] = {
		{ 400, 0, 0 }, { 400, 0, 0 }, { 400, 0, 0 }
	};
	uint64_t t[3];

	tmm_share_split(c, 3, 900, 1, t);
	ck_assert_uint_eq(t[0], 300);
	ck_assert_uint_eq(t[1], 300);
	ck_assert_uint_eq(t[2], 300);
}
END_TEST

START_TEST(split_never_passes_the_capacity)
{
	struct tmm_share_claim c[TMM_SHARE_SLOTS];
	uint64_t t[TMM_SHARE_SLOTS];

	srand(7);
	for (unsigned round = 0; round < 2000; round++) {
		unsigned n = 1 + (unsigned)rand() % TMM_SHARE_SLOTS;
		uint64_t cap = 256 + (uint64_t)rand() % 100000 * 256;
		uint64_t floors = 0;

		for (unsigned i = 0; i < n; i++) {
			c[i].demand = (uint64_t)rand() % 200000 * 97;
			c[i].floor = (uint64_t)rand() % 3 == 0
					     ? c[i].demand / 2 : 0;
			c[i].rate = (rand() % 5) / 4.0;
			floors += c[i].floor;
		}
		tmm_share_split(c, n, cap, 256, t);
		ck_assert_uint_le(sum_of(t, n), cap);
		for (unsigned i = 0; i < n; i++) {
			ck_assert_uint_eq(t[i] % 256, 0);
			/* Floors that fit are kept (up to the alignment). */
			if (floors <= cap && c[i].floor <= c[i].demand)
				ck_assert_uint_ge(t[i] + 256, c[i].floor);
		}
	}
}
END_TEST

/* ------------------------------------------------------------------------
 * Reclaim
 * ---------------------------------------------------------------------- */

/* The segment of `config`'s group, as a context would name it. */
static void segment_name(const char *config, char *buf, size_t len)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	tmm_share_name(&ctx->cfg, ctx->be.ops->name, &ctx->be.info, buf,
		       len);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

START_TEST(killed_member_is_reclaimed)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	int ready[2], status;
	pid_t child;
	char c;

	snprintf(config, sizeof(config),
		 "backend=sim,mode=swap,sim_capacity=64M,share=reclaim-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	/* The last member left: nothing stays behind. */
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		tmm_ctx *ctx;

		if (tmm_ctx_create(&ctx, config) < 0)
			_exit(1);
		(void)!write(ready[1], "j", 1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 1);
	ck_assert_uint_eq(v.reserved, 64u << 20);
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	/* The next look removes the dead member's slot. */
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 0);
	ck_assert_uint_eq(v.reserved, 0);
	/* A newcomer gets the whole device again, then leaves last. */
	segment_name(config, name, sizeof(name));
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
	close(ready[0]);
	close(ready[1]);
}
END_TEST

/* ------------------------------------------------------------------------
 * Three processes training
 * ---------------------------------------------------------------------- */

#define STEPS 6
#define CHILDREN 3

struct result {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	uint64_t peak;
};

static void train(const char *config, struct result *r,
		  int (*hook)(tmm_ctx *, unsigned, void *), void *arg)
{
	struct mlp_config mc;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;
	int rc;

	mlp_config_default(&mc);
	mc.steps = STEPS;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	mc.after_step = hook;
	mc.after_step_arg = arg;
	if (tmm_ctx_create(&ctx, config) < 0) {
		fprintf(stderr, "%s\n", tmm_last_error(NULL));
		_exit(3);
	}
	rc = mlp_train(ctx, &mc, r->losses, &r->weights, &r->len, NULL);
	if (rc < 0) {
		fprintf(stderr, "training failed: %s\n", tmm_last_error(ctx));
		_exit(4);
	}
	tmm_stats_get(ctx, &st);
	r->peak = st.device_peak;
	tmm_ctx_destroy(ctx);
}

/* What a child checks after each step, and its signals to the next. */
struct child {
	unsigned index;
	const char *segment;
	uint64_t capacity;
	int joined_next[2];	/* the next child has joined */
	int ran_step[2];	/* this child has run its first step */
	int failed;		/* bit 1: over its reservation; 2: the sum
				 * over the capacity */
	uint64_t changes;
};

static int after_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct child *c = arg;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct tmm_share_view v;
	char byte = 's';

	tmm_stats_get(ctx, &st);
	if (st.device_in_use > st.share_reservation)
		c->failed |= 1;
	if (tmm_share_peek(c->segment, &v) == 0 &&
	    (v.reserved_max > c->capacity || v.reserved > c->capacity))
		c->failed |= 2;
	c->changes = st.share_budget_changes;
	if (step == 1)
		(void)!write(c->ran_step[1], &byte, 1);
	/* Stay running until the next process is on the device, so its
	 * join moves this one's budget in the middle of training. */
	if (step == 2 && c->index + 1 < CHILDREN)
		(void)!read(c->joined_next[0], &byte, 1);
	return 0;
}

START_TEST(three_processes_share_one_device)
{
	char config[200], name[TMM_SHARE_NAME_MAX];
	struct result ref = { 0 };
	struct child kids[CHILDREN];
	uint64_t capacity;
	pid_t pids[CHILDREN];

	/* The unconstrained run, in this process. */
	train("backend=sim,sim_memory=backed,mode=swap", &ref, NULL, NULL);
	/* Room for 1.2 of the three peaks. */
	capacity = ref.peak * 12 / 10 / 256 * 256;
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,sim_capacity=%llu,"
		 "share=train-%d", (unsigned long long)capacity,
		 (int)getpid());
	segment_name(config, name, sizeof(name));

	for (unsigned i = 0; i < CHILDREN; i++) {
		kids[i] = (struct child){ .index = i, .segment = name,
					  .capacity = capacity };
		ck_assert_int_eq(pipe(kids[i].joined_next), 0);
		ck_assert_int_eq(pipe(kids[i].ran_step), 0);
	}
	for (unsigned i = 0; i < CHILDREN; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct child *me = &kids[i];
			struct result got = { 0 };
			char byte;

			/* Staggered: join once the one before is training,
			 * and tell it so (it waits at its second step). */
			if (i > 0) {
				(void)!read(kids[i - 1].ran_step[0], &byte, 1);
				(void)!write(kids[i - 1].joined_next[1], "j",
					     1);
			}
			train(config, &got, after_step, me);
			if (got.len != ref.len ||
			    memcmp(got.weights, ref.weights, ref.len) ||
			    memcmp(got.losses, ref.losses,
				   sizeof(ref.losses)))
				_exit(5);
			if (me->failed & 1)
				_exit(6);
			if (me->failed & 2)
				_exit(7);
			/* Its budget moved while it trained (not only at
			 * its join): the first two see the next join. */
			if (i + 1 < CHILDREN && me->changes < 2)
				_exit(8);
			_exit(0);
		}
	}
	for (unsigned i = 0; i < CHILDREN; i++) {
		int status;

		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %u: %s %d (3 create, 4 train, 5 results "
			      "differ, 6 over its reservation, 7 sum over "
			      "the capacity, 8 budget never moved)",
			      i, WIFEXITED(status) ? "exit" : "signal",
			      WIFEXITED(status) ? WEXITSTATUS(status)
						: WTERMSIG(status));
	}
	free(ref.weights);
}
END_TEST

/* Counts swap-outs after each step (the hook of the next test). */
static int count_swaps(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	(void)step;
	tmm_stats_get(ctx, &st);
	*(uint64_t *)arg = st.swap_out_count;
	return 0;
}

/*
 * TENSILE's max swapping rate: a process with rate 0 gives up nothing
 * while another can, so on a device with room for 1.5 peaks it trains as
 * if alone (no swap-out at all), and the other, whose first large op
 * finds its share cut to 1/8 of an even share, gets room for it
 * (tmm_share_need) instead of failing.  Both match the reference.
 */
START_TEST(rate_zero_process_never_swaps)
{
	char base[200], config[260];
	struct result ref = { 0 };
	uint64_t capacity;
	pid_t pids[2];

	train("backend=sim,sim_memory=backed,mode=swap", &ref, NULL, NULL);
	capacity = ref.peak * 15 / 10 / 256 * 256;
	snprintf(base, sizeof(base),
		 "backend=sim,sim_memory=backed,mode=swap,sim_capacity=%llu,"
		 "share=rate-%d", (unsigned long long)capacity, (int)getpid());
	for (unsigned i = 0; i < 2; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct result got = { 0 };
			uint64_t swaps = 0;

			snprintf(config, sizeof(config), "%s,max_swap_rate=%s",
				 base, i == 0 ? "0" : "1");
			train(config, &got, count_swaps, &swaps);
			if (got.len != ref.len ||
			    memcmp(got.weights, ref.weights, ref.len) ||
			    memcmp(got.losses, ref.losses,
				   sizeof(ref.losses)))
				_exit(5);
			_exit(i == 0 && swaps > 0 ? 9 : 0);
		}
	}
	for (unsigned i = 0; i < 2; i++) {
		int status;

		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "process %u (rate %u): %s %d (3 create, 4 "
			      "train, 5 results differ, 9 swapped)", i, i,
			      WIFEXITED(status) ? "exit" : "signal",
			      WIFEXITED(status) ? WEXITSTATUS(status)
						: WTERMSIG(status));
	}
	free(ref.weights);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpu_share");
	TCase *split = tcase_create("split"), *procs = tcase_create("procs");

	tcase_add_test(split, split_fits_shares_the_slack_evenly);
	tcase_add_test(split, split_deficit_follows_the_rates);
	tcase_add_test(split, split_rate_zero_gives_nothing_while_others_can);
	tcase_add_test(split, split_floor_stops_a_giver);
	tcase_add_test(split, split_all_rates_zero_give_evenly);
	tcase_add_test(split, split_never_passes_the_capacity);
	tcase_set_timeout(procs, 120);
	tcase_add_test(procs, killed_member_is_reclaimed);
	tcase_add_test(procs, three_processes_share_one_device);
	tcase_add_test(procs, rate_zero_process_never_swaps);
	suite_add_tcase(s, split);
	suite_add_tcase(s, procs);
	return check_run_all(srunner_create(s));
}
