/* SPDX-License-Identifier: MIT */
/*
 * vmm.c — the driver's virtual memory management calls the cuda backend
 * makes for pool=chunks (lib/backend/backend_cuda_vmm.c), and
 * cudaGetDriverEntryPointByVersion, through which it finds them, on host
 * memory with the prototypes of the real cuda.h.
 *
 * A reservation is address space with no access (mmap PROT_NONE).
 * cuMemCreate makes an allocation counted against the device's memory
 * like cudaMalloc's; cuMemMap puts fresh pages under the range, still
 * without access until cuMemSetAccess grants it, so a backend that
 * forgets to grant it faults on the first copy, as on a GPU ("all
 * mappings start with no accessibility setup", cuMemUnmap's description
 * in the Driver API's "Virtual Memory Management").  The memory is freed
 * when it is both released (cuMemRelease) and unmapped.  cuMemUnmap
 * takes only whole mappings, as the driver's does, and refuses to unmap
 * bytes that queued work still touches: the backend must wait for the
 * device first.
 *
 * Set up by the environment: CUDAFAKE_VMM=0 (a device without virtual
 * memory management), CUDAFAKE_VMM_GRANULARITY (bytes; default 2 MiB).
 * Fault sites (lib/base/fault.h): cuMemCreate, and device_alloc with it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>

#include "fake.h"
#include "lib/base/fault.h"

#define MAX_MAPS 4096

/* An allocation of cuMemCreate. */
struct fake_handle {
	size_t bytes;
	int device;		/* whose memory it is */
	bool released, mapped;
};

static struct {
	struct { uintptr_t lo, hi; } ranges[64];
	unsigned n_ranges;
	struct { uintptr_t lo, hi; struct fake_handle *h; } maps[MAX_MAPS];
	unsigned n_maps;
} vm;

static size_t env_bytes(const char *name, size_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? (size_t)strtoull(v, NULL, 10) : dflt;
}

static size_t granularity(void)
{
	return env_bytes("CUDAFAKE_VMM_GRANULARITY", (size_t)2 << 20);
}

static void free_if_done(struct fake_handle *h)
{
	if (h->released && !h->mapped) {
		fake_device_give(h->device, h->bytes);
		free(h);
	}
}

static CUresult fake_device_get(CUdevice *dev, int ordinal)
{
	if (!dev || ordinal < 0 || ordinal >= fake_devices())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

static CUresult fake_device_attr(int *value, CUdevice_attribute attr,
				 CUdevice dev)
{
	const char *v = getenv("CUDAFAKE_VMM");

	if (!value || dev < 0 || dev >= fake_devices())
		return CUDA_ERROR_INVALID_VALUE;
	if (attr != CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
		return CUDA_ERROR_INVALID_VALUE;
	*value = !(v && strcmp(v, "0") == 0);
	return CUDA_SUCCESS;
}

static CUresult fake_granularity(size_t *g, const CUmemAllocationProp *prop,
				 CUmemAllocationGranularity_flags option)
{
	(void)option;
	if (!g || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	*g = granularity();
	return CUDA_SUCCESS;
}

static CUresult fake_reserve(CUdeviceptr *ptr, size_t bytes, size_t align,
			     CUdeviceptr addr, unsigned long long flags)
{
	char *p;
	size_t head;

	if (!ptr || !bytes || addr || flags || bytes % granularity() ||
	    (align && align % granularity()) || vm.n_ranges == 64)
		return CUDA_ERROR_INVALID_VALUE;
	align = align ? align : granularity();
	p = mmap(NULL, bytes + align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	head = (align - (uintptr_t)p % align) % align;
	if (head)
		munmap(p, head);
	munmap(p + head + bytes, align - head);
	p += head;
	vm.ranges[vm.n_ranges].lo = (uintptr_t)p;
	vm.ranges[vm.n_ranges].hi = (uintptr_t)p + bytes;
	vm.n_ranges++;
	*ptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

static CUresult fake_addr_free(CUdeviceptr ptr, size_t bytes)
{
	for (unsigned i = 0; i < vm.n_ranges; i++) {
		if (vm.ranges[i].lo != ptr || vm.ranges[i].hi - ptr != bytes)
			continue;
		/* The driver wants every mapping of it gone first. */
		for (unsigned m = 0; m < vm.n_maps; m++)
			if (vm.maps[m].lo >= ptr && vm.maps[m].lo < ptr + bytes)
				return CUDA_ERROR_INVALID_VALUE;
		munmap((void *)(uintptr_t)ptr, bytes);
		vm.ranges[i] = vm.ranges[--vm.n_ranges];
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_create(CUmemGenericAllocationHandle *out, size_t bytes,
			    const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	struct fake_handle *h;
	bool fault = injected_fault("cuMemCreate", TMM_SITE_DEVICE_ALLOC);

	if (!out || !prop || flags || !bytes || bytes % granularity() ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= fake_devices())
		return CUDA_ERROR_INVALID_VALUE;
	if (fault || !fake_device_take(prop->location.id, bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	h = calloc(1, sizeof(*h));
	if (!h) {
		fake_device_give(prop->location.id, bytes);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->bytes = bytes;
	h->device = prop->location.id;
	*out = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

static CUresult fake_release(CUmemGenericAllocationHandle handle)
{
	struct fake_handle *h = (struct fake_handle *)(uintptr_t)handle;

	if (!h || h->released)
		return CUDA_ERROR_INVALID_VALUE;
	h->released = true;
	free_if_done(h);
	return CUDA_SUCCESS;
}

static bool in_a_range(uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = 0; i < vm.n_ranges; i++)
		if (lo >= vm.ranges[i].lo && hi <= vm.ranges[i].hi)
			return true;
	return false;
}

static CUresult fake_map(CUdeviceptr ptr, size_t bytes, size_t offset,
			 CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	struct fake_handle *h = (struct fake_handle *)(uintptr_t)handle;

	if (!h || h->released || h->mapped || offset || flags ||
	    bytes != h->bytes || ptr % granularity() ||
	    !in_a_range(ptr, ptr + bytes) || vm.n_maps == MAX_MAPS)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned m = 0; m < vm.n_maps; m++)
		if (ptr < vm.maps[m].hi && ptr + bytes > vm.maps[m].lo)
			return CUDA_ERROR_INVALID_VALUE; /* mapped already */
	/* Fresh pages, no access yet. */
	if (mmap((void *)(uintptr_t)ptr, bytes, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0) == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	vm.maps[vm.n_maps].lo = ptr;
	vm.maps[vm.n_maps].hi = ptr + bytes;
	vm.maps[vm.n_maps].h = h;
	vm.n_maps++;
	h->mapped = true;
	return CUDA_SUCCESS;
}

static CUresult fake_set_access(CUdeviceptr ptr, size_t bytes,
				const CUmemAccessDesc *desc, size_t count)
{
	if (!desc || count != 1 ||
	    desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    desc->location.id != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* Only over mapped bytes. */
	for (uintptr_t a = ptr; a < ptr + bytes;) {
		unsigned m = 0;

		while (m < vm.n_maps && !(a >= vm.maps[m].lo &&
					  a < vm.maps[m].hi))
			m++;
		if (m == vm.n_maps)
			return CUDA_ERROR_INVALID_VALUE;
		a = vm.maps[m].hi;
	}
	if (mprotect((void *)(uintptr_t)ptr, bytes,
		     desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
			     ? PROT_READ | PROT_WRITE
		     : desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READ
			     ? PROT_READ
			     : PROT_NONE) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult fake_unmap(CUdeviceptr ptr, size_t bytes)
{
	for (unsigned m = 0; m < vm.n_maps; m++) {
		struct fake_handle *h = vm.maps[m].h;

		if (vm.maps[m].lo != ptr || vm.maps[m].hi - ptr != bytes)
			continue;
		/* Work still queued on these bytes would read freed memory
		 * on a GPU: the caller must have waited for it. */
		if (fake_queued_on((void *)(uintptr_t)ptr, bytes))
			return CUDA_ERROR_ILLEGAL_STATE;
		mmap((void *)(uintptr_t)ptr, bytes, PROT_NONE,
		     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
		vm.maps[m] = vm.maps[--vm.n_maps];
		h->mapped = false;
		free_if_done(h);
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_error_string(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	*s = r == CUDA_SUCCESS		     ? "no error"
	     : r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory"
	     : r == CUDA_ERROR_ILLEGAL_STATE ? "operation not permitted in "
					       "this state"
					     : "invalid argument";
	return CUDA_SUCCESS;
}

static const struct {
	const char *name;
	void *fn;
} entry_points[] = {
	{ "cuDeviceGet", (void *)fake_device_get },
	{ "cuDeviceGetAttribute", (void *)fake_device_attr },
	{ "cuMemGetAllocationGranularity", (void *)fake_granularity },
	{ "cuMemAddressReserve", (void *)fake_reserve },
	{ "cuMemAddressFree", (void *)fake_addr_free },
	{ "cuMemCreate", (void *)fake_create },
	{ "cuMemRelease", (void *)fake_release },
	{ "cuMemMap", (void *)fake_map },
	{ "cuMemUnmap", (void *)fake_unmap },
	{ "cuMemSetAccess", (void *)fake_set_access },
	{ "cuGetErrorString", (void *)fake_error_string },
};

cudaError_t cudaGetDriverEntryPointByVersion(
	const char *symbol, void **fn, unsigned int version,
	unsigned long long flags, enum cudaDriverEntryPointQueryResult *found)
{
	(void)flags;
	if (!symbol || !fn)
		return cudaErrorInvalidValue;
	*fn = NULL;
	for (size_t i = 0; i < sizeof(entry_points) / sizeof(*entry_points);
	     i++)
		if (strcmp(entry_points[i].name, symbol) == 0 &&
		    version >= 10020)
			*fn = entry_points[i].fn;
	if (found)
		*found = *fn ? cudaDriverEntryPointSuccess
			     : cudaDriverEntryPointSymbolNotFound;
	return cudaSuccess;
}

size_t cudafake_vmm_mapped(void)
{
	size_t bytes = 0;

	for (unsigned m = 0; m < vm.n_maps; m++)
		bytes += vm.maps[m].hi - vm.maps[m].lo;
	return bytes;
}
