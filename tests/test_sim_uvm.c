/* SPDX-License-Identifier: MIT */
/*
 * test_sim_uvm.c — the simulated UVM driver on small hand-made cases.
 *
 * Each case drives the sim backend's managed-memory calls directly and
 * checks fault counts, migrated bytes, evictions and time against figures
 * worked out here from the profile: a fault batch costs uvm_batch_ns, a
 * fault uvm_fault_ns, a migration bytes / uvm_fault_gbps, a write-back
 * bytes / d2h_gbps, each rounded to the nanosecond (docs/uvm-model.md).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/sim_profile.h"
#include "lib/base/tunables.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define BLOCK (2 * MIB)
#define PAGE (64 * KIB)
#define PAGES_PER_BLOCK 32

static struct tmm_backend be;
static const struct tmm_sim_profile *p;

static void open_with_limit(uint64_t limit, enum tmm_sim_memory mem)
{
	struct tmm_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = TMM_BACKEND_SIM;
	snprintf(cfg.sim_profile, sizeof(cfg.sim_profile), "p100-pcie3-16g");
	cfg.sim_memory = mem;
	cfg.host_numa_node = -1;
	memset(&be, 0, sizeof(be));
	be.ops = &tmm_backend_sim_ops;
	ck_assert_msg(be.ops->open(&be, &cfg) == 0, "%s", be.error);
	ck_assert_int_eq(be.ops->managed_limit(&be, limit), 0);
	p = tmm_sim_profile_find("p100-pcie3-16g");
	ck_assert_ptr_nonnull(p);
}

static void *managed(size_t bytes)
{
	void *m;

	ck_assert_int_eq(be.ops->managed_alloc(&be, bytes, &m), 0);
	return m;
}

static void touch(void *ptr, size_t bytes, bool write, bool by_host)
{
	struct tmm_managed_range r = { ptr, bytes, write, by_host };

	ck_assert_msg(be.ops->managed_access(&be, &r, 1) == 0, "%s",
		      be.error);
}

/* The host writes the range: its pages get contents, on the host. */
static void populate(void *ptr, size_t bytes)
{
	touch(ptr, bytes, true, true);
}

static struct tmm_managed_stats st(void)
{
	struct tmm_managed_stats s;

	ck_assert_int_eq(be.ops->managed_stats(&be, &s), 0);
	return s;
}

static uint64_t now(void)
{
	return be.ops->now_ns(&be);
}

static uint64_t xfer(uint64_t bytes, double gbps)
{
	return bytes ? (uint64_t)llround((double)bytes / gbps) : 0;
}

/* What one piece of work's faults cost, by the model's rule. */
static uint64_t fault_cost(uint64_t faults, uint64_t migrated,
			   uint64_t written_back)
{
	uint64_t batches = (faults + p->uvm_fault_batch - 1) /
			   p->uvm_fault_batch;

	return batches * p->uvm_batch_ns + faults * p->uvm_fault_ns +
	       xfer(migrated, p->uvm_fault_gbps) +
	       xfer(written_back, p->d2h_gbps);
}

START_TEST(profile_has_the_driver_constants)
{
	open_with_limit(BLOCK, TMM_SIM_PHANTOM);
	ck_assert_uint_eq(p->uvm_block_bytes, BLOCK);
	ck_assert_uint_eq(p->uvm_page_bytes, PAGE);
	ck_assert_uint_eq(p->uvm_fault_batch, 256);
	ck_assert(p->uvm_remote_gbps > 0 && p->uvm_remote_gbps < p->h2d_gbps);
	be.ops->close(&be);
}
END_TEST

/* Four blocks swept in order on a device that holds two: every pass
 * faults everything in again and evicts what it will need next. */
START_TEST(oversubscribed_sweep_thrashes)
{
	char *buf;
	uint64_t t, expect = 0;
	struct tmm_managed_stats s;

	open_with_limit(2 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(4 * BLOCK);
	populate(buf, 4 * BLOCK);
	ck_assert_uint_eq(now(), 0); /* nothing was on the device */
	for (int pass = 0; pass < 3; pass++) {
		for (int b = 0; b < 4; b++) {
			t = now();
			touch(buf + b * BLOCK, BLOCK, false, false);
			/* The first two of all fit; every later one evicts
			 * a block whose pages migrated (no host copy). */
			expect = fault_cost(PAGES_PER_BLOCK, BLOCK,
					    pass == 0 && b < 2 ? 0 : BLOCK);
			ck_assert_uint_eq(now() - t, expect);
		}
	}
	s = st();
	ck_assert_uint_eq(s.faults, 3 * 4 * PAGES_PER_BLOCK);
	ck_assert_uint_eq(s.fault_batches, 3 * 4); /* 32 faults each */
	ck_assert_uint_eq(s.fault_bytes, 3 * 4 * BLOCK);
	ck_assert_uint_eq(s.evictions, 3 * 4 - 2);
	ck_assert_uint_eq(s.eviction_bytes, (3 * 4 - 2) * BLOCK);
	ck_assert_uint_eq(s.resident, 2 * BLOCK);
	ck_assert_uint_eq(s.resident_peak, 2 * BLOCK);
	ck_assert_uint_eq(s.stall_ns, now());
	be.ops->managed_free(&be, buf, 4 * BLOCK);
	be.ops->close(&be);
}
END_TEST

/* The same sweep with room for it: the second pass takes no fault. */
START_TEST(sweep_that_fits_faults_once)
{
	char *buf;
	uint64_t t;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(4 * BLOCK);
	populate(buf, 4 * BLOCK);
	for (int b = 0; b < 4; b++)
		touch(buf + b * BLOCK, BLOCK, false, false);
	t = now();
	for (int b = 0; b < 4; b++)
		touch(buf + b * BLOCK, BLOCK, true, false);
	ck_assert_uint_eq(now(), t);
	ck_assert_uint_eq(st().faults, 4 * PAGES_PER_BLOCK);
	ck_assert_uint_eq(st().evictions, 0);
	be.ops->managed_free(&be, buf, 4 * BLOCK);
	ck_assert_uint_eq(st().resident, 0);
	be.ops->close(&be);
}
END_TEST

/* Fault batches are ceil(faults / 256); fresh pages cost no copy. */
START_TEST(fault_batches_round_up)
{
	static const unsigned pages[] = { 1, 255, 256, 257, 300, 512, 513 };
	uint64_t batches = 0, faults = 0, t;
	char *buf;

	open_with_limit(64 * BLOCK, TMM_SIM_PHANTOM);
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		uint64_t n = pages[i], b = (n + 255) / 256;

		buf = managed(n * PAGE);
		/* Never populated: zero-filled on the device, no copy. */
		t = now();
		touch(buf, n * PAGE, true, false);
		ck_assert_uint_eq(now() - t, fault_cost(n, 0, 0));
		batches += b;
		faults += n;
		ck_assert_uint_eq(st().fault_batches, batches);
		ck_assert_uint_eq(st().faults, faults);
		ck_assert_uint_eq(st().fault_bytes, 0);
		be.ops->managed_free(&be, buf, n * PAGE);
	}
	/* Populated pages migrate; one op's ranges share their batches. */
	{
		char *a = managed(200 * PAGE), *b2 = managed(100 * PAGE);
		struct tmm_managed_range r[2] = {
			{ a, 200 * PAGE, false, false },
			{ b2, 100 * PAGE, true, false },
		};

		populate(a, 200 * PAGE);
		populate(b2, 100 * PAGE);
		t = now();
		ck_assert_int_eq(be.ops->managed_access(&be, r, 2), 0);
		ck_assert_uint_eq(now() - t, fault_cost(300, 300 * PAGE, 0));
		ck_assert_uint_eq(st().fault_batches, batches + 2);
		ck_assert_uint_eq(st().fault_bytes, 300 * PAGE);
	}
	/* A partial last page moves only the bytes it has. */
	buf = managed(PAGE + 100);
	populate(buf, PAGE + 100);
	t = now();
	touch(buf, PAGE + 100, false, false);
	ck_assert_uint_eq(now() - t, fault_cost(2, PAGE + 100, 0));
	be.ops->close(&be);
}
END_TEST

/* Prefetched ahead, a buffer takes no fault: the kernel only waits for
 * the copy engine to finish. */
START_TEST(prefetched_buffer_takes_no_faults)
{
	char *buf;
	uint64_t copy_end;
	struct tmm_sim_counters c;

	open_with_limit(8 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(2 * BLOCK);
	populate(buf, 2 * BLOCK);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, buf, 2 * BLOCK,
					  TMM_LOC_DEVICE, -1), 0);
	ck_assert_uint_eq(now(), 0); /* asynchronous */
	copy_end = p->copy_latency_ns + xfer(2 * BLOCK, p->h2d_gbps);
	ck_assert_int_eq(tmm_sim_get_counters(&be, &c), 0);
	ck_assert_uint_eq(c.engine_ns[TMM_ENGINE_H2D], copy_end);
	ck_assert_uint_eq(c.bytes_h2d, 2 * BLOCK);
	touch(buf, 2 * BLOCK, false, false);
	ck_assert_uint_eq(st().faults, 0);
	ck_assert_uint_eq(st().prefetch_bytes, 2 * BLOCK);
	ck_assert_uint_eq(now(), copy_end); /* waited for the copy */
	/* Copy-engine prefetch beats the fault path for the same bytes. */
	ck_assert_uint_lt(copy_end, fault_cost(64, 2 * BLOCK, 0));
	/* Prefetching what is there moves nothing. */
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, buf, 2 * BLOCK,
					  TMM_LOC_DEVICE, -1), 0);
	ck_assert_uint_eq(st().prefetch_bytes, 2 * BLOCK);
	be.ops->close(&be);
}
END_TEST

/* Read-mostly pages are duplicated: evicting them writes nothing back;
 * a write invalidates the host copy, and then eviction must copy. */
START_TEST(read_mostly_is_not_written_back)
{
	char *a, *b;
	uint64_t t;

	open_with_limit(BLOCK, TMM_SIM_PHANTOM);
	a = managed(BLOCK);
	b = managed(BLOCK);
	populate(a, BLOCK);
	populate(b, BLOCK);
	ck_assert_int_eq(be.ops->advise(&be, a, BLOCK,
					TMM_ADVISE_READ_MOSTLY), 0);
	touch(a, BLOCK, false, false);
	t = now();
	touch(b, BLOCK, false, false); /* evicts a: no write-back */
	ck_assert_uint_eq(now() - t, fault_cost(PAGES_PER_BLOCK, BLOCK, 0));
	ck_assert_uint_eq(st().evictions, 1);
	ck_assert_uint_eq(st().eviction_bytes, 0);
	t = now();
	touch(a, BLOCK, true, false); /* evicts b, which migrated */
	ck_assert_uint_eq(now() - t,
			  fault_cost(PAGES_PER_BLOCK, BLOCK, BLOCK));
	ck_assert_uint_eq(st().evictions, 2);
	ck_assert_uint_eq(st().eviction_bytes, BLOCK);
	/* a was written: its only valid copy is the device's now. */
	touch(b, BLOCK, false, false);
	ck_assert_uint_eq(st().evictions, 3);
	ck_assert_uint_eq(st().eviction_bytes, 2 * BLOCK);
	be.ops->close(&be);
}
END_TEST

/* A discarded range is dropped with no write-back, and its next touch
 * faults in pages with no contents: no copy. */
START_TEST(discard_writes_nothing_back)
{
	unsigned char *a, *b;
	uint64_t t;

	open_with_limit(BLOCK, TMM_SIM_BACKED);
	a = managed(BLOCK);
	b = managed(BLOCK);
	populate(b, BLOCK);
	touch(a, BLOCK, true, false); /* a kernel writes it */
	ck_assert_uint_eq(st().resident, BLOCK);
	ck_assert_int_eq(be.ops->discard(&be, a, BLOCK), 0);
	ck_assert_uint_eq(st().discard_bytes, BLOCK);
	ck_assert_uint_eq(st().resident, 0);
	/* Backed memory is poisoned: nothing may read it unrewritten. */
	ck_assert_uint_eq(a[0], 0xDB);
	ck_assert_uint_eq(a[BLOCK - 1], 0xDB);
	t = now();
	touch(b, BLOCK, false, false); /* room: a holds nothing */
	ck_assert_uint_eq(now() - t, fault_cost(PAGES_PER_BLOCK, BLOCK, 0));
	ck_assert_uint_eq(st().evictions, 0);
	t = now();
	touch(a, BLOCK, true, false); /* evicts b; a's pages are empty */
	ck_assert_uint_eq(now() - t, fault_cost(PAGES_PER_BLOCK, 0, BLOCK));
	ck_assert_uint_eq(st().fault_bytes, BLOCK); /* b's, only */
	be.ops->close(&be);
}
END_TEST

/* Preferred location host plus accessed-by: read over the bus, no
 * migration, no fault; either alone still migrates. */
START_TEST(remote_access_does_not_migrate)
{
	char *a;
	uint64_t t;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	a = managed(BLOCK);
	populate(a, BLOCK);
	ck_assert_int_eq(be.ops->advise(&be, a, BLOCK,
					TMM_ADVISE_PREFERRED_HOST), 0);
	ck_assert_int_eq(be.ops->advise(&be, a, BLOCK,
					TMM_ADVISE_ACCESSED_BY_DEVICE), 0);
	t = now();
	touch(a, BLOCK, false, false);
	ck_assert_uint_eq(now() - t, xfer(BLOCK, p->uvm_remote_gbps));
	ck_assert_uint_eq(st().faults, 0);
	ck_assert_uint_eq(st().remote_bytes, BLOCK);
	ck_assert_uint_eq(st().resident, 0);
	ck_assert_int_eq(be.ops->advise(&be, a, BLOCK,
					TMM_ADVISE_UNSET_ACCESSED_BY), 0);
	touch(a, BLOCK, false, false);
	ck_assert_uint_eq(st().faults, PAGES_PER_BLOCK);
	ck_assert_uint_eq(st().resident, BLOCK);
	be.ops->close(&be);
}
END_TEST

/* The least recently used block goes first, not the oldest one. */
START_TEST(eviction_is_least_recently_used)
{
	char *a, *b, *c;

	open_with_limit(2 * BLOCK, TMM_SIM_PHANTOM);
	a = managed(BLOCK);
	b = managed(BLOCK);
	c = managed(BLOCK);
	touch(a, BLOCK, true, false);
	touch(b, BLOCK, true, false);
	touch(a, BLOCK, false, false); /* a is now the most recent */
	touch(c, BLOCK, true, false);  /* evicts b */
	ck_assert_uint_eq(st().evictions, 1);
	touch(a, BLOCK, false, false);
	ck_assert_uint_eq(st().faults, 3 * PAGES_PER_BLOCK); /* a stayed */
	touch(b, BLOCK, false, false);
	ck_assert_uint_eq(st().faults, 4 * PAGES_PER_BLOCK);
	be.ops->close(&be);
}
END_TEST

/* Pages touched by the host come back: device-only ones are copied. */
START_TEST(host_touch_brings_pages_back)
{
	char *a;
	uint64_t t;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	a = managed(BLOCK);
	touch(a, BLOCK, true, false);
	t = now();
	touch(a, BLOCK, false, true);
	ck_assert_uint_eq(now() - t, xfer(BLOCK, p->d2h_gbps));
	ck_assert_uint_eq(st().resident, 0);
	/* Now on the host: the next kernel migrates them back. */
	touch(a, BLOCK, false, false);
	ck_assert_uint_eq(st().fault_bytes, BLOCK);
	/* A prefetch to the host of device-only pages writes them back. */
	touch(a, BLOCK, true, false);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_D2H, a, BLOCK,
					  TMM_LOC_HOST, -1), 0);
	ck_assert_uint_eq(st().resident, 0);
	be.ops->close(&be);
}
END_TEST

/* Thousands of allocations: each is found (binary search) and freed in
 * any order; addresses outside every allocation are refused. */
START_TEST(many_allocations_are_found)
{
	enum { N = 5000 };
	static void *m[N];
	struct tmm_managed_range r;
	int x = 0;

	open_with_limit(16 * BLOCK, TMM_SIM_PHANTOM);
	for (int i = 0; i < N; i++)
		m[i] = managed(4 * KIB + (size_t)i);
	for (int i = 0; i < N; i++)
		touch((char *)m[i] + i, 4 * KIB, i % 2, false);
	ck_assert_uint_eq(st().faults, N);
	ck_assert_uint_le(st().resident, 16 * BLOCK);
	/* One byte past the end of an allocation is not inside it. */
	r = (struct tmm_managed_range){ m[7], 4 * KIB + 8, false, false };
	ck_assert_int_eq(be.ops->managed_access(&be, &r, 1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(be.error, "not inside one managed"));
	r.ptr = &x;
	r.bytes = sizeof(x);
	ck_assert_int_eq(be.ops->managed_access(&be, &r, 1), -EINVAL);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, &x, sizeof(x),
					  TMM_LOC_DEVICE, -1), -EINVAL);
	for (int i = 0; i < N; i += 2)
		be.ops->managed_free(&be, m[i], 4 * KIB + (size_t)i);
	for (int i = 1; i < N; i += 2)
		touch(m[i], 4 * KIB, false, false);
	for (int i = N - 1; i > 0; i -= 2)
		be.ops->managed_free(&be, m[i], 4 * KIB + (size_t)i);
	ck_assert_uint_eq(st().resident, 0);
	be.ops->close(&be);
}
END_TEST

/* ---- neighbours in one VA block (the managed arena's sub-allocations) */

/* Advice on one tensor's pages leaves its neighbour's alone: the first
 * page is mapped remotely, the second, in the same block, migrates. */
START_TEST(advice_stays_on_its_own_pages)
{
	char *buf;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(BLOCK);
	populate(buf, 2 * PAGE);
	ck_assert_int_eq(be.ops->advise(&be, buf, PAGE,
					TMM_ADVISE_PREFERRED_HOST), 0);
	ck_assert_int_eq(be.ops->advise(&be, buf, PAGE,
					TMM_ADVISE_ACCESSED_BY_DEVICE), 0);
	touch(buf, 2 * PAGE, false, false);
	ck_assert_uint_eq(st().remote_bytes, PAGE);
	ck_assert_uint_eq(st().faults, 1);
	ck_assert_uint_eq(st().fault_bytes, PAGE);
	ck_assert_uint_eq(st().resident, PAGE);
	be.ops->managed_free(&be, buf, BLOCK);
	be.ops->close(&be);
}
END_TEST

/* A block shared by the current work and older pages: making room
 * evicts the older pages of that very block, never the work's own, so
 * the work stays within the limit. */
START_TEST(eviction_spares_the_pages_of_the_work)
{
	char *buf;

	open_with_limit(2 * PAGE, TMM_SIM_PHANTOM);
	buf = managed(BLOCK);
	touch(buf, 2 * PAGE, true, false); /* pages 0, 1 */
	ck_assert_uint_eq(st().resident, 2 * PAGE);
	/* Pages 1 and 2: page 0 goes (written back), page 1 stays. */
	touch(buf + PAGE, 2 * PAGE, true, false);
	ck_assert_uint_eq(st().faults, 3);
	ck_assert_uint_eq(st().evictions, 1);
	ck_assert_uint_eq(st().eviction_bytes, PAGE);
	ck_assert_uint_eq(st().resident, 2 * PAGE);
	ck_assert_uint_eq(st().resident_peak, 2 * PAGE);
	be.ops->managed_free(&be, buf, BLOCK);
	be.ops->close(&be);
}
END_TEST

/* A migration of one tensor's pages delays a touch of those pages, not
 * of its neighbour's in the same block. */
START_TEST(a_neighbours_migration_does_not_delay)
{
	char *buf;
	uint64_t t, moved_until;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(BLOCK);
	touch(buf, 2 * PAGE, true, false); /* both device-only */
	t = now();
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_D2H, buf, PAGE,
					  TMM_LOC_HOST, -1), 0);
	moved_until = t + p->copy_latency_ns + xfer(PAGE, p->d2h_gbps);
	ck_assert_uint_eq(now(), t);
	touch(buf + PAGE, PAGE, true, false); /* resident, not migrating */
	ck_assert_uint_eq(now(), t);
	touch(buf, PAGE, false, false); /* waits, then faults it back */
	ck_assert_uint_ge(now(), moved_until);
	be.ops->managed_free(&be, buf, BLOCK);
	be.ops->close(&be);
}
END_TEST

/* A discard drops the whole big pages it touches, and no others. */
START_TEST(discard_takes_whole_pages)
{
	char *buf;

	open_with_limit(4 * BLOCK, TMM_SIM_PHANTOM);
	buf = managed(BLOCK);
	touch(buf, 3 * PAGE, true, false);
	ck_assert_int_eq(be.ops->discard(&be, buf + PAGE + 100, 10), 0);
	ck_assert_uint_eq(st().resident, 2 * PAGE);
	ck_assert_uint_eq(st().discard_bytes, PAGE);
	/* Pages 0 and 2 are still there; page 1 is fresh again. */
	touch(buf, 3 * PAGE, false, false);
	ck_assert_uint_eq(st().faults, 4);
	ck_assert_uint_eq(st().fault_bytes, 0);
	be.ops->managed_free(&be, buf, BLOCK);
	be.ops->close(&be);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim_uvm");
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, profile_has_the_driver_constants);
	tcase_add_test(tc, oversubscribed_sweep_thrashes);
	tcase_add_test(tc, sweep_that_fits_faults_once);
	tcase_add_test(tc, fault_batches_round_up);
	tcase_add_test(tc, prefetched_buffer_takes_no_faults);
	tcase_add_test(tc, read_mostly_is_not_written_back);
	tcase_add_test(tc, discard_writes_nothing_back);
	tcase_add_test(tc, remote_access_does_not_migrate);
	tcase_add_test(tc, eviction_is_least_recently_used);
	tcase_add_test(tc, host_touch_brings_pages_back);
	tcase_add_test(tc, many_allocations_are_found);
	tcase_add_test(tc, advice_stays_on_its_own_pages);
	tcase_add_test(tc, eviction_spares_the_pages_of_the_work);
	tcase_add_test(tc, a_neighbours_migration_does_not_delay);
	tcase_add_test(tc, discard_takes_whole_pages);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
