/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_faults.c — the cuda backend's error paths that issue #20's
 * fixes touched, made to fail on the CUDA test double through the fault
 * tunable (lib/base/fault.h): each fails with a message naming the call,
 * and loses nothing.
 *  - The link cannot be measured (no device buffer): the estimate stays,
 *    the context works, and info.link says why.
 *  - A host write's copy to the device fails: the write fails, and the
 *    bytes stay on the host, where a read finds them.
 *  - cudaHostRegister is refused and cudaMallocHost fails too: the write
 *    fails, and once memory comes back, the tensor takes its bytes.
 *  - A uvm swap-out's prefetch fails: the swap-out fails, the tensor stays
 *    resident with its bytes.
 *  - A batch of uvm prefetches fails, or an event after it: the tensors
 *    not queued stay on the host with their bytes and their pages
 *    uncounted; a driver that refuses batches gets the prefetches one by
 *    one, from then on; a batch that cannot grow sends the prefetch at
 *    once.
 *  - Every cudaEventRecord and every cudaStreamWaitEvent of a swap-out,
 *    a swap-in and an op, in swap and in uvm mode (by prefetch, and by
 *    copy with the copy kernel, whose every launch fails in turn too),
 *    fails in turn: the step fails naming the call, and once the fault
 *    is gone the same context runs the steps again with every byte
 *    intact.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "tensormm.h"

#define BYTES (64u << 10)

static tmm_ctx *make_ctx(const char *mode, const char *fault)
{
	char cfg[200];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=%s,budget=64MiB,"
		 "cupti=off,stats_shm=off,policy=passive,fault=%s", mode,
		 fault);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

static void fill(uint8_t *p, uint8_t seed)
{
	for (size_t i = 0; i < BYTES; i++)
		p[i] = (uint8_t)(i * 13 + seed);
}

static void expect_bytes(tmm_ctx *ctx, tmm_tensor t, const uint8_t *want)
{
	uint8_t *got = malloc(BYTES);

	ck_assert_ptr_nonnull(got);
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, got, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_int_eq(memcmp(got, want, BYTES), 0);
	free(got);
}

START_TEST(an_unmeasured_link_keeps_the_estimate)
{
	/* The first cudaMalloc is the link's measuring buffer. */
	tmm_ctx *ctx = make_ctx("swap", "cudaMalloc@1");
	uint8_t in[BYTES];
	tmm_tensor t;

	ck_assert_msg(strstr(ctx->be.info.link, "estimated") &&
			      strstr(ctx->be.info.link,
				     "cudaErrorMemoryAllocation"),
		      "%s", ctx->be.info.link);
	ck_assert(ctx->be.info.h2d_gbps == 12.0);
	fill(in, 1);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &t),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, in, BYTES), 0);
	expect_bytes(ctx, t, in);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_failed_copy_to_the_device_loses_nothing)
{
	tmm_ctx *ctx = make_ctx("swap", "");
	uint8_t in[BYTES];
	tmm_tensor t;

	fill(in, 2);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &t),
			 0);
	ck_assert_int_eq(tmm_fault_set("cudaMemcpyAsync@1"), 0);
	ck_assert_int_lt(tmm_tensor_write(ctx, t, 0, in, BYTES), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "cudaMemcpyAsync"), "%s",
		      tmm_last_error(ctx));
	ck_assert_int_eq(tmm_fault_set(""), 0);
	expect_bytes(ctx, t, in);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(no_pinned_memory_at_all_fails_cleanly)
{
	tmm_ctx *ctx = make_ctx("swap",
				"cudaHostRegister@1+;cudaMallocHost@1+");
	uint8_t in[BYTES];
	tmm_tensor t;

	fill(in, 3);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &t),
			 0);
	ck_assert_int_lt(tmm_tensor_write(ctx, t, 0, in, BYTES), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "cudaMallocHost"), "%s",
		      tmm_last_error(ctx));
	/* Memory comes back: the same tensor takes its bytes. */
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(tmm_tensor_write(ctx, t, 0, in, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	expect_bytes(ctx, t, in);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_failed_uvm_swap_out_keeps_the_tensor)
{
	tmm_ctx *ctx = make_ctx("uvm", "");
	struct tmm_tensor_rec *r;
	uint8_t in[BYTES];
	tmm_tensor t;

	fill(in, 4);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &t),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, in, BYTES), 0);
	r = tmm_tensor_find(ctx, t);
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	ck_assert_int_eq(tmm_fault_set("cudaMemPrefetchAsync@1"), 0);
	ck_assert_int_lt(tmm_mover_swap_out(ctx, r, false), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "cudaMemPrefetchAsync"),
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(r->state, TMM_TS_RESIDENT);
	ck_assert(!r->copy.valid);
	expect_bytes(ctx, t, in);
	/* And it can still leave. */
	ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
	expect_bytes(ctx, t, in);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Two tensors written and swapped out by prefetch, with their bytes in
 * in[0] and in[1]. */
static tmm_ctx *two_away(tmm_tensor t[2], struct tmm_tensor_rec *r[2],
			 uint8_t in[2][BYTES])
{
	tmm_ctx *ctx = make_ctx("uvm,uvm_swap_path=prefetch", "");

	for (int i = 0; i < 2; i++) {
		fill(in[i], (uint8_t)(7 + i));
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT,
						   i ? "w2" : "w1", &t[i]),
				 0);
		ck_assert_int_eq(tmm_tensor_write(ctx, t[i], 0, in[i], BYTES),
				 0);
		r[i] = tmm_tensor_find(ctx, t[i]);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r[i], false), 0);
		ck_assert_int_eq(r[i]->state, TMM_TS_HOST);
	}
	return ctx;
}

/* Gathers both tensors' prefetches, and closes the batch with `fault`
 * armed.  Returns close's result. */
static int batch_of_two(tmm_ctx *ctx, struct tmm_tensor_rec *r[2],
			const char *fault)
{
	int rc;

	tmm_uvm_batch_open(ctx);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tmm_uvm_prefetch(ctx, r[i]), 0);
		/* Gathered: held, not yet on its way. */
		ck_assert_int_eq(r[i]->state, TMM_TS_HOST);
	}
	/* Twice is refused: its prefetch is gathered already. */
	ck_assert_int_eq(tmm_uvm_prefetch(ctx, r[0]), -EINVAL);
	ck_assert_int_eq(tmm_fault_set(fault), 0);
	rc = tmm_uvm_batch_close(ctx);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	return rc;
}

/* The n-th call of `site` fails as the batch of two goes: an error that
 * names it, each tensor either on its way and counted or on the host and
 * not, and no byte lost.  Returns how many are on their way. */
static int failed_batch(const char *site, unsigned long n)
{
	uint8_t in[2][BYTES];
	struct tmm_tensor_rec *r[2];
	tmm_tensor t[2];
	tmm_ctx *ctx = two_away(t, r, in);
	uint64_t held = ctx->uvm_held;
	char fault[64];
	int going = 0;

	snprintf(fault, sizeof(fault), "%s@%lu", site, n);
	ck_assert_int_lt(batch_of_two(ctx, r, fault), 0);
	printf("%s: %s\n", fault, tmm_last_error(ctx));
	ck_assert_msg(strstr(tmm_last_error(ctx), site), "%s",
		      tmm_last_error(ctx));
	for (int i = 0; i < 2; i++) {
		ck_assert(r[i]->state == TMM_TS_HOST ||
			  r[i]->state == TMM_TS_SWAPPING_IN);
		going += r[i]->state == TMM_TS_SWAPPING_IN;
	}
	/* In order: the second goes only after the first. */
	ck_assert(r[0]->state == TMM_TS_SWAPPING_IN ||
		  r[1]->state == TMM_TS_HOST);
	ck_assert_uint_eq(ctx->uvm_held, held + (uint64_t)going * BYTES);
	for (int i = 0; i < 2; i++)
		expect_bytes(ctx, t[i], in[i]);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return going;
}

START_TEST(a_failed_prefetch_batch_loses_nothing)
{
	uint8_t in[2][BYTES];
	struct tmm_tensor_rec *r[2];
	struct cudafake_calls c0, c1;
	tmm_tensor t[2];
	tmm_ctx *ctx = two_away(t, r, in);
	unsigned long records;

	/* The events a batch that works records: the ordering's and one
	 * per tensor. */
	cudafake_calls(&c0);
	ck_assert_int_eq(batch_of_two(ctx, r, ""), 0);
	cudafake_calls(&c1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	records = c1.event_records - c0.event_records;
	ck_assert_uint_ge(records, 2);
	ck_assert_int_eq(failed_batch("cudaMemPrefetchBatchAsync", 1), 0);
	for (unsigned long n = 1; n <= records; n++) {
		int going = failed_batch("cudaEventRecord", n);

		/* The last is the second tensor's, the one before the
		 * first's. */
		if (n == records)
			ck_assert_int_eq(going, 1);
		if (n == records - 1)
			ck_assert_int_eq(going, 0);
	}
}
END_TEST

/* No memory to grow the batch: the prefetch goes at once, alone, and the
 * next one is gathered as before. */
START_TEST(no_memory_for_the_batch_prefetches_at_once)
{
	for (unsigned n = 1; n <= 2; n++) {
		uint8_t in[2][BYTES];
		struct tmm_tensor_rec *r[2];
		char fault[32];
		tmm_tensor t[2];
		tmm_ctx *ctx = two_away(t, r, in);

		snprintf(fault, sizeof(fault), "host_alloc@%u", n);
		tmm_uvm_batch_open(ctx);
		ck_assert_int_eq(tmm_fault_set(fault), 0);
		ck_assert_int_eq(tmm_uvm_prefetch(ctx, r[0]), 0);
		ck_assert_int_eq(tmm_fault_set(""), 0);
		ck_assert_int_eq(r[0]->state, TMM_TS_SWAPPING_IN);
		ck_assert_int_eq(tmm_uvm_prefetch(ctx, r[1]), 0);
		ck_assert_int_eq(r[1]->state, TMM_TS_HOST);
		ck_assert_int_eq(tmm_uvm_batch_close(ctx), 0);
		ck_assert_int_eq(r[1]->state, TMM_TS_SWAPPING_IN);
		ck_assert_uint_eq(ctx->uvm_held, 2 * BYTES);
		for (int i = 0; i < 2; i++)
			expect_bytes(ctx, t[i], in[i]);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

/* A driver older than the runtime refuses the batch: the prefetches go
 * one by one, and the next batch does not ask again. */
START_TEST(a_refused_prefetch_batch_goes_one_by_one)
{
	uint8_t in[2][BYTES];
	struct tmm_tensor_rec *r[2];
	struct cudafake_calls c0, c1, c2;
	tmm_tensor t[2];
	tmm_ctx *ctx;

	setenv("CUDAFAKE_PREFETCH_BATCH", "0", 1);
	ctx = two_away(t, r, in);
	cudafake_calls(&c0);
	ck_assert_int_eq(batch_of_two(ctx, r, ""), 0);
	cudafake_calls(&c1);
	ck_assert_uint_eq(c1.prefetch_batches - c0.prefetch_batches, 1);
	ck_assert_uint_eq(c1.batched_prefetches, c0.batched_prefetches);
	ck_assert_uint_eq(c1.prefetches - c0.prefetches, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(r[i]->state, TMM_TS_SWAPPING_IN);
		expect_bytes(ctx, t[i], in[i]);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r[i], false), 0);
	}
	cudafake_calls(&c1);
	ck_assert_int_eq(batch_of_two(ctx, r, ""), 0);
	cudafake_calls(&c2);
	ck_assert_uint_eq(c2.prefetch_batches, c1.prefetch_batches);
	ck_assert_uint_eq(c2.prefetches - c1.prefetches, 2);
	unsetenv("CUDAFAKE_PREFETCH_BATCH");
	for (int i = 0; i < 2; i++)
		expect_bytes(ctx, t[i], in[i]);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Where batches are had, the two prefetches are one call, and one
 * ordering after the other streams. */
START_TEST(a_prefetch_batch_is_one_call)
{
	uint8_t in[2][BYTES];
	struct tmm_tensor_rec *r[2];
	struct cudafake_calls c0, c1;
	tmm_tensor t[2];
	tmm_ctx *ctx = two_away(t, r, in);

	cudafake_calls(&c0);
	ck_assert_int_eq(batch_of_two(ctx, r, ""), 0);
	cudafake_calls(&c1);
	ck_assert_uint_eq(c1.prefetch_batches - c0.prefetch_batches, 1);
	ck_assert_uint_eq(c1.batched_prefetches - c0.batched_prefetches, 2);
	ck_assert_uint_eq(c1.prefetches, c0.prefetches);
	ck_assert_uint_le(c1.stream_waits - c0.stream_waits, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(r[i]->state, TMM_TS_SWAPPING_IN);
		expect_bytes(ctx, t[i], in[i]);
	}
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static int copy_op(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)user;
	return cudaMemcpyAsync(out[0], in[0], BYTES, cudaMemcpyDefault,
			       (cudaStream_t)stream) == cudaSuccess
		       ? 0
		       : -5;
}

/*
 * What events order in a step: w leaves the device and comes back for an
 * op that copies it into a.  Returns 0 or the first step's error.
 */
static int event_steps(tmm_ctx *ctx, tmm_tensor w, tmm_tensor a)
{
	tmm_op op = { .name = "copy", .inputs = &w, .n_inputs = 1,
		      .outputs = &a, .n_outputs = 1, .run = copy_op };
	struct tmm_tensor_rec *r = tmm_tensor_find(ctx, w);
	int rc = 0;

	if (r->state == TMM_TS_RESIDENT)
		rc = tmm_mover_swap_out(ctx, r, false);
	if (rc == 0)
		rc = tmm_run(ctx, &op);
	return rc;
}

/* The calls of `site` that event_steps makes from a fresh context. */
static unsigned long event_calls(const char *mode, const char *site)
{
	char fault[64];
	tmm_ctx *ctx;
	tmm_tensor w, a;
	uint8_t in[BYTES];
	unsigned long n;

	/* Counted from the steps on: a call number past their end. */
	snprintf(fault, sizeof(fault), "%s@1000000", site);
	ctx = make_ctx(mode, "");
	fill(in, 5);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, in, BYTES), 0);
	ck_assert_int_eq(tmm_fault_set(fault), 0);
	ck_assert_int_eq(event_steps(ctx, w, a), 0);
	n = tmm_fault_calls(site);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return n;
}

/* The n-th call of `site` fails: a clean error, then a usable context. */
static void event_fault(const char *mode, const char *site, unsigned long n)
{
	char fault[64];
	tmm_ctx *ctx;
	tmm_tensor w, a;
	uint8_t in[BYTES];
	int rc;

	snprintf(fault, sizeof(fault), "%s@%lu", site, n);
	ctx = make_ctx(mode, "");
	fill(in, 6);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, in, BYTES), 0);
	/* Armed after the write, as event_calls counted. */
	ck_assert_int_eq(tmm_fault_set(fault), 0);
	rc = event_steps(ctx, w, a);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	printf("%s, %s: %s\n", mode, fault,
	       rc < 0 ? tmm_last_error(ctx) : "(not on this path)");
	if (rc < 0)
		ck_assert_msg(strstr(tmm_last_error(ctx), site), "%s",
			      tmm_last_error(ctx));
	/* Usable: the steps run again, and no byte was lost. */
	ck_assert_msg(event_steps(ctx, w, a) == 0, "%s",
		      tmm_last_error(ctx));
	expect_bytes(ctx, w, in);
	expect_bytes(ctx, a, in);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

START_TEST(every_failed_event_call_fails_cleanly)
{
	/* mode=uvm by the copy kernel (uvm_copier=kernel) too, whose
	 * launches fail in turn as well. */
	static const char *const kernel = "uvm,uvm_swap_path=copy,"
					  "uvm_copier=kernel";
	static const struct {
		const char *mode, *site;
	} cases[] = {
		{ "swap", "cudaEventRecord" },
		{ "swap", "cudaStreamWaitEvent" },
		{ "uvm", "cudaEventRecord" },
		{ "uvm", "cudaStreamWaitEvent" },
		{ kernel, "cudaEventRecord" },
		{ kernel, "cudaStreamWaitEvent" },
		{ kernel, "cudaLaunchKernel" },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		unsigned long calls = event_calls(cases[c].mode,
						  cases[c].site);

		printf("%s: %lu calls of %s\n", cases[c].mode, calls,
		       cases[c].site);
		ck_assert_uint_gt(calls, 0);
		for (unsigned long n = 1; n <= calls; n++)
			event_fault(cases[c].mode, cases[c].site, n);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_test(tc, an_unmeasured_link_keeps_the_estimate);
	tcase_add_test(tc, a_failed_copy_to_the_device_loses_nothing);
	tcase_add_test(tc, no_pinned_memory_at_all_fails_cleanly);
	tcase_add_test(tc, a_failed_uvm_swap_out_keeps_the_tensor);
	tcase_add_test(tc, every_failed_event_call_fails_cleanly);
	tcase_add_test(tc, a_failed_prefetch_batch_loses_nothing);
	tcase_add_test(tc, a_refused_prefetch_batch_goes_one_by_one);
	tcase_add_test(tc, no_memory_for_the_batch_prefetches_at_once);
	tcase_add_test(tc, a_prefetch_batch_is_one_call);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
