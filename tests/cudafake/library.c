/* SPDX-License-Identifier: MIT */
/*
 * library.c — code loaded at run time and its kernels launched, on the
 * double: cudaLibraryLoadData, cudaLibraryGetKernel, cudaLibraryUnload
 * and cudaLaunchKernel, as the cuda backend's copy kernel
 * (lib/backend/cuda_copier.c, uvm_copier=kernel) takes them.
 *
 * The double runs no device code.  A library keeps the PTX text it was
 * given; a kernel is found only where that text has an entry of its
 * name (".entry NAME(") and the double has a host twin of that name:
 * the copy kernel's runs the kernel's own body (cuda_copy_kernel_body.h)
 * for every thread of the launch's grid, one after another, queued as a
 * kernel on the launch's stream, so that it runs in the seeded order
 * and the race detector sees what it reads and writes.  A kernel launch
 * never holds the host, whatever memory it touches.  On the double's
 * clocks a copy kernel takes what a copy of its bytes takes, or runs at
 * CUDAFAKE_KERNEL_COPY_MBPS, and at most CUDAFAKE_KERNEL_BLOCK_MBPS a
 * block of its grid.
 *
 * The `fault` tunable's sites (lib/base/fault.h): cudaLibraryLoadData,
 * and cudaLaunchKernel with copy.  CUDAFAKE_HOST_POINTER=0 makes a device
 * that cannot reach registered host memory at its host address
 * (cudaDevAttrCanUseHostPointerForRegisteredMem, device.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "lib/backend/cuda_copy_kernel_body.h"
#include "lib/base/fault.h"

/* A library: the code it was loaded from. */
struct fake_library {
	char *code;
};

/* A kernel the double has a twin for. */
struct fake_kernel {
	const char *name;
	cudaError_t (*launch)(void **args, dim3 grid, dim3 block,
			      cudaStream_t stream);
};

/* The copy kernel's launch: dst, src, bytes (cuda_copy_kernel.cu), and
 * its grid's threads. */
struct copy_launch {
	void *dst;
	const void *src;
	size_t bytes;
	unsigned long long threads;
};

/* The copy, when the double runs it: the kernel's body for each thread
 * of its grid.  It frees its launch, as it runs it once. */
static void copy_twin(void *arg)
{
	struct copy_launch *l = arg;

	for (unsigned long long t = 0; t < l->threads; t++)
		tmm_copy_thread(t, l->threads, l->dst, l->src, l->bytes);
	free(l);
}

/* The copy kernel's time for `bytes` over `blocks`, as the bytes a copy
 * of that time moves: at a copy engine's rate (10 GB/s on the double's
 * clock), or CUDAFAKE_KERNEL_COPY_MBPS where set; at most
 * CUDAFAKE_KERNEL_BLOCK_MBPS a block where that is set, as a card's
 * kernel is held to the loads its blocks have in flight. */
static size_t copy_cost(size_t bytes, unsigned long long blocks)
{
	double mbps = (double)fake_env_size("CUDAFAKE_KERNEL_COPY_MBPS", 0);
	double per_block = (double)fake_env_size("CUDAFAKE_KERNEL_BLOCK_MBPS",
						 0);

	if (!(mbps > 0))
		mbps = 1e4;
	if (per_block > 0 && per_block * (double)blocks < mbps)
		mbps = per_block * (double)blocks;
	return (size_t)((double)bytes * 1e4 / mbps);
}

static cudaError_t launch_copy(void **args, dim3 grid, dim3 block,
			       cudaStream_t stream)
{
	struct copy_launch *l;
	struct cudafake_range r[2];
	cudaError_t e;

	if (!args || grid.x == 0 || block.x == 0 || block.x > 1024)
		return fake_fail(cudaErrorInvalidConfiguration);
	l = malloc(sizeof(*l));
	if (!l)
		return fake_fail(cudaErrorMemoryAllocation);
	l->dst = *(void **)args[0];
	l->src = *(const void **)args[1];
	l->bytes = (size_t)*(unsigned long long *)args[2];
	/* The kernel indexes its threads by x alone. */
	l->threads = (unsigned long long)grid.x * block.x;
	/* The kernel takes 16-byte words: a misaligned end would fault on
	 * a GPU. */
	if (!l->dst || !l->src ||
	    (((uintptr_t)l->dst | (uintptr_t)l->src) & 15u)) {
		free(l);
		return fake_fail(cudaErrorInvalidValue);
	}
	fake_calls_count()->kernel_copies++;
	fake_calls_count()->last_kernel_grid = grid.x;
	if (fake_managed(l->src, 1) && !fake_managed(l->dst, 1)) {
		fake_moves_out_count()->kernel_copies++;
		fake_moves_out_count()->kernel_copy_bytes += l->bytes;
	}
	if (l->bytes == 0) {
		free(l);
		return cudaSuccess;
	}
	r[0] = (struct cudafake_range){ l->src, l->bytes, false };
	r[1] = (struct cudafake_range){ l->dst, l->bytes, true };
	e = fake_launch_costed(stream, copy_twin, l, r, 2,
			       copy_cost(l->bytes, grid.x));
	if (e != cudaSuccess)
		free(l);
	return e;
}

static struct fake_kernel kernels[] = {
	{ "tmm_copy_kernel", launch_copy },
};

#define N_KERNELS (sizeof(kernels) / sizeof(kernels[0]))

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
				enum cudaJitOption *jit_options,
				void **jit_values, unsigned int n_jit,
				enum cudaLibraryOption *options,
				void **option_values, unsigned int n_options)
{
	struct fake_library *l;

	(void)jit_options;
	(void)jit_values;
	(void)options;
	(void)option_values;
	if (!library || !code || n_jit || n_options)
		return fake_fail(cudaErrorInvalidValue);
	*library = NULL;
	if (tmm_fault_hit("cudaLibraryLoadData"))
		return fake_fail(cudaErrorInvalidPtx);
	/* The driver's JIT finds no module in an empty text. */
	if (!((const char *)code)[0])
		return fake_fail(cudaErrorInvalidPtx);
	l = calloc(1, sizeof(*l));
	if (!l || !(l->code = strdup(code))) {
		free(l);
		return fake_fail(cudaErrorMemoryAllocation);
	}
	*library = (cudaLibrary_t)l;
	return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library,
				 const char *name)
{
	struct fake_library *l = (struct fake_library *)library;
	char entry[128];

	if (!kernel || !l || !name)
		return fake_fail(cudaErrorInvalidValue);
	*kernel = NULL;
	snprintf(entry, sizeof(entry), ".entry %s(", name);
	if (!strstr(l->code, entry))
		return fake_fail(cudaErrorSymbolNotFound);
	for (size_t i = 0; i < N_KERNELS; i++)
		if (strcmp(kernels[i].name, name) == 0) {
			*kernel = (cudaKernel_t)&kernels[i];
			return cudaSuccess;
		}
	return fake_fail(cudaErrorSymbolNotFound);
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
	struct fake_library *l = (struct fake_library *)library;

	if (!l)
		return fake_fail(cudaErrorInvalidValue);
	free(l->code);
	free(l);
	return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
			     void **args, size_t shared, cudaStream_t stream)
{
	const struct fake_kernel *k = func;
	bool known = false;

	for (size_t i = 0; i < N_KERNELS; i++)
		known |= k == &kernels[i];
	/* The double has no device code of the program's own to run. */
	if (!known || shared)
		return fake_fail(cudaErrorInvalidDeviceFunction);
	if (injected_fault("cudaLaunchKernel", TMM_SITE_COPY))
		return fake_fail(cudaErrorLaunchFailure);
	return k->launch(args, grid, block, stream);
}
