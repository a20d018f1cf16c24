/* SPDX-License-Identifier: MIT */
/*
 * test_share_reliability.c — Check suite for what a crash or another user
 * can leave at the share segment's name, and what the members make of it
 * (lib/share/share_segment.c, lib/share/gpu_share.c): a segment made
 * first by another user, or with a loose mode (refused at once); a member
 * killed with SIGKILL, holding the segment's lock or not (the survivor's
 * next iteration gets its budget back); a segment left half-made by a
 * maker that died (made again, once, even by two joiners at a time) or
 * that is still alive (left alone).
 */
#include "check_main.h"
#include "lib/core/context.h"
#include "lib/share/gpu_share.h"
#include "lib/share/share_segment.h"
#include "share_member.h"
#include "tensormm.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every context here: no live-statistics segment, which a member killed
 * by a test would leave behind in /dev/shm. */
#define BASE "backend=sim,mode=swap,sim_capacity=64M,stats_shm=off,"

/* ------------------------------------------------------------------------
 * A name taken before us
 * ---------------------------------------------------------------------- */

/* A file at the segment's name, as another user (or a careless one, or
 * a crash) would leave it: `mode`, owned by `uid`, `size` bytes of zeros
 * and no segment in them. */
static void plant(const char *name, mode_t mode, uid_t uid, off_t size)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	if (uid != geteuid())
		ck_assert_int_eq(fchown(fd, uid, (gid_t)uid), 0);
	close(fd);
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Creates a context of `config` that must be refused at once (no wait for
 * a maker that is not coming) with -EACCES and a message holding each of
 * want[0 .. n).
 */
static void refused_at_once(const char *config, const char *const *want,
			    unsigned n)
{
	tmm_ctx *ctx = (tmm_ctx *)1;
	double t0 = seconds();

	ck_assert_int_eq(tmm_ctx_create(&ctx, config), -EACCES);
	ck_assert_ptr_null(ctx);
	ck_assert_double_lt(seconds() - t0, 1.0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_msg(strstr(tmm_last_error(NULL), want[i]),
			      "\"%s\" is not in \"%s\"", want[i],
			      tmm_last_error(NULL));
}

START_TEST(segment_of_another_user_is_refused)
{
	char config[160], name[TMM_SHARE_NAME_MAX], path[200];
	struct tmm_share_view v;
	const char *want[] = { path, "belongs to uid 65534",
			       "removed (by its owner or root)",
			       "TENSORMM_SHARE" };
	tmm_ctx *ctx;

	if (geteuid() != 0) {
		/* Only root can give a file away (fchown). */
		printf("segment_of_another_user_is_refused: not root, "
		       "skipped\n");
		return;
	}
	snprintf(config, sizeof(config),
		 BASE "share=squat-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	plant(name, 0600, 65534, 1 << 20);
	refused_at_once(config, want, 4);
	ck_assert_int_eq(tmm_share_peek(name, &v), -EACCES);
	/* Once it is gone, the name is ours again. */
	ck_assert_int_eq(shm_unlink(name), 0);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(segment_with_a_loose_mode_is_refused)
{
	char config[160], name[TMM_SHARE_NAME_MAX], path[200], rm[210];
	const char *want[] = { path, "has mode 0644, not 0600", rm,
			       "TENSORMM_SHARE" };
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 BASE "share=mode-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	snprintf(rm, sizeof(rm), "rm %s", path);
	plant(name, 0644, geteuid(), 1 << 20);
	refused_at_once(config, want, 4);
	ck_assert_int_eq(shm_unlink(name), 0);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * A member killed
 * ---------------------------------------------------------------------- */

/*
 * A member is killed with SIGKILL, holding the segment's lock or not: the
 * survivor's next iteration gets the whole device back by itself (no
 * tmm_share_peek here: it would reclaim the slot for it).
 */
static void survivor_gets_the_budget_back(bool holding_lock)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct tmm_share_view v;
	struct member m;
	uint64_t changes;
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 BASE "share=kill%d-%d",
		 (int)holding_lock, (int)getpid());
	segment_name(config, name, sizeof(name));
	member_start(&m, config);
	ck_assert_int_eq(heard(&m), 'j');
	/* Joins second: the member, running, gives up part of the device. */
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_le(st.share_reservation,
			  (64u << 20) - 2 * MEMBER_BYTES);
	ck_assert_uint_gt(st.share_reservation, 0);
	changes = st.share_budget_changes;
	if (holding_lock) {
		ck_assert_int_eq(write(m.down[1], "l", 1), 1);
		ck_assert_int_eq(heard(&m), 'l');
	}
	member_end(&m, true);
	/* Without the lock, the next look is at most this far away. */
	if (!holding_lock)
		nanosleep(&(struct timespec){
				  0, 2 * TMM_SHARE_RECLAIM_MS * 1000000l },
			  NULL);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.share_reservation, 64u << 20);
	ck_assert_uint_eq(st.budget, 64u << 20);
	ck_assert_uint_gt(st.share_budget_changes, changes);
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
}

START_TEST(killed_member_budget_comes_back)
{
	survivor_gets_the_budget_back(false);
}
END_TEST

START_TEST(killed_lock_holder_budget_comes_back)
{
	survivor_gets_the_budget_back(true);
}
END_TEST

/* ------------------------------------------------------------------------
 * A segment left half-made
 * ---------------------------------------------------------------------- */

/* A process whose maker fails at the fault share.magic: it leaves the
 * segment without its magic, as if killed there.  It says 'f' and waits. */
static void leave_half_made(struct member *m, const char *config)
{
	char faulty[240];

	snprintf(faulty, sizeof(faulty), "%s,fault=share.magic", config);
	member_start(m, faulty);
	ck_assert_int_eq(heard(m), 'f');
	ck_assert_int_eq(heard(m), EIO);
}

START_TEST(segment_of_a_dead_maker_is_made_again)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	struct member maker;
	tmm_ctx *ctx;
	double t0;

	snprintf(config, sizeof(config),
		 BASE "share=stale-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	leave_half_made(&maker, config);
	member_end(&maker, true);
	ck_assert_int_eq(tmm_share_peek(name, &v), -EPROTO); /* still there */
	/* Its maker is known dead: no wait. */
	t0 = seconds();
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_double_lt(seconds() - t0, 1.0);
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 1);
	ck_assert_uint_eq(v.capacity, 64u << 20);
	ck_assert_uint_eq(v.reserved, 64u << 20);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
}
END_TEST

START_TEST(segment_of_an_unknown_maker_is_made_again)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 BASE "share=unknown-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	/* Its maker died before it sized it, or before it wrote its pid:
	 * after a bounded wait, it is stale all the same. */
	for (off_t size = 0; size <= 1 << 20; size += 1 << 20) {
		plant(name, 0600, geteuid(), size);
		ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
			      tmm_last_error(NULL));
		ck_assert_int_eq(tmm_share_peek(name, &v), 0);
		ck_assert_uint_eq(v.members, 1);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

START_TEST(two_joiners_make_a_stale_segment_again_once)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	struct member maker, m[2];

	snprintf(config, sizeof(config),
		 BASE "share=twice-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	leave_half_made(&maker, config);
	member_end(&maker, true);
	/* Both find it stale at once; had the second unlinked the first's
	 * new segment, each would be alone in a segment of its own. */
	member_start(&m[0], config);
	member_start(&m[1], config);
	ck_assert_int_eq(heard(&m[0]), 'j');
	ck_assert_int_eq(heard(&m[1]), 'j');
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 2);
	ck_assert_uint_le(v.reserved_max, 64u << 20);
	member_end(&m[0], false);
	member_end(&m[1], false);
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
}
END_TEST

/*
 * The second of two joiners that found one segment stale comes to reap it
 * after the first has made a fresh one at the name: it must leave that
 * one alone.  Played in order here, with the test as the second joiner.
 */
START_TEST(late_reaper_leaves_the_fresh_segment_alone)
{
	char config[160], name[TMM_SHARE_NAME_MAX];
	struct tmm_share_view v;
	struct member maker;
	tmm_ctx *ctx;
	int stale;

	snprintf(config, sizeof(config),
		 BASE "share=late-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	leave_half_made(&maker, config);
	member_end(&maker, true);
	stale = shm_open(name, O_RDWR, 0600);
	ck_assert_int_ge(stale, 0);
	/* The first joiner: reaps it and makes a fresh one. */
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	/* The second, late: the name is on another file now. */
	ck_assert(!tmm_share_seg_reap(stale, name));
	ck_assert_int_eq(tmm_share_peek(name, &v), 0);
	ck_assert_uint_eq(v.members, 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	close(stale);

	/* While the name is still on the stale file, it goes. */
	leave_half_made(&maker, config);
	member_end(&maker, true);
	stale = shm_open(name, O_RDWR, 0600);
	ck_assert_int_ge(stale, 0);
	ck_assert(tmm_share_seg_reap(stale, name));
	ck_assert_int_eq(tmm_share_peek(name, &v), -ENOENT);
	close(stale);
}
END_TEST

START_TEST(segment_of_a_live_maker_is_left_alone)
{
	char config[160], name[TMM_SHARE_NAME_MAX], pid[32];
	struct member maker;
	tmm_ctx *ctx;

	snprintf(config, sizeof(config),
		 BASE "share=alive-%d",
		 (int)getpid());
	segment_name(config, name, sizeof(name));
	leave_half_made(&maker, config);
	/* It might still finish: refused after the bounded wait, and the
	 * segment stays. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), -EBUSY);
	snprintf(pid, sizeof(pid), "pid %d", (int)maker.pid);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(NULL), pid));
	ck_assert_ptr_nonnull(strstr(tmm_last_error(NULL), "still being "
							   "made"));
	/* Once it is gone, the segment is stale. */
	member_end(&maker, true);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("share_reliability");
	TCase *procs = tcase_create("procs");

	tcase_set_timeout(procs, 120);
	tcase_add_test(procs, segment_of_another_user_is_refused);
	tcase_add_test(procs, segment_with_a_loose_mode_is_refused);
	tcase_add_test(procs, killed_member_budget_comes_back);
	tcase_add_test(procs, killed_lock_holder_budget_comes_back);
	tcase_add_test(procs, segment_of_a_dead_maker_is_made_again);
	tcase_add_test(procs, segment_of_an_unknown_maker_is_made_again);
	tcase_add_test(procs, two_joiners_make_a_stale_segment_again_once);
	tcase_add_test(procs, late_reaper_leaves_the_fresh_segment_alone);
	tcase_add_test(procs, segment_of_a_live_maker_is_left_alone);
	suite_add_tcase(s, procs);
	return check_run_all(srunner_create(s));
}
