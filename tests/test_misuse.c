/* SPDX-License-Identifier: MIT */
/*
 * test_misuse.c — Check suite for the calls a context refuses
 * (lib/core/guard.c): from inside an op's callback, every call that would
 * change the context mid-op (destroying the op's tensors or the context,
 * a nested tmm_run, iteration markers, ...) returns -EBUSY with a message
 * and changes nothing, while the calls that only read work; from a second
 * thread, every call returns -EBUSY while another thread is in one.
 * Four threads sharing one context are test_misuse_threads.c's.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "lib/core/context.h"
#include "lib/move/drop.h"
#include "tensormm.h"
#include "toy_ops.h"

#define CONFIG "backend=sim,sim_memory=backed,mode=swap,budget=1MiB"

#define contains(hay, needle) \
	ck_assert_msg(strstr((hay), (needle)) != NULL, \
		      "\"%s\" is not in \"%s\"", (needle), (hay))

/* ------------------------------------------------------------------------
 * A probe: an op whose callback makes calls from inside
 * ---------------------------------------------------------------------- */

#define MAX_NOTES 16

struct probe {
	tmm_ctx *ctx;
	tmm_tensor a, b, other, c; /* the op: b = a + 1; other, c: not its */
	/* What the callback does from inside, after computing b; its
	 * return is the callback's. */
	int (*inside)(struct probe *p, void *const *in, void *const *out);
	unsigned calls;		/* callbacks, recomputations included */
	unsigned nested_calls;	/* callbacks of the nested op */
	unsigned n;
	int rc[MAX_NOTES];
	char msg[MAX_NOTES][512];
};

static struct probe P;

/* Records a call's return and the message it left. */
static int note(struct probe *p, int rc)
{
	ck_assert_uint_lt(p->n, MAX_NOTES);
	p->rc[p->n] = rc;
	snprintf(p->msg[p->n], sizeof(p->msg[0]), "%s",
		 tmm_last_error(p->ctx));
	p->n++;
	return rc;
}

static int probe_run(void *const *in, void *const *out, void *user,
		     void *stream)
{
	struct probe *p = user;
	const uint32_t *x = in[0];
	uint32_t *y = out[0];

	(void)stream;
	p->calls++;
	for (uint32_t k = 0; k < ELEMS; k++)
		y[k] = x[k] + 1;
	return p->inside ? p->inside(p, in, out) : 0;
}

static int nested_run(void *const *in, void *const *out, void *user,
		      void *stream)
{
	struct probe *p = user;

	(void)in;
	(void)out;
	(void)stream;
	p->nested_calls++;
	return 0;
}

static tmm_op probe_op(struct probe *p)
{
	return (tmm_op){ .name = "probe", .kind = TMM_OP_ELEMENTWISE,
			 .flags = TMM_OP_PURE, .inputs = &p->a, .n_inputs = 1,
			 .outputs = &p->b, .n_outputs = 1, .run = probe_run,
			 .user = p };
}

/* An op of other -> c, for nesting inside the probe. */
static tmm_op nested_op(struct probe *p)
{
	return (tmm_op){ .name = "nested", .kind = TMM_OP_OTHER,
			 .inputs = &p->other, .n_inputs = 1,
			 .outputs = &p->c, .n_outputs = 1, .run = nested_run,
			 .user = p };
}

/* Asserts that t holds toy_pattern(salt) + add. */
static void holds(tmm_ctx *ctx, tmm_tensor t, uint32_t salt, uint32_t add)
{
	static uint32_t want[ELEMS], got[ELEMS];

	toy_pattern(want, salt);
	for (uint32_t k = 0; k < ELEMS; k++)
		want[k] += add;
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, got, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_mem_eq(got, want, BYTES);
}

static void setup(void)
{
	static uint32_t v[ELEMS];

	memset(&P, 0, sizeof(P));
	ck_assert_int_eq(tmm_ctx_create(&P.ctx, CONFIG), 0);
	ck_assert_int_eq(tmm_tensor_create(P.ctx, BYTES, TMM_ACTIVATION, "a",
					   &P.a), 0);
	ck_assert_int_eq(tmm_tensor_create(P.ctx, BYTES, TMM_ACTIVATION, "b",
					   &P.b), 0);
	ck_assert_int_eq(tmm_tensor_create(P.ctx, BYTES, TMM_ACTIVATION,
					   "other", &P.other), 0);
	ck_assert_int_eq(tmm_tensor_create(P.ctx, BYTES, TMM_ACTIVATION, "c",
					   &P.c), 0);
	toy_pattern(v, 1);
	ck_assert_int_eq(tmm_tensor_write(P.ctx, P.a, 0, v, BYTES), 0);
	toy_pattern(v, 2);
	ck_assert_int_eq(tmm_tensor_write(P.ctx, P.other, 0, v, BYTES), 0);
}

static void teardown(void)
{
	if (P.ctx)
		ck_assert_int_eq(tmm_ctx_destroy(P.ctx), 0);
}

/* Runs the probe op with `inside`; asserts tmm_run's return. */
static void run_probe(int (*inside)(struct probe *, void *const *,
				    void *const *), int want)
{
	tmm_op op = probe_op(&P);
	int rc;

	P.inside = inside;
	rc = tmm_run(P.ctx, &op);
	ck_assert_msg(rc == want, "tmm_run returned %d, not %d: %s", rc,
		      want, tmm_last_error(P.ctx));
	P.inside = NULL;
}

/* ------------------------------------------------------------------------
 * Inside a callback: what is refused
 * ---------------------------------------------------------------------- */

static int destroy_tensors(struct probe *p, void *const *in,
			   void *const *out)
{
	(void)in;
	(void)out;
	note(p, tmm_tensor_destroy(p->ctx, p->a));
	note(p, tmm_tensor_destroy(p->ctx, p->b));
	note(p, tmm_tensor_destroy(p->ctx, p->other));
	return 0;
}

START_TEST(destroying_tensors_inside_is_refused)
{
	run_probe(destroy_tensors, 0);
	ck_assert_uint_eq(P.n, 3);
	for (unsigned i = 0; i < P.n; i++) {
		ck_assert_int_eq(P.rc[i], -EBUSY);
		contains(P.msg[i], "tmm_tensor_destroy: refused inside the "
				   "callback of op 'probe'");
	}
	/* Nothing was freed: the input and the output hold their bytes. */
	holds(P.ctx, P.a, 1, 0);
	holds(P.ctx, P.b, 1, 1);
	holds(P.ctx, P.other, 2, 0);
	ck_assert_int_eq(tmm_tensor_destroy(P.ctx, P.a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(P.ctx, P.b), 0);
}
END_TEST

static int destroy_context(struct probe *p, void *const *in,
			   void *const *out)
{
	(void)in;
	(void)out;
	note(p, tmm_ctx_destroy(p->ctx));
	return 0;
}

START_TEST(destroying_the_context_inside_is_refused)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	/* A use after free here would be the sanitizer's to catch. */
	run_probe(destroy_context, 0);
	ck_assert_int_eq(P.rc[0], -EBUSY);
	contains(P.msg[0], "tmm_ctx_destroy: refused inside the callback");
	contains(P.msg[0], "left intact");
	holds(P.ctx, P.b, 1, 1);
	ck_assert_int_eq(tmm_stats_get(P.ctx, &st), 0);
	ck_assert_uint_eq(st.ops, 1);
}
END_TEST

static int run_nested(struct probe *p, void *const *in, void *const *out)
{
	tmm_op op = nested_op(p);

	(void)in;
	(void)out;
	note(p, tmm_run(p->ctx, &op));
	return 0;
}

START_TEST(nested_run_is_refused)
{
	char buf[16];

	run_probe(run_nested, 0);
	ck_assert_int_eq(P.rc[0], -EBUSY);
	contains(P.msg[0], "tmm_run: refused inside the callback of op "
			   "'probe': a nested tmm_run");
	ck_assert_uint_eq(P.nested_calls, 0);
	/* The nested op's output was never made. */
	ck_assert_int_eq(tmm_tensor_read(P.ctx, P.c, 0, buf, sizeof(buf)),
			 -ENODATA);
	holds(P.ctx, P.b, 1, 1);
}
END_TEST

static int mark_iterations(struct probe *p, void *const *in,
			   void *const *out)
{
	(void)in;
	(void)out;
	note(p, tmm_iteration_end(p->ctx));
	note(p, tmm_iteration_begin(p->ctx));
	return 0;
}

START_TEST(iteration_markers_inside_are_refused)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_iteration_begin(P.ctx), 0);
	run_probe(mark_iterations, 0);
	ck_assert_int_eq(P.rc[0], -EBUSY);
	contains(P.msg[0], "tmm_iteration_end: refused inside the callback");
	ck_assert_int_eq(P.rc[1], -EBUSY);
	contains(P.msg[1], "tmm_iteration_begin: refused inside the "
			   "callback");
	/* The iteration opened outside is still the one open: it ends
	 * once, and counts once. */
	ck_assert_int_eq(tmm_iteration_end(P.ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(P.ctx), -EINVAL);
	ck_assert_int_eq(tmm_stats_get(P.ctx, &st), 0);
	ck_assert_uint_eq(st.iterations, 1);
	ck_assert_uint_eq(st.ops, 1);
}
END_TEST

/* Every other call that changes the context, in a table. */
static int change_things(struct probe *p, void *const *in,
			 void *const *out)
{
	static const uint32_t zeros[ELEMS];
	tmm_tensor made = TMM_TENSOR_NULL;
	void *ptr = NULL;
	size_t got = 0;

	(void)in;
	(void)out;
	note(p, tmm_tensor_create(p->ctx, BYTES, TMM_SCRATCH, "new", &made));
	ck_assert_uint_eq(made.id, 0);
	note(p, tmm_tensor_write(p->ctx, p->other, 0, zeros, BYTES));
	note(p, tmm_acquire(p->ctx, p->other, TMM_READ, &ptr));
	note(p, tmm_release(p->ctx, p->other));
	note(p, tmm_workspace(p->ctx, 256, 4096, &ptr, &got));
	note(p, tmm_workspace_release(p->ctx));
	note(p, tmm_rehearsal_begin(p->ctx));
	note(p, tmm_rehearsal_end(p->ctx));
	return 0;
}

START_TEST(calls_that_change_the_context_are_refused)
{
	static const char *const names[] = {
		"tmm_tensor_create:", "tmm_tensor_write:", "tmm_acquire:",
		"tmm_release:", "tmm_workspace:", "tmm_workspace_release:",
		"tmm_rehearsal_begin:", "tmm_rehearsal_end:",
	};
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	run_probe(change_things, 0);
	ck_assert_uint_eq(P.n, sizeof(names) / sizeof(names[0]));
	for (unsigned i = 0; i < P.n; i++) {
		ck_assert_int_eq(P.rc[i], -EBUSY);
		contains(P.msg[i], names[i]);
		contains(P.msg[i], "refused inside the callback of op "
				   "'probe'");
	}
	holds(P.ctx, P.other, 2, 0); /* not overwritten */
	ck_assert_int_eq(tmm_stats_get(P.ctx, &st), 0);
	ck_assert_uint_eq(st.device_in_use, 3 * BYTES); /* no workspace */
}
END_TEST

/* The callback gives up with the refusal it got. */
static int give_up(struct probe *p, void *const *in, void *const *out)
{
	tmm_op op = nested_op(p);

	(void)in;
	(void)out;
	return tmm_run(p->ctx, &op);
}

START_TEST(callback_failure_keeps_the_refusal)
{
	run_probe(give_up, -EBUSY);
	contains(tmm_last_error(P.ctx), "op 'probe' failed: its run callback "
					"returned -16");
	contains(tmm_last_error(P.ctx), "inside it: tmm_run: refused inside "
					"the callback of op 'probe'");
	/* A failed op loses no bytes: its input is where it was. */
	holds(P.ctx, P.a, 1, 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Inside a callback: what is allowed
 * ---------------------------------------------------------------------- */

static char printed[4096];

static void to_printed(void *arg, const char *text, size_t len)
{
	size_t used = strlen(printed);

	(void)arg;
	if (used + len < sizeof(printed))
		memcpy(printed + used, text, len);
}

static int read_things(struct probe *p, void *const *in, void *const *out)
{
	static uint32_t v[ELEMS], want[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	(void)in;
	(void)out;
	/* Another tensor, and the op's own input. */
	ck_assert_int_eq(note(p, tmm_tensor_read(p->ctx, p->other, 0, v,
						 BYTES)), 0);
	toy_pattern(want, 2);
	ck_assert_mem_eq(v, want, BYTES);
	ck_assert_int_eq(note(p, tmm_tensor_read(p->ctx, p->a, 0, v, BYTES)),
			 0);
	toy_pattern(want, 1);
	ck_assert_mem_eq(v, want, BYTES);
	ck_assert_uint_eq(tmm_tensor_bytes(p->ctx, p->a), BYTES);
	ck_assert_int_eq(note(p, tmm_stats_get(p->ctx, &st)), 0);
	ck_assert_uint_eq(st.ops, 0); /* this op is counted once it ran */
	ck_assert_int_eq(note(p, tmm_stats_print(p->ctx, to_printed, NULL,
						 0)), 0);
	ck_assert_ptr_nonnull(tmm_last_error(p->ctx));
	/* Its own output is being written: refused. */
	note(p, tmm_tensor_read(p->ctx, p->b, 0, v, BYTES));
	return 0;
}

START_TEST(reads_inside_are_allowed)
{
	printed[0] = '\0';
	run_probe(read_things, 0);
	ck_assert_uint_eq(P.n, 5);
	ck_assert(printed[0] != '\0');
	ck_assert_int_eq(P.rc[4], -EBUSY);
	contains(P.msg[4], "tmm_tensor_read: refused inside the callback of "
			   "op 'probe': tensor 'b' is its output 0");
	/* The calls were let in as nested ones: the context is free. */
	holds(P.ctx, P.b, 1, 1);
}
END_TEST

/* A print's write function runs after the context is let go. */
static void run_from_print(void *arg, const char *text, size_t len)
{
	tmm_op op = nested_op(&P);

	(void)text;
	(void)len;
	*(int *)arg = tmm_run(P.ctx, &op);
}

START_TEST(print_callback_may_call_in)
{
	static uint32_t v[ELEMS];
	int rc = 1;

	ck_assert_int_eq(tmm_stats_print(P.ctx, run_from_print, &rc, 0), 0);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_gt(P.nested_calls, 0);
	ck_assert_int_eq(tmm_tensor_read(P.ctx, P.c, 0, v, BYTES), 0);
}
END_TEST

/* Recomputation re-runs the probe's callback: the same rules apply. */
static int when_recomputed(struct probe *p, void *const *in,
			   void *const *out)
{
	(void)in;
	(void)out;
	if (p->calls < 2)
		return 0;
	note(p, (int)tmm_tensor_bytes(p->ctx, p->a));
	note(p, tmm_tensor_destroy(p->ctx, p->a));
	return 0;
}

/* Drops b, which the probe made in this iteration. */
static void drop_b(void)
{
	struct tmm_tensor_rec *t = tmm_tensor_find(P.ctx, P.b);

	ck_assert_ptr_nonnull(t);
	ck_assert_msg(tmm_recompute_check(P.ctx, t) == 0, "%s",
		      tmm_last_error(P.ctx));
	ck_assert_int_eq(tmm_recompute_drop(P.ctx, t), 0);
}

START_TEST(recomputation_callback_is_held_to_the_rules)
{
	tmm_op op = probe_op(&P);
	tmm_op reader = { .name = "reader", .inputs = &P.b, .n_inputs = 1,
			  .outputs = &P.c, .n_outputs = 1,
			  .run = nested_run, .user = &P };

	ck_assert_int_eq(tmm_iteration_begin(P.ctx), 0);
	P.inside = when_recomputed;
	ck_assert_int_eq(tmm_run(P.ctx, &op), 0);
	drop_b();
	/* The reader needs b: the probe runs again, as a recomputation. */
	ck_assert_msg(tmm_run(P.ctx, &reader) == 0, "%s",
		      tmm_last_error(P.ctx));
	ck_assert_uint_eq(P.calls, 2);
	ck_assert_uint_eq(P.n, 2);
	ck_assert_int_eq(P.rc[0], BYTES); /* a read: allowed */
	ck_assert_int_eq(P.rc[1], -EBUSY);
	contains(P.msg[1], "tmm_tensor_destroy: refused inside the callback "
			   "of op 'probe'");
	holds(P.ctx, P.b, 1, 1);
	ck_assert_int_eq(tmm_iteration_end(P.ctx), 0);
}
END_TEST

/* A drop refused names the input of the producer that stops it: one
 * the program wrote since the op read it, then one it destroyed. */
START_TEST(a_refused_drop_names_the_input)
{
	static uint32_t v[ELEMS];
	tmm_op op = probe_op(&P);
	struct tmm_tensor_rec *b;

	ck_assert_int_eq(tmm_iteration_begin(P.ctx), 0);
	ck_assert_int_eq(tmm_run(P.ctx, &op), 0);
	b = tmm_tensor_find(P.ctx, P.b);
	ck_assert_ptr_nonnull(b);
	toy_pattern(v, 3);
	ck_assert_int_eq(tmm_tensor_write(P.ctx, P.a, 0, v, BYTES), 0);
	ck_assert_int_eq(tmm_recompute_check(P.ctx, b), -EINVAL);
	contains(tmm_last_error(P.ctx),
		 "cannot drop tensor 'b': an input of its producer has "
		 "changed since: input 0 of op 'probe' ('a')");
	ck_assert_int_eq(tmm_tensor_destroy(P.ctx, P.a), 0);
	ck_assert_int_eq(tmm_recompute_check(P.ctx, b), -EINVAL);
	contains(tmm_last_error(P.ctx),
		 "cannot drop tensor 'b': an input of its producer is gone: "
		 "input 0 of op 'probe' (freed)");
	ck_assert_int_eq(tmm_iteration_end(P.ctx), 0);
}
END_TEST

static int read_dropped(void *const *in, void *const *out, void *user,
			void *stream)
{
	static uint32_t v[ELEMS];
	struct probe *p = user;

	(void)in;
	(void)out;
	(void)stream;
	p->nested_calls++;
	note(p, tmm_tensor_read(p->ctx, p->b, 0, v, BYTES));
	return 0;
}

START_TEST(reading_a_dropped_tensor_inside_is_refused)
{
	tmm_op op = probe_op(&P);
	tmm_op reader = { .name = "reader", .inputs = &P.other,
			  .n_inputs = 1, .outputs = &P.c, .n_outputs = 1,
			  .run = read_dropped, .user = &P };

	ck_assert_int_eq(tmm_iteration_begin(P.ctx), 0);
	ck_assert_int_eq(tmm_run(P.ctx, &op), 0);
	drop_b();
	ck_assert_int_eq(tmm_run(P.ctx, &reader), 0);
	ck_assert_int_eq(P.rc[0], -EBUSY);
	contains(P.msg[0], "tensor 'b' was dropped, and reading it would "
			   "recompute it");
	ck_assert_uint_eq(P.calls, 1); /* not recomputed inside */
	/* Outside a callback the same read recomputes it. */
	holds(P.ctx, P.b, 1, 1);
	ck_assert_uint_eq(P.calls, 2);
	ck_assert_int_eq(tmm_iteration_end(P.ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * A second thread
 * ---------------------------------------------------------------------- */

/* Holds the first thread inside its callback until the second is done. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, release;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false,
	   false };

static int wait_at_gate(struct probe *p, void *const *in, void *const *out)
{
	(void)p;
	(void)in;
	(void)out;
	pthread_mutex_lock(&gate.lock);
	gate.inside = true;
	pthread_cond_broadcast(&gate.cond);
	while (!gate.release)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
	return 0;
}

static void *first_thread(void *arg)
{
	tmm_op op = probe_op(&P);

	P.inside = wait_at_gate;
	*(int *)arg = tmm_run(P.ctx, &op);
	return NULL;
}

START_TEST(second_thread_is_refused_while_in_a_call)
{
	static uint32_t v[ELEMS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_op op = nested_op(&P);
	pthread_t first;
	int first_rc = 1;

	gate.inside = gate.release = false;
	ck_assert_int_eq(pthread_create(&first, NULL, first_thread,
					&first_rc), 0);
	pthread_mutex_lock(&gate.lock);
	while (!gate.inside)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);

	/* The first thread is inside tmm_run: every call is refused. */
	ck_assert_int_eq(tmm_run(P.ctx, &op), -EBUSY);
	contains(tmm_last_error(P.ctx), "tmm_run: the context is in a call "
					"on another thread");
	contains(tmm_last_error(P.ctx), "not thread-safe");
	ck_assert_int_eq(tmm_tensor_read(P.ctx, P.other, 0, v, BYTES),
			 -EBUSY);
	contains(tmm_last_error(P.ctx), "tmm_tensor_read: the context");
	ck_assert_int_eq(tmm_tensor_write(P.ctx, P.other, 0, v, BYTES),
			 -EBUSY);
	ck_assert_uint_eq(tmm_tensor_bytes(P.ctx, P.other), 0);
	ck_assert_int_eq(tmm_stats_get(P.ctx, &st), -EBUSY);
	ck_assert_int_eq(tmm_iteration_begin(P.ctx), -EBUSY);
	ck_assert_int_eq(tmm_tensor_destroy(P.ctx, P.a), -EBUSY);
	ck_assert_int_eq(tmm_ctx_destroy(P.ctx), -EBUSY);
	contains(tmm_last_error(P.ctx), "tmm_ctx_destroy: the context");
	ck_assert_uint_eq(P.nested_calls, 0);

	pthread_mutex_lock(&gate.lock);
	gate.release = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	ck_assert_int_eq(pthread_join(first, NULL), 0);
	ck_assert_int_eq(first_rc, 0);
	P.inside = NULL;

	/* Free again: the calls go through, and the first op's bytes are
	 * there. */
	ck_assert_int_eq(tmm_run(P.ctx, &op), 0);
	holds(P.ctx, P.b, 1, 1);
	holds(P.ctx, P.a, 1, 0);
	ck_assert_int_eq(tmm_stats_get(P.ctx, &st), 0);
	ck_assert_uint_eq(st.ops, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("misuse");
	TCase *inside = tcase_create("inside"), *threads = tcase_create(
							    "threads");

	tcase_add_checked_fixture(inside, setup, teardown);
	tcase_add_test(inside, destroying_tensors_inside_is_refused);
	tcase_add_test(inside, destroying_the_context_inside_is_refused);
	tcase_add_test(inside, nested_run_is_refused);
	tcase_add_test(inside, iteration_markers_inside_are_refused);
	tcase_add_test(inside, calls_that_change_the_context_are_refused);
	tcase_add_test(inside, callback_failure_keeps_the_refusal);
	tcase_add_test(inside, reads_inside_are_allowed);
	tcase_add_test(inside, print_callback_may_call_in);
	tcase_add_test(inside, recomputation_callback_is_held_to_the_rules);
	tcase_add_test(inside, reading_a_dropped_tensor_inside_is_refused);
	tcase_add_test(inside, a_refused_drop_names_the_input);
	tcase_add_checked_fixture(threads, setup, teardown);
	tcase_set_timeout(threads, 120);
	tcase_add_test(threads, second_thread_is_refused_while_in_a_call);
	suite_add_tcase(s, inside);
	suite_add_tcase(s, threads);
	return check_run_all(srunner_create(s));
}
