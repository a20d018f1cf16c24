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
 *  - Every cudaEventRecord and every cudaStreamWaitEvent of a swap-out,
 *    a swap-in and an op, in swap and in uvm mode, fails in turn: the
 *    step fails naming the call, and once the fault is gone the same
 *    context runs the steps again with every byte intact.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"
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
	static const char *const modes[] = { "swap", "uvm" };
	static const char *const sites[] = { "cudaEventRecord",
					     "cudaStreamWaitEvent" };

	for (unsigned m = 0; m < 2; m++) {
		for (unsigned s = 0; s < 2; s++) {
			unsigned long calls = event_calls(modes[m], sites[s]);

			printf("%s: %lu calls of %s\n", modes[m], calls,
			       sites[s]);
			ck_assert_uint_gt(calls, 0);
			for (unsigned long n = 1; n <= calls; n++)
				event_fault(modes[m], sites[s], n);
		}
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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
