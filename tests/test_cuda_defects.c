/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_defects.c — the cuda backend's smaller defects of issue #20,
 * one test each, on the CUDA test double (tests/cudafake/):
 *  - a host read or write of a tensor copies on the library's own
 *    compute stream, never on the legacy default stream, which
 *    serialises with every blocking stream of the program;
 *  - the host touching managed memory waits for the library's streams,
 *    not for the whole device, where concurrent managed access allows it;
 *  - mode=uvm asked for on a device without concurrent managed access is
 *    refused, naming the knob (mode=auto picks swap there);
 *  - share=auto keys the share segment by the device's UUID, which each
 *    MIG instance has of its own, not by the PCI bus id they share;
 *  - where cudaHostRegister is refused (some virtual machines), pinned
 *    host buffers come from cudaMallocHost, and the backend says so;
 *  - where the GPU's NUMA node is not the process's to allocate on, host
 *    buffers are placed on the local node, and the backend says so;
 *  - the host link's speed is measured, not assumed to be 12 GB/s;
 *  - a thread whose current device is another one may call into a
 *    context: each call runs on the context's device, and the thread's
 *    own device is given back;
 *  - a CUPTI older than the headers the library was built with is not
 *    used (its records would be misread): op times come from events.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/core/context.h"
#include "lib/share/gpu_share.h"
#include "tensormm.h"

#define BYTES (64u << 10)

static tmm_ctx *make_ctx(const char *mode)
{
	char cfg[160];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=%s,budget=64MiB,"
		 "cupti=off,stats_shm=off,policy=passive", mode);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

/* Writes then reads back a tensor from the host; the bytes round-trip. */
static void round_trip(tmm_ctx *ctx)
{
	uint8_t *in = malloc(BYTES), *out = malloc(BYTES);
	tmm_tensor t;

	ck_assert(in && out);
	for (size_t i = 0; i < BYTES; i++)
		in[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &t),
			 0);
	ck_assert_msg(tmm_tensor_write(ctx, t, 0, in, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, out, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_int_eq(memcmp(in, out, BYTES), 0);
	free(in);
	free(out);
}

START_TEST(host_copies_avoid_the_legacy_stream)
{
	tmm_ctx *ctx = make_ctx("swap");

	cudafake_reset(1);
	round_trip(ctx);
	ck_assert_uint_eq(cudafake_legacy_ops(), 0);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(host_access_waits_for_the_streams_not_the_device)
{
	tmm_ctx *ctx = make_ctx("uvm");
	unsigned long before = cudafake_device_syncs();

	cudafake_reset(1);
	round_trip(ctx);
	ck_assert_uint_eq(cudafake_device_syncs(), before);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(uvm_needs_concurrent_managed_access)
{
	tmm_ctx *ctx = NULL;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	setenv("CUDAFAKE_CONCURRENT_MANAGED", "0", 1);
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,mode=uvm,"
					"budget=64MiB,cupti=off,"
					"stats_shm=off"),
			 -ENOTSUP);
	ck_assert_ptr_null(ctx);
	ck_assert_msg(strstr(tmm_last_error(NULL), "concurrent managed") &&
			      strstr(tmm_last_error(NULL), "mode=swap"),
		      "%s", tmm_last_error(NULL));
	/* auto picks swap on such a device. */
	ctx = make_ctx("auto");
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_str_eq(st.mode, "swap");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	unsetenv("CUDAFAKE_CONCURRENT_MANAGED");
}
END_TEST

/* The mode auto takes with a prefetch to the host at `host_mbps` and one
 * to the device (which makes fresh pages too) at `device_mbps` (NULL: the
 * double's 10 GB/s), where a copy moves 10 GB/s; `extra` is appended to
 * the mode.  The context is returned, for a round trip. */
static tmm_ctx *auto_at(const char *host_mbps, const char *device_mbps,
			const char *extra, const char *want)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	char mode[64];
	tmm_ctx *ctx;

	if (host_mbps)
		setenv("CUDAFAKE_HOST_PREFETCH_MBPS", host_mbps, 1);
	if (device_mbps)
		setenv("CUDAFAKE_DEVICE_PREFETCH_MBPS", device_mbps, 1);
	snprintf(mode, sizeof(mode), "auto%s", extra);
	ctx = make_ctx(mode);
	unsetenv("CUDAFAKE_HOST_PREFETCH_MBPS");
	unsetenv("CUDAFAKE_DEVICE_PREFETCH_MBPS");
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_msg(!strcmp(st.mode, want), "%s/%s%s: %s, not %s",
		      host_mbps ? host_mbps : "-",
		      device_mbps ? device_mbps : "-", extra, st.mode, want);
	return ctx;
}

/*
 * Under a budget, auto takes swap where mode=uvm would move tensors
 * slowly or unhidden: by the copy way, whichever the rates (at the H200's
 * proportions, a prefetch 0.18 of a copy's rate out and fresh pages 0.57
 * of it, or with fresh pages cheap), as CUDA's copies of managed memory
 * hold the host; by prefetch asked for at a tenth of a copy's rate out,
 * 5.5 times the pinned round trip.  Where a prefetch moves at the pinned
 * rate, the way auto takes then, it takes uvm.
 */
START_TEST(auto_takes_swap_where_uvm_moves_slowly)
{
	tmm_ctx *ctx = auto_at("1800", "5700", "", "swap");

	round_trip(ctx);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(auto_at("1000", "100000", "",
						 "swap")), 0);
	ck_assert_int_eq(tmm_ctx_destroy(auto_at("1000", NULL,
						 ",uvm_swap_path=prefetch",
						 "swap")), 0);
	ck_assert_int_eq(tmm_ctx_destroy(auto_at(NULL, NULL, "", "uvm")), 0);
	ck_assert_int_eq(tmm_ctx_destroy(auto_at(NULL, NULL,
						 ",uvm_swap_path=copy",
						 "swap")), 0);
}
END_TEST

START_TEST(the_share_key_is_the_device_uuid)
{
	tmm_ctx *ctx = make_ctx("swap");
	char name[256], err[256];

	/* The double's UUID bytes are 0xc0, 0xc1, ... 0xcf. */
	ck_assert_str_eq(ctx->be.info.uuid,
			 "GPU-c0c1c2c3-c4c5-c6c7-c8c9-cacbcccdcecf");
	ck_assert_msg(tmm_config_load(&ctx->cfg, "share=auto", err,
				      sizeof(err)) == 0, "%s", err);
	tmm_share_name(&ctx->cfg, ctx->be.ops->name, &ctx->be.info, name,
		       sizeof(name));
	ck_assert_msg(strstr(name, ctx->be.info.uuid) &&
			      !strstr(name, "0000_00_00.0"),
		      "%s", name);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_refused_host_register_falls_back)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=off,stats_shm=off,"
				     "policy=passive,"
				     "fault=cudaHostRegister@1+") == 0,
		      "%s", tmm_last_error(NULL));
	round_trip(ctx);
	ck_assert_msg(strstr(ctx->be.info.host_pinning, "cudaMallocHost"),
		      "\"%s\"", ctx->be.info.host_pinning);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	/* The next context sets its own faults: none. */
	ctx = make_ctx("swap");
	round_trip(ctx);
	ck_assert_str_eq(ctx->be.info.host_pinning, "");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_forbidden_numa_node_falls_back)
{
	tmm_ctx *ctx;

	/* Node 63: no machine here has it, so no process may use it. */
	setenv("CUDAFAKE_NUMA_NODE", "63", 1);
	ctx = make_ctx("swap");
	ck_assert_int_eq(ctx->be.info.numa_node, 63);
	round_trip(ctx);
	ck_assert_msg(strstr(ctx->be.info.host_pinning, "NUMA node 63"),
		      "\"%s\"", ctx->be.info.host_pinning);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	unsetenv("CUDAFAKE_NUMA_NODE");
}
END_TEST

/* mode=uvm's way out on CUDA: the cheaper round trip by the rates
 * measured at open (lib/move/uvm_path.c), or the way asked for.  At the
 * double's own rates a prefetch each way (2 units) beats a copy each way
 * and fresh pages (3); with a prefetch out at a tenth of them, the copy
 * way wins. */
START_TEST(uvm_evicts_by_the_cheaper_way)
{
	tmm_ctx *ctx = make_ctx("uvm");

	ck_assert(!ctx->uvm_copy_out);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ctx = make_ctx("uvm,uvm_swap_path=copy");
	ck_assert(ctx->uvm_copy_out);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	setenv("CUDAFAKE_HOST_PREFETCH_MBPS", "1000", 1);
	ctx = make_ctx("uvm");
	ck_assert(ctx->uvm_copy_out);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ctx = make_ctx("uvm,uvm_swap_path=prefetch");
	unsetenv("CUDAFAKE_HOST_PREFETCH_MBPS");
	ck_assert(!ctx->uvm_copy_out);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* The double moves 10 GB/s (1e7 bytes a ms) and an operation costs a
 * microsecond (tests/cudafake/queue.c); on its device timeline a copy
 * on an idle stream also waits for the host to queue it, a launch's
 * 2 us after the event before it: 3 to 4 us a copy. */
START_TEST(the_link_is_measured)
{
	tmm_ctx *ctx = make_ctx("swap");
	const struct tmm_device_info *i = &ctx->be.info;

	ck_assert_msg(i->h2d_gbps > 9.9 && i->h2d_gbps < 10.1, "%s",
		      i->link);
	ck_assert_msg(i->d2h_gbps > 9.9 && i->d2h_gbps < 10.1, "%s",
		      i->link);
	ck_assert_msg(i->copy_latency_ns > 2900 && i->copy_latency_ns < 4100,
		      "%s", i->link);
	ck_assert_ptr_nonnull(strstr(i->link, "measured"));
	ck_assert_ptr_nonnull(strstr(i->link, "best of 3"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static void zero_twin(void *arg)
{
	memset(arg, 0, BYTES);
}

/* An op whose kernel (a host twin on the double) zeroes its output, on
 * the stream the runtime gives: one of the context's device. */
static int zero_run(void *const *in, void *const *out, void *user,
		    void *stream)
{
	struct cudafake_range r = { out[0], BYTES, true };

	(void)in;
	(void)user;
	return cudafake_launch(stream, zero_twin, out[0], &r, 1) ==
			       cudaSuccess
		       ? 0
		       : -1;
}

struct other_thread {
	tmm_ctx *ctx;
	int rc, device_after;
};

static void *on_device_1(void *arg)
{
	struct other_thread *o = arg;
	tmm_tensor t;
	tmm_op op = { .name = "zero", .outputs = &t, .n_outputs = 1,
		      .run = zero_run };

	ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
	o->rc = tmm_tensor_create(o->ctx, BYTES, TMM_ACTIVATION, "z", &t);
	if (o->rc == 0)
		o->rc = tmm_run(o->ctx, &op);
	if (o->rc == 0)
		round_trip(o->ctx);
	ck_assert_int_eq(cudaGetDevice(&o->device_after), cudaSuccess);
	return NULL;
}

START_TEST(another_threads_device_is_kept)
{
	struct other_thread o = { 0 };
	pthread_t th;

	setenv("CUDAFAKE_DEVICES", "2", 1);
	o.ctx = make_ctx("swap");
	ck_assert_int_eq(pthread_create(&th, NULL, on_device_1, &o), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(o.rc == 0, "%s", tmm_last_error(o.ctx));
	ck_assert_int_eq(o.device_after, 1);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(tmm_ctx_destroy(o.ctx), 0);
	unsetenv("CUDAFAKE_DEVICES");
}
END_TEST

START_TEST(an_older_cupti_is_not_used)
{
	tmm_ctx *ctx;

	setenv("CUDAFAKE_CUPTI_VERSION", "1", 1);
	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
				     "budget=64MiB,cupti=on,stats_shm=off") ==
			      0,
		      "%s", tmm_last_error(NULL));
	ck_assert_msg(strstr(ctx->be.info.timing, "events") &&
			      strstr(ctx->be.info.timing,
				     "CUPTI API version 1 is older"),
		      "%s", ctx->be.info.timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	unsetenv("CUDAFAKE_CUPTI_VERSION");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_defects");
	TCase *tc = tcase_create("defects");

	tcase_add_test(tc, host_copies_avoid_the_legacy_stream);
	tcase_add_test(tc, host_access_waits_for_the_streams_not_the_device);
	tcase_add_test(tc, uvm_needs_concurrent_managed_access);
	tcase_add_test(tc, auto_takes_swap_where_uvm_moves_slowly);
	tcase_add_test(tc, the_share_key_is_the_device_uuid);
	tcase_add_test(tc, a_refused_host_register_falls_back);
	tcase_add_test(tc, a_forbidden_numa_node_falls_back);
	tcase_add_test(tc, the_link_is_measured);
	tcase_add_test(tc, uvm_evicts_by_the_cheaper_way);
	tcase_add_test(tc, another_threads_device_is_kept);
	tcase_add_test(tc, an_older_cupti_is_not_used);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
