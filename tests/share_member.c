/* SPDX-License-Identifier: MIT */
/*
 * share_member.c — members of a share segment in other processes
 * (share_member.h).
 */
#include "lib/core/context.h"
#include "lib/share/gpu_share.h"
#include "share_member.h"
#include "tensormm.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The segment of `config`'s group, as a context would name it. */
void segment_name(const char *config, char *buf, size_t len)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	tmm_share_name(&ctx->cfg, ctx->be.ops->name, &ctx->be.info, buf,
		       len);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}


/* A byte from the member (its report), or -1 at its end. */
int heard(struct member *m)
{
	char c;

	return read(m->up[0], &c, 1) == 1 ? c : -1;
}

static int copy_op(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)user;
	(void)stream;
	memcpy(out[0], in[0], 4096);
	return 0;
}

/* Runs in the child: joins, says 'j' (or 'f' and the errno when its
 * context failed), then runs one small iteration a millisecond, so that
 * it follows the split like a training process, until told 'l' (take the
 * segment's lock and keep it, then say 'l') or 'q' (leave). */
static void member_main(struct member *m, const char *config)
{
	static const char x[MEMBER_BYTES];
	tmm_tensor a, b;
	tmm_op op = { .name = "copy", .inputs = &a, .n_inputs = 1,
		      .outputs = &b, .n_outputs = 1, .run = copy_op };
	tmm_ctx *ctx;
	char c;
	int rc;

	close(m->up[0]);
	close(m->down[1]);
	fcntl(m->down[0], F_SETFL, O_NONBLOCK);
	rc = tmm_ctx_create(&ctx, config);
	if (rc < 0) {
		fprintf(stderr, "member %d: %s\n", (int)getpid(),
			tmm_last_error(NULL));
		c = (char)-rc;
		(void)!write(m->up[1], "f", 1);
		(void)!write(m->up[1], &c, 1);
		pause();
		_exit(3);
	}
	if (tmm_tensor_create(ctx, sizeof(x), TMM_ACTIVATION, "a", &a) < 0 ||
	    tmm_tensor_create(ctx, sizeof(x), TMM_ACTIVATION, "b", &b) < 0 ||
	    tmm_tensor_write(ctx, a, 0, x, sizeof(x)) < 0)
		_exit(4);
	(void)!write(m->up[1], "j", 1);
	for (;;) {
		if (tmm_iteration_begin(ctx) < 0 || tmm_run(ctx, &op) < 0 ||
		    tmm_iteration_end(ctx) < 0)
			_exit(5);
		if (read(m->down[0], &c, 1) == 1) {
			if (c == 'q') {
				tmm_ctx_destroy(ctx);
				_exit(0);
			}
			tmm_share_hold_lock(ctx);
			(void)!write(m->up[1], "l", 1);
			pause();
		}
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
}

/* Starts a member of `config`; it has not necessarily joined yet. */
void member_start(struct member *m, const char *config)
{
	ck_assert_int_eq(pipe(m->up), 0);
	ck_assert_int_eq(pipe(m->down), 0);
	m->pid = fork();
	ck_assert_int_ge(m->pid, 0);
	if (m->pid == 0)
		member_main(m, config);
	close(m->up[1]);
	close(m->down[0]);
}

/* Ends a member: SIGKILL, or 'q' when kill is false. */
void member_end(struct member *m, bool kill_it)
{
	int status;

	if (kill_it)
		kill(m->pid, SIGKILL);
	else
		(void)!write(m->down[1], "q", 1);
	ck_assert_int_eq(waitpid(m->pid, &status, 0), m->pid);
	close(m->up[0]);
	close(m->down[1]);
}
