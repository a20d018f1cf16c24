/* SPDX-License-Identifier: MIT */
/*
 * test_sim.c — the simulated GPU: profiles, clock, memory, events, jitter.
 *
 * Expected times are worked out by hand from the profile figures (the
 * arithmetic is in the comments), not by calling the code under test, so a
 * wrong figure or formula fails here.  Timing tests use phantom memory so
 * that GiB-sized copies cost nothing; data tests use backed memory.  The
 * engines, events and jitter are in test_sim_engines.c.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/fault.h"
#include "lib/base/sim_profile.h"
#include "lib/base/tunables.h"
#include "lib/exec/guide_input.h"
#include "test_sim.h"

/*
 * The permissions of the mapping holding p, from /proc/self/maps ("rw-p",
 * "---p"), or false when no mapping holds it.
 */
static bool map_perms(const void *p, char perms[5])
{
	uintptr_t a = (uintptr_t)p;
	unsigned long lo, hi;
	char line[512], pr[5];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pr) != 3)
			continue;
		if (a >= lo && a < hi) {
			memcpy(perms, pr, 5);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* ------------------------------------------------------------------------
 * Profiles
 * ---------------------------------------------------------------------- */

/*
 * Hand-computed figures per profile.  Every profile: efficiency 0.6,
 * launch 5000 ns, copy latency 10000 ns.
 *   tflop: 1e12 flop (bytes 1e6, compute-bound):
 *          1e12 / (TFLOPS * 1e3) ns / 0.6, rounded, + 5000
 *   gbyte: 1e9 bytes (flops 1e9, memory-bound): 1e9 / GB/s / 0.6 + 5000
 *   h2d/d2h: 1 GiB: 10000 + 2^30 / GB/s, rounded
 */
static const struct {
	const char *name;
	uint64_t capacity, tflop, gbyte, h2d, d2h;
} expect[] = {
	/* 9.3 TF: 179211469.53; 732 GB/s: 2276867.03;
	 * 11.69: 91851310.86; 12.9: 83235800.31 */
	{ "p100-pcie3-16g", 16 * GIB, 179216470, 2281867, 91861311,
	  83245800 },
	/* 14 TF: 119047619.05; 900 GB/s: 1851851.85; PCIe3 as p100 */
	{ "v100-pcie3-16g", 16 * GIB, 119052619, 1856852, 91861311,
	  83245800 },
	/* 16.3 TF: 102249488.75; 672 GB/s: 2480158.73; PCIe3 as p100 */
	{ "titanrtx-pcie3-24g", 24 * GIB, 102254489, 2485159, 91861311,
	  83245800 },
	/* 19.5 TF: 85470085.47; 1555 GB/s: 1071811.36;
	 * 23.38: 45925655.43; 25.8: 41617900.16 */
	{ "a100-pcie4-40g", 40 * GIB, 85475085, 1076811, 45935655,
	  41627900 },
	/* 51 TF: 32679738.56; 2000 GB/s: 833333.33;
	 * 46.76: 22962827.72; 51.6: 20808950.08 */
	{ "h100-pcie5-80g", 80 * GIB, 32684739, 838333, 22972828,
	  20818950 },
	/* 67 TF: 14925373.13; 3350 GB/s: 298507.46;
	 * 52.1: 20609248.06; 54.9: 19558138.87 (measured) */
	{ "h100-sxm5-pcie5-80g", 80 * GIB, 24880622, 502512, 20619248,
	  19568139 },
	/* 67 TF as above; 4800 GB/s: 208333.33;
	 * 55.3: 19416669.51 each way (measured) */
	{ "h200-sxm-pcie5-141g", 141 * GIB, 24880622, 352222, 19426670,
	  19426670 },
	/* 4.29 TF: 388500388.50; 288 GB/s: 5787037.04;
	 * 10.04: 106946396.81; 10.05: 106839982.49 (measured) */
	{ "k40-pcie3-12g", 12 * GIB, 388505389, 5792037, 106956397,
	  106849982 },
};

#define NEXPECT (sizeof(expect) / sizeof(expect[0]))

START_TEST(test_profile_table)
{
	const struct tmm_sim_profile *all;
	size_t n, i;

	all = tmm_sim_profiles(&n);
	ck_assert_uint_eq(n, NEXPECT);
	for (i = 0; i < n; i++) {
		ck_assert_str_eq(all[i].name, expect[i].name);
		ck_assert_ptr_eq(tmm_sim_profile_find(expect[i].name),
				 &all[i]);
		ck_assert_ptr_nonnull(all[i].description);
		ck_assert_uint_eq(all[i].capacity, expect[i].capacity);
		/* fp16 is never slower than fp32; equal where there are
		 * no fp16 units (the K40) */
		ck_assert(all[i].fp16_tflops >= all[i].fp32_tflops);
		ck_assert(all[i].efficiency > 0 && all[i].efficiency <= 1);
		ck_assert_uint_eq(all[i].uvm_block_bytes, 2 * MIB);
		ck_assert_uint_eq(all[i].uvm_page_bytes, 64 * KIB);
		ck_assert_uint_eq(all[i].uvm_fault_batch, 256);
		ck_assert(all[i].uvm_batch_ns > 0 && all[i].uvm_fault_ns > 0);
		ck_assert(all[i].uvm_fault_gbps > 0 &&
			  all[i].uvm_fault_gbps < all[i].h2d_gbps);
	}
	ck_assert_ptr_null(tmm_sim_profile_find("p100"));
	ck_assert_ptr_null(tmm_sim_profile_find(NULL));
}
END_TEST

START_TEST(test_profile_figures)
{
	const struct tmm_sim_profile *p = tmm_sim_profile_find(expect[_i].name);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(tmm_sim_op_ns(p, 1e12, 1e6), expect[_i].tflop);
	ck_assert_uint_eq(tmm_sim_op_ns(p, 1e9, 1e9), expect[_i].gbyte);
	ck_assert_uint_eq(tmm_sim_copy_ns(p, GIB, 1), expect[_i].h2d);
	ck_assert_uint_eq(tmm_sim_copy_ns(p, GIB, 0), expect[_i].d2h);
	/* Nothing to do still costs the fixed parts. */
	ck_assert_uint_eq(tmm_sim_op_ns(p, 0, 0), 5000);
	ck_assert_uint_eq(tmm_sim_copy_ns(p, 0, 1), 10000);
	/* A bad cost hint counts as zero, not as a wrapped-around time. */
	ck_assert_uint_eq(tmm_sim_op_ns(p, -1e12, -5), 5000);
}
END_TEST

START_TEST(test_profile_round_numbers)
{
	const struct tmm_sim_profile *p;

	p = tmm_sim_profile_find("p100-pcie3-16g");
	ck_assert_ptr_nonnull(p);
	/* 9.3e9 flop at 9.3 TF = 1 ms; / 0.6 = 1666666.67 -> 1666667 */
	ck_assert_uint_eq(tmm_sim_op_ns(p, 9.3e9, 0), 1671667);
	/* 732e6 B at 732 GB/s = 1 ms, the same */
	ck_assert_uint_eq(tmm_sim_op_ns(p, 0, 732e6), 1671667);
	/* 11.69e6 B at 11.69 GB/s = 1 ms + 10 us */
	ck_assert_uint_eq(tmm_sim_copy_ns(p, 11690000, 1), 1010000);
	ck_assert_uint_eq(tmm_sim_copy_ns(p, 12900000, 0), 1010000);
}
END_TEST

/* ------------------------------------------------------------------------
 * Open, info, counters accessor
 * ---------------------------------------------------------------------- */

START_TEST(test_open_info)
{
	struct tmm_backend be;

	open_sim(&be, expect[_i].name, TMM_SIM_BACKED);
	ck_assert_str_eq(be.info.name, expect[_i].name);
	ck_assert_uint_eq(be.info.capacity, expect[_i].capacity);
	ck_assert_uint_eq(be.info.free_at_open, expect[_i].capacity);
	ck_assert(be.info.simulated);
	ck_assert(be.info.host_accessible);
	ck_assert(!be.info.phantom);
	ck_assert(be.info.concurrent_managed);
	ck_assert_int_eq(be.info.numa_node, -1);
	ck_assert_str_eq(be.info.pci_bus_id, "");
	ck_assert_ptr_null(be.ops->compute_stream(&be));
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	be.ops->close(&be);
	ck_assert_ptr_null(be.state);

	open_sim(&be, expect[_i].name, TMM_SIM_PHANTOM);
	ck_assert(!be.info.host_accessible);
	ck_assert(be.info.phantom);
	be.ops->close(&be);
}
END_TEST

/*
 * mode=uvm's way out (hints/uvm_way.h), chosen by the profile's rates:
 * only the measured H100 and H200, whose prefetch to the host is a sixth
 * of a pinned copy, evict by copy; where the two ways cost the same the
 * prefetch stays.
 */
START_TEST(test_uvm_path_choice)
{
	struct tmm_backend be;
	bool measured = strcmp(expect[_i].name, "h100-sxm5-pcie5-80g") == 0 ||
			strcmp(expect[_i].name, "h200-sxm-pcie5-141g") == 0;
	struct tmm_uvm_rates r;

	open_sim(&be, expect[_i].name, TMM_SIM_PHANTOM);
	ck_assert(be.info.uvm_prefetch_h2d_gbps > 0);
	ck_assert(be.info.uvm_prefetch_d2h_gbps > 0);
	r = tmm_guide_uvm_rates(&be.info);
	ck_assert_msg(tmm_uvm_way_copy(&r, TMM_UVM_PATH_AUTO) == measured,
		      "%s: prefetch %.1f/%.1f GB/s, pinned %.1f/%.1f, fresh "
		      "%.1f", expect[_i].name, be.info.uvm_prefetch_h2d_gbps,
		      be.info.uvm_prefetch_d2h_gbps, be.info.h2d_gbps,
		      be.info.d2h_gbps, be.info.uvm_fresh_gbps);
	ck_assert(tmm_uvm_way_copy(&r, TMM_UVM_PATH_COPY));
	ck_assert(!tmm_uvm_way_copy(&r, TMM_UVM_PATH_PREFETCH));
	be.ops->close(&be);
}
END_TEST

START_TEST(test_open_errors)
{
	struct tmm_backend be;
	struct tmm_config cfg;
	size_t i;

	cfg_init(&cfg, "gtx480", TMM_SIM_BACKED);
	memset(&be, 0, sizeof(be));
	be.ops = &tmm_backend_sim_ops;
	ck_assert_int_eq(be.ops->open(&be, &cfg), -EINVAL);
	ck_assert_ptr_null(be.state);
	ck_assert_ptr_nonnull(strstr(be.error, "gtx480"));
	for (i = 0; i < NEXPECT; i++)
		ck_assert_msg(strstr(be.error, expect[i].name),
			      "'%s' not listed in: %s", expect[i].name,
			      be.error);
	be.ops->close(&be); /* harmless after a failed open */

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_BACKED);
	cfg.sim_jitter = -0.1;
	ck_assert_int_eq(be.ops->open(&be, &cfg), -EINVAL);
	cfg.sim_jitter = 0;
	cfg.sim_memory = (enum tmm_sim_memory)7;
	ck_assert_int_eq(be.ops->open(&be, &cfg), -EINVAL);
	ck_assert_ptr_null(be.state);

	/* A capacity override replaces the profile's. */
	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_BACKED);
	cfg.sim_capacity = 123456789;
	open_cfg(&be, &cfg);
	ck_assert_uint_eq(be.info.capacity, 123456789);
	ck_assert_uint_eq(be.info.free_at_open, 123456789);
	be.ops->close(&be);
}
END_TEST

static int fake_open(struct tmm_backend *be, const struct tmm_config *cfg)
{
	(void)be;
	(void)cfg;
	return 0;
}

START_TEST(test_counters_only_sim)
{
	static const struct tmm_backend_ops other = { .name = "other",
						      .open = fake_open };
	struct tmm_backend be;
	struct tmm_sim_counters c;
	int dummy = 0;

	memset(&be, 0, sizeof(be));
	be.ops = &other;
	be.state = &dummy;
	ck_assert_int_eq(tmm_sim_get_counters(&be, &c), -EINVAL);
	ck_assert_int_eq(tmm_sim_get_counters(NULL, &c), -EINVAL);

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(tmm_sim_get_counters(&be, NULL), -EINVAL);
	ck_assert_int_eq(tmm_sim_get_counters(&be, &c), 0);
	be.ops->close(&be);
	ck_assert_int_eq(tmm_sim_get_counters(&be, &c), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------- */

/* _i: 0 backed, 1 phantom. */
START_TEST(test_capacity_exact)
{
	const uint64_t cap = 3 * MIB + 5;
	struct tmm_backend be;
	struct tmm_config cfg;
	void *a, *b, *c, *m;

	cfg_init(&cfg, "p100-pcie3-16g", _i ? TMM_SIM_PHANTOM : TMM_SIM_BACKED);
	cfg.sim_capacity = cap;
	open_cfg(&be, &cfg);

	ck_assert_int_eq(be.ops->dev_alloc(&be, cap + 1, &a), -ENOMEM);
	ck_assert_ptr_null(a);
	ck_assert_int_eq(be.ops->dev_alloc(&be, MIB, &a), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, 2 * MIB + 5, &b), 0);
	ck_assert_uint_eq(counters(&be).dev_allocated, cap);
	/* Full to the byte: one more byte is refused, with the numbers. */
	ck_assert_int_eq(be.ops->dev_alloc(&be, 1, &c), -ENOMEM);
	ck_assert_str_eq(be.error, "sim dev_alloc: 1 bytes requested, 0 of "
				   "3145733 free on p100-pcie3-16g");
	/* Managed memory oversubscribes: it does not count. */
	ck_assert_int_eq(be.ops->managed_alloc(&be, 4 * MIB, &m), 0);
	ck_assert_uint_eq(counters(&be).dev_allocated, cap);

	be.ops->dev_free(&be, a, MIB);
	ck_assert_uint_eq(counters(&be).dev_allocated, 2 * MIB + 5);
	ck_assert_int_eq(be.ops->dev_alloc(&be, MIB + 1, &c), -ENOMEM);
	ck_assert_int_eq(be.ops->dev_alloc(&be, MIB, &c), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, 1, &a), -ENOMEM);
	ck_assert_uint_eq(counters(&be).dev_peak, cap);

	be.ops->dev_free(&be, b, 2 * MIB + 5);
	be.ops->dev_free(&be, c, MIB);
	be.ops->managed_free(&be, m, 4 * MIB);
	ck_assert_uint_eq(counters(&be).dev_allocated, 0);
	ck_assert_uint_eq(counters(&be).dev_peak, cap);
	be.ops->close(&be);
}
END_TEST

/* A phantom 16 GiB device fills in one allocation and costs nothing. */
START_TEST(test_capacity_full_profile)
{
	struct tmm_backend be;
	void *a, *b;
	char perms[5];

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->dev_alloc(&be, 16 * GIB, &a), 0);
	ck_assert(map_perms(a, perms));
	ck_assert_str_eq(perms, "---p");
	ck_assert_int_eq(be.ops->dev_alloc(&be, 1, &b), -ENOMEM);
	ck_assert_str_eq(be.error, "sim dev_alloc: 1 bytes requested, 0 of "
				   "17179869184 free on p100-pcie3-16g");
	be.ops->dev_free(&be, a, 16 * GIB);
	ck_assert(!map_perms(a, perms));
	be.ops->close(&be);
}
END_TEST

START_TEST(test_backed_copies_move_bytes)
{
	const size_t n = 256 * KIB + 3;
	struct tmm_backend be;
	unsigned char *h1, *h2, *d, *m;
	char perms[5];
	size_t i;

	open_sim(&be, "v100-pcie3-16g", TMM_SIM_BACKED);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, -1, (void **)&h1), 0);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, 0, (void **)&h2), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, n, (void **)&d), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, n, (void **)&m), 0);
	ck_assert(map_perms(d, perms));
	ck_assert_str_eq(perms, "rw-p");

	for (i = 0; i < n; i++)
		h1[i] = (unsigned char)(i * 7 + 1);
	memset(h2, 0, n);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h1, n), 0);
	ck_assert_int_eq(memcmp(d, h1, n), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h2, d, n), 0);
	ck_assert_int_eq(memcmp(h2, h1, n), 0);

	memset(h2, 0, n);
	ck_assert_int_eq(be.ops->copy_sync(&be, m, h1, n, true), 0);
	ck_assert_int_eq(be.ops->copy_sync(&be, h2, m, n, false), 0);
	ck_assert_int_eq(memcmp(h2, h1, n), 0);
	/* A prefetch moves time, never the bytes.  The model moves only
	 * pages with contents: the host populates them first. */
	populate(&be, m, n);
	ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, n,
					  TMM_LOC_DEVICE, -1), 0);
	ck_assert_int_eq(memcmp(m, h1, n), 0);

	ck_assert_uint_eq(counters(&be).bytes_h2d, 3 * n);
	ck_assert_uint_eq(counters(&be).bytes_d2h, 2 * n);
	be.ops->host_free(&be, h1, n);
	be.ops->host_free(&be, h2, n);
	be.ops->dev_free(&be, d, n);
	be.ops->managed_free(&be, m, n);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_phantom_copies_touch_nothing)
{
	const size_t n = 64 * KIB;
	struct tmm_backend be;
	unsigned char *src, *dst;
	void *h, *d, *m;
	char perms[5];
	size_t i, untouched = 0;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, n, &d), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, n, &m), 0);
	/* No access rights at all: a dereference would fault loudly. */
	ck_assert(map_perms(h, perms));
	ck_assert_str_eq(perms, "---p");
	ck_assert(map_perms(d, perms));
	ck_assert_str_eq(perms, "---p");
	ck_assert(map_perms(m, perms));
	ck_assert_str_eq(perms, "---p");

	/* Would crash if the simulator touched phantom memory. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, n), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, d, n), 0);
	ck_assert_int_eq(be.ops->copy_sync(&be, m, h, n, true), 0);
	ck_assert_int_eq(be.ops->discard(&be, m, n), 0);

	/* Even real buffers are left alone: phantom keeps sizes only. */
	src = malloc(n);
	dst = malloc(n);
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	memset(src, 0x22, n);
	memset(dst, 0x11, n);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, dst, src, n),
			 0);
	ck_assert_int_eq(be.ops->copy_sync(&be, dst, src, n, false), 0);
	for (i = 0; i < n; i++)
		untouched += dst[i] == 0x11;
	ck_assert_uint_eq(untouched, n);
	free(src);
	free(dst);

	/* The time was still spent. */
	ck_assert_uint_eq(counters(&be).copies_h2d, 3);
	ck_assert_uint_eq(counters(&be).copies_d2h, 2);
	be.ops->host_free(&be, h, n);
	be.ops->dev_free(&be, d, n);
	be.ops->managed_free(&be, m, n);
	be.ops->close(&be);
}
END_TEST

START_TEST(test_free_mismatch_is_reported)
{
	struct tmm_backend be;
	unsigned char *d, *m;
	int local;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_BACKED);
	ck_assert_int_eq(be.ops->dev_alloc(&be, 4096, (void **)&d), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, 4096, (void **)&m), 0);
	be.ops->dev_free(&be, &local, sizeof(local));
	ck_assert_ptr_nonnull(strstr(be.error, "dev_free"));
	be.error[0] = '\0';
	/* Freeing managed memory as device memory is refused: m lives on. */
	be.ops->dev_free(&be, m, 4096);
	ck_assert_ptr_nonnull(strstr(be.error, "not a live device"));
	m[4095] = 1;
	ck_assert_uint_eq(counters(&be).dev_allocated, 4096);
	be.ops->dev_free(&be, d, 4096);
	ck_assert_uint_eq(counters(&be).dev_allocated, 0);
	be.ops->managed_free(&be, m, 4096);
	be.ops->close(&be);
}
END_TEST

/* close() returns whatever is still allocated (leak checkers watch). */
START_TEST(test_close_unmaps)
{
	struct tmm_backend be;
	void *d, *m, *h;
	char perms[5];

	open_sim(&be, "a100-pcie4-40g", TMM_SIM_BACKED);
	ck_assert_int_eq(be.ops->dev_alloc(&be, 3 * MIB, &d), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, 5 * MIB, &m), 0);
	ck_assert_int_eq(be.ops->host_alloc(&be, 64 * KIB, -1, &h), 0);
	memset(h, 1, 64 * KIB);
	be.ops->close(&be);
	ck_assert(!map_perms(d, perms));
	ck_assert(!map_perms(m, perms));
}
END_TEST

START_TEST(test_discard_poisons)
{
	const size_t n = MIB;
	struct tmm_backend be;
	unsigned char *m, *d;
	size_t i, wrong = 0;

	open_sim(&be, "p100-pcie3-16g", TMM_SIM_BACKED);
	ck_assert_int_eq(be.ops->managed_alloc(&be, n, (void **)&m), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, n, (void **)&d), 0);
	memset(m, 0x11, n);
	/* The driver drops whole 64 KiB big pages: all of the pages the
	 * range touches are poisoned, and no other byte. */
	ck_assert_int_eq(be.ops->discard(&be, m + 4096, 8192), 0);
	ck_assert_int_eq(be.ops->discard(&be, m + 200 * KIB, 1), 0);
	for (i = 0; i < n; i++)
		wrong += m[i] != (i < 64 * KIB ||
						  (i >= 192 * KIB &&
						   i < 256 * KIB)
					  ? 0xDB
					  : 0x11);
	ck_assert_uint_eq(wrong, 0);
	/* The whole range, exactly to its end, is accepted. */
	ck_assert_int_eq(be.ops->discard(&be, m, n), 0);
	ck_assert_uint_eq(m[n - 1], 0xDB);
	/* Past the end, or not managed: refused, and nothing written. */
	memset(d, 0x11, n);
	ck_assert_int_eq(be.ops->discard(&be, m + 1, n), -EINVAL);
	ck_assert_int_eq(be.ops->discard(&be, d, 16), -EINVAL);
	ck_assert_uint_eq(d[0], 0x11);
	/* Discard takes no time. */
	ck_assert_uint_eq(be.ops->now_ns(&be), 0);
	ck_assert_uint_eq(event_at(&be, TMM_ENGINE_H2D), 0);
	be.ops->managed_free(&be, m, n);
	be.ops->dev_free(&be, d, n);
	be.ops->close(&be);
}
END_TEST

/* ------------------------------------------------------------------------
 * Runner
 * ---------------------------------------------------------------------- */

/* The failure points of the simulator (fault.h): each fails as the real
 * shortage or copy error would, with a message naming the call and the
 * site, and leaves the backend usable. */
START_TEST(test_injected_faults_name_the_site)
{
	const size_t n = 64 * KIB;
	struct tmm_backend be;
	unsigned char *h, *d, *m;

	open_sim(&be, "v100-pcie3-16g", TMM_SIM_BACKED);
	ck_assert_int_eq(tmm_fault_set("device_alloc@2;pinned_alloc;copy@2"),
			 0);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, -1, (void **)&h),
			 -ENOMEM);
	ck_assert_ptr_null(h);
	ck_assert_ptr_nonnull(strstr(be.error, "sim host_alloc"));
	ck_assert_ptr_nonnull(strstr(be.error, "pinned_alloc"));
	ck_assert_int_eq(be.ops->host_alloc(&be, n, -1, (void **)&h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, n, (void **)&d), 0);
	ck_assert_int_eq(be.ops->managed_alloc(&be, n, (void **)&m),
			 -ENOMEM);
	ck_assert_ptr_null(m);
	ck_assert_ptr_nonnull(strstr(be.error, "sim managed_alloc"));
	ck_assert_ptr_nonnull(strstr(be.error, "device_alloc"));
	memset(h, 7, n);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, n), 0);
	memset(h, 0, n);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, h, d, n),
			 -EIO);
	ck_assert_ptr_nonnull(strstr(be.error, "sim copy_async"));
	ck_assert_ptr_nonnull(strstr(be.error, "copy"));
	ck_assert_uint_eq(h[0], 0); /* nothing copied */
	ck_assert_int_eq(be.ops->copy_sync(&be, h, d, n, false), 0);
	ck_assert_uint_eq(h[n - 1], 7);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	be.ops->host_free(&be, h, n);
	be.ops->dev_free(&be, d, n);
	be.ops->close(&be);
}
END_TEST

static Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *tc;

	tc = tcase_create("profiles");
	tcase_add_test(tc, test_profile_table);
	tcase_add_loop_test(tc, test_profile_figures, 0, NEXPECT);
	tcase_add_loop_test(tc, test_uvm_path_choice, 0, NEXPECT);
	tcase_add_test(tc, test_profile_round_numbers);
	suite_add_tcase(s, tc);

	tc = tcase_create("open");
	tcase_add_loop_test(tc, test_open_info, 0, NEXPECT);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_counters_only_sim);
	suite_add_tcase(s, tc);

	tc = tcase_create("memory");
	tcase_add_loop_test(tc, test_capacity_exact, 0, 2);
	tcase_add_test(tc, test_capacity_full_profile);
	tcase_add_test(tc, test_backed_copies_move_bytes);
	tcase_add_test(tc, test_phantom_copies_touch_nothing);
	tcase_add_test(tc, test_free_mismatch_is_reported);
	tcase_add_test(tc, test_close_unmaps);
	tcase_add_test(tc, test_discard_poisons);
	tcase_add_test(tc, test_injected_faults_name_the_site);
	suite_add_tcase(s, tc);

	add_sim_engine_tests(s);
	return s;
}

int main(void)
{
	return check_main(sim_suite);
}
