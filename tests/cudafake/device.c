/* SPDX-License-Identifier: MIT */
/*
 * device.c — the double's devices: how many (CUDAFAKE_DEVICES, read at
 * every call), each thread's current one, and what each reports of
 * itself (properties, attributes, PCI bus id, versions).  Memory,
 * streams and work on them are runtime.c's and queue.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

/* Whether the device has concurrent managed access: yes, unless
 * CUDAFAKE_CONCURRENT_MANAGED=0 (read at every call, so that one test
 * program can try both devices). */
static int concurrent_managed(void)
{
	const char *v = getenv("CUDAFAKE_CONCURRENT_MANAGED");

	return !(v && strcmp(v, "0") == 0);
}

/* The devices: CUDAFAKE_DEVICES (default 1), read at every call so that
 * one test program can try several. */
static int devices(void)
{
	size_t n = fake_env_size("CUDAFAKE_DEVICES", 1);

	return n >= 1 && n <= FAKE_DEVICES ? (int)n : 1;
}

int fake_devices(void)
{
	return devices();
}

static _Thread_local int current;

int fake_current_device(void)
{
	return current;
}

static bool no_device(int device)
{
	return device < 0 || device >= devices();
}

cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return fake_fail(cudaErrorInvalidValue);
	*count = devices();
	return cudaSuccess;
}

/* The versions of the toolkit the double was built against, as a driver
 * that runs it would report them. */
cudaError_t cudaDriverGetVersion(int *version)
{
	if (!version)
		return fake_fail(cudaErrorInvalidValue);
	*version = CUDART_VERSION;
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
	if (!version)
		return fake_fail(cudaErrorInvalidValue);
	*version = CUDART_VERSION;
	return cudaSuccess;
}

/* Each thread has its own current device, 0 until it sets one (Runtime
 * API, cudaSetDevice). */
cudaError_t cudaSetDevice(int device)
{
	if (no_device(device))
		return fake_fail(cudaErrorInvalidDevice);
	current = device;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return fake_fail(cudaErrorInvalidValue);
	*device = current;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	if (!prop)
		return fake_fail(cudaErrorInvalidValue);
	if (no_device(device))
		return fake_fail(cudaErrorInvalidDevice);
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "cudafake (test double)");
	prop->totalGlobalMem = fake_memory();
	prop->major = 9;
	prop->minor = 0;
	/* An H100's or H200's 132 unless asked: the copy kernel's share
	 * of compute is estimated from it (backend_cuda.c). */
	prop->multiProcessorCount = (int)fake_env_size("CUDAFAKE_SMS", 132);
	prop->managedMemory = 1;
	prop->concurrentManagedAccess = concurrent_managed();
	/* GPU-c0c1c2c3-c4c5-c6c7-c8c9-cacbcccdcecf on device 0, its last
	 * byte one more on each next device. */
	for (unsigned i = 0; i < sizeof(prop->uuid.bytes); i++)
		prop->uuid.bytes[i] = (char)(0xc0 + i);
	prop->uuid.bytes[15] = (char)(0xcf + device);
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
				   int device)
{
	if (!value)
		return fake_fail(cudaErrorInvalidValue);
	if (no_device(device))
		return fake_fail(cudaErrorInvalidDevice);
	switch (attr) {
	case cudaDevAttrClockRate:
	case cudaDevAttrMemoryClockRate:
		*value = 1000000; /* kHz: 1 GHz */
		return cudaSuccess;
	case cudaDevAttrGlobalMemoryBusWidth:
		*value = 1024;
		return cudaSuccess;
	case cudaDevAttrConcurrentManagedAccess:
		*value = concurrent_managed();
		return cudaSuccess;
	case cudaDevAttrCanUseHostPointerForRegisteredMem:
		/* As every GPU of unified addressing on Linux, unless
		 * CUDAFAKE_HOST_POINTER=0 (library.c). */
		*value = fake_env_size("CUDAFAKE_HOST_POINTER", 1) != 0;
		return cudaSuccess;
	case cudaDevAttrHostNumaId:
		/* No node (the host is one) unless CUDAFAKE_NUMA_NODE names
		 * one, which need not exist: the GPU's node may be outside
		 * the process's cpuset. */
		*value = (int)fake_env_size("CUDAFAKE_NUMA_NODE", (size_t)-1);
		return cudaSuccess;
	default:
		return fake_fail(cudaErrorInvalidValue);
	}
}

cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device)
{
	if (!id || len <= 0)
		return fake_fail(cudaErrorInvalidValue);
	if (no_device(device))
		return fake_fail(cudaErrorInvalidDevice);
	snprintf(id, (size_t)len, "0000:%02x:00.0", (unsigned)device);
	return cudaSuccess;
}
