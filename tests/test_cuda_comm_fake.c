/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_comm_fake.c — a collective's callback runs on the cuda
 * backend's comm stream, beside the compute stream (issue 26 §2), on the
 * CUDA test double, whose race detector checks the order: the comm stream
 * first waits for the compute stream's work, and a later kernel that
 * reads the collective's output without waiting for collective_event is
 * a race, with the wait not.
 */
#include "config.h"
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm_twins.h"
#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_cuda.h"
#include "lib/base/tunables.h"
#include "lib/core/context.h"
#include "tensormm.h"

#define BYTES COMM_TWIN_BYTES

/*
 * grad writes p on the compute stream, the collective reads and writes
 * it on the comm stream, a reader reads it on the compute stream, after
 * collective_event when `wait`.  Returns the races found.
 */
static unsigned collective_then_read(bool wait)
{
	struct tmm_backend be;
	struct tmm_config cfg;
	struct tmm_cost coll = { .net_bytes = BYTES };
	tmm_event ev = { 0 };
	void *p, *comm;
	unsigned races;

	comm_twin_open(&be, &cfg);
	ck_assert_int_eq(be.ops->dev_alloc(&be, BYTES, &p), 0);
	cudafake_reset(7);
	ck_assert_int_eq(be.ops->kernel_begin(&be, NULL), 0);
	comm_twin_launch(be.ops->compute_stream(&be), p, true);
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, NULL), 0);

	ck_assert_int_eq(be.ops->kernel_begin(&be, &coll), 0);
	comm = be.ops->comm_stream(&be);
	ck_assert_ptr_nonnull(comm);
	ck_assert_ptr_ne(comm, be.ops->compute_stream(&be));
	comm_twin_launch(comm, p, true);
	ck_assert_int_eq(be.ops->kernel_end(&be, &coll, NULL), 0);
	ck_assert_int_eq(be.ops->collective_event(&be, &ev), 0);
	ck_assert(ev.valid);
	ck_assert_int_eq(ev.engine, TMM_ENGINE_NET);

	if (wait)
		ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_COMPUTE,
						     &ev),
				 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, NULL), 0);
	comm_twin_launch(be.ops->compute_stream(&be), p, false);
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, NULL), 0);
	be.ops->event_release(&be, &ev);
	races = cudafake_races();
	be.ops->dev_free(&be, p, BYTES);
	be.ops->close(&be);
	return races;
}

START_TEST(a_read_without_the_wait_races)
{
	/* Only the reader races with the collective: the collective itself
	 * is ordered after grad by comm_stream's wait. */
	ck_assert_uint_eq(collective_then_read(false), 1);
}
END_TEST

START_TEST(a_read_after_the_wait_does_not)
{
	ck_assert_uint_eq(collective_then_read(true), 0);
}
END_TEST

/* ---- the runtime: tmm_run hands a collective the comm stream --------- */

struct seen {
	void *stream;
};

static int op_write(void *const *in, void *const *out, void *user,
		    void *stream)
{
	(void)in;
	if (user)
		((struct seen *)user)->stream = stream;
	comm_twin_launch(stream, out[0], true);
	return 0;
}

static int op_read(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)user;
	comm_twin_launch(stream, in[0], false);
	comm_twin_launch(stream, out[0], true);
	return 0;
}

START_TEST(tmm_run_orders_a_collectives_readers)
{
	struct seen coll_seen = { 0 }, grad_seen = { 0 };
	uint8_t *out = malloc(BYTES);
	tmm_tensor g, z;
	tmm_ctx *ctx;
	tmm_op op;

	ck_assert_ptr_nonnull(out);
	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=off,stats_shm=off,"
				     "policy=passive") == 0,
		      "%s", tmm_last_error(NULL));
	cudafake_reset(3);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT, "g",
					   &g), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "z",
					   &z), 0);
	op = (tmm_op){ .name = "grad", .outputs = &g, .n_outputs = 1,
		       .run = op_write, .user = &grad_seen };
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	op = (tmm_op){ .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
		       .inputs = &g, .n_inputs = 1, .outputs = &g,
		       .n_outputs = 1, .run = op_write, .user = &coll_seen,
		       .cost = { .net_bytes = BYTES } };
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_ptr_nonnull(coll_seen.stream);
	ck_assert_ptr_ne(coll_seen.stream, grad_seen.stream);
	op = (tmm_op){ .name = "reader", .inputs = &g, .n_inputs = 1,
		       .outputs = &z, .n_outputs = 1, .run = op_read };
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	/* The host reads the collective's output after it too. */
	ck_assert_msg(tmm_tensor_read(ctx, g, 0, out, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_msg(cudafake_races() == 0, "%s", cudafake_race(0));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	free(out);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_comm_fake");
	TCase *tc = tcase_create("comm");

	tcase_add_test(tc, a_read_without_the_wait_races);
	tcase_add_test(tc, a_read_after_the_wait_does_not);
	tcase_add_test(tc, tmm_run_orders_a_collectives_readers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
