/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_devices.c — the `device` tunable on the cuda backend (issue
 * #26 §1), on the CUDA test double with two devices (CUDAFAKE_DEVICES=2):
 *  - two contexts on devices 0 and 1, driven from one thread in turn, each
 *    allocate on their own device and run their kernels there, with
 *    their device current in their callbacks, in swap and uvm mode, and
 *    the thread's own current device is what it was;
 *  - a UUID (either case) picks the device that has it, one that no
 *    device has and an index past the devices are refused with -ENODEV
 *    saying how many there are, also under backend=auto (no simulator
 *    standing in for a GPU this machine lacks);
 *  - current is the calling thread's current device;
 *  - share=auto keys the segment by each device's own UUID.
 */
#include <check.h>
#include <errno.h>
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

/* The double's UUIDs: bytes 0xc0 to 0xcf, the last one more a device. */
#define UUID_0 "GPU-c0c1c2c3-c4c5-c6c7-c8c9-cacbcccdcecf"
#define UUID_1 "GPU-c0c1c2c3-c4c5-c6c7-c8c9-cacbcccdced0"

static void two_devices(void)
{
	ck_assert_int_eq(setenv("CUDAFAKE_DEVICES", "2", 1), 0);
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
}

static void one_device(void)
{
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
	ck_assert_int_eq(unsetenv("CUDAFAKE_DEVICES"), 0);
}

static int current_device(void)
{
	int d = -1;

	ck_assert_int_eq(cudaGetDevice(&d), cudaSuccess);
	return d;
}

static tmm_ctx *on_device(const char *mode, const char *device)
{
	char cfg[200];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=%s,budget=64MiB,"
		 "cupti=off,stats_shm=off,policy=passive,device=%s", mode,
		 device);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	return ctx;
}

static void error_has(const char *want)
{
	ck_assert_msg(strstr(tmm_last_error(NULL), want), "\"%s\" is not in "
		      "\"%s\"", want, tmm_last_error(NULL));
}

/* What an op's callback saw: its output, and the current device. */
struct seen {
	void *out;
	int device;
};

static void zero_twin(void *arg)
{
	memset(arg, 0, BYTES);
}

/* Zeroes its output with a kernel (a host twin on the double) on the
 * stream the runtime gives, and notes where it ran. */
static int zero_run(void *const *in, void *const *out, void *user,
		    void *stream)
{
	struct cudafake_range r = { out[0], BYTES, true };
	struct seen *seen = user;

	(void)in;
	seen->out = out[0];
	if (cudaGetDevice(&seen->device) != cudaSuccess)
		return -1;
	return cudafake_launch(stream, zero_twin, out[0], &r, 1) ==
			       cudaSuccess
		       ? 0
		       : -1;
}

/* Runs one op in ctx, from a thread whose current device is 0, and
 * checks that it ran on `device`: its kernel, its output's memory and
 * the device current in its callback; the thread's device is kept. */
static void runs_on(tmm_ctx *ctx, int device)
{
	struct seen seen = { NULL, -1 };
	tmm_tensor t;
	tmm_op op = { .name = "zero", .outputs = &t, .n_outputs = 1,
		      .run = zero_run, .user = &seen };
	unsigned long k0 = cudafake_kernels_on(0),
		      k1 = cudafake_kernels_on(1);
	uint8_t back[BYTES];

	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "z",
					   &t),
			 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(seen.device, device);
	ck_assert_int_eq(cudafake_device_of(seen.out), device);
	ck_assert_uint_eq(cudafake_kernels_on(device),
			  (device ? k1 : k0) + 1);
	ck_assert_uint_eq(cudafake_kernels_on(!device), device ? k0 : k1);
	memset(back, 0xff, sizeof(back));
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, back, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < BYTES; i++)
		ck_assert_uint_eq(back[i], 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t), 0);
	ck_assert_int_eq(current_device(), 0);
}

static void two_contexts_in_turn(const char *mode)
{
	tmm_ctx *a, *b;

	two_devices();
	cudafake_reset(1);
	a = on_device(mode, "0");
	b = on_device(mode, "1");
	ck_assert_int_eq(current_device(), 0);
	ck_assert_int_eq(a->be.info.index, 0);
	ck_assert_int_eq(b->be.info.index, 1);
	ck_assert_str_eq(a->be.info.uuid, UUID_0);
	ck_assert_str_eq(b->be.info.uuid, UUID_1);
	ck_assert_str_eq(b->be.info.pci_bus_id, "0000:01:00.0");
	runs_on(b, 1);
	runs_on(a, 0);
	runs_on(b, 1);
	/* Swap mode's arena: each on its own device's memory. */
	if (strcmp(mode, "swap") == 0) {
		ck_assert_uint_gt(cudafake_device_in_use(0), 0);
		ck_assert_uint_gt(cudafake_device_in_use(1), 0);
	}
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(tmm_ctx_destroy(b), 0);
	ck_assert_uint_eq(cudafake_device_in_use(1), 0);
	ck_assert_int_eq(current_device(), 0);
	ck_assert_int_eq(tmm_ctx_destroy(a), 0);
	ck_assert_uint_eq(cudafake_device_in_use(0), 0);
	one_device();
}

START_TEST(two_contexts_on_two_devices_swap)
{
	two_contexts_in_turn("swap");
}
END_TEST

START_TEST(two_contexts_on_two_devices_uvm)
{
	two_contexts_in_turn("uvm");
}
END_TEST

START_TEST(a_uuid_picks_its_device)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;

	two_devices();
	ctx = on_device("swap", UUID_1);
	ck_assert_int_eq(ctx->be.info.index, 1);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_int_eq(st.device_index, 1);
	runs_on(ctx, 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	/* As nvidia-smi might print it, or a person type it. */
	ctx = on_device("swap", "GPU-C0C1C2C3-C4C5-C6C7-C8C9-CACBCCCDCECF");
	ck_assert_int_eq(ctx->be.info.index, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	one_device();
}
END_TEST

START_TEST(a_device_this_machine_lacks_is_refused)
{
	tmm_ctx *ctx = (tmm_ctx *)1;

	two_devices();
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,stats_shm=off,"
					"device=2"),
			 -ENODEV);
	ck_assert_ptr_null(ctx);
	error_has("device=2: this process sees 2 CUDA devices (0 to 1;");
	error_has("TENSORMM_DEVICE");
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=cuda,stats_shm=off,"
					"device=GPU-c0c1c2c3-c4c5-c6c7-c8c9-"
					"cacbcccdcedf"),
			 -ENODEV);
	error_has("none of the 2 CUDA devices this process sees has that "
		  "UUID");
	error_has("TENSORMM_DEVICE");
	/* backend=auto does not hand a GPU it lacks to the simulator. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=auto,stats_shm=off,"
					"device=5"),
			 -ENODEV);
	error_has("backend=auto: device=5: this process sees 2 CUDA devices");
	ck_assert_int_eq(current_device(), 0);
	one_device();
}
END_TEST

START_TEST(current_is_the_threads_device)
{
	tmm_ctx *ctx;

	two_devices();
	ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
	ctx = on_device("swap", "current");
	ck_assert_int_eq(ctx->be.info.index, 1);
	ck_assert_int_eq(current_device(), 1);
	/* Driven from device 0 now: it stays on 1. */
	ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
	runs_on(ctx, 1);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	one_device();
}
END_TEST

START_TEST(the_share_key_is_each_devices_uuid)
{
	char name0[TMM_SHARE_NAME_MAX], name1[TMM_SHARE_NAME_MAX];
	char cfg[200], err[256];
	tmm_ctx *a, *b;

	two_devices();
	a = on_device("swap", "0");
	b = on_device("swap", "1");
	snprintf(cfg, sizeof(cfg), "share=auto");
	ck_assert_msg(tmm_config_load(&a->cfg, cfg, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(tmm_config_load(&b->cfg, cfg, err, sizeof(err)) == 0,
		      "%s", err);
	tmm_share_name(&a->cfg, a->be.ops->name, &a->be.info, name0,
		       sizeof(name0));
	tmm_share_name(&b->cfg, b->be.ops->name, &b->be.info, name1,
		       sizeof(name1));
	ck_assert_msg(strstr(name0, UUID_0), "%s", name0);
	ck_assert_msg(strstr(name1, UUID_1), "%s", name1);
	ck_assert_int_eq(tmm_ctx_destroy(b), 0);
	ck_assert_int_eq(tmm_ctx_destroy(a), 0);
	one_device();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_devices");
	TCase *tc = tcase_create("devices");

	tcase_add_test(tc, two_contexts_on_two_devices_swap);
	tcase_add_test(tc, two_contexts_on_two_devices_uvm);
	tcase_add_test(tc, a_uuid_picks_its_device);
	tcase_add_test(tc, a_device_this_machine_lacks_is_refused);
	tcase_add_test(tc, current_is_the_threads_device);
	tcase_add_test(tc, the_share_key_is_each_devices_uuid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
