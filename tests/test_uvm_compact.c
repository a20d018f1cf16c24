/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_compact.c — compaction in mode=uvm (uvm_compact,
 * lib/move/uvm_compact.h, lib/mem/uvm_window.h).
 *
 * Three kept blocks of 4 MiB lie between two small live tensors; a
 * tensor of 10 MiB, which no kept block holds, takes the kept pages, the
 * small tensors moved out of its way with their bytes, and no page of it
 * is made afresh, and a workspace of its size does the same; with
 * uvm_compact=off, or in the iteration the planners measure, it is
 * placed elsewhere and its pages are made.  A move that fails (its destination's pages, or its
 * copy) fails the op with a message that names the tunable, loses no
 * byte and leaves the arena whole: the op run again places the tensor.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/base/fault.h"
#include "lib/base/managed_page.h"
#include "lib/core/context.h"
#include "lib/mem/uvm_arena.h"
#include "toy_ops.h"

#define MIB ((size_t)1 << 20)
#define KEPT_BYTES (4 * MIB)
#define BIG_BYTES (10 * MIB)

#define CONFIG "backend=sim,sim_memory=backed,mode=uvm,policy=none," \
	       "sim_profile=h100-sxm5-pcie5-80g,budget=64MiB"

/* fill(w) -> out: the kernel writes out's first BYTES. */
static void fill(tmm_ctx *ctx, tmm_tensor w, tmm_tensor out)
{
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &out, 1);
}

static tmm_tensor made(tmm_ctx *ctx, tmm_tensor w, size_t bytes)
{
	tmm_tensor t;

	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, NULL,
					   &t), 0);
	fill(ctx, w, t);
	return t;
}

static struct tmm_stats stats(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/* The layout: kept k1, small s1, kept k2, small s2, kept k3, in address
 * order, inside an iteration; s1's and s2's bytes into want.  Returns
 * where k1 started and k3 ended. */
struct layout {
	tmm_tensor w, s1, s2;
	char *lo, *hi, *s1_at;
	uint32_t want[ELEMS];
};

static bool inside(const struct layout *l, const void *p, size_t bytes)
{
	return (const char *)p >= l->lo && (const char *)p + bytes <= l->hi;
}

static char *lowest(tmm_ctx *ctx, tmm_tensor a, tmm_tensor b)
{
	char *p = tmm_tensor_find(ctx, a)->dev, *q = tmm_tensor_find(ctx, b)->dev;

	return p < q ? p : q;
}

static char *highest_end(tmm_ctx *ctx, tmm_tensor a, tmm_tensor b)
{
	char *p = tmm_tensor_find(ctx, a)->dev, *q = tmm_tensor_find(ctx, b)->dev;

	return (p > q ? p : q) + KEPT_BYTES;
}

static void lay_out(tmm_ctx *ctx, struct layout *l, bool measuring)
{
	tmm_tensor k1, k2, k3;

	l->w = toy_weight(ctx, 11);
	/* The first iteration measures, for the planners; from the second
	 * a plan is there. */
	if (!measuring) {
		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, made(ctx, l->w,
							      BYTES)), 0);
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	}
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	k1 = made(ctx, l->w, KEPT_BYTES);
	l->s1 = made(ctx, l->w, BYTES);
	k2 = made(ctx, l->w, KEPT_BYTES);
	l->s2 = made(ctx, l->w, BYTES);
	k3 = made(ctx, l->w, KEPT_BYTES);
	/* The pool carves each from one end of the free space: the five
	 * lie side by side, the small ones between the kept ones. */
	l->lo = lowest(ctx, k1, k3);
	l->hi = l->lo + 3 * KEPT_BYTES + 2 * TMM_MANAGED_PAGE;
	ck_assert_ptr_eq(highest_end(ctx, k1, k3), l->hi);
	l->s1_at = tmm_tensor_find(ctx, l->s1)->dev;
	ck_assert(inside(l, l->s1_at, BYTES));
	ck_assert(inside(l, tmm_tensor_find(ctx, l->s2)->dev, BYTES));
	ck_assert_int_eq(tmm_tensor_read(ctx, l->s1, 0, l->want, BYTES), 0);
	/* The read may have moved the page to the host: the device's
	 * again, so that the tensors are idle there. */
	fill(ctx, l->w, l->s1);
	fill(ctx, l->w, l->s2);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, k1), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, k2), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, k3), 0);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 3 * KEPT_BYTES);
}

/* s1, s2 and big (its first BYTES) hold fill(w)'s bytes. */
static void check_bytes(tmm_ctx *ctx, const struct layout *l, tmm_tensor big)
{
	static uint32_t got[ELEMS];
	const tmm_tensor t[3] = { l->s1, l->s2, big };

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0, got, BYTES), 0);
		ck_assert_mem_eq(got, l->want, BYTES);
	}
}

/* One test's run: a context under `config`, the layout (in the measured
 * iteration where `measuring`), and a BIG_BYTES tensor made after it,
 * with the stats from just before. */
struct run {
	tmm_ctx *ctx;
	struct layout l;
	tmm_tensor big;
	struct tmm_stats before;
};

static void place_big(const char *config, bool measuring, struct run *r)
{
	ck_assert_int_eq(tmm_ctx_create(&r->ctx, config), 0);
	lay_out(r->ctx, &r->l, measuring);
	r->before = stats(r->ctx);
	r->big = made(r->ctx, r->l.w, BIG_BYTES);
}

/* Checks the bytes, and ends the iteration and the context. */
static void finish(struct run *r)
{
	check_bytes(r->ctx, &r->l, r->big);
	ck_assert_int_eq(tmm_iteration_end(r->ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(r->ctx), 0);
}

START_TEST(a_large_tensor_takes_kept_pages_moving_idle_ones)
{
	static struct run r;
	struct tmm_stats after;

	place_big(CONFIG, false, &r);
	after = stats(r.ctx);
	ck_assert_msg(inside(&r.l, tmm_tensor_find(r.ctx, r.big)->dev,
			     BIG_BYTES),
		      "the large tensor is not over the kept pages");
	ck_assert_uint_eq(after.compaction_moves - r.before.compaction_moves,
			  2);
	ck_assert_ptr_ne(tmm_tensor_find(r.ctx, r.l.s1)->dev, r.l.s1_at);
	/* Its pages were there: nothing was fetched or made for it. */
	ck_assert_uint_eq(after.uvm_faults, r.before.uvm_faults);
	ck_assert_uint_eq(after.uvm_prefetch_bytes,
			  r.before.uvm_prefetch_bytes);
	/* What its window did not cover of k3 stays kept. */
	ck_assert_uint_eq(tmm_uvm_arena_kept(r.ctx->uvm_arena),
			  3 * KEPT_BYTES + 2 * TMM_MANAGED_PAGE - BIG_BYTES);
	finish(&r);
}
END_TEST

/* uvm_compact=off, or the iteration the planners measure: nothing moves
 * and the tensor goes elsewhere.  In the measured iteration the moves'
 * time on the compute stream would be counted as the ops' (TSPLIT on
 * DenseNet-121 at 30% of its peak, simulated, then swapped where it
 * recomputes, 76 to 139 ms a step). */
START_TEST(off_or_measuring_moves_nothing)
{
	static struct run r;

	place_big(_i ? CONFIG : CONFIG ",uvm_compact=off", _i == 1, &r);
	ck_assert_uint_eq(stats(r.ctx).compaction_moves,
			  r.before.compaction_moves);
	ck_assert(!inside(&r.l, tmm_tensor_find(r.ctx, r.big)->dev,
			  BIG_BYTES));
	ck_assert_ptr_eq(tmm_tensor_find(r.ctx, r.l.s1)->dev, r.l.s1_at);
	finish(&r);
}
END_TEST

/* A workspace (tmm_workspace) of the large tensor's size takes the kept
 * pages as the tensor does. */
START_TEST(a_large_workspace_takes_kept_pages_too)
{
	static struct layout l;
	uint64_t before;
	tmm_ctx *ctx;
	size_t got;
	void *p;

	ck_assert_int_eq(tmm_ctx_create(&ctx, CONFIG), 0);
	lay_out(ctx, &l, false);
	before = stats(ctx).compaction_moves;
	ck_assert_int_eq(tmm_workspace(ctx, BIG_BYTES, BIG_BYTES, &p, &got),
			 0);
	ck_assert_uint_eq(got, BIG_BYTES);
	ck_assert(inside(&l, p, BIG_BYTES));
	ck_assert_uint_eq(stats(ctx).compaction_moves - before, 2);
	ck_assert_int_eq(tmm_workspace_release(ctx), 0);
	check_bytes(ctx, &l, l.s1);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Each of the four calls a compaction makes on the device fails in turn
 * (each move's destination pages, then its copy): the op fails naming
 * uvm_compact, the kept pages are kept, no byte is lost, and the op run
 * again places the tensor.
 */
START_TEST(a_failed_move_loses_nothing)
{
	for (int n = 1; n <= 4; n++) {
		char fault[32];
		struct layout l;
		tmm_tensor big;
		tmm_ctx *ctx;
		int rc;

		ck_assert_int_eq(tmm_ctx_create(&ctx, CONFIG), 0);
		lay_out(ctx, &l, false);
		ck_assert_int_eq(tmm_tensor_create(ctx, BIG_BYTES,
						   TMM_ACTIVATION, NULL, &big),
				 0);
		snprintf(fault, sizeof(fault), TMM_SITE_COPY "@%d", n);
		ck_assert_int_eq(tmm_fault_set(fault), 0);
		{
			tmm_op op = { .name = "fill",
				      .kind = TMM_OP_ELEMENTWISE,
				      .flags = TMM_OP_PURE, .inputs = &l.w,
				      .n_inputs = 1, .outputs = &big,
				      .n_outputs = 1, .run = toy_fill,
				      .cost = { 4.0 * ELEMS, 12.0 * ELEMS } };

			rc = tmm_run(ctx, &op);
		}
		ck_assert_int_eq(tmm_fault_set(""), 0);
		ck_assert_int_lt(rc, 0);
		ck_assert_msg(strstr(tmm_last_error(ctx), "uvm_compact=off"),
			      "fault %s: %s", fault, tmm_last_error(ctx));
		ck_assert_ptr_null(tmm_tensor_find(ctx, big)->dev);
		ck_assert_uint_ge(tmm_uvm_arena_kept(ctx->uvm_arena),
				  3 * KEPT_BYTES);
		fill(ctx, l.w, big);
		check_bytes(ctx, &l, big);
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("uvm_compact");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_large_tensor_takes_kept_pages_moving_idle_ones);
	tcase_add_loop_test(tc, off_or_measuring_moves_nothing, 0, 2);
	tcase_add_test(tc, a_large_workspace_takes_kept_pages_too);
	tcase_add_test(tc, a_failed_move_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
