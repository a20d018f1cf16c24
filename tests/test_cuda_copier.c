/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_copier.c — uvm_copier=kernel (lib/backend/cuda_copier.h) on
 * the CUDA test double (tests/cudafake/): mode=uvm's copies of managed
 * memory made by the library's copy kernel, which holds no host.
 *
 *  - each thread of the copy kernel (cuda_copy_kernel_body.h, which the
 *    double runs for its launches too) copies its words and tail bytes
 *    so that the grid copies every byte once and none beyond, at every
 *    size and grid;
 *  - the copier knows managed memory by the ranges the backend noted,
 *    their ends exclusive, and takes only 16-byte aligned copies;
 *  - the build embedded the kernel: the double finds its entry in the
 *    PTX the backend loads;
 *  - a swap out and back by the copy way goes by the kernel and keeps
 *    the bytes; the device info says which copier runs, and tmm_stats
 *    what it copied; its copy streams are first among kernels;
 *  - the kernel's rate is measured at open, and the forecast moves the
 *    copy way's bytes at it; where it cannot be measured, at the pinned
 *    rates, and the device info says why; by default its blocks are the
 *    fewest whose rate reaches the link's, else the fastest;
 *  - where the kernel cannot be had (the driver refuses the PTX, the
 *    device cannot reach host memory by its address) the runtime's
 *    copies stay, the device info says why and names the knob, and
 *    the bytes are kept;
 *  - a failed launch fails the swap-out with a message naming the knob,
 *    and loses nothing: the tensor stays on the device, whole;
 *  - out of host memory noting a managed range, its allocation fails
 *    and says so.
 * The order of the kernel's copies against the kernels and discards
 * around them is test_cuda_order.c's, and whole trainings by it are
 * test_cuda_train.c's.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/backend/backend_cuda_mem.h"
#include "lib/backend/cuda_copier.h"
#include "lib/backend/cuda_copy_kernel_body.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/exec/guide_input.h"
#include "lib/move/mover.h"
#include "tensormm.h"

#define BYTES (256u << 10)

static tmm_ctx *make_ctx(const char *extra)
{
	char cfg[256];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=uvm,budget=64MiB,"
		 "cupti=off,stats_shm=off,policy=passive,log=error,"
		 "uvm_swap_path=copy%s", extra);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

/* A tensor of BYTES bytes, each its index times 7, written from the
 * host. */
static tmm_tensor make_tensor(tmm_ctx *ctx)
{
	uint8_t *buf = malloc(BYTES);
	tmm_tensor t;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < BYTES; i++)
		buf[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "t",
					   &t), 0);
	ck_assert_msg(tmm_tensor_write(ctx, t, 0, buf, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	free(buf);
	return t;
}

static void expect_bytes(tmm_ctx *ctx, tmm_tensor t)
{
	uint8_t *buf = malloc(BYTES);

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, buf, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < BYTES; i++)
		ck_assert_msg(buf[i] == (uint8_t)(i * 7),
			      "byte %zu is %#x, not %#x", i, buf[i],
			      (uint8_t)(i * 7));
	free(buf);
}

/* Out by copy, back, and the bytes; true when the copier made the
 * copies, false when the runtime did (asserted: not both). */
static bool round_trip(tmm_ctx *ctx, tmm_tensor t)
{
	struct tmm_tensor_rec *r = tmm_tensor_find(ctx, t);
	struct cudafake_calls before, after;

	cudafake_calls(&before);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
	ck_assert_ptr_nonnull(r->host);
	ck_assert_int_eq(tmm_mover_settle(ctx, r), 0);
	ck_assert_int_eq(r->state, TMM_TS_HOST);
	ck_assert_int_eq(tmm_mover_make_resident(ctx, r, true), 0);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	cudafake_calls(&after);
	expect_bytes(ctx, t);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert((after.kernel_copies > before.kernel_copies) !=
		  (after.copies > before.copies));
	return after.kernel_copies > before.kernel_copies;
}

/* The kernel's body over a whole grid, at sizes around its word, its
 * four-word unrolling and its tail, and grids of one thread to more
 * threads than words: every byte copied, the 64 after it untouched. */
/* With the copy kernel its copy streams are at the device's greatest
 * priority, so that its blocks do not wait behind a running kernel's;
 * every other stream, and every stream without it, at the default. */
static void expect_priorities(tmm_ctx *ctx, bool kernel)
{
	struct cuda_state *s = ctx->be.state;
	int least, greatest, p;

	ck_assert_int_eq(cudaDeviceGetStreamPriorityRange(&least, &greatest),
			 cudaSuccess);
	ck_assert_int_lt(greatest, least);
	for (int i = 0; i < TMM_ENGINE_COUNT; i++) {
		bool copy = i == TMM_ENGINE_H2D || i == TMM_ENGINE_D2H;

		ck_assert_int_eq(cudaStreamGetPriority(s->stream[i], &p),
				 cudaSuccess);
		ck_assert_int_eq(p, kernel && copy ? greatest : 0);
	}
}

START_TEST(the_kernel_grid_copies_every_byte_once)
{
	static const unsigned long long sizes[] = {
		0, 1, 15, 16, 17, 63, 64, 65, 255, 4096, 4097, 65536 + 13,
	};
	static const unsigned long long grids[] = { 1, 3, 256, 1024, 4096 };
	/* aligned_alloc takes a multiple of its alignment. */
	const size_t room = (65536 + 13 + 64 + 15) & ~(size_t)15;
	uint8_t *src = aligned_alloc(16, room), *dst = aligned_alloc(16, room);

	ck_assert(src && dst);
	for (size_t i = 0; i < room; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++)
		for (size_t g = 0; g < sizeof(grids) / sizeof(grids[0]); g++) {
			unsigned long long n = sizes[a], threads = grids[g];

			memset(dst, 0xee, room);
			for (unsigned long long t = 0; t < threads; t++)
				tmm_copy_thread(t, threads, dst, src, n);
			ck_assert_msg(memcmp(dst, src, n) == 0,
				      "%llu bytes, %llu threads: wrong copy",
				      n, threads);
			for (size_t i = n; i < n + 64; i++)
				ck_assert_msg(dst[i] == 0xee,
					      "%llu bytes, %llu threads: byte "
					      "%zu written", n, threads, i);
		}
	free(src);
	free(dst);
}
END_TEST

START_TEST(the_copier_knows_managed_ranges_by_their_bounds)
{
	struct tmm_cuda_copier *c;
	char why[160] = "";
	uint8_t *host = (uint8_t *)(uintptr_t)0x900000;
	uint8_t *a = (uint8_t *)(uintptr_t)0x10000,
		*b = (uint8_t *)(uintptr_t)0x30000,
		*m = (uint8_t *)(uintptr_t)0x20000;

	ck_assert_msg(tmm_cuda_copier_open(&c, 0, 16, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert(!tmm_cuda_copier_takes(c, a, host));
	/* Noted out of address order. */
	ck_assert_int_eq(tmm_cuda_copier_note(c, a, 0x1000), 0);
	ck_assert_int_eq(tmm_cuda_copier_note(c, b, 0x100), 0);
	ck_assert_int_eq(tmm_cuda_copier_note(c, m, 0x10), 0);
	ck_assert(tmm_cuda_copier_takes(c, a, host));
	ck_assert(tmm_cuda_copier_takes(c, host, a + 0xff0));
	ck_assert(!tmm_cuda_copier_takes(c, a + 0x1000, host));
	ck_assert(!tmm_cuda_copier_takes(c, host, a - 16));
	ck_assert(tmm_cuda_copier_takes(c, m, host));
	ck_assert(!tmm_cuda_copier_takes(c, m + 0x10, host));
	ck_assert(tmm_cuda_copier_takes(c, host, b + 0xf0));
	/* Unaligned, at either end. */
	ck_assert(!tmm_cuda_copier_takes(c, a + 8, host));
	ck_assert(!tmm_cuda_copier_takes(c, a, host + 4));
	tmm_cuda_copier_forget(c, m);
	tmm_cuda_copier_forget(c, host); /* not noted: nothing */
	ck_assert(!tmm_cuda_copier_takes(c, m, host));
	ck_assert(tmm_cuda_copier_takes(c, a, host));
	ck_assert(tmm_cuda_copier_takes(c, b, host));
	tmm_cuda_copier_close(c);
	ck_assert(!tmm_cuda_copier_takes(NULL, a, host));
}
END_TEST

/* The list grows as ranges come: out of host memory growing it, the
 * note fails and the ranges noted before stay known. */
START_TEST(a_note_out_of_host_memory_keeps_the_others)
{
	struct tmm_cuda_copier *c;
	char why[160] = "";
	uint8_t *host = (uint8_t *)(uintptr_t)0x900000;
	unsigned noted = 0;
	int rc = 0;

	ck_assert_msg(tmm_cuda_copier_open(&c, 0, 16, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_int_eq(tmm_cuda_copier_note(c, (void *)0x1000, 16), 0);
	while (rc == 0 && noted < 1000) {
		ck_assert_int_eq(tmm_fault_set(TMM_SITE_HOST_ALLOC "@1"), 0);
		rc = tmm_cuda_copier_note(c, (void *)(0x2000 + 0x100 *
						      (uintptr_t)noted), 16);
		noted += rc == 0;
	}
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert(tmm_cuda_copier_takes(c, (void *)0x1000, host));
	ck_assert(tmm_cuda_copier_takes(c, (void *)(0x2000 + 0x100 *
						    (uintptr_t)(noted - 1)),
					host));
	ck_assert(!tmm_cuda_copier_takes(c, (void *)(0x2000 + 0x100 *
						     (uintptr_t)noted),
					 host));
	tmm_cuda_copier_close(c);
}
END_TEST

START_TEST(the_copy_way_goes_by_the_kernel_and_keeps_the_bytes)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct cudafake_calls c;
	unsigned long launches;
	tmm_ctx *ctx;
	tmm_tensor t;

	ctx = make_ctx(",uvm_copier=kernel");
	/* After open: the copies that measured the kernel's rate there are
	 * not counted as the program's. */
	cudafake_calls(&c);
	launches = c.kernel_copies;
	t = make_tensor(ctx);

	ck_assert(!ctx->be.info.managed_copies_block_host);
	ck_assert_msg(strstr(ctx->be.info.managed_copier, "copy kernel"), "%s",
		      ctx->be.info.managed_copier);
	/* Its copy streams first among kernels, the compute stream not. */
	expect_priorities(ctx, true);
	ck_assert(round_trip(ctx, t));
	ck_assert(round_trip(ctx, t));
	/* tmm_stats counts the kernel's bytes: each launch copied t. */
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	cudafake_calls(&c);
	ck_assert_uint_gt(st.uvm_kernel_copy_bytes, 0);
	ck_assert_uint_eq(st.uvm_kernel_copy_bytes,
			  (uint64_t)BYTES * (c.kernel_copies - launches));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	/* And by default, the runtime's copies, which hold the host. */
	ctx = make_ctx("");
	t = make_tensor(ctx);
	ck_assert(ctx->be.info.managed_copies_block_host);
	ck_assert_msg(strstr(ctx->be.info.managed_copier,
			     "uvm_copier=runtime"), "%s",
		      ctx->be.info.managed_copier);
	expect_priorities(ctx, false);
	ck_assert(!round_trip(ctx, t));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.uvm_kernel_copy_bytes, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Within a tenth of `want` GB/s. */
static bool near_gbps(double got, double want)
{
	return got > 0.9 * want && got < 1.1 * want;
}

/* The copy kernel's rate is its own: measured at open, and the forecast
 * moves the copy way's bytes at it.  On the double a copy moves 10 GB/s
 * and the kernel CUDAFAKE_KERNEL_COPY_MBPS. */
START_TEST(the_copy_kernels_rate_is_measured_at_open_and_planned_by)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	const struct tmm_device_info *info;
	struct tmm_planner_input in;
	tmm_ctx *ctx;

	setenv("CUDAFAKE_KERNEL_COPY_MBPS", "2500", 1);
	ctx = make_ctx(",uvm_copier=kernel");
	unsetenv("CUDAFAKE_KERNEL_COPY_MBPS");
	info = &ctx->be.info;
	ck_assert_msg(near_gbps(info->kernel_copy_h2d_gbps, 2.5) &&
			      near_gbps(info->kernel_copy_d2h_gbps, 2.5),
		      "%.2f in, %.2f out", info->kernel_copy_h2d_gbps,
		      info->kernel_copy_d2h_gbps);
	ck_assert_msg(near_gbps(info->h2d_gbps, 10) &&
			      near_gbps(info->d2h_gbps, 10),
		      "%.2f, %.2f", info->h2d_gbps, info->d2h_gbps);
	ck_assert_msg(strstr(info->managed_copier, "2.5 GB/s to the device") &&
			      strstr(info->managed_copier, "measured at open"),
		      "%s", info->managed_copier);
	in = tmm_guide_planner_input(ctx, NULL);
	ck_assert(in.moves_h2d_gbps == info->kernel_copy_h2d_gbps);
	ck_assert(in.moves_d2h_gbps == info->kernel_copy_d2h_gbps);
	ck_assert(!in.uvm_copies_serial);
	/* Its blocks' share of the double's 132 multiprocessors is what
	 * the forecast slows compute by while it copies. */
	ck_assert(info->kernel_copy_blocks > 0);
	ck_assert(info->kernel_copy_share ==
		  (double)info->kernel_copy_blocks / 132);
	ck_assert(in.moves_compute_share == info->kernel_copy_share);
	ck_assert_msg(strstr(info->managed_copier, " of 132 multiprocessors, "
						   "estimated"),
		      "%s", info->managed_copier);
	/* tmm_stats says the rates; measuring copied nothing of the
	 * program's. */
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.uvm_kernel_copy_bytes, 0);
	ck_assert_uint_eq(st.uvm_kernel_copy_h2d_mbps,
			  (uint64_t)(info->kernel_copy_h2d_gbps * 1e3 + 0.5));
	ck_assert_uint_eq(st.uvm_kernel_copy_d2h_mbps,
			  (uint64_t)(info->kernel_copy_d2h_gbps * 1e3 + 0.5));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	/* By the runtime's copies: no kernel rate, the pinned rates. */
	ctx = make_ctx("");
	info = &ctx->be.info;
	ck_assert(info->kernel_copy_h2d_gbps == 0 &&
		  info->kernel_copy_d2h_gbps == 0);
	in = tmm_guide_planner_input(ctx, NULL);
	ck_assert(in.moves_h2d_gbps == 0 && in.moves_d2h_gbps == 0);
	ck_assert(in.moves_compute_share == 0);
	ck_assert(in.uvm_copies_serial);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * uvm_copier_blocks=0 (the default): the fewest of 4, 8, 16, 32, 64
 * blocks whose rate both ways reaches 90% of the pinned copies' (10 GB/s
 * on the double), else the fastest; the copies then run that many.  On
 * the double a block moves CUDAFAKE_KERNEL_BLOCK_MBPS, the kernel at
 * most 10 GB/s:
 *   3000 a block: 4 blocks 12 -> 10 GB/s, enough: 4;
 *   700: 4 -> 2.8, 8 -> 5.6, 16 -> 11.2 -> 10, enough: 16;
 *   100: 64 -> 6.4 at best, never enough: 64, at 6.4 GB/s.
 * Asked for, a count is kept whatever the rates.  On a device of 32
 * multiprocessors (CUDAFAKE_SMS) the share of compute the forecast takes
 * for the copies is the blocks over 32, at most 1.
 */
START_TEST(the_copier_takes_the_fewest_blocks_the_link_needs)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	static const struct {
		const char *per_block, *asked;
		unsigned blocks;
		double gbps;
	} cases[] = {
		{ "3000", "", 4, 10 },
		{ "700", "", 16, 10 },
		{ "100", "", 64, 6.4 },
		{ "700", ",uvm_copier_blocks=8", 8, 5.6 },
	};
	const struct tmm_device_info *info;
	struct cudafake_calls c;
	char extra[64];
	tmm_ctx *ctx;
	tmm_tensor t;

	snprintf(extra, sizeof(extra), ",uvm_copier=kernel%s",
		 cases[_i].asked);
	setenv("CUDAFAKE_KERNEL_BLOCK_MBPS", cases[_i].per_block, 1);
	setenv("CUDAFAKE_SMS", "32", 1);
	ctx = make_ctx(extra);
	unsetenv("CUDAFAKE_SMS");
	info = &ctx->be.info;
	ck_assert(info->kernel_copy_share ==
		  (cases[_i].blocks < 32 ? cases[_i].blocks / 32.0 : 1));
	ck_assert_uint_eq(tmm_cuda_copier_blocks(
				  ((struct cuda_state *)ctx->be.state)->copier),
			  cases[_i].blocks);
	ck_assert_msg(near_gbps(info->kernel_copy_h2d_gbps, cases[_i].gbps) &&
			      near_gbps(info->kernel_copy_d2h_gbps,
					cases[_i].gbps),
		      "%.2f in, %.2f out", info->kernel_copy_h2d_gbps,
		      info->kernel_copy_d2h_gbps);
	ck_assert_msg(strstr(info->managed_copier, cases[_i].asked[0]
				     ? "(uvm_copier_blocks)"
				     : "uvm_copier_blocks=0: the fewest"),
		      "%s", info->managed_copier);
	/* A tensor of 256 KiB wants 64 blocks: it gets the count taken. */
	t = make_tensor(ctx);
	ck_assert(round_trip(ctx, t));
	cudafake_calls(&c);
	ck_assert_uint_eq(c.last_kernel_grid, cases[_i].blocks);
	/* tmm_stats says the count. */
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.uvm_kernel_copy_blocks, cases[_i].blocks);
	unsetenv("CUDAFAKE_KERNEL_BLOCK_MBPS");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Where the kernel's rate cannot be measured the kernel still copies,
 * at 16 blocks, planned at the pinned rates, and the device info says
 * why. */
START_TEST(an_unmeasured_copy_kernel_is_planned_at_the_pinned_rates)
{
	tmm_ctx *ctx = make_ctx(",uvm_copier=kernel,fault=cudaLaunchKernel@1");
	const struct tmm_device_info *info = &ctx->be.info;
	tmm_tensor t;

	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(!info->managed_copies_block_host);
	ck_assert(info->kernel_copy_h2d_gbps == info->h2d_gbps &&
		  info->kernel_copy_d2h_gbps == info->d2h_gbps);
	ck_assert_msg(strstr(info->managed_copier, "measuring it failed") &&
			      strstr(info->managed_copier,
				     "cudaErrorLaunchFailure") &&
			      strstr(info->managed_copier, "not chosen"),
		      "%s", info->managed_copier);
	/* Its blocks were to be chosen by rate: 16, as before there was a
	 * choice. */
	ck_assert_uint_eq(tmm_cuda_copier_blocks(
				  ((struct cuda_state *)ctx->be.state)->copier),
			  16);
	t = make_tensor(ctx);
	ck_assert(round_trip(ctx, t));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* _i 0: the driver refuses the PTX; 1: the device cannot reach pinned
 * host memory at its host address. */
START_TEST(without_the_kernel_the_runtime_copies_stay)
{
	static const char *const cause[] = { "cudaLibraryLoadData",
					     "host address" };
	tmm_ctx *ctx;
	tmm_tensor t;

	/* The context sets the process's faults from its own tunable. */
	if (_i == 1)
		setenv("CUDAFAKE_HOST_POINTER", "0", 1);
	ctx = make_ctx(_i == 0 ? ",uvm_copier=kernel,"
				 "fault=cudaLibraryLoadData@1"
			       : ",uvm_copier=kernel");
	ck_assert_int_eq(tmm_fault_set(""), 0);
	unsetenv("CUDAFAKE_HOST_POINTER");
	ck_assert(ctx->be.info.managed_copies_block_host);
	ck_assert_msg(strstr(ctx->be.info.managed_copier, cause[_i]) &&
			      strstr(ctx->be.info.managed_copier,
				     "uvm_copier=kernel"),
		      "%s", ctx->be.info.managed_copier);
	t = make_tensor(ctx);
	ck_assert(!round_trip(ctx, t));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_failed_copy_kernel_loses_nothing)
{
	tmm_ctx *ctx = make_ctx(",uvm_copier=kernel");
	tmm_tensor t = make_tensor(ctx);
	struct tmm_tensor_rec *r = tmm_tensor_find(ctx, t);

	ck_assert_int_eq(tmm_fault_set("cudaLaunchKernel@1"), 0);
	ck_assert_int_lt(tmm_mover_swap_out(ctx, r, false), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "copy kernel") &&
			      strstr(tmm_last_error(ctx),
				     "uvm_copier=kernel"),
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	expect_bytes(ctx, t);
	ck_assert(round_trip(ctx, t));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* The backend notes every managed allocation for the copier: where that
 * runs out of host memory the allocation fails, says so, and leaves
 * nothing allocated (the sanitizers' leak check). */
START_TEST(a_managed_range_the_copier_cannot_note_is_not_allocated)
{
	tmm_ctx *ctx = make_ctx(",uvm_copier=kernel");
	void *p[40];
	unsigned n = 0;
	int rc = 0;

	while (rc == 0 && n < 40) {
		ck_assert_int_eq(tmm_fault_set(TMM_SITE_HOST_ALLOC "@1"), 0);
		rc = ctx->be.ops->managed_alloc(&ctx->be, 4096, &p[n]);
		n += rc == 0;
	}
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_null(p[n]);
	ck_assert_msg(strstr(ctx->be.error, "uvm_copier=kernel"), "%s",
		      ctx->be.error);
	while (n > 0) {
		n--;
		ctx->be.ops->managed_free(&ctx->be, p[n], 4096);
	}
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_copier");
	TCase *tc = tcase_create("copier");

	tcase_add_test(tc, the_kernel_grid_copies_every_byte_once);
	tcase_add_test(tc, the_copier_knows_managed_ranges_by_their_bounds);
	tcase_add_test(tc, a_note_out_of_host_memory_keeps_the_others);
	tcase_add_test(tc, the_copy_way_goes_by_the_kernel_and_keeps_the_bytes);
	tcase_add_loop_test(tc, without_the_kernel_the_runtime_copies_stay, 0,
			    2);
	tcase_add_test(tc, a_failed_copy_kernel_loses_nothing);
	tcase_add_test(tc,
		       the_copy_kernels_rate_is_measured_at_open_and_planned_by);
	tcase_add_test(tc,
		       an_unmeasured_copy_kernel_is_planned_at_the_pinned_rates);
	tcase_add_loop_test(tc,
			    the_copier_takes_the_fewest_blocks_the_link_needs,
			    0, 4);
	tcase_add_test(tc,
		       a_managed_range_the_copier_cannot_note_is_not_allocated);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
