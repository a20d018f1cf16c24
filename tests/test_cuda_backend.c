/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_backend.c — the CUDA backend on a real GPU.
 *
 * Opens the backend directly (no context), moves a pattern host -> device
 * -> host on the two copy engines with an event between them, and, where
 * the device supports concurrent managed access, prefetches and advises a
 * managed range and checks that its bytes survive the round trip.
 *
 * Without a GPU (or without a driver) it exits 77, automake's "skipped".
 *
 * Tests run in the test process (CK_NOFORK): the CUDA driver is already
 * initialised by the device probe in main(), and a forked child cannot use
 * a CUDA context made by its parent.
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lib/backend/backend.h"
#include "lib/backend/backend_cuda.h"
#include "lib/base/tunables.h"
#include "cuda_main.h"

static struct tmm_backend be;
static struct tmm_config cfg;

static void open_backend(void)
{
	int rc;

	memset(&be, 0, sizeof(be));
	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = TMM_BACKEND_CUDA;
	cfg.mode = TMM_MODE_AUTO;
	cfg.host_numa_node = -1;
	cfg.log = TMM_LOG_WARN;
	be.ops = &tmm_backend_cuda_ops;
	rc = be.ops->open(&be, &cfg);
	ck_assert_msg(rc == 0, "open: %d %s", rc, be.error);
}

static void close_backend(void)
{
	be.ops->close(&be);
	ck_assert_ptr_null(be.state);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131u + seed) ^ (i >> 9));
}

START_TEST(test_open_info)
{
	const struct tmm_device_info *info = &be.info;
	const char *id = info->pci_bus_id;

	ck_assert_str_eq(be.ops->name, "cuda");
	ck_assert(info->name[0] != '\0');
	ck_assert_uint_gt(info->capacity, 0);
	ck_assert_uint_gt(info->free_at_open, 0);
	ck_assert_uint_le(info->free_at_open, info->capacity);
	ck_assert(!info->simulated);
	ck_assert(!info->phantom);
	ck_assert(!info->host_accessible);
	ck_assert_int_ge(info->numa_node, -1);
	/* sysfs form: "0000:3b:00.0", lower case. */
	ck_assert_uint_ge(strlen(id), 12);
	for (const char *c = id; *c; c++)
		ck_assert(!isupper((unsigned char)*c));
	ck_assert_ptr_nonnull(be.ops->compute_stream(&be));
	ck_assert_uint_gt(be.ops->now_ns(&be), 0);
	printf("cuda: %s, %llu MiB, %s, numa node %d, concurrent managed %d\n",
	       info->name, (unsigned long long)(info->capacity >> 20), id,
	       info->numa_node, info->concurrent_managed);
	/* A rehearsal's predictions: marked an estimate, and a roofline
	 * that grows with the work (a launch alone for none; a teraflop
	 * takes longer than a tenth of one on any GPU of today). */
	ck_assert_ptr_nonnull(strstr(info->op_estimate, "estimate"));
	{
		struct tmm_cost none = { .flops = 0 }, tenth = { .flops = 1e11 },
				whole = { .flops = 1e12 };
		uint64_t t0 = be.ops->op_estimate_ns(&be, &none);
		uint64_t t1 = be.ops->op_estimate_ns(&be, &tenth);
		uint64_t t2 = be.ops->op_estimate_ns(&be, &whole);

		ck_assert_uint_gt(t0, 0);
		ck_assert_uint_gt(t1, t0);
		ck_assert_uint_gt(t2, t1);
		printf("cuda: op times are %s\n", info->op_estimate);
	}
}
END_TEST

START_TEST(test_copy_round_trip)
{
	const size_t n = (8u << 20) + 4096 + 123;
	unsigned char *src, *dst;
	void *dev, *hs, *hd;
	tmm_event in = { 0 }, out = { 0 };
	uint64_t ns = 1;

	ck_assert_int_eq(be.ops->dev_alloc(&be, n, &dev), 0);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, be.info.numa_node, &hs),
			 0);
	ck_assert_int_eq(be.ops->host_alloc(&be, n, -1, &hd), 0);
	src = hs;
	dst = hd;
	fill(src, n, 7);
	memset(dst, 0, n);

	/* H2D, then D2H ordered after it by an event, as a swap does. */
	ck_assert_int_eq(be.ops->kernel_begin(&be, NULL), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, dev, src, n),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &in), 0);
	ck_assert(in.valid);
	ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_D2H, &in), 0);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, dst, dev, n),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_D2H, &out), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, NULL, &ns), 0);
	ck_assert_uint_eq(ns, 0);
	ck_assert_int_ge(be.ops->event_query(&be, &out), 0);
	ck_assert_int_eq(be.ops->event_sync(&be, &out), 0);
	ck_assert_int_eq(be.ops->event_query(&be, &out), 1);
	ck_assert_int_eq(be.ops->event_query(&be, &in), 1);
	ck_assert_int_eq(memcmp(src, dst, n), 0);
	be.ops->event_release(&be, &in);
	be.ops->event_release(&be, &out);
	ck_assert(!in.valid);

	/* Released events are recycled; a recycled one works as new. */
	fill(src, n, 99);
	ck_assert_int_eq(be.ops->copy_sync(&be, dev, src, n, true), 0);
	memset(dst, 0, n);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_D2H, dst, dev, n),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_D2H, &out), 0);
	ck_assert_int_eq(be.ops->event_sync(&be, &out), 0);
	ck_assert_int_eq(memcmp(src, dst, n), 0);
	be.ops->event_release(&be, &out);

	/* copy_sync both ways. */
	memset(dst, 0, n);
	ck_assert_int_eq(be.ops->copy_sync(&be, dst, dev, n, false), 0);
	ck_assert_int_eq(memcmp(src, dst, n), 0);

	be.ops->host_free(&be, hd, n);
	be.ops->host_free(&be, hs, n);
	be.ops->dev_free(&be, dev, n);
}
END_TEST

START_TEST(test_managed)
{
	const size_t n = 6u << 20;
	unsigned char *m, *ref;
	void *p;
	tmm_event ev = { 0 };

	ck_assert_int_eq(be.ops->managed_alloc(&be, n, &p), 0);
	m = p;
	ref = malloc(n);
	ck_assert_ptr_nonnull(ref);
	fill(ref, n, 3);
	memcpy(m, ref, n);

	if (be.info.concurrent_managed) {
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_PREFERRED_DEVICE),
				 0);
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_ACCESSED_BY_DEVICE),
				 0);
		ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_H2D, m, n,
						  TMM_LOC_DEVICE, -1), 0);
		ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D,
						      &ev), 0);
		ck_assert_int_eq(be.ops->event_sync(&be, &ev), 0);
		be.ops->event_release(&be, &ev);

		/* Evicted as UVM mode does: preferred host, then moved. */
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_PREFERRED_HOST),
				 0);
		ck_assert_int_eq(be.ops->prefetch(&be, TMM_ENGINE_D2H, m, n,
						  TMM_LOC_HOST,
						  be.info.numa_node), 0);
		ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_D2H,
						      &ev), 0);
		ck_assert_int_eq(be.ops->event_sync(&be, &ev), 0);
		be.ops->event_release(&be, &ev);
		ck_assert_int_eq(memcmp(m, ref, n), 0);

		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_READ_MOSTLY), 0);
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_UNSET_READ_MOSTLY),
				 0);
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_UNSET_ACCESSED_BY),
				 0);
		ck_assert_int_eq(be.ops->advise(&be, m, n,
						TMM_ADVISE_UNSET_PREFERRED),
				 0);
		/* Contents after a discard are undefined: only the call. */
		ck_assert_int_eq(be.ops->discard(&be, m, n), 0);
	} else {
		printf("cuda: no concurrent managed access; prefetch and "
		       "advise not tested\n");
		ck_assert_int_eq(memcmp(m, ref, n), 0);
	}
	be.ops->managed_free(&be, m, n);
	free(ref);
}
END_TEST

START_TEST(test_errors)
{
	void *p = (void *)1;
	tmm_event none = { 0 };
	int rc;

	/* More than any GPU has: -ENOMEM, the call named in the message. */
	rc = be.ops->dev_alloc(&be, (size_t)1 << 60, &p);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(be.error, "cudaMalloc"));
	/* cudaGetLastError() is left clean for the user's own checks. */
	ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

	ck_assert_int_eq(be.ops->dev_alloc(&be, 0, &p), -EINVAL);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_COMPUTE, &p, &p,
					    sizeof(p)), -EINVAL);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_COUNT, &none),
			 -EINVAL);
	ck_assert(!none.valid);
	/* An invalid event is complete by definition. */
	ck_assert_int_eq(be.ops->event_query(&be, &none), 1);
	ck_assert_int_eq(be.ops->event_sync(&be, &none), 0);
	ck_assert_int_eq(be.ops->engine_wait(&be, TMM_ENGINE_COMPUTE, &none),
			 0);
	be.ops->event_release(&be, &none);
}
END_TEST

static Suite *cuda_suite(void)
{
	Suite *s = suite_create("cuda_backend");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, open_backend, close_backend);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_open_info);
	tcase_add_test(tc, test_copy_round_trip);
	tcase_add_test(tc, test_managed);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(cuda_suite);
}
