/* SPDX-License-Identifier: MIT */
/*
 * test_net_overlap.c — a collective's network part runs beside the
 * compute stream (issue 26 §2), on the simulator: later ops that do not
 * touch its tensors go on at once, and everything that does (an op, an
 * eviction's copy, a host read, a free) waits for its end, and no
 * earlier.
 *
 * The P100 profile's network is EDR through PCIe 3.0 (11.69 GB/s, 20 us):
 * a collective of 64 MiB holds it 20000 + 2^26 / 11.69 = 20000 +
 * 5740706.93 ns, after its launch of 5 us (toy ops have no flops or
 * bytes), which the compute stream pays alone.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"
#include "toy_ops.h"

#define LAUNCH UINT64_C(5000)
#define NET_64MIB (UINT64_C(20000) + UINT64_C(5740707))

struct scene {
	tmm_ctx *ctx;
	tmm_tensor w, g;
	uint64_t t0;	  /* the compute stream when the collective is issued */
	uint64_t net_end; /* when its network part ends */
};

static uint64_t now(tmm_ctx *ctx)
{
	return ctx->be.ops->now_ns(&ctx->be);
}

/* A weight, a gradient made from it, and the gradient's all-reduce. */
static void set_up(struct scene *s)
{
	tmm_op op;

	ck_assert_int_eq(tmm_ctx_create(&s->ctx, "backend=sim,mode=swap,"
					"sim_profile=p100-pcie3-16g"), 0);
	s->w = toy_weight(s->ctx, 0);
	ck_assert_int_eq(tmm_iteration_begin(s->ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(s->ctx, BYTES, TMM_GRADIENT, "g",
					   &s->g), 0);
	toy_run(s->ctx, "grad", TMM_OP_PURE, toy_fill, &s->w, 1, &s->g, 1);
	op = (tmm_op){ .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
		       .inputs = &s->g, .n_inputs = 1, .outputs = &s->g,
		       .n_outputs = 1, .run = toy_bump,
		       .cost = { .net_bytes = 64.0 * 1024 * 1024 } };
	s->t0 = now(s->ctx);
	ck_assert_msg(tmm_run(s->ctx, &op) == 0, "%s",
		      tmm_last_error(s->ctx));
	s->net_end = s->t0 + LAUNCH + NET_64MIB;
	/* The compute stream paid the launch alone. */
	ck_assert_uint_eq(now(s->ctx), s->t0 + LAUNCH);
}

static void tear_down(struct scene *s)
{
	ck_assert_int_eq(tmm_iteration_end(s->ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(s->ctx), 0);
}

/* An op on other tensors runs during the collective; one that reads its
 * output starts at its end. */
START_TEST(ops_wait_only_for_their_tensors)
{
	struct scene s;
	struct tmm_sim_counters c;
	tmm_tensor y, z;
	uint64_t before;

	set_up(&s);
	ck_assert_int_eq(tmm_tensor_create(s.ctx, BYTES, TMM_ACTIVATION, "y",
					   &y), 0);
	ck_assert_int_eq(tmm_tensor_create(s.ctx, BYTES, TMM_ACTIVATION, "z",
					   &z), 0);
	toy_run(s.ctx, "other", 0, toy_fill, &s.w, 1, &y, 1);
	/* Its launch and its bytes' roofline, a fraction of a launch. */
	ck_assert_uint_lt(now(s.ctx), s.t0 + 3 * LAUNCH);
	ck_assert_int_eq(tmm_sim_get_counters(&s.ctx->be, &c), 0);
	ck_assert_uint_eq(c.net_wait_ns, 0); /* no one waited yet */
	before = now(s.ctx);
	toy_run(s.ctx, "reader", 0, toy_fill, &s.g, 1, &z, 1);
	/* Its whole wait, while the collective held the link, is exposed
	 * collective time (bench_scaling's exp). */
	ck_assert_int_eq(tmm_sim_get_counters(&s.ctx->be, &c), 0);
	ck_assert_uint_eq(c.net_wait_ns, s.net_end - before);
	ck_assert_uint_ge(now(s.ctx), s.net_end + LAUNCH);
	ck_assert_uint_lt(now(s.ctx), s.net_end + 2 * LAUNCH);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, y), 0);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, z), 0);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.g), 0);
	tear_down(&s);
}
END_TEST

/* An eviction's copy of its tensor waits on the copy engine; compute
 * goes on, until an op reads the tensor. */
START_TEST(eviction_copy_waits)
{
	struct scene s;
	struct tmm_sim_counters c;
	struct tmm_tensor_rec *t;
	tmm_tensor z;

	set_up(&s);
	t = tmm_tensor_lookup(s.ctx, s.g, "test");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(tmm_mover_swap_out(s.ctx, t, false), 0);
	ck_assert_int_eq(tmm_sim_get_counters(&s.ctx->be, &c), 0);
	ck_assert_uint_gt(c.engine_ns[TMM_ENGINE_D2H], s.net_end);
	ck_assert_uint_eq(now(s.ctx), s.t0 + LAUNCH);
	/* Read again before the copy ends, it stays on the device: the
	 * reader still waits for the collective. */
	ck_assert_int_eq(tmm_tensor_create(s.ctx, BYTES, TMM_ACTIVATION, "z",
					   &z), 0);
	toy_run(s.ctx, "reader", 0, toy_fill, &s.g, 1, &z, 1);
	ck_assert_uint_ge(now(s.ctx), s.net_end + LAUNCH);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, z), 0);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.g), 0);
	tear_down(&s);
}
END_TEST

/* The host reads the reduced bytes only after the collective. */
START_TEST(host_read_waits)
{
	struct scene s;
	uint32_t *buf = malloc(BYTES);

	ck_assert_ptr_nonnull(buf);
	set_up(&s);
	ck_assert_int_eq(tmm_tensor_read(s.ctx, s.g, 0, buf, BYTES), 0);
	ck_assert_uint_ge(now(s.ctx), s.net_end);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.g), 0);
	tear_down(&s);
	free(buf);
}
END_TEST

/* Destroyed during the collective, its block waits for the end on the
 * deferred list, not the compute stream. */
START_TEST(free_defers_the_block)
{
	struct scene s;
	size_t deferred;

	set_up(&s);
	deferred = s.ctx->n_deferred;
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.g), 0);
	ck_assert_uint_eq(s.ctx->n_deferred, deferred + 1);
	ck_assert_uint_eq(now(s.ctx), s.t0 + LAUNCH);
	tear_down(&s);
}
END_TEST

/* A second collective on the same tensor waits for the first's end
 * before it reads what the first wrote. */
START_TEST(collectives_on_one_tensor_serialise)
{
	struct scene s;
	tmm_op op;

	set_up(&s);
	op = (tmm_op){ .name = "again", .kind = TMM_OP_COLLECTIVE,
		       .inputs = &s.g, .n_inputs = 1, .outputs = &s.g,
		       .n_outputs = 1, .run = toy_bump,
		       .cost = { .net_bytes = 64.0 * 1024 * 1024 } };
	ck_assert_msg(tmm_run(s.ctx, &op) == 0, "%s",
		      tmm_last_error(s.ctx));
	ck_assert_uint_eq(now(s.ctx), s.net_end + LAUNCH);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.g), 0);
	tear_down(&s);
}
END_TEST

/*
 * The n-th host allocation of a collective's run fails, for every n the
 * run makes (the network engine's bookings among them): tmm_run succeeds,
 * or fails with a message; either way the gradient reads back whole,
 * before or after the collective's bump and nothing else, and the
 * context goes.
 */
START_TEST(collective_survives_host_alloc_faults)
{
	uint32_t *before = malloc(BYTES), *after = malloc(BYTES);
	bool booking = false;
	unsigned n;

	ck_assert(before && after);
	for (n = 1; n < 64; n++) {
		tmm_ctx *ctx;
		tmm_tensor w, g;
		tmm_op op;
		char spec[32];
		unsigned long calls;
		int rc;

		ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
						"sim_profile=p100-pcie3-16g"),
				 0);
		w = toy_weight(ctx, 0);
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT,
						   "g", &g), 0);
		toy_run(ctx, "grad", TMM_OP_PURE, toy_fill, &w, 1, &g, 1);
		ck_assert_int_eq(tmm_tensor_read(ctx, g, 0, before, BYTES), 0);
		op = (tmm_op){ .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
			       .inputs = &g, .n_inputs = 1, .outputs = &g,
			       .n_outputs = 1, .run = toy_bump,
			       .cost = { .net_bytes = 64.0 * 1024 * 1024 } };
		snprintf(spec, sizeof(spec), "host_alloc@%u", n);
		ck_assert_int_eq(tmm_fault_set(spec), 0);
		rc = tmm_run(ctx, &op);
		calls = tmm_fault_calls("host_alloc");
		ck_assert_int_eq(tmm_fault_set(""), 0);
		if (rc != 0) {
			ck_assert_str_ne(tmm_last_error(ctx), "");
			booking |= strstr(tmm_last_error(ctx),
					  "network engine") != NULL;
		}
		ck_assert_int_eq(tmm_tensor_read(ctx, g, 0, after, BYTES), 0);
		for (uint32_t k = 0; k < ELEMS; k++)
			ck_assert(after[k] == before[k] ||
				  after[k] == before[k] + 1);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, g), 0);
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
		/* The run made fewer than n allocations: all were tried. */
		if (rc == 0 && calls < n)
			break;
	}
	ck_assert_uint_lt(n, 64);
	ck_assert_msg(booking, "no fault reached the network engine");
	free(before);
	free(after);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("net_overlap");
	TCase *tc = tcase_create("sim");

	tcase_add_test(tc, ops_wait_only_for_their_tensors);
	tcase_add_test(tc, eviction_copy_waits);
	tcase_add_test(tc, host_read_waits);
	tcase_add_test(tc, free_defers_the_block);
	tcase_add_test(tc, collectives_on_one_tensor_serialise);
	tcase_add_test(tc, collective_survives_host_alloc_faults);
	suite_add_tcase(su, tc);
	return check_run_all(srunner_create(su));
}
