/* SPDX-License-Identifier: MIT */
/*
 * cuda_copier.c — the copy kernel loaded, managed ranges known, and
 * copies launched (cuda_copier.h).
 *
 * The kernel comes from the library's own PTX by cudaLibraryLoadData and
 * cudaLibraryGetKernel (Runtime API, "Library Management"), and is
 * launched by cudaLaunchKernel, which takes a cudaKernel_t as its
 * function.  It reads and writes pinned host buffers at their host
 * addresses, which a device may do where it reports
 * cudaDevAttrCanUseHostPointerForRegisteredMem (registered memory, the
 * host pool's) and always for cudaMallocHost's under unified addressing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_copier.h"
#include "lib/base/xalloc.h"

/* Threads a block: a multiple of the warp, few enough that a block
 * finds room on a multiprocessor beside the kernels it runs with. */
#define COPIER_THREADS 256u

/* A managed allocation: [lo, hi). */
struct managed_range {
	uintptr_t lo, hi;
};

struct tmm_cuda_copier {
	cudaLibrary_t lib;
	cudaKernel_t kernel;
	unsigned blocks;
	/* Sorted by lo, apart (allocations do not overlap). */
	struct managed_range *ranges;
	size_t n, cap;
	unsigned long long bytes; /* launched so far */
};

static int refuse(char *why, size_t len, int rc, const char *fmt,
		  const char *detail)
{
	snprintf(why, len, fmt, detail);
	return rc;
}

int tmm_cuda_copier_open(struct tmm_cuda_copier **out, int device,
			 unsigned blocks, char *why, size_t why_len)
{
	struct tmm_cuda_copier *c;
	cudaError_t e;
	int host_ptr = 0;

	*out = NULL;
	if (!tmm_cuda_copy_kernel_ptx[0])
		return refuse(why, why_len, -ENOTSUP, "%s",
			      "this build had no nvcc to compile the copy "
			      "kernel (configure found none)");
	e = cudaDeviceGetAttribute(&host_ptr,
				   cudaDevAttrCanUseHostPointerForRegisteredMem,
				   device);
	if (e != cudaSuccess || !host_ptr) {
		(void)cudaGetLastError();
		return refuse(why, why_len, -ENOTSUP, "%s",
			      "the device cannot reach registered host "
			      "memory at its host address");
	}
	c = tmm_calloc(1, sizeof(*c));
	if (!c)
		return refuse(why, why_len, -ENOMEM, "%s",
			      "out of host memory");
	e = cudaLibraryLoadData(&c->lib, tmm_cuda_copy_kernel_ptx, NULL, NULL,
				0, NULL, NULL, 0);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		free(c);
		return refuse(why, why_len, -ENOTSUP,
			      "the driver refused its PTX: "
			      "cudaLibraryLoadData: %s", cudaGetErrorString(e));
	}
	e = cudaLibraryGetKernel(&c->kernel, c->lib, "tmm_copy_kernel");
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		cudaLibraryUnload(c->lib);
		free(c);
		return refuse(why, why_len, -ENOTSUP,
			      "cudaLibraryGetKernel(tmm_copy_kernel): %s",
			      cudaGetErrorString(e));
	}
	c->blocks = blocks ? blocks : 16;
	*out = c;
	return 0;
}

void tmm_cuda_copier_set_blocks(struct tmm_cuda_copier *c, unsigned blocks)
{
	c->blocks = blocks ? blocks : 1;
}

unsigned tmm_cuda_copier_blocks(const struct tmm_cuda_copier *c)
{
	return c ? c->blocks : 0;
}

void tmm_cuda_copier_close(struct tmm_cuda_copier *c)
{
	if (!c)
		return;
	if (cudaLibraryUnload(c->lib) != cudaSuccess)
		(void)cudaGetLastError();
	free(c->ranges);
	free(c);
}

/* The index of the first range with lo > p. */
static size_t first_after(const struct tmm_cuda_copier *c, uintptr_t p)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->ranges[mid].lo > p)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int tmm_cuda_copier_note(struct tmm_cuda_copier *c, const void *ptr,
			 size_t bytes)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t at;

	if (!c || !ptr || !bytes)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct managed_range *r =
			tmm_realloc(c->ranges, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		c->ranges = r;
		c->cap = cap;
	}
	at = first_after(c, p);
	memmove(&c->ranges[at + 1], &c->ranges[at],
		(c->n - at) * sizeof(c->ranges[0]));
	c->ranges[at] = (struct managed_range){ p, p + bytes };
	c->n++;
	return 0;
}

void tmm_cuda_copier_forget(struct tmm_cuda_copier *c, const void *ptr)
{
	size_t at;

	if (!c || !ptr)
		return;
	at = first_after(c, (uintptr_t)ptr);
	if (at == 0 || c->ranges[at - 1].lo != (uintptr_t)ptr)
		return;
	at--;
	memmove(&c->ranges[at], &c->ranges[at + 1],
		(c->n - at - 1) * sizeof(c->ranges[0]));
	c->n--;
}

static bool managed(const struct tmm_cuda_copier *c, const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t at = first_after(c, p);

	return at > 0 && p < c->ranges[at - 1].hi;
}

bool tmm_cuda_copier_takes(const struct tmm_cuda_copier *c, void *dst,
			   const void *src)
{
	return c && (((uintptr_t)dst | (uintptr_t)src) & 15u) == 0 &&
	       (managed(c, dst) || managed(c, src));
}

cudaError_t tmm_cuda_copier_launch(struct tmm_cuda_copier *c, void *dst,
				   const void *src, size_t bytes,
				   cudaStream_t stream)
{
	unsigned long long n = bytes;
	/* Enough blocks for one word a thread, at most c->blocks: a small
	 * tensor takes no more of the device than it can use. */
	unsigned long long want = (n / 16 + COPIER_THREADS - 1) / COPIER_THREADS;
	dim3 grid = { (unsigned)(want < 1 ? 1
				 : want < c->blocks ? want : c->blocks), 1, 1 };
	dim3 block = { COPIER_THREADS, 1, 1 };
	void *args[] = { &dst, (void *)&src, &n };
	cudaError_t e = cudaLaunchKernel((const void *)c->kernel, grid, block,
					 args, 0, stream);

	if (e == cudaSuccess)
		c->bytes += n;
	return e;
}

unsigned long long tmm_cuda_copier_bytes(const struct tmm_cuda_copier *c)
{
	return c ? c->bytes : 0;
}

void tmm_cuda_copier_restart_count(struct tmm_cuda_copier *c)
{
	if (c)
		c->bytes = 0;
}
