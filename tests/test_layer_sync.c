/* SPDX-License-Identifier: MIT */
/*
 * test_layer_sync.c — vDNN's layer-synchronous offload and prefetch
 * (TMM_ACT_SYNC, lib/exec/layer_sync.c) on a small made network.
 *
 * Four layers f1..f4, each reading the map before it (x0 .. x3) and
 * writing the next, then their backward ops b4..b1, each reading its
 * layer's input map and the gradient after it.  Under vdnn-all:
 *  - the plan flags the swap-outs and prefetches of the maps SYNC, the
 *    prefetch of x1 fires right before b3 (beside the layer ahead of b2);
 *  - x1's copy runs beside f2, its last forward reader, and f3 does not
 *    start before it ends: the time from f2's start to f3's is the copy,
 *    which f2's compute does not cover, so the difference is a stall;
 *  - x1's prefetch runs beside b3 and b2 does not start before it ends;
 *  - every byte is the unconstrained run's (policy none).
 * The same plan without the flags (Capuchin's decoupled swap) lets f3
 * start when f2 ends.  Short of room, a SYNC prefetch evicts to make it
 * where a decoupled one is skipped.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/sim_profile.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "lib/record/tracker.h"

#define LAYERS 4
#define ELEMS (1024 * 1024) /* 4 MiB maps: a copy outlasts the ops */
#define PROFILE "p100-pcie3-16g"
#define CONFIG "backend=sim,mode=swap,sim_profile=" PROFILE ",policy="

/* out = mix of its inputs, order-sensitive so a stale byte shows. */
static int mix(void *const *in, void *const *out, void *user, void *stream)
{
	uint32_t salt = (uint32_t)(uintptr_t)user;
	const uint32_t *a = in[0], *b = salt < 100 ? in[0] : in[1];
	uint32_t *o = out[0];

	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++)
		o[k] = ((a[k] << 7) | (a[k] >> 25)) ^
		       (b[k] * 2246822519u + k + salt);
	return 0;
}

/* f2's cost hint: about half of a map's copy on the P100. */
#define F2_FLOPS 1.0e9

struct net {
	tmm_ctx *ctx;
	tmm_tensor x[LAYERS + 1], g[LAYERS + 1];
};

/* What iteration `it` saw around f2 and b3. */
struct seen {
	uint64_t f2_start, f3_start, b3_start, b2_start;
	uint64_t f2_stall, b3_stall; /* stall_ns while each ran */
	uint64_t d2h_end, h2d_end;   /* engine clocks after f2, after b3 */
	enum tmm_tstate x1_after_f2;
};

static uint64_t now(tmm_ctx *ctx)
{
	return ctx->be.ops->now_ns(&ctx->be);
}

static void run_op(struct net *n, const char *name, tmm_tensor a,
		   tmm_tensor b, tmm_tensor out, unsigned flags, double flops,
		   unsigned salt)
{
	tmm_tensor in[2] = { a, b };
	tmm_op op = { .name = name, .kind = TMM_OP_CONV,
		      .flags = TMM_OP_PURE | flags,
		      .inputs = in, .n_inputs = b.id ? 2 : 1, .outputs = &out,
		      .n_outputs = 1, .run = mix,
		      .user = (void *)(uintptr_t)salt,
		      .cost = { flops, 8.0 * ELEMS } };

	ck_assert_msg(tmm_run(n->ctx, &op) == 0, "%s: %s", name,
		      tmm_last_error(n->ctx));
}

static void iteration(struct net *n, struct seen *s)
{
	static uint32_t seed[ELEMS];
	struct tmm_sim_counters c;
	char name[16]; /* "b" and any int, for -Wformat-truncation */

	for (uint32_t k = 0; k < ELEMS; k++)
		seed[k] = k * 40503u + 17u;
	ck_assert_int_eq(tmm_iteration_begin(n->ctx), 0);
	ck_assert_int_eq(tmm_tensor_write(n->ctx, n->x[0], 0, seed,
					  sizeof(seed)), 0);
	for (int i = 1; i <= LAYERS; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		if (i == 2) {
			s->f2_start = now(n->ctx);
			s->f2_stall = n->ctx->c.stall_ns;
		}
		if (i == 3)
			s->f3_start = now(n->ctx);
		run_op(n, name, n->x[i - 1], TMM_TENSOR_NULL, n->x[i], 0,
		       i == 2 ? F2_FLOPS : 1e6, (unsigned)i);
		if (i == 2) {
			s->f2_stall = n->ctx->c.stall_ns - s->f2_stall;
			ck_assert_int_eq(tmm_sim_get_counters(&n->ctx->be, &c),
					 0);
			s->d2h_end = c.engine_ns[TMM_ENGINE_D2H];
			s->x1_after_f2 = tmm_tensor_lookup(n->ctx, n->x[1],
							   "test")->state;
		}
	}
	/* g4 = d loss: the output map itself stands for it. */
	for (int i = LAYERS; i >= 1; i--) {
		tmm_tensor grad_in = i == LAYERS ? n->x[LAYERS] : n->g[i];

		snprintf(name, sizeof(name), "b%d", i);
		if (i == 3) {
			s->b3_start = now(n->ctx);
			s->b3_stall = n->ctx->c.stall_ns;
		}
		if (i == 2)
			s->b2_start = now(n->ctx);
		run_op(n, name, n->x[i - 1], grad_in, n->g[i - 1],
		       TMM_OP_BACKWARD, i == 3 ? F2_FLOPS : 1e6,
		       100u + (unsigned)i);
		if (i == 3) {
			s->b3_stall = n->ctx->c.stall_ns - s->b3_stall;
			ck_assert_int_eq(tmm_sim_get_counters(&n->ctx->be, &c),
					 0);
			s->h2d_end = c.engine_ns[TMM_ENGINE_H2D];
		}
	}
	ck_assert_int_eq(tmm_iteration_end(n->ctx), 0);
}

static void net_open(struct net *n, const char *policy)
{
	char cfg[200];

	snprintf(cfg, sizeof(cfg), CONFIG "%s", policy);
	ck_assert_msg(tmm_ctx_create(&n->ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	for (int i = 0; i <= LAYERS; i++) {
		ck_assert_int_eq(tmm_tensor_create(n->ctx, ELEMS * 4,
						   TMM_ACTIVATION, "x",
						   &n->x[i]), 0);
		ck_assert_int_eq(tmm_tensor_create(n->ctx, ELEMS * 4,
						   TMM_ACTIVATION, "g",
						   &n->g[i]), 0);
	}
}

/* Every map and gradient, read back. */
static uint32_t *net_bytes(struct net *n)
{
	uint32_t *b = calloc((size_t)2 * (LAYERS + 1) * ELEMS, 4);

	ck_assert_ptr_nonnull(b);
	for (int i = 0; i <= LAYERS; i++) {
		ck_assert_int_eq(tmm_tensor_read(n->ctx, n->x[i], 0,
						 b + (size_t)2 * i * ELEMS,
						 ELEMS * 4), 0);
		if (i == LAYERS)
			break; /* no g4: x4 stands for it */
		ck_assert_int_eq(tmm_tensor_read(n->ctx, n->g[i], 0,
						 b + (size_t)(2 * i + 1) *
							 ELEMS,
						 ELEMS * 4), 0);
	}
	return b;
}

/* The plan action of `type` on the tensor of net handle h, or NULL. */
static const struct tmm_plan_action *action_on(tmm_ctx *ctx, tmm_tensor h,
					       enum tmm_action_type type)
{
	const struct tmm_plan *p = tmm_guide_plan(ctx);
	uint64_t key = tmm_tracker_key(ctx, tmm_tensor_lookup(ctx, h, "t"));

	for (uint32_t i = 0; p && i < p->n_actions; i++)
		if (p->actions[i].key == key && p->actions[i].type == type)
			return &p->actions[i];
	return NULL;
}

/* The name of the op of access k. */
static const char *op_name(const struct tmm_trace *t, uint32_t k)
{
	return tmm_trace_str(t, t->ops[t->accesses[k].op].name);
}

START_TEST(vdnn_offload_and_prefetch_are_layer_synchronous)
{
	const struct tmm_sim_profile *prof = tmm_sim_profile_find(PROFILE);
	uint64_t out_ns = tmm_sim_copy_ns(prof, ELEMS * 4, 0);
	uint64_t in_ns = tmm_sim_copy_ns(prof, ELEMS * 4, 1);
	uint64_t f2_ns = tmm_sim_op_ns(prof, F2_FLOPS, 8.0 * ELEMS);
	const struct tmm_plan_action *ev, *pf;
	const struct tmm_trace *first;
	struct net n, ref;
	struct seen s;
	uint32_t *got, *want;

	/* The premise: f2 (and b3) cover part of a copy, not all. */
	ck_assert_uint_lt(f2_ns, out_ns);
	ck_assert_uint_lt(f2_ns, in_ns);
	net_open(&n, "vdnn-all");
	for (int it = 0; it < 3; it++)
		iteration(&n, &s);
	ev = action_on(n.ctx, n.x[1], TMM_ACT_EVICT_SWAP);
	pf = action_on(n.ctx, n.x[1], TMM_ACT_PREFETCH);
	ck_assert_ptr_nonnull(ev);
	ck_assert_ptr_nonnull(pf);
	ck_assert_uint_eq(ev->flags, TMM_ACT_SYNC);
	ck_assert_uint_eq(pf->flags, TMM_ACT_SYNC);
	/* The prefetch fires at the last access before b3 (b4's). */
	first = tmm_tracker_first(n.ctx);
	ck_assert_str_eq(op_name(first, pf->trigger), "b4");
	ck_assert_str_eq(op_name(first, pf->trigger + 1), "b3");
	/* Forward: the copy ran beside f2 and f3 waited for it. */
	ck_assert_uint_eq(s.d2h_end, s.f2_start + out_ns);
	ck_assert_uint_eq(s.f3_start, s.d2h_end);
	ck_assert_uint_eq(s.f2_stall, out_ns - f2_ns);
	ck_assert_int_eq(s.x1_after_f2, TMM_TS_HOST);
	/* Backward: the prefetch ran beside b3 and b2 waited for it. */
	ck_assert_uint_eq(s.h2d_end, s.b3_start + in_ns);
	ck_assert_uint_eq(s.b2_start, s.h2d_end);
	ck_assert_uint_ge(s.b3_stall, in_ns - f2_ns);
	ck_assert_uint_eq(n.ctx->c.plan_actions_skipped, 0);
	ck_assert_uint_eq(n.ctx->c.plan_divergences, 0);
	/* Bit for bit the unconstrained run's. */
	net_open(&ref, "none");
	for (int it = 0; it < 3; it++)
		iteration(&ref, &s);
	got = net_bytes(&n);
	want = net_bytes(&ref);
	ck_assert_mem_eq(got, want, (size_t)2 * (LAYERS + 1) * ELEMS * 4);
	free(got);
	free(want);
	tmm_ctx_destroy(ref.ctx);
	tmm_ctx_destroy(n.ctx);
}
END_TEST

/* The same plan, its flags taken off: f3 starts when f2 ends, and the
 * copy starts then too (Capuchin §5.3's decoupled swap). */
START_TEST(without_sync_the_swap_is_decoupled)
{
	const struct tmm_sim_profile *prof = tmm_sim_profile_find(PROFILE);
	uint64_t out_ns = tmm_sim_copy_ns(prof, ELEMS * 4, 0);
	uint64_t f2_ns = tmm_sim_op_ns(prof, F2_FLOPS, 8.0 * ELEMS);
	struct tmm_plan plan;
	struct net n;
	struct seen s;

	net_open(&n, "vdnn-all");
	iteration(&n, &s);
	ck_assert_int_eq(tmm_plan_copy(&plan, tmm_guide_plan(n.ctx)), 0);
	for (uint32_t i = 0; i < plan.n_actions; i++)
		plan.actions[i].flags = 0;
	ck_assert_int_eq(tmm_guide_install(n.ctx, &plan), 0);
	tmm_plan_free(&plan);
	iteration(&n, &s);
	ck_assert_uint_eq(s.f3_start, s.f2_start + f2_ns);
	ck_assert_uint_eq(s.f2_stall, 0);
	ck_assert_uint_eq(s.d2h_end, s.f2_start + f2_ns + out_ns);
	tmm_ctx_destroy(n.ctx);
}
END_TEST

/* One guided iteration under vdnn-all at `budget`, its plan's flags kept
 * or taken off: the iteration's statistics, and every byte after it. */
static void guided_at(const char *budget, bool sync, struct tmm_stats *d,
		      uint32_t **bytes)
{
	struct tmm_stats a = { .version = TMM_STATS_VERSION }, b = a;
	struct tmm_plan plan;
	char policy[80];
	struct net n;
	struct seen s;

	snprintf(policy, sizeof(policy), "vdnn-all,budget=%s,log=error",
		 budget);
	net_open(&n, policy);
	iteration(&n, &s);
	ck_assert_int_eq(tmm_plan_copy(&plan, tmm_guide_plan(n.ctx)), 0);
	for (uint32_t i = 0; i < plan.n_actions && !sync; i++)
		plan.actions[i].flags = 0;
	ck_assert_int_eq(tmm_guide_install(n.ctx, &plan), 0);
	tmm_plan_free(&plan);
	ck_assert_int_eq(tmm_stats_get(n.ctx, &a), 0);
	iteration(&n, &s);
	ck_assert_int_eq(tmm_stats_get(n.ctx, &b), 0);
	d->passive_evictions = b.passive_evictions - a.passive_evictions;
	d->plan_actions_skipped =
		b.plan_actions_skipped - a.plan_actions_skipped;
	d->prefetches = b.prefetches - a.prefetches;
	*bytes = net_bytes(&n);
	tmm_ctx_destroy(n.ctx);
}

/*
 * vDNN allocates its prefetch like any buffer: short of room, a SYNC
 * prefetch evicts (a passive eviction, so the plan does not fit), where
 * a decoupled one is skipped and its back-access brings the tensor in.
 * 32 MiB holds the net's working set but not every prefetch early.
 */
START_TEST(a_sync_prefetch_is_not_skipped_for_want_of_room)
{
	struct tmm_stats sync = { 0 }, plain = { 0 };
	uint32_t *got_sync, *got_plain, *want;
	struct net ref;
	struct seen s;

	guided_at("32MiB", true, &sync, &got_sync);
	guided_at("32MiB", false, &plain, &got_plain);
	ck_assert_uint_eq(sync.prefetches, 3);
	ck_assert_uint_eq(sync.plan_actions_skipped, 0);
	ck_assert_uint_gt(plain.plan_actions_skipped, 0);
	ck_assert_uint_lt(plain.prefetches, 3);
	ck_assert_uint_gt(sync.passive_evictions, plain.passive_evictions);
	net_open(&ref, "none");
	for (int it = 0; it < 2; it++)
		iteration(&ref, &s);
	want = net_bytes(&ref);
	ck_assert_mem_eq(got_sync, want, (size_t)2 * (LAYERS + 1) * ELEMS * 4);
	ck_assert_mem_eq(got_plain, want,
			 (size_t)2 * (LAYERS + 1) * ELEMS * 4);
	free(got_sync);
	free(got_plain);
	free(want);
	tmm_ctx_destroy(ref.ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layer_sync");
	TCase *tc = tcase_create("vdnn");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vdnn_offload_and_prefetch_are_layer_synchronous);
	tcase_add_test(tc, without_sync_the_swap_is_decoupled);
	tcase_add_test(tc, a_sync_prefetch_is_not_skipped_for_want_of_room);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
