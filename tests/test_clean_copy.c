/* SPDX-License-Identifier: MIT */
/*
 * test_clean_copy.c — clean copies (lib/move/clean_copy.h): a tensor that
 * came back from the host and was not written since leaves the device
 * again with no copy, and its bytes read back whole; anything that writes
 * it (an op's output, a failed op's, a host write, an acquire for
 * writing) makes the next eviction copy; views, and mode=uvm by
 * prefetch, keep none; the kept buffers go with their tensors and when
 * pinned memory runs short.  The tests of what makes a copy run in swap
 * mode and in mode=uvm by its copy way (uvm_path.h), which keeps clean
 * copies as swap mode does.  On backed simulated memory, so that bytes
 * are real.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/io/trace_read.h"
#include "lib/move/mover.h"
#include "tensormm.h"

#define N 4096

static tmm_ctx *ctx;
static uint8_t data[N], back[N];
/* The fixture's mode: "swap", or mode=uvm by copy. */
static const char *fixture_mode;

static void open_ctx(const char *mode)
{
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,mode=%s,sim_memory=backed,budget=64KiB", mode);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (unsigned k = 0; k < N; k++)
		data[k] = (uint8_t)(k * 13 + 5);
}

static void setup_swap(void)
{
	fixture_mode = "swap";
	open_ctx(fixture_mode);
}

static void setup_uvm_copy(void)
{
	fixture_mode = "uvm,uvm_swap_path=copy";
	open_ctx(fixture_mode);
}

static void teardown(void)
{
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
}

static struct tmm_tensor_rec *make(tmm_tensor *h, enum tmm_kind kind)
{
	ck_assert_int_eq(tmm_tensor_create(ctx, N, kind, "t", h), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, *h, 0, data, N), 0);
	return tmm_tensor_lookup(ctx, *h, "test");
}

/* t, on the host, comes back, settled: by a swap-in, or in mode=uvm by
 * the plan's prefetch (its accesses bring it otherwise). */
static void bring_in(struct tmm_tensor_rec *t)
{
	if (ctx->mode == TMM_MODE_UVM)
		ck_assert_int_eq(tmm_mover_prefetch(ctx, t), 0);
	else
		ck_assert_int_eq(tmm_mover_swap_in(ctx, t), 0);
	ck_assert_int_eq(tmm_mover_settle(ctx, t), 0);
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT);
}

/* Out (with its copy) and back in, settled: t is resident again. */
static void round_trip(struct tmm_tensor_rec *t)
{
	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, true), 0);
	ck_assert_int_eq(t->state, TMM_TS_HOST);
	bring_in(t);
}

static void reads_back(tmm_tensor h, const uint8_t *want)
{
	memset(back, 0, N);
	ck_assert_int_eq(tmm_tensor_read(ctx, h, 0, back, N), 0);
	ck_assert_mem_eq(back, want, N);
}

/* Evicts t and says whether that copied its bytes. */
static bool eviction_copies(struct tmm_tensor_rec *t)
{
	uint64_t copies = ctx->c.swap_out_count;
	uint64_t clean = ctx->c.clean_evictions;

	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, true), 0);
	ck_assert_int_eq(t->state, TMM_TS_HOST);
	/* One or the other, never both. */
	ck_assert_uint_eq(ctx->c.swap_out_count - copies +
				  ctx->c.clean_evictions - clean,
			  1);
	return ctx->c.swap_out_count > copies;
}

START_TEST(an_unwritten_tensor_leaves_with_no_copy)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	round_trip(t);
	ck_assert_ptr_nonnull(t->clean_host);
	ck_assert_ptr_null(t->host);
	ck_assert_uint_eq(ctx->c.host_in_use, N); /* the kept buffer */
	ck_assert(!eviction_copies(t));
	ck_assert_ptr_null(t->clean_host);
	/* The buffer is its host copy again; in swap mode its block went
	 * (mode=uvm may keep its range, its pages discarded). */
	ck_assert_ptr_nonnull(t->host);
	if (ctx->mode != TMM_MODE_UVM)
		ck_assert_ptr_null(t->dev);
	reads_back(h, data);
	/* Again: in, out clean, and the bytes still whole. */
	bring_in(t);
	ck_assert(!eviction_copies(t));
	reads_back(h, data);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.clean_evictions, 2);
	ck_assert_uint_eq(st.clean_eviction_bytes, 2 * N);
	ck_assert_uint_eq(st.swap_out_count, 1);
}
END_TEST

/* Adds one to every byte of its output, which is also its input. */
static int bump(void *const *in, void *const *out, void *user, void *stream)
{
	uint8_t *o = out[0];

	(void)in;
	(void)stream;
	for (unsigned k = 0; k < N; k++)
		o[k]++;
	return user ? -EIO : 0;
}

static void run_bump(tmm_tensor h, bool fail)
{
	tmm_op op = { .name = "bump", .kind = TMM_OP_ELEMENTWISE,
		      .inputs = &h, .n_inputs = 1, .outputs = &h,
		      .n_outputs = 1, .run = bump, .user = fail ? &op : NULL };

	ck_assert_int_eq(tmm_run(ctx, &op), fail ? -EIO : 0);
}

/* After a trip, an op writes t (and fails after writing, with `fail`):
 * the next eviction copies, and t reads back as the op left it, not as
 * the kept copy has it. */
static void written_by_an_op(bool fail)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	uint8_t want[N];

	round_trip(t);
	run_bump(h, fail);
	ck_assert(eviction_copies(t));
	for (unsigned k = 0; k < N; k++)
		want[k] = (uint8_t)(data[k] + 1);
	reads_back(h, want);
}

START_TEST(an_op_that_writes_it_makes_the_eviction_copy)
{
	written_by_an_op(false);
}
END_TEST

START_TEST(a_failed_op_leaves_what_it_wrote)
{
	written_by_an_op(true);
}
END_TEST

START_TEST(a_host_write_makes_the_eviction_copy)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	uint8_t want[N];

	round_trip(t);
	memcpy(want, data, N);
	want[7] ^= 0x5a;
	ck_assert_int_eq(tmm_tensor_write(ctx, h, 7, want + 7, 1), 0);
	ck_assert(eviction_copies(t));
	reads_back(h, want);
}
END_TEST

START_TEST(an_acquire_for_writing_makes_the_eviction_copy)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	uint8_t want[N];
	void *p;

	round_trip(t);
	memcpy(want, data, N);
	want[N - 1] ^= 0xff;
	ck_assert_int_eq(tmm_acquire(ctx, h, TMM_WRITE, &p), 0);
	((uint8_t *)p)[N - 1] = want[N - 1]; /* backed sim memory */
	ck_assert_int_eq(tmm_release(ctx, h), 0);
	ck_assert(eviction_copies(t));
	reads_back(h, want);
	/* A read-only acquire leaves the next trip clean. */
	bring_in(t);
	ck_assert_int_eq(tmm_acquire(ctx, h, TMM_READ, &p), 0);
	ck_assert_int_eq(tmm_release(ctx, h), 0);
	ck_assert(!eviction_copies(t));
	reads_back(h, want);
}
END_TEST

START_TEST(scratch_and_views_keep_no_copy)
{
	tmm_tensor s, p, v;
	struct tmm_tensor_rec *t = make(&s, TMM_SCRATCH), *pr;

	round_trip(t);
	ck_assert_ptr_null(t->clean_host);
	ck_assert(eviction_copies(t));
	reads_back(s, data);

	pr = make(&p, TMM_PERSISTENT);
	ck_assert_int_eq(tmm_tensor_view(ctx, p, 0, N / 2, "v", &v), 0);
	round_trip(pr);
	ck_assert_ptr_null(pr->clean_host);
	ck_assert(eviction_copies(pr));
	reads_back(p, data);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, v), 0);
}
END_TEST

START_TEST(the_kept_buffer_goes_with_its_tensor)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_ACTIVATION);

	round_trip(t);
	ck_assert_ptr_nonnull(t->clean_host);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, h), 0);
	ck_assert_uint_eq(ctx->c.host_in_use, 0);
}
END_TEST

START_TEST(pinned_memory_short_takes_the_kept_buffers)
{
	tmm_tensor a, b;
	struct tmm_tensor_rec *ta = make(&a, TMM_PERSISTENT);
	struct tmm_tensor_rec *tb = make(&b, TMM_PERSISTENT);

	round_trip(ta);
	ck_assert_ptr_nonnull(ta->clean_host);
	/* b's buffer must be new pinned memory, and none can be had: a's
	 * kept buffer is given back, and b's copy takes it. */
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_PINNED_ALLOC "@1+"), 0);
	ck_assert(eviction_copies(tb));
	ck_assert_ptr_null(ta->clean_host);
	ck_assert_uint_eq(ctx->c.host_in_use, N);
	/* a, with no kept copy now, leaves by a copy, which cannot have
	 * pinned memory: refused, a left as it was. */
	ck_assert_int_eq(tmm_mover_swap_out(ctx, ta, true), -ENOMEM);
	ck_assert_int_eq(ta->state, TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_fault_set(NULL), 0);
	reads_back(a, data);
	reads_back(b, data);
}
END_TEST

/* By prefetch, a tensor leaves and comes back with no host buffer: it
 * has no clean copy to keep, and every eviction migrates it. */
START_TEST(uvm_by_prefetch_keeps_no_copy)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t;

	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	open_ctx("uvm,uvm_swap_path=prefetch");
	t = make(&h, TMM_PERSISTENT);
	round_trip(t);
	ck_assert_ptr_null(t->clean_host);
	ck_assert(eviction_copies(t));
	ck_assert_uint_eq(ctx->c.clean_evictions, 0);
	reads_back(h, data);
}
END_TEST

/* The public statistics say which way mode=uvm's evictions went: by
 * prefetch every swap-out's bytes, by copy none of them. */
static uint64_t out_by_prefetch(uint64_t *out_bytes)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	*out_bytes = st.swap_out_bytes;
	return st.uvm_prefetch_out_bytes;
}

START_TEST(the_stats_say_which_way_evictions_went)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	uint64_t out_bytes;

	/* By copy (the fixture's way). */
	round_trip(t);
	ck_assert_uint_eq(out_by_prefetch(&out_bytes), 0);
	ck_assert_uint_eq(out_bytes, N);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	open_ctx("uvm,uvm_swap_path=prefetch");
	t = make(&h, TMM_PERSISTENT);
	round_trip(t);
	round_trip(t);
	ck_assert_uint_eq(out_by_prefetch(&out_bytes), 2 * N);
	ck_assert_uint_eq(out_bytes, 2 * N);
	reads_back(h, data);
}
END_TEST

/* mode=uvm by copy: a clean eviction moves nothing (no swap-out bytes),
 * its pages count no more against the budget, and the tensor comes back
 * from its kept buffer whole, by another copy. */
START_TEST(uvm_by_copy_a_clean_eviction_moves_nothing)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, TMM_PERSISTENT);
	uint64_t out_bytes, held;

	round_trip(t);
	out_bytes = ctx->c.swap_out_bytes;
	held = ctx->uvm_held;
	ck_assert_uint_ge(held, N);
	ck_assert(!eviction_copies(t));
	ck_assert_uint_eq(ctx->c.swap_out_bytes, out_bytes);
	ck_assert_uint_eq(ctx->c.clean_eviction_bytes, N);
	ck_assert_uint_lt(ctx->uvm_held, held);
	bring_in(t);
	reads_back(h, data);
	ck_assert_uint_eq(ctx->c.swap_in_count, 2);
}
END_TEST

/* The trace tells a clean swap-out from a copy (TMM_EVF_CLEAN), so that
 * tensormm-stat counts only copies as bytes moved. */
START_TEST(the_trace_marks_a_clean_swap_out)
{
	char path[] = "/tmp/test_clean_copy_XXXXXX", config[200], err[160];
	struct tmm_trace_reader *r;
	struct tmm_trace t;
	struct tmm_tensor_rec *w;
	tmm_tensor h;
	unsigned clean = 0, copies = 0;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	snprintf(config, sizeof(config),
		 "backend=sim,mode=%s,sim_memory=backed,budget=64KiB,"
		 "policy=none,stats_shm=off,trace=%s", fixture_mode, path);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	w = make(&h, TMM_PERSISTENT);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	run_bump(h, false);
	ck_assert(eviction_copies(w));		/* written: a copy */
	bring_in(w);
	ck_assert(!eviction_copies(w));	/* not since: clean */
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ctx = NULL;

	ck_assert_int_eq(tmm_trace_reader_open(path, &r, NULL, err,
					       sizeof(err)), 0);
	ck_assert_int_eq(tmm_trace_reader_next(r, &t, err, sizeof(err)), 1);
	for (uint32_t e = 0; e < t.n_events; e++) {
		if (t.events[e].kind != TMM_EV_SWAP_OUT)
			continue;
		if (t.events[e].flags & TMM_EVF_CLEAN)
			clean++;
		else
			copies++;
	}
	ck_assert_uint_eq(copies, 1);
	ck_assert_uint_eq(clean, 1);
	tmm_trace_free(&t);
	tmm_trace_reader_close(r);
	unlink(path);
	open_ctx(fixture_mode); /* for the teardown */
}
END_TEST

/* What makes an eviction copy, and what goes with the kept buffer: the
 * same in swap mode and in mode=uvm by copy. */
static void add_common(TCase *tc)
{
	tcase_add_test(tc, an_unwritten_tensor_leaves_with_no_copy);
	tcase_add_test(tc, an_op_that_writes_it_makes_the_eviction_copy);
	tcase_add_test(tc, a_failed_op_leaves_what_it_wrote);
	tcase_add_test(tc, a_host_write_makes_the_eviction_copy);
	tcase_add_test(tc, an_acquire_for_writing_makes_the_eviction_copy);
	tcase_add_test(tc, the_kept_buffer_goes_with_its_tensor);
	tcase_add_test(tc, the_trace_marks_a_clean_swap_out);
}

int main(void)
{
	Suite *s = suite_create("clean_copy");
	TCase *swap = tcase_create("swap");
	TCase *uvm = tcase_create("uvm_copy");

	tcase_add_checked_fixture(swap, setup_swap, teardown);
	add_common(swap);
	tcase_add_test(swap, scratch_and_views_keep_no_copy);
	tcase_add_test(swap, pinned_memory_short_takes_the_kept_buffers);
	tcase_add_test(swap, uvm_by_prefetch_keeps_no_copy);
	suite_add_tcase(s, swap);

	tcase_add_checked_fixture(uvm, setup_uvm_copy, teardown);
	add_common(uvm);
	tcase_add_test(uvm, uvm_by_copy_a_clean_eviction_moves_nothing);
	tcase_add_test(uvm, the_stats_say_which_way_evictions_went);
	suite_add_tcase(s, uvm);
	return check_run_all(srunner_create(s));
}
