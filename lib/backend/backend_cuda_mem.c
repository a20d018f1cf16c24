/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_mem.c — the CUDA backend's memory: device, managed and
 * pinned host allocations and copies; and how a failed CUDA call is
 * reported, for the whole backend.  What is done to managed ranges once
 * allocated (prefetch, advice, discard, the host's accesses) is
 * backend_cuda_managed.c's.
 *
 * Pinned host buffers are first placed on a NUMA node with libnuma
 * (numa_place.c) and then registered with cudaHostRegister, which is what
 * cudaMallocHost cannot do: it gives no say over where the pages are.
 *
 * Errors: every failed call is turned into a negative errno and a message
 * in be->error naming the call, its arguments and CUDA's own description.
 * tmm_cuda_fail is here, in the half the other calls, because both use
 * it: backend_cuda.c holds the ops table and calls in here, struct
 * cuda_state spans the two (backend_cuda_mem.h), and nothing here calls
 * backend_cuda.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda_mem.h"
#include "cuda_copier.h"
#include "numa_place.h"

/* ------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------- */

/* The errno that best says what a CUDA error means to the caller. */
static int cuda_errno(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorStubLibrary:
	case cudaErrorDevicesUnavailable:
	case cudaErrorSystemDriverMismatch:
	case cudaErrorCompatNotSupportedOnDevice:
		return -ENODEV;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidResourceHandle:
		return -EINVAL;
	case cudaErrorNotSupported:
		return -ENOTSUP;
	default:
		return -EIO;
	}
}

/*
 * Writes "<call>: <CUDA's description> (<error name>)" into be->error and
 * returns the errno for e.  The runtime also remembers the error for
 * cudaGetLastError(); that is cleared here so that user code checking it
 * after its own kernels does not find ours.  (Sticky errors, which mean
 * the context is lost, are not cleared by this and keep being reported.)
 */
int tmm_cuda_fail(struct tmm_backend *be, cudaError_t e, const char *fmt,
		  ...)
{
	char call[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(call, sizeof(call), fmt, ap);
	va_end(ap);
	(void)cudaGetLastError();
	return tmm_backend_fail(be, cuda_errno(e), "%s: %s (%s)", call,
				cudaGetErrorString(e), cudaGetErrorName(e));
}

/* The message for an engine number out of range. */
int tmm_cuda_bad_engine(struct tmm_backend *be, const char *what,
			enum tmm_engine engine)
{
	return tmm_backend_fail(be, -EINVAL, "%s: no engine %d", what,
				(int)engine);
}

/* ------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------- */

int tmm_cuda_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
{
	CUDA_ON_DEVICE(be);
	cudaError_t e;

	*ptr = NULL;
	/* cudaMalloc(0) succeeds with NULL, which no caller expects. */
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL, "cudaMalloc(0 bytes)");
	e = cudaMalloc(ptr, bytes);
	if (e != cudaSuccess) {
		*ptr = NULL;
		return tmm_cuda_fail(be, e, "cudaMalloc(%zu bytes)", bytes);
	}
	return 0;
}

/*
 * The frees return nothing: a cudaFree only fails when the context is
 * already lost, and then the next call that can report it will.
 */
void tmm_cuda_dev_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	(void)be;
	(void)bytes;
	if (ptr && cudaFree(ptr) != cudaSuccess)
		(void)cudaGetLastError();
}

int tmm_cuda_managed_alloc(struct tmm_backend *be, size_t bytes,
			   void **ptr)
{
	CUDA_ON_DEVICE(be);
	cudaError_t e;

	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL,
					"cudaMallocManaged(0 bytes)");
	/* Global: any stream may touch it, our copy streams included. */
	e = cudaMallocManaged(ptr, bytes, cudaMemAttachGlobal);
	if (e != cudaSuccess) {
		*ptr = NULL;
		return tmm_cuda_fail(be, e, "cudaMallocManaged(%zu bytes)",
				     bytes);
	}
	/* A copy to or from it goes by the copy kernel: it must know. */
	if (tmm_cuda_copier_note(st_of(be)->copier, *ptr, bytes) < 0) {
		if (cudaFree(*ptr) != cudaSuccess)
			(void)cudaGetLastError();
		*ptr = NULL;
		return tmm_backend_fail(be, -ENOMEM, "cudaMallocManaged(%zu "
					"bytes): out of host memory noting "
					"the range for the copy kernel "
					"(uvm_copier=kernel)", bytes);
	}
	return 0;
}

void tmm_cuda_managed_free(struct tmm_backend *be, void *ptr,
			   size_t bytes)
{
	tmm_cuda_copier_forget(st_of(be)->copier, ptr);
	tmm_cuda_dev_free(be, ptr, bytes);
}

/*
 * Pinned host memory the way that always works, where cudaHostRegister
 * was refused (`refused`: its error), as some virtual machines do:
 * cudaMallocHost, without NUMA placement.  From then on every buffer
 * comes this way, and info.host_pinning says so once for the context to
 * log (swap_engine.c).
 */
static int host_alloc_unplaced(struct tmm_backend *be, size_t bytes,
			       cudaError_t refused, void **ptr)
{
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	(void)cudaGetLastError();
	if (!s->host_register_refused) {
		s->host_register_refused = true;
		snprintf(be->info.host_pinning, sizeof(be->info.host_pinning),
			 "cudaHostRegister refused (%s): pinned host buffers "
			 "come from cudaMallocHost, without NUMA placement",
			 cudaGetErrorName(refused));
	}
	e = cudaMallocHost(ptr, bytes);
	if (e != cudaSuccess) {
		*ptr = NULL;
		return tmm_cuda_fail(be, e, "cudaMallocHost(%zu bytes), "
				     "cudaHostRegister being refused", bytes);
	}
	return 0;
}

/*
 * Pinned host memory on a chosen node: allocated there by libnuma, then
 * registered.  Registration pins the pages, and pinning faults them in
 * under the node's memory policy, so they land where they were asked to.
 * Where registration is refused, host_alloc_unplaced; where the node is
 * not the process's to allocate on, the local node.
 */
int tmm_cuda_host_alloc(struct tmm_backend *be, size_t bytes,
			int numa_node, void **ptr)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e;
	void *p;

	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL, "host_alloc(0 bytes)");
	if (s->host_node_refused)
		numa_node = -1;
	errno = 0;
	p = tmm_numa_alloc(bytes, numa_node);
	if (!p && errno == EINVAL && numa_node >= 0) {
		/* Not a node this process may allocate on (its cpuset or
		 * mems_allowed leave the GPU's node out): placed locally
		 * from then on, and said once (info.host_pinning). */
		s->host_node_refused = true;
		if (!be->info.host_pinning[0])
			snprintf(be->info.host_pinning,
				 sizeof(be->info.host_pinning),
				 "NUMA node %d is not among the nodes this "
				 "process may allocate on (cpuset, "
				 "mems_allowed): pinned host buffers are "
				 "placed on the local node", numa_node);
		numa_node = -1;
		errno = 0;
		p = tmm_numa_alloc(bytes, numa_node);
	}
	if (!p) {
		int err = errno ? errno : ENOMEM;

		return tmm_backend_fail(be, -err,
					"tmm_numa_alloc(%zu bytes, node %d): "
					"%s", bytes, numa_node, strerror(err));
	}
	e = s->host_register_refused
		    ? cudaErrorNotSupported
		    : cudaHostRegister(p, bytes, cudaHostRegisterDefault);
	if (e != cudaSuccess) {
		tmm_numa_free(p, bytes);
		return host_alloc_unplaced(be, bytes, e, ptr);
	}
	*ptr = p;
	return 0;
}

void tmm_cuda_host_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	(void)be;
	if (!ptr)
		return;
	if (cudaHostUnregister(ptr) == cudaSuccess) {
		tmm_numa_free(ptr, bytes);
		return;
	}
	/* Not registered: from cudaMallocHost (host_alloc_unplaced). */
	(void)cudaGetLastError();
	if (cudaFreeHost(ptr) != cudaSuccess)
		(void)cudaGetLastError();
}

/* ------------------------------------------------------------------------
 * Copies
 * ---------------------------------------------------------------------- */

int tmm_cuda_copy_async(struct tmm_backend *be, enum tmm_engine engine,
			void *dst, const void *src, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if (engine != TMM_ENGINE_H2D && engine != TMM_ENGINE_D2H)
		return tmm_backend_fail(be, -EINVAL,
					"copy_async: engine %d is not a copy "
					"engine", (int)engine);
	if (bytes == 0)
		return 0;
	s->queued[engine]++;
	/* A managed end would hold the host until the copy has run: the
	 * copy kernel, where it was asked for, holds nothing. */
	if (tmm_cuda_copier_takes(s->copier, dst, src)) {
		e = tmm_cuda_copier_launch(s->copier, dst, src, bytes,
					   s->stream[engine]);
		if (e != cudaSuccess)
			return tmm_cuda_fail(be, e, "cudaLaunchKernel(the "
					     "copy kernel, %zu bytes, %s; "
					     "uvm_copier=kernel)",
					     bytes, engine == TMM_ENGINE_H2D
							    ? "H2D"
							    : "D2H");
		return 0;
	}
	/* Default: unified addressing tells the direction from the pointers. */
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
			    s->stream[engine]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaMemcpyAsync(%zu bytes, %s)",
				     bytes,
				     engine == TMM_ENGINE_H2D ? "H2D" : "D2H");
	return 0;
}

int tmm_cuda_copy_on_device(struct tmm_backend *be, void *dst,
			    const void *src, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if (bytes == 0)
		return 0;
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
			    s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e,
				     "cudaMemcpyAsync(%zu bytes, device to "
				     "device)", bytes);
	return 0;
}

int tmm_cuda_fill(struct tmm_backend *be, void *dst, int byte, size_t bytes)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if (bytes == 0)
		return 0;
	e = cudaMemsetAsync(dst, byte, bytes, s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaMemsetAsync(%p, %#x, %zu bytes)",
				     dst, (unsigned)byte & 0xffu, bytes);
	return 0;
}

/*
 * A host copy, on the compute stream: after the kernels that use the
 * bytes, and the host waits for that stream alone.  Not cudaMemcpy: it
 * runs on the legacy default stream, which serialises with every blocking
 * stream of the program (Runtime API, "Stream synchronization behavior")
 * and is ordered against none of ours.
 */
int tmm_cuda_copy_sync(struct tmm_backend *be, void *dst, const void *src,
		       size_t bytes, bool to_device)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	const char *dir = to_device ? "to device" : "to host";
	cudaError_t e;

	if (bytes == 0)
		return 0;
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
			    s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaMemcpyAsync(%zu bytes %s, "
				     "compute)", bytes, dir);
	e = cudaStreamSynchronize(s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaStreamSynchronize(compute) "
				     "after a copy %s", dir);
	return 0;
}
