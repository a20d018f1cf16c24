/* SPDX-License-Identifier: MIT */
/*
 * test_hostmem.c — the pinned host buffer pool and NUMA placement.
 *
 * The pool is driven through a fake backend that implements only
 * host_alloc/host_free.  Its buffers are PROT_NONE reservations, as on a
 * phantom simulated device, so a pool that wrote its bookkeeping into a
 * buffer would crash here.  The fake counts calls and live bytes, checks
 * that every buffer is freed with the size it was allocated with, and can
 * fail on demand, either for the next call or when a capacity is reached.
 *
 * NUMA placement is checked against a fake sysfs tree in a temporary
 * directory, and with real allocations on node -1 (local) and node 0.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/backend/backend.h"
#include "lib/mem/hostmem.h"
#include "lib/backend/numa_place.h"

/* ------------------------------------------------------------------------
 * The fake backend
 * ---------------------------------------------------------------------- */

#define FAKE_MAX_LIVE 4096

struct fake {
	struct tmm_backend be;
	uint64_t allocs, frees;	  /* successful host_alloc / host_free */
	uint64_t alloc_calls;	  /* host_alloc calls, failed included */
	uint64_t live_bytes;
	size_t live_count;
	uint64_t capacity;	  /* live bytes it refuses to exceed; 0: any */
	int fail_next;		  /* fail this many calls... */
	int fail_code;		  /* ...with this code */
	int last_node;
	size_t last_bytes;
	int bad_frees;		  /* unknown pointer or wrong size */
	struct {
		void *p;
		size_t bytes;
	} live[FAKE_MAX_LIVE];
};

static int fake_host_alloc(struct tmm_backend *be, size_t bytes, int node,
			   void **ptr)
{
	struct fake *f = be->state;
	void *p;

	f->alloc_calls++;
	f->last_node = node;
	f->last_bytes = bytes;
	if (f->fail_next > 0) {
		f->fail_next--;
		return tmm_backend_fail(be, f->fail_code,
					"fake host_alloc(%zu bytes): injected",
					bytes);
	}
	if (f->capacity && f->live_bytes + bytes > f->capacity)
		return tmm_backend_fail(be, -ENOMEM,
					"fake host_alloc(%zu bytes): capacity",
					bytes);
	if (f->live_count == FAKE_MAX_LIVE)
		return tmm_backend_fail(be, -ENOMEM, "fake: table full");
	/* A reservation the pool must never touch. */
	p = mmap(NULL, bytes, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return tmm_backend_fail(be, -ENOMEM, "fake: mmap failed");
	f->live[f->live_count].p = p;
	f->live[f->live_count].bytes = bytes;
	f->live_count++;
	f->live_bytes += bytes;
	f->allocs++;
	*ptr = p;
	return 0;
}

static void fake_host_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct fake *f = be->state;

	for (size_t i = 0; i < f->live_count; i++) {
		if (f->live[i].p != ptr)
			continue;
		if (f->live[i].bytes != bytes)
			f->bad_frees++;
		munmap(ptr, f->live[i].bytes);
		f->live_bytes -= f->live[i].bytes;
		f->live[i] = f->live[--f->live_count];
		f->frees++;
		return;
	}
	f->bad_frees++;
}

static const struct tmm_backend_ops fake_ops = {
	.name = "fake",
	.host_alloc = fake_host_alloc,
	.host_free = fake_host_free,
};

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	f->be.ops = &fake_ops;
	f->be.state = f;
	f->fail_code = -EIO;
	f->last_node = -2;
	return f;
}

/* Frees the fake after checking that nothing leaked through it. */
static void fake_done(struct fake *f)
{
	ck_assert_uint_eq(f->live_count, 0);
	ck_assert_uint_eq(f->live_bytes, 0);
	ck_assert_uint_eq(f->allocs, f->frees);
	ck_assert_int_eq(f->bad_frees, 0);
	free(f);
}

/* The pool's view and the backend's must agree at every step. */
static void check_consistent(struct tmm_hostmem *hm, const struct fake *f)
{
	struct tmm_hostmem_stats st;

	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_eq(st.in_use + st.cached, f->live_bytes);
	ck_assert_uint_eq(st.allocations, f->allocs);
	ck_assert_int_eq(f->bad_frees, 0);
}

/* ------------------------------------------------------------------------
 * Pool tests
 * ---------------------------------------------------------------------- */

START_TEST(test_reuse_after_put)
{
	struct fake *f = fake_new();
	struct tmm_hostmem *hm;
	struct tmm_hostmem_stats st;
	void *a, *b;

	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, 1, 0), 0);
	ck_assert_int_eq(tmm_hostmem_get(hm, 100000, &a), 0);
	ck_assert_uint_eq(f->allocs, 1);
	ck_assert_int_eq(f->last_node, 1);
	tmm_hostmem_put(hm, a, 100000);
	check_consistent(hm, f);

	/* Same class (99000 and 100000 both round to 112 KiB): reused. */
	ck_assert_int_eq(tmm_hostmem_get(hm, 99000, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(f->allocs, 1);
	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_eq(st.reuses, 1);
	ck_assert_uint_eq(st.cached, 0);
	ck_assert_uint_eq(st.in_use, 112 * 1024);
	ck_assert_int_eq(st.numa_node, 1);
	tmm_hostmem_put(hm, b, 99000);

	/* Steady state: after the first round, no backend allocation. */
	static const size_t sizes[] = { 1, 4096, 5000, 65536, 70000,
					1 << 20, 3 << 20, 100000 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	void *p[N];
	uint64_t after_first = 0;

	for (int round = 0; round < 100; round++) {
		for (int i = 0; i < N; i++)
			ck_assert_int_eq(tmm_hostmem_get(hm, sizes[i], &p[i]),
					 0);
		check_consistent(hm, f);
		for (int i = N; i-- > 0;)
			tmm_hostmem_put(hm, p[i], sizes[i]);
		if (round == 0)
			after_first = f->alloc_calls;
	}
	ck_assert_uint_eq(f->alloc_calls, after_first);
	check_consistent(hm, f);
	tmm_hostmem_destroy(hm);
	fake_done(f);
}
END_TEST

/* Rounds `bytes` through the pool and returns the size it allocated. */
static size_t rounded(struct tmm_hostmem *hm, struct fake *f, size_t bytes)
{
	void *p;
	uint64_t before = f->allocs;

	ck_assert_int_eq(tmm_hostmem_get(hm, bytes, &p), 0);
	ck_assert_uint_eq(f->allocs, before + 1); /* cache_limit 1: no reuse */
	tmm_hostmem_put(hm, p, bytes);
	return f->last_bytes;
}

START_TEST(test_class_rounding)
{
	struct fake *f = fake_new();
	struct tmm_hostmem *hm;
	size_t prev = 0;
	unsigned seed = 12345;
	void *p;

	/* A limit of 1 byte caches nothing, so every get reaches the fake. */
	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -1, 1), 0);

	ck_assert_uint_eq(rounded(hm, f, 1), 4096);
	ck_assert_uint_eq(rounded(hm, f, 4096), 4096);
	ck_assert_uint_eq(rounded(hm, f, 4097), 8192);
	ck_assert_uint_eq(rounded(hm, f, 65536), 65536);
	ck_assert_uint_eq(rounded(hm, f, 65537), 80 * 1024);
	ck_assert_uint_eq(rounded(hm, f, 128 * 1024), 128 * 1024);
	ck_assert_uint_eq(rounded(hm, f, 128 * 1024 + 1), 160 * 1024);
	ck_assert_uint_eq(rounded(hm, f, (1 << 20) + 1), 1280 * 1024);
	ck_assert_int_eq(f->last_node, -1);

	/* Every size up to 1 MiB in 1 KiB-ish steps, then random ones. */
	for (size_t bytes = 1; bytes < (2u << 20); bytes += 1021) {
		size_t got = rounded(hm, f, bytes);

		ck_assert_uint_ge(got, bytes);
		ck_assert_uint_eq(got % 4096, 0);
		ck_assert_uint_ge(got, prev); /* monotone */
		if (bytes <= 65536)
			ck_assert_uint_lt(got - bytes, 4096);
		else
			ck_assert_uint_lt((got - bytes) * 4, bytes);
		prev = got;
	}
	for (int i = 0; i < 2000; i++) {
		size_t bytes = ((size_t)rand_r(&seed) << 8 ^
				(size_t)rand_r(&seed)) % (1u << 30) + 1;
		size_t got = rounded(hm, f, bytes);

		ck_assert_uint_ge(got, bytes);
		if (bytes > 65536)
			ck_assert_uint_lt((got - bytes) * 4, bytes);
	}

	/* Refused before reaching the backend. */
	uint64_t calls = f->alloc_calls;

	ck_assert_int_eq(tmm_hostmem_get(hm, 0, &p), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(tmm_hostmem_get(hm, SIZE_MAX, &p), -ENOMEM);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(f->be.error, "largest size class"));
	ck_assert_uint_eq(f->alloc_calls, calls);
	check_consistent(hm, f);

	tmm_hostmem_destroy(hm);
	fake_done(f);
}
END_TEST

START_TEST(test_cache_limit)
{
	struct fake *f = fake_new();
	struct tmm_hostmem *hm;
	struct tmm_hostmem_stats st;
	const size_t k128 = 128 * 1024;
	void *p[4], *q[2], *big;

	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, 0, 2 * k128), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tmm_hostmem_get(hm, k128, &p[i]), 0);
	for (int i = 0; i < 4; i++) {
		tmm_hostmem_put(hm, p[i], k128);
		check_consistent(hm, f);
	}
	/* Two fit under the limit; the two returned first went back. */
	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_eq(st.cached, 2 * k128);
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_eq(f->frees, 2);

	/* The two kept are the most recently returned ones. */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tmm_hostmem_get(hm, k128, &q[i]), 0);
		ck_assert(q[i] == p[2] || q[i] == p[3]);
	}
	ck_assert_ptr_ne(q[0], q[1]);
	ck_assert_uint_eq(f->allocs, 4);

	/* A buffer larger than the whole limit is not cached at all... */
	ck_assert_int_eq(tmm_hostmem_get(hm, 4 * k128, &big), 0);
	tmm_hostmem_put(hm, big, 4 * k128);
	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_eq(st.cached, 0);
	ck_assert_uint_eq(f->frees, 3);

	/* ...and smaller ones evict older ones of other classes. */
	tmm_hostmem_put(hm, q[0], k128);
	tmm_hostmem_put(hm, q[1], k128);
	ck_assert_int_eq(tmm_hostmem_get(hm, 200 * 1024, &big), 0);
	tmm_hostmem_put(hm, big, 200 * 1024); /* 224 KiB class */
	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_le(st.cached, 2 * k128);
	ck_assert_uint_eq(st.cached, 224 * 1024);
	check_consistent(hm, f);
	tmm_hostmem_destroy(hm);
	fake_done(f);

	/* A limit of 0 keeps everything. */
	f = fake_new();
	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -1, 0), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tmm_hostmem_get(hm, k128 << i, &p[i]), 0);
	for (int i = 0; i < 4; i++)
		tmm_hostmem_put(hm, p[i], k128 << i);
	tmm_hostmem_get_stats(hm, &st);
	ck_assert_uint_eq(st.cached, 15 * k128);
	ck_assert_uint_eq(f->frees, 0);
	check_consistent(hm, f);
	tmm_hostmem_destroy(hm);
	fake_done(f);
}
END_TEST

START_TEST(test_failure_propagates)
{
	struct fake *f = fake_new();
	struct tmm_hostmem *hm;
	struct tmm_hostmem_stats before, after;
	const size_t k256 = 256 * 1024, k512 = 512 * 1024;
	void *a, *b, *c, *p = (void *)1;

	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -1, 0), 0);
	ck_assert_int_eq(tmm_hostmem_get(hm, k256, &a), 0);

	/* An injected error comes back as is, with the backend's message. */
	tmm_hostmem_get_stats(hm, &before);
	f->fail_next = 1;
	f->fail_code = -EIO;
	ck_assert_int_eq(tmm_hostmem_get(hm, k512, &p), -EIO);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(f->be.error, "injected"));
	tmm_hostmem_get_stats(hm, &after);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	check_consistent(hm, f);

	/* The pool works on afterwards. */
	ck_assert_int_eq(tmm_hostmem_get(hm, k512, &b), 0);
	tmm_hostmem_put(hm, a, k256);
	check_consistent(hm, f);

	/*
	 * Out of memory with a cache of another class: the cache is given
	 * back and the allocation retried.  Live: 512K in use + 256K cached;
	 * another 512K fits a 1 MiB capacity only without the cache.
	 */
	f->capacity = 1 << 20;
	ck_assert_int_eq(tmm_hostmem_get(hm, k512, &c), 0);
	tmm_hostmem_get_stats(hm, &after);
	ck_assert_uint_eq(after.cached, 0);
	ck_assert_uint_eq(after.in_use, 2 * k512);
	ck_assert_uint_eq(f->frees, 1);
	check_consistent(hm, f);

	/* Out of memory with nothing to give back: -ENOMEM, no change. */
	tmm_hostmem_get_stats(hm, &before);
	ck_assert_int_eq(tmm_hostmem_get(hm, 4096, &p), -ENOMEM);
	ck_assert_ptr_nonnull(strstr(f->be.error, "capacity"));
	tmm_hostmem_get_stats(hm, &after);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	check_consistent(hm, f);

	/* Failures do not leak records: many in a row, then normal use. */
	f->fail_next = 1000;
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(tmm_hostmem_get(hm, 4096, &p), -EIO);
	f->capacity = 0;
	tmm_hostmem_put(hm, b, k512);
	tmm_hostmem_put(hm, c, k512);
	check_consistent(hm, f);
	tmm_hostmem_destroy(hm);
	fake_done(f);
}
END_TEST

START_TEST(test_destroy_frees_all)
{
	struct fake *f = fake_new();
	struct tmm_hostmem *hm;
	enum { N = 1000 };
	void **p = calloc(N, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -1, 0), 0);
	/* Enough buffers to grow the in-use table several times. */
	for (size_t i = 0; i < N; i++)
		ck_assert_int_eq(tmm_hostmem_get(hm, 4096 * (i % 40 + 1),
						 &p[i]), 0);
	/* Return every third: some cached, most in use. */
	for (size_t i = 0; i < N; i += 3)
		tmm_hostmem_put(hm, p[i], 4096 * (i % 40 + 1));
	check_consistent(hm, f);
	ck_assert_uint_eq(f->allocs, N);
	tmm_hostmem_destroy(hm);
	ck_assert_uint_eq(f->frees, N);
	fake_done(f);
	free(p);

	/* Destroying an empty pool and NULL are fine. */
	f = fake_new();
	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -1, 0), 0);
	tmm_hostmem_destroy(hm);
	tmm_hostmem_destroy(NULL);
	fake_done(f);
}
END_TEST

START_TEST(test_create_args)
{
	struct fake *f = fake_new();
	struct tmm_backend bare = { 0 };
	struct tmm_hostmem *hm = (void *)1;

	ck_assert_int_eq(tmm_hostmem_create(&hm, NULL, -1, 0), -EINVAL);
	ck_assert_ptr_null(hm);
	ck_assert_int_eq(tmm_hostmem_create(&hm, &bare, -1, 0), -EINVAL);
	ck_assert_int_eq(tmm_hostmem_create(NULL, &f->be, -1, 0), -EINVAL);
	/* Any negative node means local. */
	ck_assert_int_eq(tmm_hostmem_create(&hm, &f->be, -7, 0), 0);
	struct tmm_hostmem_stats st;

	tmm_hostmem_get_stats(hm, &st);
	ck_assert_int_eq(st.numa_node, -1);
	tmm_hostmem_destroy(hm);
	fake_done(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * NUMA placement
 * ---------------------------------------------------------------------- */

static char sysfs[64];

/* Makes <sysfs>/bus/pci/devices/<id>/ and writes `text` to numa_node. */
static void fake_device(const char *id, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sysfs, id);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	if (!text)
		return;
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node",
		 sysfs, id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void rm_device(const char *id)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node",
		 sysfs, id);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sysfs, id);
	rmdir(path);
}

static const char *const devs[][2] = {
	{ "0000:3b:00.0", "1\n" },
	{ "0000:af:00.0", "-1\n" },
	{ "0000:5e:00.0", "banana\n" },
	{ "0000:18:00.0", "" },
	{ "0000:86:00.0", "2 3\n" },
	{ "0000:d8:00.0", NULL }, /* no numa_node file */
	{ "10000:01:00.0", "3" }, /* a 5-digit (VMD) domain */
};

static void sysfs_setup(void)
{
	char path[128];

	snprintf(sysfs, sizeof(sysfs), "/tmp/tmm-sysfs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sysfs));
	snprintf(path, sizeof(path), "%s/bus", sysfs);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/bus/pci", sysfs);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		fake_device(devs[i][0], devs[i][1]);
}

static void sysfs_teardown(void)
{
	char path[128];

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		rm_device(devs[i][0]);
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/bus/pci", sysfs);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/bus", sysfs);
	rmdir(path);
	rmdir(sysfs);
}

START_TEST(test_node_of_pci)
{
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:3b:00.0"), 1);
	/* As CUDA writes it: 8-digit domain, upper case. */
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "00000000:3B:00.0"), 1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:3B:00.0"), 1);
	/* No domain means domain 0. */
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "3b:00.0"), 1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "00010000:01:00.0"), 3);

	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:af:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:5e:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:18:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:86:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:d8:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:99:00.0"), -1);

	/* Not PCI addresses: never turned into paths. */
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, ""), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "../../3b:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:3b:00.0/x"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "000000000:3b:00.0"),
			 -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, "0000:3b:00"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(sysfs, NULL), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci(NULL, "0000:3b:00.0"), -1);
	ck_assert_int_eq(tmm_numa_node_of_pci("/nonexistent", "0000:3b:00.0"),
			 -1);
}
END_TEST

static void check_alloc(int node)
{
	const size_t bytes = 3 * 4096 + 100;
	unsigned char *p = tmm_numa_alloc(bytes, node);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % 4096, 0);
	memset(p, 0xa5, bytes);
	ck_assert_uint_eq(p[0], 0xa5);
	ck_assert_uint_eq(p[bytes - 1], 0xa5);
	tmm_numa_free(p, bytes);
}

START_TEST(test_numa_alloc)
{
	ck_assert_int_ge(tmm_numa_node_count(), 1);
	check_alloc(-1);
	check_alloc(0);
	ck_assert_ptr_null(tmm_numa_alloc(0, -1));
	if (tmm_numa_available()) {
		/* A node that does not exist is refused, not misplaced. */
		errno = 0;
		ck_assert_ptr_null(tmm_numa_alloc(4096, 1 << 20));
		ck_assert_int_eq(errno, EINVAL);
	} else {
		ck_assert_int_eq(tmm_numa_node_count(), 1);
	}
	tmm_numa_free(NULL, 4096);
}
END_TEST

/* ------------------------------------------------------------------------
 * Runner
 * ---------------------------------------------------------------------- */

static Suite *hostmem_suite(void)
{
	Suite *s = suite_create("hostmem");
	TCase *pool = tcase_create("pool");
	TCase *numa = tcase_create("numa");

	tcase_add_test(pool, test_reuse_after_put);
	tcase_add_test(pool, test_class_rounding);
	tcase_add_test(pool, test_cache_limit);
	tcase_add_test(pool, test_failure_propagates);
	tcase_add_test(pool, test_destroy_frees_all);
	tcase_add_test(pool, test_create_args);
	suite_add_tcase(s, pool);

	tcase_add_checked_fixture(numa, sysfs_setup, sysfs_teardown);
	tcase_add_test(numa, test_node_of_pci);
	tcase_add_test(numa, test_numa_alloc);
	suite_add_tcase(s, numa);
	return s;
}

int main(void)
{
	return check_main(hostmem_suite);
}
