/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_kept.c — mode=uvm's kept blocks (uvm_keep, lib/mem/uvm_arena.h).
 *
 * A managed block whose pages are on the device outlives its tensor
 * populated and goes to the next allocation of its size, so that the
 * next tensor there makes no pages afresh (issue #19).  The arena's own
 * rules are tested in test_uvm_arena.c.  Here a context: a tensor
 * swapped out by copy leaves its
 * pages to the next tensor of its size and comes back into a range of
 * its own, bytes intact; outside an iteration, or with uvm_keep=off, its
 * range stays its own, discarded.  A training loop whose kept blocks are
 * trimmed under uvm_cap=library trains swap mode's bytes with every one
 * of its discards failing in turn.  Scratch (a recomputation's buffer, a
 * workspace) is kept where it fits and discarded where not.  A drop under
 * pressure hands its range on as a kept block, and discards where it
 * cannot.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/base/fault.h"
#include "lib/base/managed_page.h"
#include "lib/core/context.h"
#include "lib/mem/uvm_arena.h"
#include "lib/move/drop.h"
#include "lib/move/mover.h"
#include "toy_ops.h"

#define PAGE TMM_MANAGED_PAGE
#define CHAIN 12
#define STEPS 4

static uint64_t faults(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st.uvm_faults;
}

/* fill(w) -> out, an op whose kernel writes out whole. */
static void fill(tmm_ctx *ctx, tmm_tensor w, tmm_tensor out)
{
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &out, 1);
}

/* A new tensor, written by a kernel, its record. */
static struct tmm_tensor_rec *made(tmm_ctx *ctx, tmm_tensor w,
				   tmm_tensor *t)
{
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, NULL,
					   t), 0);
	fill(ctx, w, *t);
	return tmm_tensor_find(ctx, *t);
}

#define COPY_WAY "backend=sim,sim_memory=backed,mode=uvm," \
		 "uvm_swap_path=copy,budget=16MiB"

/*
 * Swapped out by copy inside an iteration, a tensor leaves its pages to
 * the next tensor of its size, which takes no fault, and comes back by
 * copy into a range of its own with its bytes.
 */
START_TEST(a_tensor_copied_out_leaves_its_pages_to_the_next)
{
	static uint32_t want[ELEMS], got[ELEMS];
	struct tmm_tensor_rec *ra, *rb;
	tmm_tensor w, a, b, c;
	tmm_ctx *ctx;
	uint64_t before;
	void *pa;

	ck_assert_int_eq(tmm_ctx_create(&ctx, COPY_WAY), 0);
	w = toy_weight(ctx, 3);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ra = made(ctx, w, &a);
	pa = ra->dev;
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, want, BYTES), 0);
	/* The read moved a's page to the host: make it the device's. */
	fill(ctx, w, a);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, ra, true), 0);
	ck_assert_int_eq(ra->state, TMM_TS_HOST);
	ck_assert_ptr_null(ra->dev);
	ck_assert_ptr_nonnull(ra->host);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), PAGE);
	/* b takes a's page where it is. */
	before = faults(ctx);
	rb = made(ctx, w, &b);
	ck_assert_ptr_eq(rb->dev, pa);
	ck_assert_uint_eq(faults(ctx), before);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	/* a, read on the host and then by an op, has its bytes. */
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, got, BYTES), 0);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, NULL,
					   &c), 0);
	toy_run(ctx, "copy", TMM_OP_PURE, toy_fill, &a, 1, &c, 1);
	ck_assert_ptr_nonnull(ra->dev);
	ck_assert_ptr_ne(ra->dev, pa);
	ck_assert_int_eq(ra->state, TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, got, BYTES), 0);
	ck_assert_mem_eq(got, want, BYTES);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	/* Outside an iteration the range stays b's, its page discarded. */
	fill(ctx, w, b);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, rb, true), 0);
	ck_assert_ptr_eq(rb->dev, pa);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* uvm_keep=off: a tensor swapped out by copy keeps its range. */
START_TEST(uvm_keep_off_keeps_the_range_discarded)
{
	struct tmm_tensor_rec *ra;
	tmm_tensor w, a;
	tmm_ctx *ctx;
	void *pa;

	ck_assert_int_eq(tmm_ctx_create(&ctx, COPY_WAY ",uvm_keep=off"), 0);
	w = toy_weight(ctx, 5);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ra = made(ctx, w, &a);
	pa = ra->dev;
	ck_assert_int_eq(tmm_mover_swap_out(ctx, ra, true), 0);
	ck_assert_ptr_eq(ra->dev, pa);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A step's tensors, destroyed inside it with their pages on the device,
 * are kept; the next step's take them without a fault; and
 * tmm_release_cached lets them go, and then the segment that held only
 * them and w, once w is gone.
 */
START_TEST(kept_blocks_serve_the_next_step_and_go_on_release)
{
	struct tmm_uvm_arena_stats st;
	struct tmm_stats pub;
	uint64_t before, freed;
	tmm_ctx *ctx;
	tmm_tensor w;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=uvm,budget=16MiB"), 0);
	w = toy_weight(ctx, 9);
	toy_chain_step(ctx, w, CHAIN);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), CHAIN * PAGE);
	before = faults(ctx);
	toy_chain_step(ctx, w, CHAIN);
	ck_assert_uint_eq(faults(ctx), before);
	tmm_uvm_arena_get_stats(ctx->uvm_arena, &st);
	ck_assert_uint_eq(st.kept_hits, CHAIN);
	/* The public counters say the same. */
	pub = (struct tmm_stats){ .version = TMM_STATS_VERSION };
	ck_assert_int_eq(tmm_stats_get(ctx, &pub), 0);
	ck_assert_uint_eq(pub.uvm_kept, CHAIN * PAGE);
	ck_assert_uint_eq(pub.uvm_kept_hits, CHAIN);
	ck_assert_int_eq(tmm_release_cached(ctx, &freed), 0);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_uint_eq(freed, 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, w), 0);
	ck_assert_int_eq(tmm_release_cached(ctx, &freed), 0);
	ck_assert_uint_gt(freed, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Trains STEPS steps under `config` into out (w's bytes); returns the
 * arena's stats at the end. */
static struct tmm_uvm_arena_stats train(const char *config, uint32_t *out)
{
	struct tmm_uvm_arena_stats st = { 0 };
	tmm_ctx *ctx;
	tmm_tensor w;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(ctx, 7);
	for (int s = 0; s < STEPS; s++)
		toy_chain_step(ctx, w, CHAIN);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, out, BYTES), 0);
	if (ctx->uvm_arena)
		tmm_uvm_arena_get_stats(ctx->uvm_arena, &st);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return st;
}

#define TIGHT "backend=sim,sim_memory=backed,mode=uvm,uvm_cap=library," \
	      "uvm_swap_path=copy,budget=320KiB"

/*
 * Under uvm_cap=library with room for five of the chain's pages, the
 * library evicts by copy, keeps the pages, and trims them: the bytes are
 * swap mode's, and stay so when each of a spread of those discards (40
 * at most) fails in turn.
 * With every discard failing, the warning names the knob that keeps no
 * block.
 */
START_TEST(refused_discards_of_kept_blocks_change_no_byte)
{
	static uint32_t ref[ELEMS], got[ELEMS];
	struct tmm_uvm_arena_stats st;
	unsigned long calls;
	char config[256];

	train("backend=sim,sim_memory=backed,mode=swap", ref);
	st = train(TIGHT, got);
	ck_assert_mem_eq(got, ref, BYTES);
	ck_assert_uint_gt(st.kept_hits, 0);
	ck_assert_uint_gt(st.kept_discards, 0);
	/* How many discards the run makes: a count past its end. */
	snprintf(config, sizeof(config), "%s,fault=%s@1000000", TIGHT,
		 TMM_SITE_DISCARD);
	train(config, got);
	calls = tmm_fault_calls(TMM_SITE_DISCARD);
	ck_assert_uint_gt(calls, 0);
	printf("a run makes %lu discards\n", calls);
	/* Each in turn, up to 40 of them spread over the run. */
	for (unsigned long n = 1; n <= calls;
	     n += calls / 40 ? calls / 40 : 1) {
		snprintf(config, sizeof(config), "%s,fault=%s@%lu,log=error",
			 TIGHT, TMM_SITE_DISCARD, n);
		st = train(config, got);
		ck_assert_msg(memcmp(got, ref, BYTES) == 0,
			      "discard %lu of %lu failing changed the bytes",
			      n, calls);
	}
	snprintf(config, sizeof(config), "%s,fault=%s@1+,log=warn", TIGHT,
		 TMM_SITE_DISCARD);
	{
		FILE *log = tmpfile();
		char text[4096] = "";
		int saved = dup(2);

		ck_assert_ptr_nonnull(log);
		ck_assert_int_ge(saved, 0);
		fflush(stderr);
		ck_assert_int_ge(dup2(fileno(log), 2), 0);
		train(config, got);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		rewind(log);
		text[fread(text, 1, sizeof(text) - 1, log)] = '\0';
		fclose(log);
		ck_assert_mem_eq(got, ref, BYTES);
		ck_assert_msg(strstr(text, "kept block") &&
				      strstr(text, "TENSORMM_UVM_KEEP=off") &&
				      strstr(text, TMM_SITE_DISCARD),
			      "the warning: %s", text);
	}
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

/*
 * A recomputation buffer or workspace (scratch) is kept for the next
 * tensor where its pages fit beside those the library holds, inside an
 * iteration, and discarded otherwise, never left populated and counted
 * by no one; a discard the backend refuses still frees its block.
 */
START_TEST(scratch_is_kept_where_it_fits_else_discarded)
{
	struct tmm_pool_block *b;
	tmm_tensor w, a, c;
	tmm_ctx *ctx;
	void *p, *again;

	/* Room: kept. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=uvm,budget=16MiB"), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_mover_alloc_scratch(ctx, 2 * PAGE, &b, &p), 0);
	tmm_mover_free_scratch(ctx, b);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 2 * PAGE);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	/* Outside an iteration: no tensor is sure to come, discarded. */
	ck_assert_int_eq(tmm_release_cached(ctx, NULL), 0);
	ck_assert_int_eq(tmm_mover_alloc_scratch(ctx, 2 * PAGE, &b, &p), 0);
	tmm_mover_free_scratch(ctx, b);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	/* No room beside two held pages under a 256 KiB budget (the
	 * driver's to keep: with the default uvm_cap=both, the library
	 * would swap a out for the buffer). */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=uvm,uvm_cap=driver,"
					      "budget=256KiB,log=error"), 0);
	w = toy_weight(ctx, 4);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	made(ctx, w, &a);
	ck_assert_int_eq(tmm_mover_alloc_scratch(ctx, 3 * PAGE, &b, &p), 0);
	tmm_mover_free_scratch(ctx, b);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	/* The same again, its discard refused: freed all the same. */
	ck_assert_int_eq(tmm_mover_alloc_scratch(ctx, 3 * PAGE, &b, &again),
			 0);
	ck_assert_ptr_eq(again, p);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_DISCARD "@1"), 0);
	tmm_mover_free_scratch(ctx, b);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_ptr_nonnull(strstr(ctx->be.error, TMM_SITE_DISCARD));
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_int_eq(tmm_mover_alloc_scratch(ctx, 3 * PAGE, &b, &again),
			 0);
	ck_assert_ptr_eq(again, p);
	tmm_mover_free_scratch(ctx, b);
	made(ctx, w, &c);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

#define PRESSED "backend=sim,sim_memory=backed,mode=uvm,uvm_cap=library," \
		"uvm_swap_path=prefetch,budget=256KiB,log=error"

static uint64_t discarded(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st.uvm_discard_bytes;
}

/* Six tensors in an iteration under four pages' budget, each swapped
 * out by prefetch keeping its range, so the arena has held more than the
 * driver's room; the last, resident and just written by a kernel, is
 * returned with its bytes in want. */
static struct tmm_tensor_rec *pressed(tmm_ctx *ctx, tmm_tensor w,
				      tmm_tensor *t, uint32_t *want)
{
	struct tmm_tensor_rec *r = NULL;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < 6; i++)
		r = made(ctx, w, &t[i]);
	ck_assert_uint_gt(tmm_uvm_arena_peak(ctx->uvm_arena), 256 * 1024);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[5], 0, want, BYTES), 0);
	fill(ctx, w, t[5]); /* its page the device's again */
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	return r;
}

/* t is regenerated by the op that reads it, with its bytes. */
static void regenerated(tmm_ctx *ctx, tmm_tensor t,
			struct tmm_tensor_rec *r, const uint32_t *want)
{
	static uint32_t got[ELEMS];
	tmm_tensor d;

	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, NULL,
					   &d), 0);
	toy_run(ctx, "copy", TMM_OP_PURE, toy_fill, &t, 1, &d, 1);
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, got, BYTES), 0);
	ck_assert_mem_eq(got, want, BYTES);
}

/* r, pressed(), dropped with `fault` injected: its page discarded where
 * it is, nothing kept, and regenerated there with its bytes; where
 * `named`, the backend's message names it.  The context is then done. */
static void dropped_in_place(tmm_ctx *ctx, struct tmm_tensor_rec *r,
			     tmm_tensor t5, const uint32_t *want,
			     const char *fault, const char *named)
{
	void *p = r->dev;
	uint64_t discards_before = discarded(ctx);

	ck_assert_int_eq(tmm_fault_set(fault), 0);
	ck_assert_int_eq(tmm_recompute_drop(ctx, r), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	if (named)
		ck_assert_ptr_nonnull(strstr(ctx->be.error, named));
	ck_assert_int_eq(r->state, TMM_TS_DROPPED);
	ck_assert_ptr_eq(r->dev, p);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), 0);
	ck_assert_uint_gt(discarded(ctx), discards_before);
	regenerated(ctx, t5, r, want);
	ck_assert_ptr_eq(r->dev, p);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/*
 * Under pressure (the arena has held more than the budget), a dropped
 * tensor's range goes back as a kept block with its page, as swap mode's
 * pool takes a dropped tensor's block: the next tensor takes the page
 * with no fault and no discard, and the dropped one is regenerated into
 * a range of its own with its bytes.  Where the block cannot be kept (the
 * kept list cannot grow, or the range's last migration cannot be waited
 * for), the drop discards the page and the range stays the tensor's, to
 * be regenerated there.
 */
START_TEST(a_pressed_drop_leaves_its_pages_to_the_next)
{
	static uint32_t want[ELEMS];
	struct tmm_tensor_rec *r, *rc;
	tmm_tensor w, t[6], c;
	uint64_t faults_before, discards_before;
	tmm_ctx *ctx;
	void *p;

	ck_assert_int_eq(tmm_ctx_create(&ctx, PRESSED), 0);
	w = toy_weight(ctx, 9);
	r = pressed(ctx, w, t, want);
	p = r->dev;
	discards_before = discarded(ctx);
	ck_assert_int_eq(tmm_recompute_drop(ctx, r), 0);
	ck_assert_int_eq(r->state, TMM_TS_DROPPED);
	ck_assert_ptr_null(r->dev);
	ck_assert_uint_eq(tmm_uvm_arena_kept(ctx->uvm_arena), PAGE);
	ck_assert_uint_eq(discarded(ctx), discards_before);
	faults_before = faults(ctx);
	rc = made(ctx, w, &c);
	ck_assert_ptr_eq(rc->dev, p);
	ck_assert_uint_eq(faults(ctx), faults_before);
	regenerated(ctx, t[5], r, want);
	ck_assert_ptr_ne(r->dev, p);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	/* Nothing kept yet, so keeping grows the list: refused. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, PRESSED), 0);
	w = toy_weight(ctx, 9);
	r = pressed(ctx, w, t, want);
	dropped_in_place(ctx, r, t[5], want, TMM_SITE_HOST_ALLOC "@1", NULL);

	/* Its range's last migration cannot be waited for: the range is
	 * not handed on to a tensor whose writes could race with it.  The
	 * drop discards in place instead (the backend orders a discard
	 * after every stream), and says why. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, PRESSED), 0);
	w = toy_weight(ctx, 9);
	r = pressed(ctx, w, t, want);
	/* Out by copy and read again before the copy ended: the tensor is
	 * resident, and the copy, still reading its range, is what the
	 * next user of the range must wait for (read_by). */
	ctx->uvm_copy_out = true;
	ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
	ck_assert_int_eq(r->state, TMM_TS_SWAPPING_OUT);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, NULL,
					   &c), 0);
	toy_run(ctx, "copy", TMM_OP_PURE, toy_fill, &t[5], 1, &c, 1);
	ck_assert(r->state == TMM_TS_RESIDENT && r->read_by.valid);
	dropped_in_place(ctx, r, t[5], want, TMM_SITE_WAIT "@1",
			 TMM_SITE_WAIT);
}
END_TEST

static Suite *kept_suite(void)
{
	Suite *s = suite_create("uvm_kept");
	TCase *tc = tcase_create("kept");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_tensor_copied_out_leaves_its_pages_to_the_next);
	tcase_add_test(tc, uvm_keep_off_keeps_the_range_discarded);
	tcase_add_test(tc, kept_blocks_serve_the_next_step_and_go_on_release);
	tcase_add_test(tc, refused_discards_of_kept_blocks_change_no_byte);
	tcase_add_test(tc, scratch_is_kept_where_it_fits_else_discarded);
	tcase_add_test(tc, a_pressed_drop_leaves_its_pages_to_the_next);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(kept_suite);
}
