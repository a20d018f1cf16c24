/* SPDX-License-Identifier: MIT */
/*
 * fault_sweep.c — one training run with an injected failure, in a forked
 * child, judged against the reference run (fault_sweep.h).
 *
 * The child reports through its exit status, which the sanitizers and
 * valgrind also use: the codes here are chosen clear of theirs
 * (LeakSanitizer 23, valgrind's --error-exitcode 99 in
 * scripts/fault-sweep, and 1 for an AddressSanitizer or UBSan report),
 * and its error message comes back through a pipe.  Under ASan the child
 * runs the leak check itself, so a leak is told from a memory error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* With AddressSanitizer, the child asks LeakSanitizer itself: at exit
 * its report would end the process with ASan's exit code, the same as a
 * memory error's. */
#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_LSAN 1
#endif
#endif
#ifdef SWEEP_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#include "drive.h"
#include "fault_sweep.h"
#include "lib/base/fault.h"
#include "mlp_model.h"
#include "tensormm.h"
#include "zoo.h"

/* The child's exit codes (0: identical). */
#define EXIT_ERROR 40
#define EXIT_MUTE 41
#define EXIT_DIFFERENT 42
#define EXIT_UNDESTROYED 43
#define EXIT_SETUP 44
#define EXIT_LEAK 45	 /* LeakSanitizer found a leak (SWEEP_LSAN) */
#define EXIT_LSAN 23	 /* LeakSanitizer's default exitcode, alone */
#define EXIT_VALGRIND 99 /* scripts/fault-sweep's --error-exitcode */

/* A call number no run reaches: the reference counts the site's calls. */
#define NEVER "999999999"

/* The zoo's model: the quickest to run of the zoo (DenseNet-121, 8M
 * parameters), one sample, backed bytes. */
#define ZOO_MODEL "densenet121"
#define ZOO_ITERATIONS 2
#define MLP_STEPS 4

static const char *const outcome_names[SWEEP_OUTCOMES] = {
	[SWEEP_IDENTICAL] = "identical",
	[SWEEP_ERROR] = "error",
	[SWEEP_DIFFERENT] = "different",
	[SWEEP_MUTE] = "mute",
	[SWEEP_UNDESTROYED] = "undestroyed",
	[SWEEP_LEAK] = "leak",
	[SWEEP_CRASH] = "crash",
	[SWEEP_HANG] = "hang",
};

const char *sweep_outcome_name(enum sweep_outcome o)
{
	return o < SWEEP_OUTCOMES ? outcome_names[o] : "?";
}

const char *const sweep_sites[SWEEP_SITES] = {
	TMM_SITE_HOST_ALLOC, TMM_SITE_DEVICE_ALLOC, TMM_SITE_PINNED_ALLOC,
	TMM_SITE_COPY, TMM_SITE_FILE_WRITE,
};

int sweep_site_index(const char *site)
{
	for (int i = 0; i < SWEEP_SITES; i++)
		if (strcmp(sweep_sites[i], site) == 0)
			return i;
	return -1;
}

const char *sweep_model_name(enum sweep_model m)
{
	return m == SWEEP_MLP ? "mlp" : "zoo";
}

static void mlp_shape(struct mlp_config *mc)
{
	mlp_config_default(mc);
	mc->steps = MLP_STEPS;
	mc->layers = 5;
	mc->width = 192;
	mc->batch = 64;
}

/* The zoo graph, built once per process: the children share it. */
static struct zgraph *zoo_graph(char *err, size_t errlen)
{
	static struct zgraph g;
	static bool built;
	struct zoo_args a = { .batch = 1, .scale = 1 };

	if (!built) {
		if (zoo_build(zoo_find(ZOO_MODEL), &a, &g) < 0) {
			snprintf(err, errlen, "zoo_build(%s): %s", ZOO_MODEL,
				 g.errmsg);
			zg_free(&g);
			return NULL;
		}
		built = true;
	}
	return &g;
}

void sweep_config(const struct sweep_ref *ref, const char *fault, char *buf,
		  size_t len)
{
	char budget[32] = "100%";

	if (ref->budget)
		snprintf(budget, sizeof(budget), "%lluB",
			 (unsigned long long)ref->budget);
	/* auto's rungs (a search for each smaller budget, plan_auto.c) are
	 * swept on the MLP; on the zoo they would make each run of the
	 * sweep four times as long, in the same code. */
	snprintf(buf, len,
		 "backend=sim,sim_memory=backed,mode=%s,policy=%s,budget=%s,"
		 "hints=%s/plan,trace=%s/trace,log=error,fault=%s%s",
		 ref->c.mode, ref->c.policy, budget, ref->dir, ref->dir,
		 fault, ref->c.model == SWEEP_ZOO ? ",auto_rungs=0" : "");
}

/* A run writes its plan and trace afresh, and reads no earlier plan. */
static void clear_files(const struct sweep_ref *ref)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/plan", ref->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/trace", ref->dir);
	unlink(path);
}

/* What a run gives back. */
struct trained {
	int rc;			/* 0, or the failure */
	char msg[512];		/* the failure's message */
	uint8_t *weights;	/* when rc == 0 (malloc'd) */
	size_t len;
	uint64_t peak;
	int destroy_rc;
};

static void train_mlp(const char *config, struct trained *t)
{
	struct mlp_config mc;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;

	mlp_shape(&mc);
	t->rc = tmm_ctx_create(&ctx, config);
	if (t->rc < 0) {
		snprintf(t->msg, sizeof(t->msg), "%s", tmm_last_error(NULL));
		return;
	}
	t->rc = mlp_train(ctx, &mc, NULL, &t->weights, &t->len, NULL);
	if (t->rc < 0)
		snprintf(t->msg, sizeof(t->msg), "%s", tmm_last_error(ctx));
	else if (tmm_stats_get(ctx, &st) == 0)
		t->peak = st.device_peak;
	t->destroy_rc = tmm_ctx_destroy(ctx);
}

static void train_zoo(const char *config, struct trained *t)
{
	struct drive_opts o = { .config = config,
				.iterations = ZOO_ITERATIONS,
				.weight_bytes = true };
	struct drive_result r;
	struct zgraph *g = zoo_graph(t->msg, sizeof(t->msg));
	const char *colon;

	if (!g) {
		t->rc = -EINVAL;
		return;
	}
	t->rc = zoo_drive(g, &o, &r);
	t->weights = r.weights;
	t->len = r.weights_len;
	t->peak = r.st.device_peak;
	t->destroy_rc = r.destroy_rc;
	/* r.error is "what: the library's message"; a library that said
	 * nothing leaves it ending in ": ", and the message is mute. */
	colon = strrchr(r.error, ':');
	if (t->rc < 0 && !(colon && colon[1] == ' ' && colon[2]))
		return;
	snprintf(t->msg, sizeof(t->msg), "%s", r.error);
}

static void train(const struct sweep_ref *ref, const char *config,
		  struct trained *t)
{
	memset(t, 0, sizeof(*t));
	clear_files(ref);
	if (ref->c.model == SWEEP_MLP)
		train_mlp(config, t);
	else
		train_zoo(config, t);
}

int sweep_ref_make(const struct sweep_case *c, struct sweep_ref *ref,
		   char *err, size_t errlen)
{
	struct trained free_run, tight;
	char config[512], fault[256];
	size_t used = 0;

	memset(ref, 0, sizeof(*ref));
	ref->c = *c;
	snprintf(ref->dir, sizeof(ref->dir), "/tmp/tmm-fault-sweep-%ld",
		 (long)getpid());
	if (mkdir(ref->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", ref->dir,
			 strerror(errno));
		return -1;
	}
	sweep_config(ref, "", config, sizeof(config));
	train(ref, config, &free_run);
	if (free_run.rc < 0) {
		snprintf(err, errlen, "the unconstrained run failed: %s",
			 free_run.msg);
		return -1;
	}
	ref->weights = free_run.weights;
	ref->len = free_run.len;
	/* Half the peak: every policy must swap, drop or split. */
	ref->budget = free_run.peak / 2;
	for (int i = 0; i < SWEEP_SITES; i++)
		used += (size_t)snprintf(fault + used, sizeof(fault) - used,
					 "%s%s@" NEVER, i ? ";" : "",
					 sweep_sites[i]);
	sweep_config(ref, fault, config, sizeof(config));
	train(ref, config, &tight);
	for (int i = 0; i < SWEEP_SITES; i++)
		ref->calls[i] = tmm_fault_calls(sweep_sites[i]);
	tmm_fault_set("");
	if (tight.rc < 0 || tight.len != ref->len ||
	    memcmp(tight.weights, ref->weights, ref->len) != 0) {
		snprintf(err, errlen, "the run at a %llu-byte budget %s%s",
			 (unsigned long long)ref->budget,
			 tight.rc < 0 ? "failed: " : "gave other bytes",
			 tight.msg);
		free(tight.weights);
		sweep_ref_free(ref);
		return -1;
	}
	free(tight.weights);
	return 0;
}

void sweep_ref_free(struct sweep_ref *ref)
{
	free(ref->weights);
	ref->weights = NULL;
	if (ref->dir[0]) {
		clear_files(ref);
		rmdir(ref->dir);
	}
}

/* Whether a failure's message says something: not empty, and not the
 * bare "out of memory" that names nothing. */
static bool says_what(const char *msg)
{
	return msg[0] && strcmp(msg, "out of memory") != 0;
}

/* The child: one run, judged; never returns. */
static void child(const struct sweep_ref *ref, const char *config, int fd)
{
	struct trained t;
	int code;

	train(ref, config, &t);
	if (t.destroy_rc < 0)
		code = EXIT_UNDESTROYED;
	else if (t.rc < 0)
		code = says_what(t.msg) ? EXIT_ERROR : EXIT_MUTE;
	else if (t.len != ref->len ||
		 memcmp(t.weights, ref->weights, ref->len) != 0)
		code = EXIT_DIFFERENT;
	else
		code = 0;
	free(t.weights);
	if (write(fd, t.msg, strlen(t.msg)) < 0)
		code = EXIT_SETUP;
	close(fd);
#ifdef SWEEP_LSAN
	/* Reported on stderr; _exit, or the check at exit would report it
	 * again and exit with ASan's code. */
	if (__lsan_do_recoverable_leak_check())
		_exit(EXIT_LEAK);
#endif
	/* exit, not _exit: a LeakSanitizer without ASan checks at exit. */
	exit(code);
}

static enum sweep_outcome judge(int status, char *msg, size_t msglen)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == SIGALRM)
			return SWEEP_HANG;
		snprintf(msg, msglen, "signal %d (%s)", sig, strsignal(sig));
		return SWEEP_CRASH;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		return SWEEP_IDENTICAL;
	case EXIT_ERROR:
		return SWEEP_ERROR;
	case EXIT_MUTE:
		return SWEEP_MUTE;
	case EXIT_DIFFERENT:
		return SWEEP_DIFFERENT;
	case EXIT_UNDESTROYED:
		return SWEEP_UNDESTROYED;
	case EXIT_LEAK:
	case EXIT_LSAN:
	case EXIT_VALGRIND:
		return SWEEP_LEAK;
	default:
		snprintf(msg, msglen, "exit status %d (a sanitizer's report, "
			 "or an abort)", WEXITSTATUS(status));
		return SWEEP_CRASH;
	}
}

enum sweep_outcome sweep_run(const struct sweep_ref *ref, const char *site,
			     unsigned long n, bool onward, unsigned timeout_s,
			     char *msg, size_t msglen)
{
	char config[512], fault[64];
	int fds[2], status;
	ssize_t got;
	pid_t pid;

	msg[0] = '\0';
	snprintf(fault, sizeof(fault), "%s@%lu%s", site, n, onward ? "+" : "");
	sweep_config(ref, fault, config, sizeof(config));
	fflush(NULL);
	if (pipe(fds) < 0) {
		snprintf(msg, msglen, "pipe: %s", strerror(errno));
		return SWEEP_CRASH;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(msg, msglen, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return SWEEP_CRASH;
	}
	if (pid == 0) {
		close(fds[0]);
		alarm(timeout_s);
		child(ref, config, fds[1]);
	}
	close(fds[1]);
	got = read(fds[0], msg, msglen - 1);
	msg[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(msg, msglen, "waitpid: %s", strerror(errno));
			return SWEEP_CRASH;
		}
	return judge(status, msg, msglen);
}
