/* SPDX-License-Identifier: MIT */
/*
 * test_sim_engines.c — the "engines" and "jitter" cases of the simulator
 * suite (test_sim.c): the simulated GPU's clock, its compute and copy
 * engines, events, and the jitter of its kernel times.
 *
 * Copies on one engine run one after the other, the engines overlap, and
 * the host waits only where it syncs on an event, which counts as a
 * stall, and a timed wait measures what the engine stood still;
 * prefetches are timed like copies, and a copy of managed memory holds
 * the host until it has run, as CUDA's, but not behind a migration on the
 * migrate engine.  The expected times are worked
 * out by hand from the profile figures (the arithmetic is in the
 * comments), not by calling the code under test.  Jitter of 0 is exact, a
 * seed repeats its times, and the times centre on the roofline, never
 * below the 5% floor.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/sim_profile.h"
#include "lib/base/tunables.h"
#include "test_sim.h"

/* p100: 1 GiB H2D = 10000 + 2^30 / 11.69 = 10000 + 91851310.86 */
#define P100_H2D_GIB UINT64_C(91861311)
/* p100: 1 GiB D2H = 10000 + 2^30 / 12.9 = 10000 + 83235800.31 */
#define P100_D2H_GIB UINT64_C(83245800)
/* p100: 1e12 flop = 1e12 / 9.3e3 ns = 107526881.72 / 0.6 + 5000 */
#define P100_TFLOP UINT64_C(179216470)

/* ------------------------------------------------------------------------
 * Engines and events
 * ---------------------------------------------------------------------- */

START_TEST(test_engine_ordering)
{
	struct tmm_backend be;
	struct tmm_sim_counters c;
	void *h, *d1, *d2;
	tmm_event ev;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d1), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d2), 0);

	/* Two copies on one engine run one after the other. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d1, h, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), P100_H2D_GIB);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d2, h, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), 2 * P100_H2D_GIB);
	/* The other direction has its own engine: it overlaps. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, d1, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H), P100_D2H_GIB);
	/* Queuing copies does not move the host. */
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	ck_assert_uint_eq(counters(&be).stall_ns, 0);

	/* Waiting for the H2D engine does, and it is a stall. */
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &ev), 0);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 0);
	ck_assert_int_eq(be.ops->event_sync(&be, &ev), 0);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 1);
	ck_assert_uint_eq(be.ops->now_ns(&be), 2 * P100_H2D_GIB);
	be.ops->event_release(&be, &ev);
	/*
	 * A released event is invalid, so complete, as CUDA's backend
	 * leaves it: code that reads one after releasing it sees on the
	 * simulator what it would see on a GPU.
	 */
	ck_assert(!ev.valid);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 1);
	/* Waiting again for a past event costs nothing. */
	ck_assert_int_eq(be.ops->event_sync(&be, &ev), 0);

	c = counters(&be);
	ck_assert_uint_eq(c.stall_ns, 2 * P100_H2D_GIB);
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_COMPUTE], 2 * P100_H2D_GIB);
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_H2D], 2 * P100_H2D_GIB);
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_D2H], P100_D2H_GIB);
	ck_assert_uint_eq(c.busy_ns[TMM_ENGINE_H2D], 2 * P100_H2D_GIB);
	ck_assert_uint_eq(c.busy_ns[TMM_ENGINE_D2H], P100_D2H_GIB);
	ck_assert_uint_eq(c.busy_ns[TMM_ENGINE_COMPUTE], 0);
	ck_assert_uint_eq(c.bytes_h2d, 2 * GIB);
	ck_assert_uint_eq(c.copies_h2d, 2);
	ck_assert_uint_eq(c.bytes_d2h, GIB);
	ck_assert_uint_eq(c.copies_d2h, 1);

	/* A copy issued now starts now: the D2H engine sat idle. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, d2, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H),
			  2 * P100_H2D_GIB + P100_D2H_GIB);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_copy_after_kernel)
{
	struct tmm_backend be;
	struct tmm_cost cost = { .flops = 1e12, .bytes = 1e6 };
	uint64_t ns = 0;
	void *h, *d;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &cost), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &cost, &ns), 0);
	ck_assert_uint_eq(ns, P100_TFLOP);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);

	/* Issued after the kernel, the copy cannot start before it. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D),
			  P100_TFLOP + P100_H2D_GIB);

	/* copy_sync waits for the queued H2D copy, then holds the host. */
	ck_assert_int_eq(be.ops->copy_sync(&be, d, h, GIB, true), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP + 2 * P100_H2D_GIB);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D),
			  P100_TFLOP + 2 * P100_H2D_GIB);
	ck_assert_int_eq(be.ops->copy_sync(&be, h, d, GIB, false), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be),
			  P100_TFLOP + 2 * P100_H2D_GIB + P100_D2H_GIB);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H),
			  P100_TFLOP + 2 * P100_H2D_GIB + P100_D2H_GIB);
	ck_assert_uint_eq(counters(&be).stall_ns, 0);

	/* No cost hint: the launch alone. */
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, &ns), 0);
	ck_assert_uint_eq(ns, 5000);
	ck_assert_uint_eq(counters(&be).kernels, 2);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_event_query_follows_compute)
{
	struct tmm_backend be;
	struct tmm_cost small = { .flops = 9.3e9, .bytes = 0 };
	struct tmm_cost big = { .flops = 1e12, .bytes = 0 };
	tmm_event ev, now, invalid = { .valid = false };
	uint64_t ns;
	void *h, *d;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->event_query(&be, &invalid), 1);
	ck_assert_int_eq(be.ops->event_sync(&be, &invalid), 0);

	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &ev), 0);
	ck_assert_int_eq(ev.engine, TMM_ENGINE_H2D);
	ck_assert_uint_eq(ev.t_ns, P100_H2D_GIB);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 0);
	/* 1.67 ms of compute: the 91.9 ms copy is still running. */
	ck_assert_int_eq(be.ops->kernel_end(&be, &small, &ns), 0);
	ck_assert_uint_eq(ns, 1671667);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 0);
	/* 179 ms more: now it is done, without any wait. */
	ck_assert_int_eq(be.ops->kernel_end(&be, &big, &ns), 0);
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 1);
	ck_assert_uint_eq(counters(&be).stall_ns, 0);

	/* An event at exactly the current time is complete. */
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_COMPUTE, &now),
			 0);
	ck_assert_uint_eq(now.t_ns, 1671667 + P100_TFLOP);
	ck_assert_int_eq(be.ops->event_query(&be, &now), 1);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_engine_wait)
{
	struct tmm_backend be;
	tmm_event ev, early;
	tmm_timed_wait w;
	uint64_t waited = 1;
	void *h, *d;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &early),
			 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &ev), 0);

	/* The D2H engine waits for the H2D copy; the host does not. */
	ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_D2H, &ev), 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H), P100_H2D_GIB);
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, d, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H),
			  P100_H2D_GIB + P100_D2H_GIB);
	ck_assert_uint_eq(counters(&be).stall_ns, 0);

	/* Compute waiting is a stall, and a timed wait measures it. */
	ck_assert_int_eq(be.ops->engine_wait_timed(&be, TMM_ENGINE_COMPUTE,
						   &ev, &w), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_H2D_GIB);
	ck_assert_uint_eq(counters(&be).stall_ns, P100_H2D_GIB);
	ck_assert_int_eq(be.ops->timed_wait_ns(&be, &w, &waited), 0);
	ck_assert_uint_eq(waited, P100_H2D_GIB);
	ck_assert(!w.valid);
	/* Waiting again for what is past stands still for nothing. */
	ck_assert_int_eq(be.ops->engine_wait_timed(&be, TMM_ENGINE_COMPUTE,
						   &ev, &w), 0);
	ck_assert_int_eq(be.ops->timed_wait_ns(&be, &w, &waited), 0);
	ck_assert_uint_eq(waited, 0);
	/* A past event never moves an engine back. */
	ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_D2H, &early), 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H),
			  P100_H2D_GIB + P100_D2H_GIB);
	ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_COUNT, &ev),
			 -EINVAL);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_prefetch_timed_like_copy)
{
	struct tmm_backend be;
	struct tmm_sim_counters c;
	void *m, *d;

	open_sim(&be, "h100-pcie5-80g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->managed_alloc(&be, 2 * GIB, &m), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	/* The host populates the pages (it had none to move: no time). */
	populate(&be, m, 2 * GIB);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, GIB,
					  TMM_LOC_DEVICE, -1), 0);
	/* Back to the host: the copy waits for the one bringing it in. */
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_D2H, m, GIB,
					  TMM_LOC_HOST, 0), 0);
	/* Pages already on the host do not move. */
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_D2H,
					  (char *)m + GIB, GIB, TMM_LOC_HOST,
					  0), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	c = counters(&be);
	/* h100: 1 GiB at 46.76 / 51.6 GB/s + 10 us (see expect[]) */
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_H2D], 22972828);
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_D2H], 22972828 + 20818950);
	ck_assert_uint_eq(c.bytes_h2d, GIB);
	ck_assert_uint_eq(c.bytes_d2h, GIB);
	/* Advice takes no time. */
	ck_assert_int_eq(be.ops->advise(&be, m, 2 * GIB,
					TMM_ADVISE_PREFERRED_HOST), 0);
	ck_assert_uint_eq(counters(&be).engine_ns[TMM_ENGINE_H2D], 22972828);
	/* Only managed ranges may be prefetched. */
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, d, 4096,
					  TMM_LOC_DEVICE, -1), -EINVAL);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, 2 * GIB + 1,
					  TMM_LOC_DEVICE, -1), -EINVAL);
	be.ops->close(&be);
}
END_TEST

/*
 * sim_managed_copy=held (the default): a copy with a managed end returns
 * to the host only once it has run, as CUDA's does, so the next kernel
 * starts after it; a copy of device memory never holds.  queued: it
 * overlaps like any.  In lockstep (_i 0, 1) and ahead (_i 2, 3).
 */
START_TEST(test_managed_copy_holds_the_host)
{
	bool ahead = _i >= 2, held = _i % 2 == 0;
	struct tmm_cost cost = { .flops = 1e12, .bytes = 1e6 };
	/* Ahead, the host has paid the kernel's launch and no more. */
	uint64_t issued = ahead ? 5000 : P100_TFLOP, end, after;
	struct tmm_config cfg;
	struct tmm_backend be;
	void *h, *m, *d;

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	cfg.sim_host_ahead = ahead;
	cfg.sim_managed_copy_held = held;
	open_cfg(&be, &cfg);
	ck_assert(be.info.managed_copies_block_host == held);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, GIB, &m), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &cost), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &cost, NULL), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), issued);

	/* Into device memory: queued, whichever way. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), issued);
	/* Into managed memory: behind that one on the engine. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, m, h, GIB),
			 0);
	end = issued + 2 * P100_H2D_GIB;
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), end);
	ck_assert_uint_eq(be.ops->now_ns(&be), held ? end : issued);
	ck_assert_uint_eq(counters(&be).host_wait_ns, held ? end - issued : 0);
	ck_assert_uint_eq(counters(&be).stall_ns, 0);
	/* Out of managed memory too: D2H is free, so it starts now. */
	after = be.ops->now_ns(&be);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, m, GIB),
			 0);
	ck_assert_uint_eq(be.ops->now_ns(&be),
			  held ? after + P100_D2H_GIB : after);
	/* The next kernel runs after what the host was held for. */
	after = be.ops->now_ns(&be);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &cost), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &cost, NULL), 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_COMPUTE),
			  held ? after + P100_TFLOP : 2 * P100_TFLOP);
	be.ops->close(&be);
}
END_TEST

/*
 * The migrate engine (TMM_ENGINE_MIGRATE) runs beside the copy engines:
 * a held copy out of managed memory queued after a migration to the host
 * on it starts at once (_i 0), where on the D2H engine it waits for the
 * migration first (_i 1); either way the host is held until the copy
 * ends.  It takes no copies.
 */
START_TEST(test_migrate_engine_beside_copies)
{
	enum tmm_engine e = _i == 0 ? TMM_ENGINE_MIGRATE : TMM_ENGINE_D2H;
	struct tmm_config cfg;
	struct tmm_backend be;
	uint64_t in_end, out_end;
	void *h, *m;

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	cfg.sim_managed_copy_held = true;
	open_cfg(&be, &cfg);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, 2 * GIB, &m), 0);
	populate(&be, m, 2 * GIB);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, 2 * GIB,
					  TMM_LOC_DEVICE, -1), 0);
	in_end = event_at(&be, TMM_ENGINE_H2D);
	/* The first GiB back to the host: after it came in. */
	ck_assert_int_eq(be.ops->prefetch(&be, e, m, GIB, TMM_LOC_HOST, 0), 0);
	out_end = event_at(&be, e);
	ck_assert_uint_gt(out_end, in_end);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_MIGRATE, h, m,
					    4096), -EINVAL);
	/* The second GiB by a held copy. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h,
					    (char *)m + GIB, GIB), 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_D2H),
			  e == TMM_ENGINE_MIGRATE ? P100_D2H_GIB
						  : out_end + P100_D2H_GIB);
	ck_assert_uint_eq(be.ops->now_ns(&be), event_at(&be, TMM_ENGINE_D2H));
	be.ops->close(&be);
}
END_TEST

START_TEST(test_bad_engine_and_advice)
{
	static const enum tmm_advice ok[] = {
		TMM_ADVISE_PREFERRED_DEVICE, TMM_ADVISE_PREFERRED_HOST,
		TMM_ADVISE_UNSET_PREFERRED, TMM_ADVISE_ACCESSED_BY_DEVICE,
		TMM_ADVISE_UNSET_ACCESSED_BY, TMM_ADVISE_READ_MOSTLY,
		TMM_ADVISE_UNSET_READ_MOSTLY,
	};
	struct tmm_backend be;
	unsigned char *h, *m;
	tmm_event ev;
	size_t i;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_BACKED);
	ck_assert_int_eq(be.ops->host_alloc(&be, 4096, -1, (void **)&h), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, 4096, (void **)&m), 0);
	memset(h, 0x5a, 4096);
	memset(m, 0, 4096);

	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_COMPUTE, m, h,
					    4096), -EINVAL);
	ck_assert_ptr_nonnull(strstr(be.error, "copy_async"));
	ck_assert_int_eq(be.ops->copy_async(&be, (enum tmm_engine)7, m, h,
					    4096), -EINVAL);
	ck_assert_int_eq(be.ops->copy_async(&be, (enum tmm_engine)-1, m, h,
					    4096), -EINVAL);
	ck_assert_uint_eq(m[0], 0); /* refused copies move nothing */
	/* A prefetch may go on any stream, as CUDA's (the compute stream
	 * makes fresh outputs' pages, mover_uvm.c); not on no stream. */
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_COUNT, m, 4096,
					  TMM_LOC_DEVICE, -1), -EINVAL);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_COMPUTE, m, 4096,
					  TMM_LOC_DEVICE, -1), 0);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, 4096,
					  (enum tmm_location)2, -1), -EINVAL);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_COUNT, &ev),
			 -EINVAL);
	ck_assert_int_eq(be.ops->advise(&be, m, 4096, (enum tmm_advice)99),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(be.error, "99"));
	ck_assert_int_eq(be.ops->advise(&be, m, 4096, (enum tmm_advice)-1),
			 -EINVAL);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_int_eq(be.ops->advise(&be, m, 4096, ok[i]), 0);
	ck_assert_int_eq(be.ops->advise(&be, h, 4096,
					TMM_ADVISE_READ_MOSTLY), -EINVAL);

	/* Refused calls queue nothing. */
	ck_assert_uint_eq(counters(&be).copies_h2d, 0);
	ck_assert_uint_eq(counters(&be).engine_ns[TMM_ENGINE_H2D], 0);
	be.ops->host_free(&be, h, 4096);
	be.ops->managed_free(&be, m, 4096);
	be.ops->close(&be);
}
END_TEST

/* ------------------------------------------------------------------------
 * The network engine (sim_network.c)
 * ---------------------------------------------------------------------- */

/* p100: the network is EDR through PCIe 3.0 at 11.69 GB/s, 20 us a
 * collective: 1 GiB = 20000 + 2^30 / 11.69 = 20000 + 91851310.86 */
#define P100_NET_GIB UINT64_C(91871311)
/* ... 256 MiB = 20000 + 2^28 / 11.69 = 20000 + 22962827.72 */
#define P100_NET_QUARTER UINT64_C(22982828)
/* h100-sxm5: NVLink 4 at 450 GB/s, 10 us: 1 GiB = 10000 + 2386092.94 */
#define SXM5_NET_GIB UINT64_C(2396093)
/* h100-sxm5: 1 GiB H2D = 10000 + 2^30 / 52.1 = 10000 + 20609248.06 */
#define SXM5_H2D_GIB UINT64_C(20619248)
#define LAUNCH UINT64_C(5000)

/* Runs one op with this cost hint; returns its time. */
static uint64_t run_op(struct tmm_backend *be, double net_bytes)
{
	struct tmm_cost cost = { .net_bytes = net_bytes };
	uint64_t ns = 0;

	ck_assert_int_eq(be->ops->kernel_begin(be, &cost), 0);
	ck_assert_int_eq(be->ops->kernel_end(be, &cost, &ns), 0);
	return ns;
}

/* When the op run last ends, its network part included (the event the
 * runtime hands its tensors). */
static uint64_t collective_end(struct tmm_backend *be)
{
	tmm_event ev = { 0 };

	ck_assert_int_eq(be->ops->collective_event(be, &ev), 0);
	ck_assert(ev.valid);
	ck_assert_int_eq(ev.engine, TMM_ENGINE_NET);
	return ev.t_ns;
}

/* What the planners are told an op with these bytes takes on the compute
 * stream (a rehearsal records it). */
static uint64_t estimate(struct tmm_backend *be, double net_bytes)
{
	struct tmm_cost cost = { .net_bytes = net_bytes };

	return be->ops->op_estimate_ns(be, &cost);
}

START_TEST(test_collective_time)
{
	struct tmm_backend be;
	struct tmm_sim_counters c;

	/* latency + bytes / bandwidth, after the op's roofline (a launch
	 * here: no flops), on the network engine: the compute stream and
	 * the host pay the roofline alone and go on. */
	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_uint_eq(run_op(&be, (double)GIB), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), LAUNCH + P100_NET_GIB);
	ck_assert_uint_eq(estimate(&be, (double)GIB), LAUNCH);
	ck_assert_uint_eq(be.ops->now_ns(&be), LAUNCH);
	/* The next collective waits for the network engine. */
	ck_assert_uint_eq(run_op(&be, (double)GIB / 4), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), LAUNCH + P100_NET_GIB +
						       LAUNCH +
						       P100_NET_QUARTER);
	ck_assert_uint_eq(be.ops->now_ns(&be), 2 * LAUNCH);
	/* An op with no network bytes is compute alone, and ends with
	 * its roofline. */
	ck_assert_uint_eq(run_op(&be, 0), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), 3 * LAUNCH);
	c = counters(&be);
	ck_assert_uint_eq(c.collectives, 2);
	ck_assert_uint_eq(c.net_busy_ns, P100_NET_GIB + P100_NET_QUARTER);
	ck_assert(c.net_bytes == (double)GIB * 5 / 4);
	be.ops->close(&be);

	open_sim(&be, "h100-sxm5-pcie5-80g", TMM_SIM_PHANTOM);
	ck_assert_uint_eq(run_op(&be, (double)GIB), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), LAUNCH + SXM5_NET_GIB);
	be.ops->close(&be);
}
END_TEST

/*
 * On a PCIe profile a copy in flight and a collective split the link
 * while both run: each ends later than alone, the shorter at twice its
 * time from the collective's start, the longer at the sum of both; an
 * event recorded on the copy before the collective moves with it.
 */
START_TEST(test_collective_shares_pcie)
{
	struct tmm_backend be;
	tmm_event ev;
	uint64_t rest;
	void *h, *d;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &ev), 0);
	ck_assert_uint_eq(ev.t_ns, P100_H2D_GIB);
	/* The collective reaches the link after its launch; the copy has
	 * P100_H2D_GIB - LAUNCH left, more than the collective's part. */
	rest = P100_H2D_GIB - LAUNCH;
	ck_assert_uint_eq(run_op(&be, (double)GIB / 4), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), LAUNCH + 2 * P100_NET_QUARTER);
	/* The planners' estimate is the compute stream's part alone, with
	 * or without a copy sharing the link. */
	ck_assert_uint_eq(estimate(&be, (double)GIB / 4), LAUNCH);
	ck_assert_uint_eq(be.ops->now_ns(&be), LAUNCH);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D),
			  LAUNCH + P100_NET_QUARTER + rest);
	ck_assert_uint_gt(event_at(&be, TMM_ENGINE_H2D), P100_H2D_GIB);
	/* The event recorded before is the copy's new end. */
	ck_assert_int_eq(be.ops->event_query(&be, &ev), 0);
	ck_assert_int_eq(be.ops->event_sync(&be, &ev), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be),
			  LAUNCH + P100_NET_QUARTER + rest);
	be.ops->close(&be);

	/* A collective longer than the copy: the copy ends at twice its
	 * rest, the collective at the sum. */
	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_uint_eq(run_op(&be, 2.0 * (double)GIB), LAUNCH);
	ck_assert_uint_eq(collective_end(&be),
			  LAUNCH + (2 * P100_NET_GIB - 20000) + rest);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), LAUNCH + 2 * rest);
	be.ops->close(&be);
}
END_TEST

/* On NVLink the collective does not touch PCIe: the copy keeps its time
 * and the collective its own. */
START_TEST(test_collective_nvlink_apart)
{
	struct tmm_backend be;
	void *h, *d;

	open_sim(&be, "h100-sxm5-pcie5-80g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), SXM5_H2D_GIB);
	ck_assert_uint_eq(run_op(&be, (double)GIB), LAUNCH);
	ck_assert_uint_eq(collective_end(&be), LAUNCH + SXM5_NET_GIB);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), SXM5_H2D_GIB);
	be.ops->close(&be);
}
END_TEST

/* Every profile names its network, with a rate and a latency. */
START_TEST(test_every_profile_has_network)
{
	const struct tmm_sim_profile *p;
	size_t n, i;

	p = tmm_sim_profiles(&n);
	for (i = 0; i < n; i++) {
		ck_assert_msg(p[i].net_link && p[i].net_link[0], "%s",
			      p[i].name);
		ck_assert_msg(p[i].net_gbps > 0, "%s", p[i].name);
		ck_assert_msg(p[i].net_latency_ns > 0, "%s", p[i].name);
		/* Through PCIe, never faster than the PCIe link. */
		if (p[i].net_over_pcie)
			ck_assert_msg(p[i].net_gbps <= p[i].h2d_gbps, "%s",
				      p[i].name);
	}
}
END_TEST

/* ------------------------------------------------------------------------
 * Jitter
 * ---------------------------------------------------------------------- */

#define NJIT 64

static void durations(uint64_t *out, size_t n, double jitter, uint64_t seed)
{
	struct tmm_cost cost = { .flops = 1e12, .bytes = 0 };
	struct tmm_backend be;
	struct tmm_config cfg;
	uint64_t sum = 0;
	size_t i;

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	cfg.sim_jitter = jitter;
	cfg.sim_seed = seed;
	open_cfg(&be, &cfg);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(be.ops->kernel_end(&be, &cost, &out[i]), 0);
		sum += out[i];
	}
	/* The clock advanced by exactly what was reported. */
	ck_assert_uint_eq(be.ops->now_ns(&be), sum);
	ck_assert_uint_eq(counters(&be).busy_ns[TMM_ENGINE_COMPUTE], sum);
	be.ops->close(&be);
}

START_TEST(test_jitter_zero_is_exact)
{
	uint64_t d[NJIT];
	size_t i;

	durations(d, NJIT, 0, 42);
	for (i = 0; i < NJIT; i++)
		ck_assert_uint_eq(d[i], P100_TFLOP);
}
END_TEST

START_TEST(test_jitter_seeded)
{
	uint64_t a[NJIT], b[NJIT], c[NJIT];
	size_t i, differ_ab = 0, differ_base = 0;

	durations(a, NJIT, 0.1, 42);
	durations(b, NJIT, 0.1, 42);
	durations(c, NJIT, 0.1, 43);
	ck_assert_int_eq(memcmp(a, b, sizeof(a)), 0);
	for (i = 0; i < NJIT; i++) {
		differ_ab += a[i] != c[i];
		differ_base += a[i] != P100_TFLOP;
	}
	ck_assert_uint_ge(differ_ab, NJIT / 2);
	ck_assert_uint_ge(differ_base, NJIT / 2);
}
END_TEST

/* Centred on the roofline, and never below the 5% floor. */
START_TEST(test_jitter_distribution)
{
	enum { N = 4000 };
	static uint64_t d[N];
	double sum = 0, sq = 0, mean, sd;
	uint64_t lo = UINT64_MAX;
	size_t i, floored = 0;

	durations(d, N, 0.1, 7);
	for (i = 0; i < N; i++)
		sum += (double)d[i];
	mean = sum / N;
	for (i = 0; i < N; i++)
		sq += ((double)d[i] - mean) * ((double)d[i] - mean);
	sd = sqrt(sq / (N - 1)) / P100_TFLOP;
	/* Standard error of the mean: 0.1 / sqrt(4000) = 0.16% */
	ck_assert_msg(fabs(mean / P100_TFLOP - 1) < 0.01, "mean %f", mean);
	ck_assert_msg(sd > 0.09 && sd < 0.11, "relative sd %f", sd);

	/* jitter 1: 1 + N(0,1) < 0.05 about 17% of the time. */
	durations(d, N, 1.0, 7);
	for (i = 0; i < N; i++) {
		if (d[i] < lo)
			lo = d[i];
		floored += d[i] <= 8960824;
	}
	/* 179216470 * 0.05 = 8960823.5 */
	ck_assert_uint_ge(lo, 8960823);
	ck_assert_uint_le(lo, 8960824);
	ck_assert_uint_gt(floored, N / 10);
	ck_assert_uint_lt(floored, N / 4);
}
END_TEST

void add_sim_engine_tests(Suite *s)
{
	TCase *tc;

	tc = tcase_create("engines");
	tcase_add_test(tc, test_engine_ordering);
	tcase_add_test(tc, test_copy_after_kernel);
	tcase_add_test(tc, test_event_query_follows_compute);
	tcase_add_test(tc, test_engine_wait);
	tcase_add_test(tc, test_prefetch_timed_like_copy);
	tcase_add_loop_test(tc, test_managed_copy_holds_the_host, 0, 4);
	tcase_add_loop_test(tc, test_migrate_engine_beside_copies, 0, 2);
	tcase_add_test(tc, test_bad_engine_and_advice);
	tcase_add_test(tc, test_collective_time);
	tcase_add_test(tc, test_collective_shares_pcie);
	tcase_add_test(tc, test_collective_nvlink_apart);
	tcase_add_test(tc, test_every_profile_has_network);
	suite_add_tcase(s, tc);

	tc = tcase_create("jitter");
	tcase_add_test(tc, test_jitter_zero_is_exact);
	tcase_add_test(tc, test_jitter_seeded);
	tcase_add_test(tc, test_jitter_distribution);
	tcase_set_timeout(tc, 60); /* valgrind is slow */
	suite_add_tcase(s, tc);
}
