/* SPDX-License-Identifier: MIT */
/*
 * test_misuse_threads.c — four threads sharing one context
 * (lib/core/guard.c), each retrying what is refused while another is in
 * a call, leave the very bytes a single thread does.  The calls a
 * context refuses, from inside a callback and from a second thread, are
 * test_misuse.c's.
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
#include "tensormm.h"
#include "toy_ops.h"


#define THREADS 4
#define STEPS 400

/* One thread's work: its own tensors in the shared context. */
struct worker {
	tmm_ctx *ctx;
	unsigned index;
	tmm_tensor x, y;
	uint32_t read_sum;	/* of every read it made, in order */
	unsigned long busy;	/* calls refused with -EBUSY, retried */
	int bad_rc;		/* a return neither 0 nor -EBUSY */
	char bad_msg[512];
};

/* Makes `call` until it is not refused; a return other than 0 or -EBUSY
 * stops the worker (asserted on the main thread). */
#define RETRY(w, call) \
	do { \
		int rc_; \
		while ((rc_ = (call)) == -EBUSY) { \
			(w)->busy++; \
			sched_yield(); \
		} \
		if (rc_ != 0) { \
			(w)->bad_rc = rc_; \
			snprintf((w)->bad_msg, sizeof((w)->bad_msg), \
				 "%s: %s", #call, tmm_last_error((w)->ctx)); \
			return; \
		} \
	} while (0)

/*
 * STEPS steps of: a scratch tensor made and written, y = mix(x, scratch),
 * x = fill(y) in place of x, a read of y, the scratch destroyed.  Every
 * result depends on every earlier one, and the budget of the context is
 * short, so the mover evicts other threads' tensors under each op.
 */
static void work(struct worker *w)
{
	static _Thread_local uint32_t v[ELEMS];

	for (unsigned s = 0; s < STEPS && !w->bad_rc; s++) {
		tmm_tensor t = TMM_TENSOR_NULL;
		tmm_tensor in[2] = { w->x, TMM_TENSOR_NULL };
		tmm_op mix = { .name = "mix", .inputs = in, .n_inputs = 2,
			       .outputs = &w->y, .n_outputs = 1,
			       .run = toy_mix };
		tmm_op fill = { .name = "fill", .inputs = &w->y,
				.n_inputs = 1, .outputs = &w->x,
				.n_outputs = 1, .run = toy_fill };

		RETRY(w, tmm_tensor_create(w->ctx, BYTES, TMM_SCRATCH, NULL,
					   &t));
		toy_pattern(v, w->index * 1000 + s);
		RETRY(w, tmm_tensor_write(w->ctx, t, 0, v, BYTES));
		in[1] = t;
		RETRY(w, tmm_run(w->ctx, &mix));
		RETRY(w, tmm_run(w->ctx, &fill));
		RETRY(w, tmm_tensor_read(w->ctx, w->y, 0, v, BYTES));
		for (uint32_t k = 0; k < ELEMS; k++)
			w->read_sum = w->read_sum * 31u + v[k];
		RETRY(w, tmm_tensor_destroy(w->ctx, t));
	}
}

static pthread_barrier_t start_line;

static void *worker_main(void *arg)
{
	/* All at once: the calls of the four overlap from the first. */
	pthread_barrier_wait(&start_line);
	work(arg);
	return NULL;
}

/* A context with THREADS workers' tensors, x written. */
static tmm_ctx *workers_ctx(struct worker *w)
{
	static uint32_t v[ELEMS];
	tmm_ctx *ctx;

	/* Room for 8 of the 12 tensors live at a time. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=swap,budget=128KiB"), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .ctx = ctx, .index = i };
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "x", &w[i].x), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "y", &w[i].y), 0);
		toy_pattern(v, 77 + i);
		ck_assert_int_eq(tmm_tensor_write(ctx, w[i].x, 0, v, BYTES),
				 0);
	}
	return ctx;
}

START_TEST(four_threads_share_one_context)
{
	static uint32_t got[ELEMS], want[ELEMS];
	struct worker ref[THREADS], w[THREADS];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *one = workers_ctx(ref), *shared = workers_ctx(w);
	pthread_t tid[THREADS];
	unsigned long busy = 0;

	/* The reference: the same work, one worker after the other. */
	for (unsigned i = 0; i < THREADS; i++) {
		work(&ref[i]);
		ck_assert_msg(ref[i].bad_rc == 0 && ref[i].busy == 0, "%s",
			      ref[i].bad_msg);
	}
	ck_assert_int_eq(pthread_barrier_init(&start_line, NULL, THREADS),
			 0);
	for (unsigned i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&tid[i], NULL, worker_main,
						&w[i]), 0);
	for (unsigned i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
	pthread_barrier_destroy(&start_line);
	for (unsigned i = 0; i < THREADS; i++) {
		ck_assert_msg(w[i].bad_rc == 0, "worker %u: %d, %s", i,
			      w[i].bad_rc, w[i].bad_msg);
		ck_assert_uint_eq(w[i].read_sum, ref[i].read_sum);
		ck_assert_int_eq(tmm_tensor_read(shared, w[i].x, 0, got,
						 BYTES), 0);
		ck_assert_int_eq(tmm_tensor_read(one, ref[i].x, 0, want,
						 BYTES), 0);
		ck_assert_mem_eq(got, want, BYTES);
		ck_assert_int_eq(tmm_tensor_read(shared, w[i].y, 0, got,
						 BYTES), 0);
		ck_assert_int_eq(tmm_tensor_read(one, ref[i].y, 0, want,
						 BYTES), 0);
		ck_assert_mem_eq(got, want, BYTES);
		busy += w[i].busy;
	}
	/* The budget was short: tensors moved under the threads. */
	ck_assert_int_eq(tmm_stats_get(shared, &st), 0);
	ck_assert_uint_gt(st.swap_out_count + st.passive_evictions, 0);
	ck_assert_uint_eq(st.ops, 2 * THREADS * STEPS);
	printf("four_threads_share_one_context: %lu calls refused with "
	       "-EBUSY and retried\n", busy);
	ck_assert_int_eq(tmm_ctx_destroy(one), 0);
	ck_assert_int_eq(tmm_ctx_destroy(shared), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("misuse_threads");
	TCase *threads = tcase_create("threads");

	tcase_set_timeout(threads, 120);
	tcase_add_test(threads, four_threads_share_one_context);
	suite_add_tcase(s, threads);
	return check_run_all(srunner_create(s));
}
