/* SPDX-License-Identifier: MIT */
/*
 * test_late_prefetch_fake.c — a prefetch is late when the compute engine
 * reaches its back-access before the copy ends, as the device tells, not
 * when the host finds the copy in flight (lib/exec/late_prefetch.h).
 *
 * On the CUDA test double with a lagging device (CUDAFAKE_LAG), the host
 * runs ahead as it does on a GPU, and the double's device timeline runs
 * the copy stream beside the compute stream.  One iteration: x made and
 * read, swapped out, three heavy ops, then x read again.
 *  - Prefetched at the first heavy op, x's copy (0.42 ms) ends long
 *    before compute reaches its reader (2.5 ms of fills), though the
 *    host, ahead, finds it in flight: not late.
 *  - Prefetched right before its reader, after the host caught up with
 *    the device: the reader waits for the copy, late by about its time.
 *  - The wait's measure failing counts it late, as the host sees it,
 *    says so once, and loses no byte.
 * Either way the reader sees x's bytes.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/exec/late_prefetch.h"
#include "lib/io/plan.h"
#include "lib/record/guide_state.h"
#include "lib/record/tracker.h"
#include "tensormm.h"

#define X_BYTES ((size_t)4 << 20) /* 0.42 ms on the double's link */
#define Z_BYTES ((size_t)8 << 20) /* a heavy op: 0.84 ms of fill */
#define Y_BYTES ((size_t)64 << 10)
#define X_FILL 0x5a

enum { MAKE_X, READ_X, CATCH_UP, HEAVY1, HEAVY2, HEAVY3, LAST, USE_X, OPS };

static bool sync_at_last; /* the op before the reader catches up */
static unsigned in_flight_at_use; /* waits noted when the reader ran */
static tmm_ctx *the_ctx;

static int fill(void *out, int value, size_t bytes, void *stream)
{
	return cudaMemsetAsync(out, value, bytes, (cudaStream_t)stream) ==
			       cudaSuccess
		       ? 0
		       : -5;
}

static int op_run(void *const *in, void *const *out, void *user,
		  void *stream)
{
	int which = (int)(intptr_t)user;

	switch (which) {
	case MAKE_X:
		return fill(out[0], X_FILL, X_BYTES, stream);
	case READ_X:
		return fill(out[0], 1, Y_BYTES, stream);
	case CATCH_UP:
		/* The host catches up with the device: the swap-out ends
		 * and is retired after this op. */
		if (fill(out[0], 2, Y_BYTES, stream) < 0 ||
		    cudaDeviceSynchronize() != cudaSuccess)
			return -5;
		return 0;
	case HEAVY1:
	case HEAVY2:
	case HEAVY3:
		return fill(out[0], which, Z_BYTES, stream);
	case LAST:
		if (fill(out[0], 3, Y_BYTES, stream) < 0)
			return -5;
		if (sync_at_last && cudaDeviceSynchronize() != cudaSuccess)
			return -5;
		return 0;
	case USE_X:
		in_flight_at_use = the_ctx->guide->n_late;
		return cudaMemcpyAsync(out[0], in[0], Y_BYTES,
				       cudaMemcpyDefault,
				       (cudaStream_t)stream) == cudaSuccess
			       ? 0
			       : -5;
	}
	return -22;
}

struct work {
	tmm_ctx *ctx;
	tmm_tensor x, y, z;
	tmm_op op[OPS];
};

static void work_open(struct work *w)
{
	static const char *const names[OPS] = {
		"make_x", "read_x", "catch_up", "heavy1",
		"heavy2", "heavy3", "last",	"use_x"
	};

	ck_assert_int_eq(setenv("CUDAFAKE_LAG", "1000000", 1), 0);
	cudafake_reset(7);
	ck_assert_msg(tmm_ctx_create(&w->ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=off,stats_shm=off,"
				     "policy=passive,replan_drift=0") == 0,
		      "%s", tmm_last_error(NULL));
	the_ctx = w->ctx;
	ck_assert_int_eq(tmm_tensor_create(w->ctx, X_BYTES, TMM_ACTIVATION,
					   "x", &w->x), 0);
	ck_assert_int_eq(tmm_tensor_create(w->ctx, Y_BYTES, TMM_ACTIVATION,
					   "y", &w->y), 0);
	ck_assert_int_eq(tmm_tensor_create(w->ctx, Z_BYTES, TMM_ACTIVATION,
					   "z", &w->z), 0);
	for (int i = 0; i < OPS; i++) {
		tmm_op *op = &w->op[i];

		*op = (tmm_op){ .name = names[i], .run = op_run,
				.user = (void *)(intptr_t)i, .n_outputs = 1 };
		op->outputs = i == MAKE_X		   ? &w->x
			      : i >= HEAVY1 && i <= HEAVY3 ? &w->z
							   : &w->y;
		if (i == READ_X || i == USE_X) {
			op->inputs = &w->x;
			op->n_inputs = 1;
		}
		op->cost.bytes = i == MAKE_X ? X_BYTES
				 : i >= HEAVY1 && i <= HEAVY3 ? Z_BYTES
							      : Y_BYTES;
	}
}

/* One iteration; checks that the reader saw x's bytes.  With `fault`,
 * the reader's first stream wait fails: the measured one. */
static void iteration(struct work *w, bool fault)
{
	uint8_t got[256];

	ck_assert_int_eq(tmm_iteration_begin(w->ctx), 0);
	for (int i = 0; i < OPS; i++) {
		if (fault && i == USE_X)
			ck_assert_int_eq(tmm_fault_set("cudaStreamWaitEvent"),
					 0);
		ck_assert_msg(tmm_run(w->ctx, &w->op[i]) == 0, "%s: %s",
			      w->op[i].name, tmm_last_error(w->ctx));
	}
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(tmm_iteration_end(w->ctx), 0);
	ck_assert_int_eq(tmm_tensor_read(w->ctx, w->y, 0, got, sizeof(got)),
			 0);
	for (size_t i = 0; i < sizeof(got); i++)
		ck_assert_uint_eq(got[i], X_FILL);
	ck_assert_msg(cudafake_races() == 0, "%s", cudafake_race(0));
}

/* The access of op `op` to tensor t in the first trace. */
static uint32_t access_of(struct work *w, int op, tmm_tensor t)
{
	const struct tmm_trace *tr = tmm_tracker_first(w->ctx);
	uint64_t key = tmm_tracker_key(w->ctx, tmm_tensor_find(w->ctx, t));

	for (uint32_t k = 0; k < tr->n_accesses; k++)
		if (tr->accesses[k].op == (uint32_t)op &&
		    tr->tensors[tr->accesses[k].tensor].key == key)
			return k;
	ck_abort_msg("op %d does not access that tensor", op);
	return 0;
}

/* Measures an iteration, then follows a plan that swaps x out after
 * read_x and prefetches it at `trigger_op` (with `fault`, see
 * iteration). */
static void follow_plan(struct work *w, int trigger_op, bool fault)
{
	uint64_t key;
	struct tmm_plan plan;
	uint32_t trigger;

	iteration(w, false);
	key = tmm_tracker_key(w->ctx, tmm_tensor_find(w->ctx, w->x));
	trigger = trigger_op == HEAVY1 ? access_of(w, HEAVY1, w->z)
				       : access_of(w, LAST, w->y);
	ck_assert_int_eq(tmm_plan_init(&plan, tmm_tracker_first(w->ctx),
				       "late"), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP,
				      access_of(w, READ_X, w->x), key,
				      access_of(w, USE_X, w->x), 0), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_PREFETCH, trigger, key,
				      access_of(w, USE_X, w->x), 0), 0);
	tmm_plan_sort(&plan);
	ck_assert_msg(tmm_guide_install(w->ctx, &plan) == 0, "%s",
		      tmm_last_error(w->ctx));
	tmm_plan_free(&plan);
	in_flight_at_use = 0;
	iteration(w, fault);
}

static void work_close(struct work *w)
{
	ck_assert_int_eq(tmm_ctx_destroy(w->ctx), 0);
	the_ctx = NULL;
	ck_assert_int_eq(unsetenv("CUDAFAKE_LAG"), 0);
}

START_TEST(an_early_prefetch_the_host_finds_in_flight_is_not_late)
{
	struct work w;

	sync_at_last = false;
	work_open(&w);
	follow_plan(&w, HEAVY1, false);
	ck_assert_uint_eq(w.ctx->c.prefetches, 1);
	/* The host, ahead of the device, found the copy in flight ... */
	ck_assert_uint_eq(in_flight_at_use, 1);
	/* ... which the device had ended long before. */
	ck_assert_uint_eq(w.ctx->c.prefetch_late, 0);
	ck_assert_uint_eq(w.ctx->c.prefetch_wait_ns, 0);
	ck_assert_uint_eq(w.ctx->guide->plan.actions[1].late, 0);
	work_close(&w);
}
END_TEST

START_TEST(a_prefetch_the_reader_waits_for_is_late_by_its_wait)
{
	struct work w;
	uint32_t k;

	sync_at_last = true;
	work_open(&w);
	follow_plan(&w, LAST, false);
	ck_assert_uint_eq(in_flight_at_use, 1);
	ck_assert_uint_eq(w.ctx->c.prefetch_late, 1);
	/* The whole copy, 0.42 ms, less the small fill queued after it. */
	ck_assert_uint_gt(w.ctx->c.prefetch_wait_ns, 300000);
	ck_assert_uint_le(w.ctx->c.prefetch_wait_ns, 430000);
	for (k = 0; k < w.ctx->guide->plan.n_actions; k++)
		if (w.ctx->guide->plan.actions[k].type == TMM_ACT_PREFETCH)
			break;
	ck_assert_uint_eq(w.ctx->guide->plan.actions[k].late, 1);
	work_close(&w);
}
END_TEST

START_TEST(a_wait_not_measured_counts_late_and_loses_nothing)
{
	struct work w;

	sync_at_last = false;
	work_open(&w);
	follow_plan(&w, HEAVY1, true);
	ck_assert_uint_eq(in_flight_at_use, 0);
	/* As the host saw it: in flight, so late; no time measured. */
	ck_assert_uint_eq(w.ctx->c.prefetch_late, 1);
	ck_assert_uint_eq(w.ctx->c.prefetch_wait_ns, 0);
	ck_assert(w.ctx->guide->late_unmeasured_said);
	work_close(&w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("late_prefetch_fake");
	TCase *tc = tcase_create("late");

	tcase_add_test(tc,
		       an_early_prefetch_the_host_finds_in_flight_is_not_late);
	tcase_add_test(tc, a_prefetch_the_reader_waits_for_is_late_by_its_wait);
	tcase_add_test(tc, a_wait_not_measured_counts_late_and_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
