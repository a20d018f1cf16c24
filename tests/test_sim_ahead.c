/* SPDX-License-Identifier: MIT */
/*
 * test_sim_ahead.c — the simulated host that runs ahead of its device
 * (sim_host=ahead), and what the runtime must do to lose nothing by it
 * (issue #19).
 *
 * A real GPU's host queues kernels and copies and goes on: the H200 of
 * docs/gpu-h200.md ran every planned policy at 2-3x its unconstrained
 * step in swap mode where the lockstep simulator predicted 1.05-2.3x.
 * With sim_host=ahead the simulator's host does the same, and these
 * cases hold what the backend does: a kernel costs the host its launch
 * only; a copy starts when the host issues it; a query sees work still
 * running that the host has passed; the host moves where it waits, and at
 * kernels_wait.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "drive.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/tunables.h"
#include "tensormm.h"
#include "zoo.h"

#define GIB (UINT64_C(1) << 30)
/* p100: 1e12 flop = 1e12 / 9.3e3 ns = 107526881.72 / 0.6 + 5000 launch */
#define P100_TFLOP UINT64_C(179216470)
#define P100_LAUNCH UINT64_C(5000)
/* p100: 1 GiB H2D = 10000 + 2^30 / 11.69 = 10000 + 91851310.86 */
#define P100_H2D_GIB UINT64_C(91861311)

#define H100 "backend=sim,sim_memory=phantom,sim_profile=h100-sxm5-pcie5-80g"
#define ITERATIONS 6

static void open_sim(struct tmm_backend *be, bool ahead)
{
	struct tmm_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = TMM_BACKEND_SIM;
	snprintf(cfg.sim_profile, sizeof(cfg.sim_profile), "p100-pcie3-16g");
	cfg.sim_memory = TMM_SIM_PHANTOM;
	cfg.host_numa_node = -1;
	cfg.sim_host_ahead = ahead;
	memset(be, 0, sizeof(*be));
	be->ops = &tmm_backend_sim_ops;
	ck_assert_msg(be->ops->open(be, &cfg) == 0, "open: %s", be->error);
}

static struct tmm_sim_counters counters(const struct tmm_backend *be)
{
	struct tmm_sim_counters c;

	ck_assert_int_eq(tmm_sim_get_counters(be, &c), 0);
	return c;
}

/* One kernel of 1e12 flop, then a 1 GiB copy in, and where each is. */
START_TEST(the_host_runs_ahead_until_it_waits)
{
	const struct tmm_cost tflop = { .flops = 1e12 };
	struct tmm_backend be;
	tmm_event k, copy;
	void *h, *d;
	uint64_t ns;

	open_sim(&be, true);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, &ns), 0);
	ck_assert_uint_eq(ns, P100_TFLOP);
	/* The host paid the launch; the device has the whole op queued. */
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_LAUNCH);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_COMPUTE, &k),
			 0);
	ck_assert_uint_eq(k.t_ns, P100_TFLOP);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 0);
	/* A copy issued now starts now, beside the kernel. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &copy),
			 0);
	ck_assert_uint_eq(copy.t_ns, P100_LAUNCH + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->event_query(&be, &copy), 0);
	/* The host meets the device where it waits for it. */
	ck_assert_int_eq(be.ops->event_sync(&be, &copy), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_LAUNCH + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 0);
	ck_assert_int_eq(be.ops->kernels_wait(&be), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 1);
	/* The device never waited; the host did, up to the kernel's end. */
	ck_assert_uint_eq(counters(&be).stall_ns, 0);
	ck_assert_uint_eq(counters(&be).host_wait_ns,
			  P100_TFLOP - P100_LAUNCH);
	/* A kernel issued once the engine has run dry starts at the host. */
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, &ns), 0);
	ck_assert_uint_eq(counters(&be).engine_ns[TMM_ENGINE_COMPUTE],
			  2 * P100_TFLOP);
	be.ops->host_free(&be, h, GIB);
	be.ops->dev_free(&be, d, GIB);
	be.ops->close(&be);
}
END_TEST

/* The same calls in lockstep: the host is where the compute engine is. */
START_TEST(in_lockstep_the_host_is_the_compute_engine)
{
	const struct tmm_cost tflop = { .flops = 1e12 };
	struct tmm_backend be;
	tmm_event copy;
	void *h, *d;

	open_sim(&be, false);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, NULL), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &copy),
			 0);
	ck_assert_uint_eq(copy.t_ns, P100_TFLOP + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->kernels_wait(&be), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_uint_eq(counters(&be).host_wait_ns, 0);
	be.ops->host_free(&be, h, GIB);
	be.ops->dev_free(&be, d, GIB);
	be.ops->close(&be);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_ahead");
	TCase *tc = tcase_create("backend");

	tcase_add_test(tc, the_host_runs_ahead_until_it_waits);
	tcase_add_test(tc, in_lockstep_the_host_is_the_compute_engine);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
