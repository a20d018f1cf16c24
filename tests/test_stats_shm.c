/* SPDX-License-Identifier: MIT */
/*
 * test_stats_shm.c — Check suite for the live statistics segments
 * (lib/exec/stats_shm.c): the seqlock under a concurrent writer, the life of a
 * segment (mode, owner, removal, stale cleanup, stats_shm=off), the
 * refusal of another layout, and a context that cannot make its segment.
 */
#include "check_main.h"
#include "lib/core/context.h"
#include "lib/exec/stats_shm.h"
#include "tensormm.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Seqlock
 * ---------------------------------------------------------------------- */

/* The reader stops after this many reads that saw this many changes, or
 * after READ_LIMIT_S on a machine too busy to interleave the two.  A
 * writer that never pauses leaves few windows, so reads are slow. */
#define READS 5000u
#define CHANGES 100u
#define READ_LIMIT_S 5

struct race {
	struct tmm_shm_segment *seg;
	atomic_bool stop;
	uint64_t last; /* the writer's last value */
};

/* Writes snapshots whose fields are all equal, until told to stop: a
 * torn read shows up as two fields that differ. */
static void *writer(void *arg)
{
	struct race *r = arg;
	uint64_t v[TMM_SHM_FIELD_COUNT], k;

	for (k = 1; !atomic_load(&r->stop); k++) {
		for (int i = 0; i < TMM_SHM_FIELD_COUNT; i++)
			v[i] = k * 0x0101010101ull;
		tmm_shm_write(r->seg, v);
	}
	r->last = (k - 1) * 0x0101010101ull;
	return NULL;
}

START_TEST(seqlock_never_torn)
{
	static struct tmm_shm_segment seg;
	struct race r = { &seg, false, 0 };
	uint64_t v[TMM_SHM_FIELD_COUNT], last = 0, reads = 0, changes = 0;
	time_t until = time(NULL) + READ_LIMIT_S;
	pthread_t th;

	char bad[160] = "";

	memset(&seg, 0, sizeof(seg));
	ck_assert_int_eq(pthread_create(&th, NULL, writer, &r), 0);
	/* No assertion while the writer runs: a failed one would leave it
	 * writing after the test (CK_FORK=no, as under valgrind). */
	while ((reads < READS || changes < CHANGES) && time(NULL) < until &&
	       !bad[0]) {
		int rc = tmm_shm_read(&seg, v);

		/* Valgrind runs one thread at a time: let the writer on. */
		sched_yield();
		/* A writer that is always mid-write (a slow machine, or
		 * valgrind) makes the reader give up: allowed, and tried
		 * again. */
		if (rc == -EAGAIN)
			continue;
		if (rc != 0) {
			snprintf(bad, sizeof(bad), "tmm_shm_read: %d", rc);
			break;
		}
		for (int i = 1; i < TMM_SHM_FIELD_COUNT && !bad[0]; i++)
			if (v[i] != v[0])
				snprintf(bad, sizeof(bad),
					 "torn snapshot: field %d is %llu, "
					 "field 0 is %llu", i,
					 (unsigned long long)v[i],
					 (unsigned long long)v[0]);
		if (!bad[0] && v[0] < last)
			snprintf(bad, sizeof(bad), "went back from %llu to %llu",
				 (unsigned long long)last,
				 (unsigned long long)v[0]);
		changes += v[0] != last;
		last = v[0];
		reads++;
	}
	atomic_store(&r.stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(!bad[0], "%s", bad);
	ck_assert_int_eq(tmm_shm_read(&seg, v), 0);
	ck_assert_uint_eq(v[0], r.last);
	/* The reader really overlapped the writer. */
	ck_assert_uint_gt(changes, 1);
	ck_assert_uint_eq(atomic_load(&seg.seq) % 2, 0);
}
END_TEST

START_TEST(seqlock_gives_up_on_a_dead_writer)
{
	static struct tmm_shm_segment seg;
	uint64_t v[TMM_SHM_FIELD_COUNT];

	memset(&seg, 0, sizeof(seg));
	atomic_store(&seg.seq, 7); /* odd: a writer died mid-update */
	ck_assert_int_eq(tmm_shm_read(&seg, v), -EAGAIN);
}
END_TEST

/* ------------------------------------------------------------------------
 * Segment lifecycle
 * ---------------------------------------------------------------------- */

static bool shm_file(const char *name, struct stat *st)
{
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return stat(path, st) == 0;
}

START_TEST(segment_created_0600_and_removed)
{
	const struct tmm_shm_segment *seg;
	uint64_t v[TMM_SHM_FIELD_COUNT];
	char name[TMM_SHM_NAME_MAX], err[512];
	struct stat st;
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,stats_shm=on,"
					"budget=1MiB"), 0);
	snprintf(name, sizeof(name), "%s", tmm_stats_shm_name(ctx));
	ck_assert_msg(name[0] == '/', "no segment name");
	ck_assert_msg(shm_file(name, &st), "%s not in /dev/shm", name);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_eq(st.st_uid, getuid());
	ck_assert_uint_eq(st.st_size, sizeof(struct tmm_shm_segment));

	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)), 0);
	ck_assert_int_eq(seg->pid, getpid());
	ck_assert_str_eq(seg->backend, "sim");
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_shm_read(seg, v), 0);
	ck_assert_uint_eq(v[TMM_SHM_ITERATIONS], 1);
	ck_assert_uint_eq(v[TMM_SHM_BUDGET], 1024 * 1024);
	{
		struct tmm_stats st2 = { .version = TMM_STATS_VERSION };

		ck_assert_int_eq(tmm_stats_get(ctx, &st2), 0);
		ck_assert_uint_eq(v[TMM_SHM_PLAN_STATE], st2.plan_state);
		ck_assert_uint_eq(v[TMM_SHM_OPS], st2.ops);
	}

	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_msg(!shm_file(name, &st), "%s left after destroy", name);
	tmm_shm_close(seg);
}
END_TEST

/* Whether the listing shows a segment of `pid`. */
static bool listed(pid_t pid, unsigned *cleaned)
{
	struct tmm_shm_entry *list;
	char err[512];
	bool found = false;
	int n = tmm_shm_list(&list, cleaned, err, sizeof(err));

	ck_assert_msg(n >= 0, "%s", err);
	for (int i = 0; i < n; i++)
		found |= list[i].pid == pid;
	free(list);
	return found;
}

START_TEST(stats_shm_off_makes_none)
{
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,stats_shm=off"),
			 0);
	ck_assert_str_eq(tmm_stats_shm_name(ctx), "");
	ck_assert(!listed(getpid(), NULL));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(stale_segment_cleaned_by_reader)
{
	char name[TMM_SHM_NAME_MAX], go;
	struct stat st;
	int status, to_parent[2], to_child[2];
	pid_t child;

	ck_assert_int_eq(pipe(to_parent), 0);
	ck_assert_int_eq(pipe(to_child), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		tmm_ctx *ctx;

		if (tmm_ctx_create(&ctx, "backend=sim,stats_shm=on") < 0)
			_exit(1);
		/* Say the name, wait for the parent to look, then die
		 * without destroying the context. */
		if (write(to_parent[1], tmm_stats_shm_name(ctx),
			  TMM_SHM_NAME_MAX) < 0 ||
		    read(to_child[0], &go, 1) < 0)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(read(to_parent[0], name, sizeof(name)),
			 sizeof(name));
	/* While the child lives no reader may remove its segment; once it
	 * is dead any reader may (another test could be listing now). */
	ck_assert_msg(shm_file(name, &st), "the child has no %s", name);
	ck_assert(listed(child, NULL));
	ck_assert_int_eq(write(to_child[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(!listed(child, NULL));
	ck_assert_msg(!shm_file(name, &st), "stale %s not removed", name);
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}
END_TEST

/* Makes a segment by hand with the given layout version. */
static void fake_segment(const char *name, uint64_t magic, uint32_t layout)
{
	struct tmm_shm_segment seg;
	int fd = shm_open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	memset(&seg, 0, sizeof(seg));
	atomic_store(&seg.magic, magic);
	seg.layout = layout;
	seg.size = sizeof(seg);
	seg.uid = getuid();
	seg.n_fields = TMM_SHM_FIELD_COUNT;
	ck_assert_int_eq(write(fd, &seg, sizeof(seg)), sizeof(seg));
	close(fd);
}

/* Writes `uid` into the uid field of segment `name`. */
static int set_segment_uid(const char *name, uint32_t uid)
{
	int fd = shm_open(name, O_RDWR, 0);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, &uid, sizeof(uid),
		   offsetof(struct tmm_shm_segment, uid));
	close(fd);
	return n == sizeof(uid) ? 0 : -EIO;
}

START_TEST(other_layout_refused)
{
	const struct tmm_shm_segment *seg;
	char name[TMM_SHM_NAME_MAX], err[512];

	snprintf(name, sizeof(name), "/" TMM_SHM_PREFIX "%u.%d.9999",
		 (unsigned)getuid(), (int)getpid());
	fake_segment(name, TMM_SHM_MAGIC, 99);
	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_msg(strstr(err, "layout 99") && strstr(err, "reads layout"),
		      "message: %s", err);
	fake_segment(name, 0x1234, TMM_SHM_LAYOUT);
	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)),
			 -EPROTO);
	ck_assert_msg(strstr(err, "bad magic"), "message: %s", err);
	fake_segment(name, TMM_SHM_MAGIC, TMM_SHM_LAYOUT);
	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)), 0);
	tmm_shm_close(seg);
	/* A file that names another user than its owner is refused. */
	ck_assert_int_eq(set_segment_uid(name, getuid() + 1), 0);
	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)),
			 -EPROTO);
	ck_assert_msg(strstr(err, "not made by libtensormm"), "message: %s",
		      err);
	shm_unlink(name);
	ck_assert_int_eq(tmm_shm_open(name, &seg, err, sizeof(err)), -ENOENT);
}
END_TEST

START_TEST(segment_failure_does_not_fail_context)
{
	struct rlimit old, none = { 0, 0 };
	tmm_ctx *ctx, *ctx2;
	char said[4096];
	const char *p;
	int rc, rc2, err_pipe[2], saved_stderr, warnings = 0;
	ssize_t n;

	/* stderr into a pipe (a file could not grow either), to count the
	 * warnings. */
	ck_assert_int_eq(pipe(err_pipe), 0);
	saved_stderr = dup(2);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_ge(dup2(err_pipe[1], 2), 0);
	/* No file may grow: ftruncate of the new segment fails (EFBIG). */
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	none.rlim_max = old.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &none), 0);
	rc = tmm_ctx_create(&ctx, "backend=sim,stats_shm=on,log=warn");
	rc2 = tmm_ctx_create(&ctx2, "backend=sim,stats_shm=on,log=warn");
	setrlimit(RLIMIT_FSIZE, &old);
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	close(err_pipe[1]);
	n = read(err_pipe[0], said, sizeof(said) - 1);
	close(err_pipe[0]);
	said[n > 0 ? n : 0] = '\0';

	ck_assert_msg(rc == 0 && rc2 == 0, "%s", tmm_last_error(NULL));
	for (p = said; (p = strstr(p, "stats_shm: cannot")); p++)
		warnings++;
	ck_assert_msg(warnings == 1, "%d warnings, not one: %s", warnings,
		      said);
	ck_assert_msg(strstr(said, "/dev/shm"), "no advice in: %s", said);
	ck_assert_str_eq(tmm_stats_shm_name(ctx), "");
	ck_assert(!listed(getpid(), NULL));
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx2), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stats_shm");
	TCase *seq = tcase_create("seqlock");
	TCase *life = tcase_create("lifecycle");

	tcase_set_timeout(seq, 30);
	tcase_add_test(seq, seqlock_never_torn);
	tcase_add_test(seq, seqlock_gives_up_on_a_dead_writer);
	tcase_add_test(life, segment_created_0600_and_removed);
	tcase_add_test(life, stats_shm_off_makes_none);
	tcase_add_test(life, stale_segment_cleaned_by_reader);
	tcase_add_test(life, other_layout_refused);
	tcase_add_test(life, segment_failure_does_not_fail_context);
	suite_add_tcase(s, seq);
	suite_add_tcase(s, life);
	return check_run_all(srunner_create(s));
}
