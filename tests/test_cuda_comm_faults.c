/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_comm_faults.c — the error paths of the cuda backend's comm
 * stream (issue #26), made to fail on the CUDA test double through the
 * fault tunable (lib/base/fault.h):
 *  - comm_stream: the compute stream's event cannot be made or recorded,
 *    or the comm stream cannot wait for it.  The collective falls back to
 *    the compute stream, in its order: a later kernel that reads its
 *    output without waiting for collective_event does not race.
 *  - collective_event: its event cannot be made or recorded.  The host
 *    waits for the comm stream instead and hands out no event (complete):
 *    the reader that does not wait does not race either.
 *  - through tmm_run, every event call of a step with a collective
 *    failing in turn: the step either gives the right bytes, with no
 *    race, or fails naming the call (the op's timing events); then, the
 *    fault gone, the same context runs the step again with the right
 *    bytes, with no race with the failed step's collective, and closes.
 * Leaks (an event or a pinned buffer lost on a failed path) are what the
 * sanitized pass (scripts/test --sanitize) finds here.
 */
#include "config.h"
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_twins.h"
#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_cuda.h"
#include "lib/base/fault.h"
#include "lib/base/tunables.h"
#include "lib/core/context.h"
#include "tensormm.h"

#define BYTES COMM_TWIN_BYTES

/* The event sites of the double that the comm stream's paths call. */
static const char *const sites[] = { "cudaEventCreateWithFlags",
				     "cudaEventRecord",
				     "cudaStreamWaitEvent" };
#define N_SITES (sizeof(sites) / sizeof(sites[0]))

/* What one collective did on the backend (collective_on_backend). */
struct outcome {
	unsigned long calls;  /* of the armed site in the armed call */
	bool on_compute;      /* comm_stream fell back to the compute one */
	int event_rc;	      /* collective_event's */
	bool event_valid;
	char error[256];      /* be.error after collective_event */
	unsigned races;	      /* a reader that did not wait: racing? */
};

/*
 * A kernel writes p on the compute stream, the collective writes it on
 * comm_stream's stream, collective_event ends it, and a reader reads p
 * on the compute stream without waiting for that event.  `fault` is
 * armed around comm_stream (in_comm) or around collective_event (not
 * in_comm), and the calls of `site` made there are counted.
 */
static struct outcome collective_on_backend(const char *fault,
					    const char *site, bool in_comm)
{
	struct tmm_backend be;
	struct tmm_config cfg;
	struct tmm_cost coll = { .net_bytes = BYTES };
	struct outcome o = { 0 };
	tmm_event ev = { 0 };
	void *p, *comm;

	comm_twin_open(&be, &cfg);
	ck_assert_int_eq(be.ops->dev_alloc(&be, BYTES, &p), 0);
	cudafake_reset(7);
	ck_assert_int_eq(be.ops->kernel_begin(&be, NULL), 0);
	comm_twin_launch(be.ops->compute_stream(&be), p, true);
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, NULL), 0);

	ck_assert_int_eq(be.ops->kernel_begin(&be, &coll), 0);
	if (in_comm)
		ck_assert_int_eq(tmm_fault_set(fault), 0);
	comm = be.ops->comm_stream(&be);
	if (in_comm) {
		o.calls = tmm_fault_calls(site);
		ck_assert_int_eq(tmm_fault_set(""), 0);
	}
	ck_assert_ptr_nonnull(comm);
	o.on_compute = comm == be.ops->compute_stream(&be);
	comm_twin_launch(comm, p, true);
	ck_assert_int_eq(be.ops->kernel_end(&be, &coll, NULL), 0);
	be.error[0] = '\0';
	if (!in_comm)
		ck_assert_int_eq(tmm_fault_set(fault), 0);
	o.event_rc = be.ops->collective_event(&be, &ev);
	if (!in_comm) {
		o.calls = tmm_fault_calls(site);
		ck_assert_int_eq(tmm_fault_set(""), 0);
	}
	o.event_valid = ev.valid;
	snprintf(o.error, sizeof(o.error), "%s", be.error);

	ck_assert_int_eq(be.ops->kernel_begin(&be, NULL), 0);
	comm_twin_launch(be.ops->compute_stream(&be), p, false);
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, NULL), 0);
	o.races = cudafake_races();
	be.ops->event_release(&be, &ev);
	/* The backend goes on: another collective's event can be had. */
	ev = (tmm_event){ 0 };
	ck_assert_msg(be.ops->collective_event(&be, &ev) == 0, "%s",
		      be.error);
	be.ops->event_release(&be, &ev);
	be.ops->dev_free(&be, p, BYTES);
	be.ops->close(&be);
	return o;
}

/* "SITE@N" into buf. */
static const char *nth(char *buf, size_t len, const char *site,
		       unsigned long n)
{
	snprintf(buf, len, "%s@%lu", site, n);
	return buf;
}

START_TEST(no_fault_the_reader_races)
{
	/* The baseline the fallback is told from: on the comm stream, a
	 * reader that does not wait races with the collective. */
	struct outcome o = collective_on_backend("", sites[0], true);

	ck_assert(!o.on_compute);
	ck_assert_int_eq(o.event_rc, 0);
	ck_assert(o.event_valid);
	ck_assert_uint_eq(o.races, 1);
}
END_TEST

START_TEST(a_failed_comm_stream_call_falls_back_to_compute)
{
	char f[80];
	unsigned fell_back = 0;

	for (unsigned s = 0; s < N_SITES; s++) {
		unsigned long calls =
			collective_on_backend(nth(f, sizeof(f), sites[s],
						  1000000),
					      sites[s], true)
				.calls;

		printf("comm_stream: %lu call(s) of %s\n", calls, sites[s]);
		for (unsigned long n = 1; n <= calls; n++) {
			struct outcome o = collective_on_backend(
				nth(f, sizeof(f), sites[s], n), sites[s], true);

			ck_assert_msg(o.on_compute, "%s: the collective "
				      "stayed on the comm stream", f);
			ck_assert_int_eq(o.event_rc, 0);
			ck_assert_msg(o.races == 0, "%s: %s", f,
				      cudafake_race(0));
			fell_back++;
		}
	}
	/* The record and the wait are always made; the event is new or a
	 * spare, so its creation may not be. */
	ck_assert_uint_ge(fell_back, 2);
}
END_TEST

START_TEST(a_failed_collective_event_waits_instead)
{
	char f[80];
	unsigned waited = 0;

	for (unsigned s = 0; s < N_SITES; s++) {
		unsigned long calls =
			collective_on_backend(nth(f, sizeof(f), sites[s],
						  1000000),
					      sites[s], false)
				.calls;

		printf("collective_event: %lu call(s) of %s\n", calls,
		       sites[s]);
		for (unsigned long n = 1; n <= calls; n++) {
			struct outcome o = collective_on_backend(
				nth(f, sizeof(f), sites[s], n), sites[s],
				false);

			ck_assert(!o.on_compute);
			ck_assert_msg(o.event_rc == 0, "%s: %s", f, o.error);
			ck_assert(!o.event_valid);
			ck_assert_msg(o.races == 0, "%s: %s", f,
				      cudafake_race(0));
			waited++;
		}
	}
	ck_assert_uint_ge(waited, 1);
}
END_TEST

/* A fresh backend has no spare event: its first collective_event makes
 * one, and where it cannot, the host's wait stands in for it. */
START_TEST(a_failed_event_creation_waits_instead)
{
	struct tmm_backend be;
	struct tmm_config cfg;
	tmm_event ev = { 0 };
	struct cudafake_calls before, after;

	comm_twin_open(&be, &cfg);
	cudafake_calls(&before);
	ck_assert_int_eq(tmm_fault_set("cudaEventCreateWithFlags@1+"), 0);
	ck_assert_msg(be.ops->collective_event(&be, &ev) == 0, "%s",
		      be.error);
	ck_assert_uint_eq(tmm_fault_calls("cudaEventCreateWithFlags"), 1);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(!ev.valid);
	cudafake_calls(&after);
	ck_assert_uint_gt(after.stream_syncs, before.stream_syncs);
	ck_assert_msg(be.ops->collective_event(&be, &ev) == 0, "%s",
		      be.error);
	be.ops->event_release(&be, &ev);
	be.ops->close(&be);
}
END_TEST

/* Where the host's wait that stands in for the event fails too, the
 * call fails, naming both calls: nothing is left to order the readers. */
START_TEST(a_failed_wait_after_a_failed_event_names_both)
{
	struct tmm_backend be;
	struct tmm_config cfg;
	tmm_event ev = { 0 };

	comm_twin_open(&be, &cfg);
	ck_assert_int_eq(tmm_fault_set("cudaEventCreateWithFlags@1+;"
				       "cudaStreamSynchronize@1+"),
			 0);
	ck_assert_int_lt(be.ops->collective_event(&be, &ev), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(!ev.valid);
	ck_assert_msg(strstr(be.error, "cudaStreamSynchronize(comm stream)") &&
			      strstr(be.error, "cudaEventCreateWithFlags"),
		      "%s", be.error);
	/* The backend goes on once the device does. */
	ck_assert_msg(be.ops->collective_event(&be, &ev) == 0, "%s",
		      be.error);
	be.ops->event_release(&be, &ev);
	be.ops->close(&be);
}
END_TEST

/* ---- through tmm_run ------------------------------------------------ */

/* h = g + 1, bytewise: an idempotent collective, so that a step run
 * again after a failure gives the same bytes. */
struct plus_one {
	const uint8_t *in;
	uint8_t *out;
};

static void twin_plus_one(void *arg)
{
	struct plus_one *a = arg;

	for (size_t i = 0; i < BYTES; i++)
		a->out[i] = (uint8_t)(a->in[i] + 1);
	free(a);
}

/* user, when not NULL, is a bool: fail after queuing the kernel, as a
 * collective whose later call fails does. */
static int op_plus_one(void *const *in, void *const *out, void *user,
		       void *stream)
{
	struct plus_one *a = malloc(sizeof(*a));
	struct cudafake_range r[2] = { { in[0], BYTES, false },
				       { out[0], BYTES, true } };

	if (!a)
		return -12;
	a->in = in[0];
	a->out = out[0];
	if (cudafake_launch(stream, twin_plus_one, a, r, 2) != cudaSuccess)
		return -5;
	return user && *(const bool *)user ? -5 : 0;
}

static int op_copy(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)user;
	return cudaMemcpyAsync(out[0], in[0], BYTES, cudaMemcpyDefault,
			       (cudaStream_t)stream) == cudaSuccess
		       ? 0
		       : -5;
}

struct step {
	tmm_tensor w, g, h, z;
	bool coll_fails;	/* the collective's callback fails */
};

/* w -> g (compute), g -> h = g + 1 (the collective), h -> z (compute). */
static int run_step(tmm_ctx *ctx, struct step *s)
{
	tmm_op ops[3] = {
		{ .name = "grad", .inputs = &s->w, .n_inputs = 1,
		  .outputs = &s->g, .n_outputs = 1, .run = op_copy },
		{ .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
		  .inputs = &s->g, .n_inputs = 1, .outputs = &s->h,
		  .n_outputs = 1, .run = op_plus_one, .user = &s->coll_fails,
		  .cost = { .net_bytes = BYTES } },
		{ .name = "reader", .inputs = &s->h, .n_inputs = 1,
		  .outputs = &s->z, .n_outputs = 1, .run = op_copy },
	};

	for (unsigned k = 0; k < 3; k++) {
		int rc = tmm_run(ctx, &ops[k]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static void expect_plus_one(tmm_ctx *ctx, tmm_tensor t, const uint8_t *w)
{
	uint8_t *got = malloc(BYTES);

	ck_assert_ptr_nonnull(got);
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, got, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < BYTES; i++)
		ck_assert_uint_eq(got[i], (uint8_t)(w[i] + 1));
	free(got);
}

static tmm_ctx *make_step(struct step *s, uint8_t *w)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=off,stats_shm=off,"
				     "policy=passive") == 0,
		      "%s", tmm_last_error(NULL));
	for (size_t i = 0; i < BYTES; i++)
		w[i] = (uint8_t)(i * 7 + 3);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &s->w), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT, "g",
					   &s->g), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT, "h",
					   &s->h), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "z",
					   &s->z), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, s->w, 0, w, BYTES), 0);
	/* A first step, so that the armed one starts from a warm context
	 * (spare events and all), as a training step does. */
	ck_assert_msg(run_step(ctx, s) == 0, "%s", tmm_last_error(ctx));
	cudafake_reset(5);
	return ctx;
}

/* The calls of `site` that one warm step makes. */
static unsigned long step_calls(const char *site)
{
	uint8_t *w = malloc(BYTES);
	struct step s;
	tmm_ctx *ctx;
	char f[80];
	unsigned long n;

	ck_assert_ptr_nonnull(w);
	s.coll_fails = false;
	ctx = make_step(&s, w);
	ck_assert_int_eq(tmm_fault_set(nth(f, sizeof(f), site, 1000000)),
			 0);
	ck_assert_msg(run_step(ctx, &s) == 0, "%s", tmm_last_error(ctx));
	n = tmm_fault_calls(site);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	free(w);
	return n;
}

/* The n-th call of `site` in a warm step fails. */
static void step_fault(const char *site, unsigned long n)
{
	uint8_t *w = malloc(BYTES);
	struct step s;
	tmm_ctx *ctx;
	char f[80];
	int rc;

	ck_assert_ptr_nonnull(w);
	s.coll_fails = false;
	ctx = make_step(&s, w);
	ck_assert_int_eq(tmm_fault_set(nth(f, sizeof(f), site, n)), 0);
	rc = run_step(ctx, &s);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	printf("%s: %s\n", f, rc < 0 ? tmm_last_error(ctx) : "(ran)");
	if (rc < 0) {
		ck_assert_msg(strstr(tmm_last_error(ctx), site), "%s: %s", f,
			      tmm_last_error(ctx));
	} else {
		/* Ran (a fallback): right bytes, in a right order. */
		expect_plus_one(ctx, s.h, w);
		expect_plus_one(ctx, s.z, w);
	}
	ck_assert_msg(cudafake_races() == 0, "%s: %s", f, cudafake_race(0));
	/* The fault gone, the same context runs the step and closes. */
	ck_assert_msg(run_step(ctx, &s) == 0, "%s: %s", f,
		      tmm_last_error(ctx));
	expect_plus_one(ctx, s.h, w);
	expect_plus_one(ctx, s.z, w);
	ck_assert_msg(cudafake_races() == 0, "%s: %s", f, cudafake_race(0));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	free(w);
}

START_TEST(every_failed_event_call_of_a_collective_step)
{
	for (unsigned s = 0; s < N_SITES; s++) {
		unsigned long calls = step_calls(sites[s]);

		printf("a step: %lu call(s) of %s\n", calls, sites[s]);
		for (unsigned long n = 1; n <= calls; n++)
			step_fault(sites[s], n);
	}
}
END_TEST

/* The collective's callback queues its kernel on the comm stream, then
 * fails: the op fails with the callback's error, and the next step's
 * writer of its input is ordered after that kernel all the same. */
START_TEST(a_collective_failing_after_queuing_work)
{
	uint8_t *w = malloc(BYTES);
	struct step s;
	tmm_ctx *ctx;

	ck_assert_ptr_nonnull(w);
	s.coll_fails = false;
	ctx = make_step(&s, w);
	s.coll_fails = true;
	ck_assert_int_lt(run_step(ctx, &s), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "op 'allreduce' failed"),
		      "%s", tmm_last_error(ctx));
	s.coll_fails = false;
	ck_assert_msg(run_step(ctx, &s) == 0, "%s", tmm_last_error(ctx));
	expect_plus_one(ctx, s.h, w);
	expect_plus_one(ctx, s.z, w);
	ck_assert_msg(cudafake_races() == 0, "%s", cudafake_race(0));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	free(w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_comm_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_test(tc, no_fault_the_reader_races);
	tcase_add_test(tc, a_failed_comm_stream_call_falls_back_to_compute);
	tcase_add_test(tc, a_failed_collective_event_waits_instead);
	tcase_add_test(tc, a_failed_event_creation_waits_instead);
	tcase_add_test(tc, a_failed_wait_after_a_failed_event_names_both);
	tcase_add_test(tc, every_failed_event_call_of_a_collective_step);
	tcase_add_test(tc, a_collective_failing_after_queuing_work);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
