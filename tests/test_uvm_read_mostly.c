/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_read_mostly.c — frozen tensors in mode=uvm by prefetch
 * (uvm_read_mostly; hints/read_mostly.h, lib/move/uvm_read_mostly.h).
 *
 * A persistent tensor the iteration reads and never writes is advised
 * read-mostly by the plan: the host keeps a copy of its pages, so an
 * eviction moves none of its bytes (a clean eviction), and the device's
 * copy goes only once the eviction's prefetch has run.  Here, on the
 * simulator with backed memory: the life of one such tensor step by step
 * (its first eviction moves its bytes, there being no host copy yet; the
 * next one none; its pages leave the device when the advice is lifted,
 * not before; it comes back advised again, with its bytes); the plan's
 * advice from the trace, only for frozen tensors and only by prefetch;
 * a training loop whose frozen weights the plan evicts, which moves fewer
 * bytes with the advice than without and gives the same bytes as the
 * unconstrained run; and each failure (no memory to note an eviction,
 * the advice refused either way) losing no byte.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "hints/read_mostly.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/io/plan.h"
#include "lib/move/mover.h"
#include "lib/move/uvm_read_mostly.h"
#include "lib/record/guide_state.h"
#include "toy_ops.h"

#define BY_PREFETCH "backend=sim,sim_memory=backed,mode=uvm," \
		    "sim_profile=h100-sxm5-pcie5-80g," \
		    "uvm_swap_path=prefetch"

static struct tmm_stats stats(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/* The host waits for t's eviction, then the mover retires what it can. */
static void eviction_done(tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->copy.valid)
		ck_assert_int_eq(ctx->be.ops->event_sync(&ctx->be, &t->copy),
				 0);
	tmm_mover_progress(ctx);
}

/* A context by prefetch with w read by an op and advised read-mostly. */
static tmm_ctx *advised_weight(tmm_tensor *w, tmm_tensor *out,
			       struct tmm_tensor_rec **rw, uint32_t *want)
{
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, BY_PREFETCH ",budget=16MiB"),
			 0);
	*w = toy_weight(ctx, 11);
	ck_assert_int_eq(tmm_tensor_read(ctx, *w, 0, want, BYTES), 0);
	*rw = tmm_tensor_lookup(ctx, *w, "test");
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "o",
					   out), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, w, 1, out, 1);
	ck_assert_int_eq(tmm_mover_advise(ctx, *rw,
					  TMM_PLAN_ADVICE_READ_MOSTLY), 0);
	return ctx;
}

/* w read again by an op and by the host: its bytes; then closed, with
 * no fault left set. */
static void still_whole(tmm_ctx *ctx, tmm_tensor w, tmm_tensor out,
			const uint32_t *want)
{
	static uint32_t got[ELEMS];

	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &out, 1);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, got, BYTES), 0);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, out), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/*
 * One frozen tensor, step by step: advised once its pages are on the
 * device alone, its first eviction moves its bytes; back, advised again,
 * its second moves none and counts as clean; its pages leave the device
 * only when its eviction has run; and what reads it after gets its bytes.
 */
START_TEST(a_frozen_tensor_leaves_with_no_bytes_from_its_second_eviction)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *rw;
	struct tmm_stats a, b;
	tmm_tensor w, out;
	tmm_ctx *ctx = advised_weight(&w, &out, &rw, want);

	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY);

	/* First eviction: the host has no copy, the prefetch moves it. */
	a = stats(ctx);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	ck_assert_int_eq(rw->state, TMM_TS_HOST);
	b = stats(ctx);
	ck_assert_uint_eq(b.uvm_prefetch_out_bytes - a.uvm_prefetch_out_bytes,
			  BYTES);
	ck_assert_uint_eq(b.clean_evictions, a.clean_evictions);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY_PENDING);
	eviction_done(ctx, rw);
	ck_assert(!(rw->uvm_advised & ADVISED_READ_MOSTLY_PENDING));
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY_AWAY);
	ck_assert(!(rw->uvm_advised & ADVISED_READ_MOSTLY));

	/* Back by an op: advised again, and its bytes are its own. */
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &out, 1);
	ck_assert_int_eq(rw->state, TMM_TS_RESIDENT);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY);
	ck_assert(!(rw->uvm_advised & ADVISED_READ_MOSTLY_AWAY));

	/* Second eviction: clean, no bytes; the device's copy stays until
	 * the prefetch has run and the advice is lifted. */
	a = stats(ctx);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	b = stats(ctx);
	ck_assert_uint_eq(b.uvm_prefetch_out_bytes, a.uvm_prefetch_out_bytes);
	ck_assert_uint_eq(b.swap_out_bytes, a.swap_out_bytes);
	ck_assert_uint_eq(b.clean_evictions - a.clean_evictions, 1);
	ck_assert_uint_eq(b.clean_eviction_bytes - a.clean_eviction_bytes,
			  BYTES);
	ck_assert_uint_eq(b.device_in_use, a.device_in_use);
	eviction_done(ctx, rw);
	b = stats(ctx);
	ck_assert_uint_lt(b.device_in_use, a.device_in_use);

	still_whole(ctx, w, out, want);
}
END_TEST

/*
 * Destroyed while its advice waits to be lifted, a tensor leaves the
 * list: the mover's next progress touches no freed record (ASan would
 * say), and the context closes clean.
 */
START_TEST(a_tensor_destroyed_while_leaving_goes_off_the_list)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *rw;
	tmm_tensor w, out;
	tmm_ctx *ctx = advised_weight(&w, &out, &rw, want);

	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	ck_assert_uint_eq(ctx->uvm_leaving.n, 1);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, w), 0);
	ck_assert_uint_eq(ctx->uvm_leaving.n, 0);
	tmm_mover_progress(ctx);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, out), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* ---- failures ----------------------------------------------------------- */

/* No memory to note the eviction (host_alloc): the advice stays, the
 * device keeps its copy, and nothing is lost. */
START_TEST(no_room_on_the_list_keeps_the_advice)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *rw;
	tmm_tensor w, out;
	tmm_ctx *ctx = advised_weight(&w, &out, &rw, want);

	ck_assert_int_eq(tmm_fault_set(TMM_SITE_HOST_ALLOC "@1+"), 0);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	ck_assert_int_eq(rw->state, TMM_TS_HOST);
	ck_assert_uint_eq(ctx->uvm_leaving.n, 0);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY);
	ck_assert(!(rw->uvm_advised & ADVISED_READ_MOSTLY_PENDING));
	eviction_done(ctx, rw);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY);
	still_whole(ctx, w, out, want);
}
END_TEST

/* The driver refuses to lift the advice (advise, the second call after
 * the eviction's preferred location): the device keeps its copy, the
 * tensor is not AWAY, and comes back with its bytes. */
START_TEST(a_refused_lift_keeps_the_device_copy)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *rw;
	struct tmm_stats a, b;
	tmm_tensor w, out;
	tmm_ctx *ctx = advised_weight(&w, &out, &rw, want);

	a = stats(ctx);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_ADVISE "@2"), 0);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	eviction_done(ctx, rw);
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	b = stats(ctx);
	ck_assert_uint_eq(ctx->uvm_leaving.n, 0);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY);
	ck_assert(!(rw->uvm_advised & ADVISED_READ_MOSTLY_AWAY));
	/* Its page is still on the device: what the driver holds did not
	 * fall by it. */
	ck_assert_uint_ge(b.device_in_use, a.device_in_use);
	still_whole(ctx, w, out, want);
}
END_TEST

/* The advice is refused on the way back (advise, after the preferred
 * location is unset): the tensor comes back without it, and its next
 * eviction moves its bytes, not counted clean. */
START_TEST(a_refused_advice_on_return_costs_only_bytes)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *rw;
	struct tmm_stats a, b;
	tmm_tensor w, out;
	tmm_ctx *ctx = advised_weight(&w, &out, &rw, want);

	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	eviction_done(ctx, rw);
	ck_assert(rw->uvm_advised & ADVISED_READ_MOSTLY_AWAY);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_ADVISE "@2"), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &out, 1);
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	ck_assert_int_eq(rw->state, TMM_TS_RESIDENT);
	ck_assert(!(rw->uvm_advised & (ADVISED_READ_MOSTLY |
				       ADVISED_READ_MOSTLY_AWAY |
				       ADVISED_READ_MOSTLY_HOSTED)));
	a = stats(ctx);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rw, true), 0);
	b = stats(ctx);
	ck_assert_uint_eq(b.clean_evictions, a.clean_evictions);
	ck_assert_uint_eq(b.uvm_prefetch_out_bytes - a.uvm_prefetch_out_bytes,
			  BYTES);
	still_whole(ctx, w, out, want);
}
END_TEST

/* ---- a training loop with frozen weights ------------------------------ */

#define LAYERS 8
#define STEPS 5
/* The loop's tensors fill whole 64 KiB managed pages (the arena's unit),
 * so that the plans' bytes are the pages' (the toy ops use the first
 * BYTES of each). */
#define PAGE_BYTES (64 << 10)

/* A persistent tensor of PAGE_BYTES, its first BYTES from `salt`. */
static tmm_tensor big_weight(tmm_ctx *ctx, uint32_t salt)
{
	static uint32_t v[PAGE_BYTES / 4];
	tmm_tensor w;

	for (uint32_t k = 0; k < PAGE_BYTES / 4; k++)
		v[k] = (k + salt) * 2654435761u;
	ck_assert_int_eq(tmm_tensor_create(ctx, PAGE_BYTES, TMM_PERSISTENT,
					   "w", &w), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, v, PAGE_BYTES), 0);
	return w;
}

/*
 * One step: a forward through LAYERS frozen weights, a backward reading
 * them again in reverse (their long idle gap is what a plan evicts
 * them in), and the one trainable weight w updated.
 */
static void step(tmm_ctx *ctx, const tmm_tensor *f, tmm_tensor w)
{
	tmm_tensor a[LAYERS + 1], g[LAYERS + 1];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i <= LAYERS; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, PAGE_BYTES,
						   TMM_ACTIVATION, NULL, &a[i]),
				 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, PAGE_BYTES,
						   TMM_ACTIVATION, NULL, &g[i]),
				 0);
	}
	toy_run(ctx, "in", TMM_OP_PURE, toy_fill, &w, 1, &a[0], 1);
	for (int i = 1; i <= LAYERS; i++) {
		tmm_tensor in[2] = { a[i - 1], f[i - 1] };

		toy_run(ctx, "fwd", TMM_OP_PURE, toy_mix, in, 2, &a[i], 1);
	}
	toy_run(ctx, "loss", TMM_OP_PURE, toy_fill, &a[LAYERS], 1, &g[LAYERS],
		1);
	for (int i = LAYERS; i > 0; i--) {
		tmm_tensor in[2] = { g[i], f[i - 1] };

		toy_run(ctx, "bwd", TMM_OP_PURE | TMM_OP_BACKWARD, toy_mix, in,
			2, &g[i - 1], 1);
	}
	{
		tmm_tensor in[2] = { w, g[0] };

		toy_run(ctx, "update", TMM_OP_BACKWARD, toy_mix, in, 2, &w, 1);
	}
	for (int i = 0; i <= LAYERS; i++) {
		ck_assert_int_eq(tmm_tensor_destroy(ctx, a[i]), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, g[i]), 0);
	}
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

struct outcome {
	uint32_t w[ELEMS];
	struct tmm_stats st;
	uint32_t advised; /* the plan's read-mostly advice */
};

/* STEPS steps under `config`; w's bytes and the stats at the end. */
static void train(const char *config, struct outcome *o)
{
	const struct tmm_plan *plan;
	tmm_tensor f[LAYERS], w;
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (int i = 0; i < LAYERS; i++)
		f[i] = big_weight(ctx, 100 + (uint32_t)i);
	w = big_weight(ctx, 1);
	for (int s = 0; s < STEPS; s++)
		step(ctx, f, w);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, o->w, BYTES), 0);
	o->st = stats(ctx);
	o->advised = 0;
	plan = tmm_guide_plan(ctx);
	for (uint32_t i = 0; plan && i < plan->n_actions; i++)
		o->advised += plan->actions[i].type == TMM_ACT_ADVISE &&
			      plan->actions[i].advice ==
				      TMM_PLAN_ADVICE_READ_MOSTLY;
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/*
 * At about a third of the peak, auto's plan evicts frozen weights between
 * forward and backward.  By prefetch with the advice, the plan advises
 * each frozen weight (and not w, which the update writes), some
 * evictions are clean, fewer bytes leave by prefetch than without it,
 * and w ends with the unconstrained run's bytes; without it, and by
 * copy, there is no advice.
 */
START_TEST(frozen_weights_leave_clean_and_train_the_same_bytes)
{
	static struct outcome free_run, on, off, copy;
	char config[256];

	train("backend=sim,sim_memory=backed,mode=uvm,policy=none",
	      &free_run);
	snprintf(config, sizeof(config), "%s,policy=auto,budget=640KiB",
		 BY_PREFETCH);
	train(config, &on);
	snprintf(config, sizeof(config),
		 "%s,policy=auto,budget=640KiB,uvm_read_mostly=off",
		 BY_PREFETCH);
	train(config, &off);
	train("backend=sim,sim_memory=backed,mode=uvm,uvm_swap_path=copy,"
	      "policy=auto,budget=640KiB", &copy);
	printf("frozen weights by prefetch: %llu B out, %llu clean, last "
	       "step %.3f ms with the advice; %llu B out, %llu clean, %.3f ms "
	       "without (simulated)\n",
	       (unsigned long long)on.st.uvm_prefetch_out_bytes,
	       (unsigned long long)on.st.clean_evictions,
	       on.st.last_iteration_ns / 1e6,
	       (unsigned long long)off.st.uvm_prefetch_out_bytes,
	       (unsigned long long)off.st.clean_evictions,
	       off.st.last_iteration_ns / 1e6);
	ck_assert_mem_eq(on.w, free_run.w, BYTES);
	ck_assert_mem_eq(off.w, free_run.w, BYTES);
	ck_assert_mem_eq(copy.w, free_run.w, BYTES);
	ck_assert_uint_eq(on.advised, LAYERS);
	ck_assert_uint_eq(off.advised, 0);
	ck_assert_uint_eq(copy.advised, 0);
	ck_assert_uint_gt(off.st.uvm_prefetch_out_bytes, 0);
	ck_assert_uint_gt(on.st.clean_evictions, off.st.clean_evictions);
	ck_assert_uint_lt(on.st.uvm_prefetch_out_bytes,
			  off.st.uvm_prefetch_out_bytes);
}
END_TEST

/* The pass itself: frozen means persistent, accessed, never written. */
START_TEST(only_persistent_tensors_never_written_are_frozen)
{
	struct tmm_trace_tensor tensors[4] = {
		{ .key = 1, .kind = TMM_PERSISTENT }, /* read only */
		{ .key = 2, .kind = TMM_PERSISTENT }, /* read, then written */
		{ .key = 3, .kind = TMM_ACTIVATION }, /* read only */
		{ .key = 4, .kind = TMM_PERSISTENT }, /* not accessed */
	};
	struct tmm_trace_access acc[4] = {
		{ .tensor = 0, .flags = TMM_TA_READ },
		{ .tensor = 1, .flags = TMM_TA_READ },
		{ .tensor = 2, .flags = TMM_TA_READ },
		{ .tensor = 1, .flags = TMM_TA_WRITE },
	};
	struct tmm_trace t = { .tensors = tensors, .n_tensors = 4,
			       .accesses = acc, .n_accesses = 4 };
	struct tmm_planner_input in = { .trace = &t };
	struct tmm_plan p;
	bool frozen[4];

	tmm_frozen_tensors(&t, frozen);
	ck_assert(frozen[0] && !frozen[1] && !frozen[2] && !frozen[3]);

	/* Off unless asked; asked, one advice after the first access, and
	 * none added twice. */
	ck_assert_int_eq(tmm_plan_init(&p, &t, "test"), 0);
	ck_assert_int_eq(tmm_read_mostly_advise(&in, &p), 0);
	ck_assert_uint_eq(p.n_actions, 0);
	in.read_mostly_frozen = true;
	ck_assert_int_eq(tmm_read_mostly_advise(&in, &p), 0);
	ck_assert_int_eq(tmm_read_mostly_advise(&in, &p), 0);
	ck_assert_uint_eq(p.n_actions, 1);
	ck_assert_uint_eq(p.actions[0].type, TMM_ACT_ADVISE);
	ck_assert_uint_eq(p.actions[0].advice, TMM_PLAN_ADVICE_READ_MOSTLY);
	ck_assert_uint_eq(p.actions[0].key, 1);
	ck_assert_uint_eq(p.actions[0].trigger, 0);
	tmm_plan_free(&p);
}
END_TEST

static Suite *read_mostly_suite(void)
{
	Suite *s = suite_create("uvm_read_mostly");
	TCase *tc = tcase_create("read_mostly");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
		       a_frozen_tensor_leaves_with_no_bytes_from_its_second_eviction);
	tcase_add_test(tc, a_tensor_destroyed_while_leaving_goes_off_the_list);
	tcase_add_test(tc, no_room_on_the_list_keeps_the_advice);
	tcase_add_test(tc, a_refused_lift_keeps_the_device_copy);
	tcase_add_test(tc, a_refused_advice_on_return_costs_only_bytes);
	tcase_add_test(tc, frozen_weights_leave_clean_and_train_the_same_bytes);
	tcase_add_test(tc, only_persistent_tensors_never_written_are_frozen);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(read_mostly_suite);
}
