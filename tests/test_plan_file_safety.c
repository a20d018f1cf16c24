/* SPDX-License-Identifier: MIT */
/*
 * test_plan_file_safety.c — the "safety" case of the plan file suite
 * (test_plan_file.c): how tmm_plan_file_write (lib/io/plan_file.c) treats
 * the directory it writes in.
 *
 * The plan goes through a temporary that must be the writer's own: a
 * symbolic link planted at the name the writer once used
 * ("<plan>.tmp.<pid>") must not lead it to overwrite the file the link
 * names; a name that is taken is passed over, a bounded number of times;
 * the temporary is private (0600) and the file it replaces keeps its
 * mode; a write that fails leaves the old plan byte for byte and no
 * temporary behind; and threads writing one path at once all succeed.
 * The size limit (hints_max) holds both ways: a larger file is not read,
 * a larger plan not written.
 */
#include "lib/base/fault.h"
#include "lib/io/plan.h"
#include "lib/io/plan_file.h"
#include "test_plan_file.h"
#include "scratch_dir.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* The number of entries of dir other than "." and "..", and whether one
 * of them holds ".tmp.". */
static int count_entries(const char *dir, int *temporaries)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	*temporaries = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		*temporaries += strstr(e->d_name, ".tmp.") != NULL;
	}
	closedir(d);
	return n;
}

/* The whole file, NUL-terminated, from malloc. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

/*
 * A link planted at "<plan>.tmp.<pid>", the name every earlier version
 * wrote through, to a file the attacker cannot write but the victim can.
 * The write must neither follow it nor disturb it.
 */
START_TEST(test_planted_link_is_not_followed)
{
	char dir[256], path[300], link[360], victim[300], err[512];
	struct tmm_plan p, q;
	struct stat st;
	char *text;
	int temporaries;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s.tmp.%ld", path, (long)getpid());
	put_text(victim, "precious\n");
	ck_assert_int_eq(symlink(victim, link), 0);

	make_doc_plan(&p, 1);
	ck_assert_msg(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					  sizeof(err)) == 0, "%s", err);
	text = slurp(victim);
	ck_assert_str_eq(text, "precious\n");
	free(text);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_msg(S_ISREG(st.st_mode), "the plan file is not a regular "
		      "file: the writer renamed the planted link");
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 1, PLAN_LIMIT, err,
					    sizeof(err)), 0);
	ck_assert_uint_eq(q.n_actions, p.n_actions);
	/* plan, victim and the link: nothing of the writer's left over
	 * but the link, which was not the writer's. */
	ck_assert_int_eq(count_entries(dir, &temporaries), 3);
	ck_assert_int_eq(temporaries, 1);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_new_file_private_old_mode_kept)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	struct stat st;
	mode_t old_umask = umask(022);

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);

	/* Shared with a group on purpose: a new plan does not undo it. */
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0640);
	umask(old_umask);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_taken_names_are_passed_over)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	char *before, *after;
	int temporaries;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);

	/* A name taken, the next one free: the plan is written. */
	ck_assert_int_eq(tmm_fault_set("plan_file_tmp@1"), 0);
	ck_assert_msg(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					  sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(count_entries(dir, &temporaries), 1);

	/* Every name taken: a bounded search, then -EEXIST, and the old
	 * plan as it was. */
	before = slurp(path);
	ck_assert_int_eq(tmm_fault_set("plan_file_tmp@1+"), 0);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), -EEXIST);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	HAS(err, path);
	HAS(err, "16 names in a row were taken");
	HAS(err, "TENSORMM_HINTS");
	after = slurp(path);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(count_entries(dir, &temporaries), 1);
	ck_assert_int_eq(temporaries, 0);
	free(before);
	free(after);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

/* A write cut short (the file size limit, as a full disk would): the old
 * plan stays byte for byte, and the temporary goes. */
START_TEST(test_failed_write_keeps_old_plan)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	struct rlimit saved, small;
	void (*old)(int);
	char *before, *after;
	int temporaries, rc;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), 0);
	before = slurp(path);

	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
	small = saved;
	small.rlim_cur = 16;
	old = signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
	rc = tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &saved);
	signal(SIGXFSZ, old);

	ck_assert_int_eq(rc, -EFBIG);
	HAS(err, "is left as it was");
	HAS(err, "TENSORMM_HINTS");
	after = slurp(path);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(count_entries(dir, &temporaries), 1);
	ck_assert_int_eq(temporaries, 0);
	free(before);
	free(after);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

struct writer {
	pthread_t thread;
	const char *path;
	const struct tmm_plan *plan;
	int failures;
	char err[512];
};

static void *write_many(void *arg)
{
	struct writer *w = arg;

	for (int i = 0; i < 25; i++)
		if (tmm_plan_file_write(w->path, w->plan, 1, PLAN_LIMIT,
					w->err, sizeof(w->err)) < 0)
			w->failures++;
	return NULL;
}

/* One temporary per write, not per process: threads of one process
 * writing the same plan file never write into each other's temporary. */
START_TEST(test_threads_write_one_path)
{
	char dir[256], path[300], err[512];
	struct writer w[4];
	struct tmm_plan p, q;
	int temporaries;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct writer){ .path = path, .plan = &p };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL,
						write_many, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(w[i].failures == 0, "thread %d: %d writes "
			      "failed, the last: %s", i, w[i].failures,
			      w[i].err);
	ck_assert_msg(tmm_plan_file_read(path, &q, 1, PLAN_LIMIT, err,
					 sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(q.n_actions, p.n_actions);
	ck_assert_int_eq(count_entries(dir, &temporaries), 1);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

/* The limit on a plan file (hints_max): a file of exactly the limit is
 * read, one byte more is refused before it is read, naming the knob. */
START_TEST(test_read_limit)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p, q;
	static const struct tmm_plan zero;
	struct stat st;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);

	ck_assert_msg(tmm_plan_file_read(path, &q, 1, (uint64_t)st.st_size,
					 err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(q.n_actions, p.n_actions);
	tmm_plan_free(&q);

	memset(&q, 0x5a, sizeof(q));
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 1,
					    (uint64_t)st.st_size - 1, err,
					    sizeof(err)), -EFBIG);
	REQUIRE(!memcmp(&q, &zero, sizeof(q)), "*out not zeroed");
	HAS(err, path);
	HAS(err, "more than hints_max=");
	HAS(err, "TENSORMM_HINTS_MAX");
	/* In the tunables' own units, so it can be pasted back. */
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 1, 64, err,
					    sizeof(err)), -EFBIG);
	HAS(err, "hints_max=64;");
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

/* A plan that no reader with the same limit would take back is not
 * saved, and the file it would replace stays. */
START_TEST(test_write_limit)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	struct stat st;
	char *before, *after;
	int temporaries;

	scratch_dir_make(dir, sizeof(dir), "plan-safety");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	before = slurp(path);

	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1,
					     (uint64_t)st.st_size - 1, err,
					     sizeof(err)), -EFBIG);
	HAS(err, path);
	HAS(err, "not saved");
	HAS(err, "TENSORMM_HINTS_MAX");
	after = slurp(path);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(count_entries(dir, &temporaries), 1);
	ck_assert_int_eq(temporaries, 0);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1,
					     (uint64_t)st.st_size, err,
					     sizeof(err)), 0);
	free(before);
	free(after);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

void add_plan_file_safety_tests(Suite *suite)
{
	TCase *tc = tcase_create("safety");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_planted_link_is_not_followed);
	tcase_add_test(tc, test_new_file_private_old_mode_kept);
	tcase_add_test(tc, test_taken_names_are_passed_over);
	tcase_add_test(tc, test_failed_write_keeps_old_plan);
	tcase_add_test(tc, test_threads_write_one_path);
	tcase_add_test(tc, test_read_limit);
	tcase_add_test(tc, test_write_limit);
	suite_add_tcase(suite, tc);
}
