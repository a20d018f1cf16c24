/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_vmm.c — virtual memory on CUDA, for swap mode's
 * pool=chunks (lib/mem/pool_map.c): an address range reserved once, and
 * device memory created and mapped under it chunk by chunk.
 *
 * The calls are the driver API's virtual memory management (CUDA Driver
 * API reference, "Virtual Memory Management", group CUDA__VA):
 * cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess,
 * cuMemUnmap, cuMemRelease, cuMemAddressFree and
 * cuMemGetAllocationGranularity, with cuDeviceGet and
 * cuDeviceGetAttribute to ask whether the device supports them
 * (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).  The
 * library links the runtime only, so they are had through
 * cudaGetDriverEntryPointByVersion (Runtime API, "Driver Entry Point
 * Access"), asked for the ABI of CUDA 12.0; cuda.h gives their types.
 * Where any is missing, or the device says no, va_reserve returns
 * -ENOTSUP and the context falls back to one arena.
 *
 * One chunk, one allocation: cuMemCreate makes it, cuMemMap puts it
 * under the range, and its handle is released at once (cuMemRelease):
 * the mapping keeps the memory alive, and cuMemUnmap frees it, as
 * cuMemUnmap's description says ("any backing memory allocations will be
 * freed if there are no existing mappings and there are no unreleased
 * memory handles").  So nothing but a bitmap per range is kept.
 *
 * Unmapping waits for the device first: the runtime frees a block once
 * its last use is queued, not done, and a kernel or copy still queued
 * may read the chunk.  Unmapping happens only when the pool passes its
 * cap, so the wait is rare.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda_mem.h"
#include "backend_cuda_vmm.h"
#include "lib/base/xalloc.h"

/* The driver's ABI asked for: these calls have kept it since 10.2. */
#define VMM_ABI_VERSION 12000

/* The driver calls, as cuda.h declares them. */
struct vmm_fns {
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_attr)(int *, CUdevice_attribute, CUdevice);
	CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
				CUmemAllocationGranularity_flags);
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
			    unsigned long long);
	CUresult (*addr_free)(CUdeviceptr, size_t);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
			   const CUmemAllocationProp *, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUresult (*map)(CUdeviceptr, size_t, size_t,
			CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*unmap)(CUdeviceptr, size_t);
	CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *,
			       size_t);
	CUresult (*error_string)(CUresult, const char **);
};

/* One reserved range and which of its chunks are mapped. */
struct vmm_range {
	uintptr_t base;
	size_t bytes, chunk;
	uint8_t *mapped;
};

struct tmm_cuda_vmm {
	struct vmm_fns fn;
	CUdevice dev;
	struct vmm_range *ranges;
	size_t n_ranges, cap_ranges;
};

/* "<call>: <driver's description> (CUresult n)" into be->error. */
static int vmm_fail(struct tmm_backend *be, const struct vmm_fns *fn,
		    CUresult r, int code, const char *call)
{
	const char *why = NULL;

	if (!fn->error_string || fn->error_string(r, &why) != CUDA_SUCCESS ||
	    !why)
		why = "no description";
	return tmm_backend_fail(be, code, "%s: %s (CUresult %d)", call, why,
				(int)r);
}

static int errno_of(CUresult r)
{
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM
	       : r == CUDA_ERROR_NOT_SUPPORTED ? -ENOTSUP
	       : r == CUDA_ERROR_INVALID_VALUE ? -EINVAL
					       : -EIO;
}

/* One driver symbol; false when the runtime or driver lacks it. */
static bool resolve(const char *name, void **fn)
{
	*fn = NULL;
#if CUDART_VERSION >= 12050
	enum cudaDriverEntryPointQueryResult found;

	if (cudaGetDriverEntryPointByVersion(name, fn, VMM_ABI_VERSION,
					     cudaEnableDefault, &found) !=
		    cudaSuccess ||
	    found != cudaDriverEntryPointSuccess) {
		(void)cudaGetLastError();
		*fn = NULL;
	}
#else
	(void)name;
#endif
	return *fn != NULL;
}

#define RESOLVE(field, name) resolve(name, (void **)&fn->field)

static bool resolve_all(struct vmm_fns *fn)
{
	bool ok = true;

	ok &= RESOLVE(device_get, "cuDeviceGet");
	ok &= RESOLVE(device_attr, "cuDeviceGetAttribute");
	ok &= RESOLVE(granularity, "cuMemGetAllocationGranularity");
	ok &= RESOLVE(reserve, "cuMemAddressReserve");
	ok &= RESOLVE(addr_free, "cuMemAddressFree");
	ok &= RESOLVE(create, "cuMemCreate");
	ok &= RESOLVE(release, "cuMemRelease");
	ok &= RESOLVE(map, "cuMemMap");
	ok &= RESOLVE(unmap, "cuMemUnmap");
	ok &= RESOLVE(set_access, "cuMemSetAccess");
	(void)RESOLVE(error_string, "cuGetErrorString");
	return ok;
}

/* Device memory on our device, pinned (the only type cuMemCreate has). */
static CUmemAllocationProp device_prop(CUdevice dev)
{
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = (int)dev;
	return prop;
}

/*
 * The state, made at the first reservation: the driver's calls, and
 * whether the device supports them.  -ENOTSUP with a message when not.
 */
static int vmm_open(struct tmm_backend *be, struct tmm_cuda_vmm **out)
{
	struct cuda_state *s = st_of(be);
	struct tmm_cuda_vmm *v = s->vmm;
	int supported = 0;
	CUresult r;

	*out = v;
	if (v)
		return 0;
	v = tmm_calloc(1, sizeof(*v));
	if (!v)
		return tmm_backend_fail(be, -ENOMEM, "out of host memory for "
					"the virtual memory state");
	if (!resolve_all(&v->fn)) {
		free(v);
		return tmm_backend_fail(be, -ENOTSUP,
					"the CUDA runtime (%d) or driver has "
					"no virtual memory management entry "
					"points (cuMemCreate, cuMemMap)",
					CUDART_VERSION);
	}
	r = v->fn.device_get(&v->dev, s->device);
	if (r == CUDA_SUCCESS)
		r = v->fn.device_attr(
			&supported,
			CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
			v->dev);
	if (r != CUDA_SUCCESS || !supported) {
		int rc = r != CUDA_SUCCESS
				 ? vmm_fail(be, &v->fn, r, -ENOTSUP,
					    "cuDeviceGetAttribute(VIRTUAL_"
					    "MEMORY_MANAGEMENT_SUPPORTED)")
				 : tmm_backend_fail(be, -ENOTSUP,
						    "device %d does not support "
						    "virtual memory management",
						    s->device);
		free(v);
		return rc;
	}
	s->vmm = v;
	*out = v;
	return 0;
}

int tmm_cuda_va_reserve(struct tmm_backend *be, size_t bytes, size_t chunk,
			void **ptr)
{
	CUDA_ON_DEVICE(be);
	struct tmm_cuda_vmm *v;
	CUmemAllocationProp prop;
	struct vmm_range *range;
	CUdeviceptr base = 0;
	size_t gran = 0;
	CUresult r;
	int rc;

	*ptr = NULL;
	if (bytes == 0 || chunk == 0 || bytes % chunk)
		return tmm_backend_fail(be, -EINVAL, "va_reserve: %zu bytes "
					"in chunks of %zu", bytes, chunk);
	rc = vmm_open(be, &v);
	if (rc < 0)
		return rc;
	prop = device_prop(v->dev);
	r = v->fn.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS)
		return vmm_fail(be, &v->fn, r, -ENOTSUP,
				"cuMemGetAllocationGranularity");
	if (gran == 0 || chunk % gran)
		return tmm_backend_fail(be, -ENOTSUP,
					"the device maps memory in units of "
					"%zu bytes, which do not divide the "
					"pool's %zu-byte chunks", gran, chunk);
	if (v->n_ranges == v->cap_ranges) {
		size_t cap = v->cap_ranges ? 2 * v->cap_ranges : 4;
		void *p = tmm_realloc(v->ranges, cap * sizeof(*v->ranges));

		if (!p)
			return tmm_backend_fail(be, -ENOMEM, "out of host "
						"memory recording a range");
		v->ranges = p;
		v->cap_ranges = cap;
	}
	range = &v->ranges[v->n_ranges];
	range->mapped = tmm_calloc(bytes / chunk, 1);
	if (!range->mapped)
		return tmm_backend_fail(be, -ENOMEM, "out of host memory "
					"recording a range");
	r = v->fn.reserve(&base, bytes, chunk, 0, 0);
	if (r != CUDA_SUCCESS) {
		free(range->mapped);
		return vmm_fail(be, &v->fn, r, errno_of(r) == -EINVAL
						       ? -EINVAL : -ENOMEM,
				"cuMemAddressReserve");
	}
	range->base = (uintptr_t)base;
	range->bytes = bytes;
	range->chunk = chunk;
	v->n_ranges++;
	*ptr = (void *)(uintptr_t)base;
	return 0;
}

/* The range holding [ptr, ptr + bytes) in whole chunks, or NULL. */
static struct vmm_range *range_of(struct tmm_cuda_vmm *v, const void *ptr,
				  size_t bytes, size_t *first)
{
	uintptr_t a = (uintptr_t)ptr;

	for (size_t i = 0; v && i < v->n_ranges; i++) {
		struct vmm_range *r = &v->ranges[i];

		if (a < r->base || a - r->base >= r->bytes)
			continue;
		if ((a - r->base) % r->chunk || !bytes || bytes % r->chunk ||
		    bytes > r->bytes - (a - r->base))
			return NULL;
		*first = (a - r->base) / r->chunk;
		return r;
	}
	return NULL;
}

int tmm_cuda_va_map(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct tmm_cuda_vmm *v = st_of(be)->vmm;
	CUmemGenericAllocationHandle handle;
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	struct vmm_range *range;
	CUdeviceptr at = (CUdeviceptr)(uintptr_t)ptr;
	size_t first;
	CUresult r;

	range = range_of(v, ptr, bytes, &first);
	if (!range)
		return tmm_backend_fail(be, -EINVAL, "va_map: [%p, +%zu) is "
					"not whole chunks of a reserved range",
					ptr, bytes);
	prop = device_prop(v->dev);
	r = v->fn.create(&handle, bytes, &prop, 0);
	if (r != CUDA_SUCCESS)
		return vmm_fail(be, &v->fn, r, errno_of(r), "cuMemCreate");
	r = v->fn.map(at, bytes, 0, handle, 0);
	/* The mapping holds the memory from here on (see the top). */
	(void)v->fn.release(handle);
	if (r != CUDA_SUCCESS)
		return vmm_fail(be, &v->fn, r, errno_of(r), "cuMemMap");
	memset(&access, 0, sizeof(access));
	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = (int)v->dev;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	/* A new mapping starts with no access for anyone (cuMemUnmap's
	 * and cuMemSetAccess's descriptions). */
	r = v->fn.set_access(at, bytes, &access, 1);
	if (r != CUDA_SUCCESS) {
		(void)v->fn.unmap(at, bytes);
		return vmm_fail(be, &v->fn, r, errno_of(r), "cuMemSetAccess");
	}
	memset(range->mapped + first, 1, bytes / range->chunk);
	return 0;
}

/* Unmaps chunks [first, first + n) of range, after the device's work. */
static void unmap_chunks(struct tmm_backend *be, struct tmm_cuda_vmm *v,
			 struct vmm_range *range, size_t first, size_t n)
{
	if (cudaDeviceSynchronize() != cudaSuccess)
		(void)cudaGetLastError();
	for (size_t k = first; k < first + n; k++) {
		CUresult r;

		if (!range->mapped[k])
			continue;
		r = v->fn.unmap((CUdeviceptr)(range->base + k * range->chunk),
				range->chunk);
		if (r != CUDA_SUCCESS)
			vmm_fail(be, &v->fn, r, errno_of(r), "cuMemUnmap");
		range->mapped[k] = 0;
	}
}

void tmm_cuda_va_unmap(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct tmm_cuda_vmm *v = st_of(be)->vmm;
	struct vmm_range *range;
	size_t first;

	range = range_of(v, ptr, bytes, &first);
	if (!range) {
		tmm_backend_fail(be, -EINVAL, "va_unmap: [%p, +%zu) is not "
				 "whole chunks of a reserved range", ptr,
				 bytes);
		return;
	}
	/* Mapped chunk by chunk, so unmapped the same way: cuMemUnmap
	 * takes only whole mappings. */
	unmap_chunks(be, v, range, first, bytes / range->chunk);
}

static void release_range(struct tmm_backend *be, struct tmm_cuda_vmm *v,
			  size_t i)
{
	struct vmm_range *range = &v->ranges[i];
	CUresult r;

	unmap_chunks(be, v, range, 0, range->bytes / range->chunk);
	r = v->fn.addr_free((CUdeviceptr)range->base, range->bytes);
	if (r != CUDA_SUCCESS)
		vmm_fail(be, &v->fn, r, errno_of(r), "cuMemAddressFree");
	free(range->mapped);
	v->ranges[i] = v->ranges[--v->n_ranges];
}

void tmm_cuda_va_release(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct tmm_cuda_vmm *v = st_of(be)->vmm;

	for (size_t i = 0; v && i < v->n_ranges; i++)
		if (v->ranges[i].base == (uintptr_t)ptr &&
		    v->ranges[i].bytes == bytes) {
			release_range(be, v, i);
			return;
		}
	tmm_backend_fail(be, -EINVAL, "va_release: %p (%zu bytes) is not a "
			 "reserved range", ptr, bytes);
}

void tmm_cuda_vmm_close(struct tmm_backend *be)
{
	struct tmm_cuda_vmm *v = st_of(be)->vmm;

	if (!v)
		return;
	while (v->n_ranges)
		release_range(be, v, v->n_ranges - 1);
	free(v->ranges);
	free(v);
	st_of(be)->vmm = NULL;
}
