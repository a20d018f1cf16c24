/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_mem.h — the CUDA backend's memory, as backend_cuda.c sees
 * it, the errors both halves report, and the backend's state.
 *
 * The CUDA backend is two files: backend_cuda.c (the device, its streams
 * and events, op timing, the ops table) and backend_cuda_mem.c
 * (allocations, copies, managed ranges, and the errors).  struct
 * cuda_state spans both and is defined here, in the header of the half
 * that the other calls: backend_cuda.c includes this header and puts these
 * functions in its ops table, while backend_cuda_mem.c never calls back,
 * so the halves make no loop.
 *
 * Private to the CUDA backend, and compiled only with CUDA.
 */
#ifndef TMM_BACKEND_CUDA_MEM_H
#define TMM_BACKEND_CUDA_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend.h"

struct tmm_cuda_copier;
struct tmm_cuda_timing;
struct tmm_cuda_vmm;

/* Released events kept for reuse: a swap records two per tensor. */
#define CUDA_EVENT_CACHE 64

/*
 * The backend's state.  It spans two files: backend_cuda.c opens and
 * closes it and runs the streams, events and timing; backend_cuda_mem.c
 * reads the device, streams and host node for its copies and ranges.
 */
struct cuda_state {
	int device;
	cudaStream_t stream[TMM_ENGINE_COUNT];
	/* Collectives' callbacks run here, beside the compute stream
	 * (backend.h's comm_stream). */
	cudaStream_t comm;
	/* Op durations: CUPTI or event pairs (cuda_timing.h). */
	struct tmm_cuda_timing *timing;
	cudaEvent_t spare[CUDA_EVENT_CACHE];
	int nspare;
	/* Host NUMA node for advice (preferred location host), -1: any. */
	int host_node;
	/* Cleared when the driver refuses host NUMA locations. */
	bool host_numa_ok;
	/* Cleared when the runtime refuses cudaMemPrefetchBatchAsync (a
	 * driver older than the runtime): batches go range by range from
	 * then on (tmm_cuda_prefetch_batch). */
	bool prefetch_batch_ok;
	/* Set when cudaHostRegister was refused: host buffers come from
	 * cudaMallocHost from then on (info.host_pinning says why). */
	bool host_register_refused;
	/* Set when the host node is not among the process's allowed nodes:
	 * buffers are placed locally from then on. */
	bool host_node_refused;
	/* The caller's device while an op's kernels are launched
	 * (kernel_begin to kernel_end), -1: it was ours already. */
	int kernel_caller_device;
	/* The roofline of op_estimate_ns: peak fp32 flop/s and device
	 * memory bytes/s, from the device's attributes (0: unknown). */
	double peak_flops, mem_bytes_per_s;
	/* pool=chunks: the driver's virtual memory calls and the ranges
	 * reserved (backend_cuda_vmm.c); NULL until the first. */
	struct tmm_cuda_vmm *vmm;
	/* uvm_copier=kernel: the copy kernel and the managed ranges it
	 * knows (cuda_copier.h); NULL: copies are the runtime's. */
	struct tmm_cuda_copier *copier;
	/* Work queued on each copy stream by this backend (copies and
	 * prefetches), and, per stream, the count of each other stream's
	 * work it last waited for (after_other_streams): a stream already
	 * ordered after all of another's work needs no second event.
	 * Queued counts start at 1, as the streams start unwaited. */
	unsigned long queued[TMM_ENGINE_COUNT];
	unsigned long waited[TMM_ENGINE_COUNT][TMM_ENGINE_COUNT];
	/* The count of each stream's work the host last waited for
	 * (tmm_cuda_managed_access). */
	unsigned long synced[TMM_ENGINE_COUNT];
};

static inline struct cuda_state *st_of(struct tmm_backend *be)
{
	return be->state;
}

/*
 * A call of the backend runs with the backend's device current on the
 * calling thread, and gives the caller's back when it returns: any thread
 * may call into a context, and which device is current is the thread's
 * own business (issue #20).  The previous device, or -1 when it was ours
 * already.
 */
static inline int tmm_cuda_device_enter(const struct cuda_state *s)
{
	int d;

	if (cudaGetDevice(&d) != cudaSuccess) {
		(void)cudaGetLastError();
		d = -1;
	}
	if (d == s->device)
		return -1;
	if (cudaSetDevice(s->device) != cudaSuccess)
		(void)cudaGetLastError();
	return d;
}

static inline void tmm_cuda_device_leave(int *prev)
{
	if (*prev >= 0 && cudaSetDevice(*prev) != cudaSuccess)
		(void)cudaGetLastError();
}

/* The first line of a backend op: tmm_cuda_device_enter now, and
 * tmm_cuda_device_leave wherever the op returns. */
#define CUDA_ON_DEVICE(be)                                                  \
	int tmm_device_scope__                                              \
		__attribute__((cleanup(tmm_cuda_device_leave))) =           \
			tmm_cuda_device_enter(st_of(be))


/*
 * Writes "<call>: <CUDA's description> (<error name>)" into be->error and
 * returns the errno for e (backend_cuda_mem.c says more).
 */
int tmm_cuda_fail(struct tmm_backend *be, cudaError_t e, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));

/* The message for an engine number out of range. */
int tmm_cuda_bad_engine(struct tmm_backend *be, const char *what,
			enum tmm_engine engine);

/*
 * The ops of device, managed and host memory and of copies, for
 * backend_cuda.c's table (backend.h says what each does); those of
 * managed ranges are backend_cuda_managed.h's.
 */
int tmm_cuda_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr);
void tmm_cuda_dev_free(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_cuda_managed_alloc(struct tmm_backend *be, size_t bytes,
			   void **ptr);
void tmm_cuda_managed_free(struct tmm_backend *be, void *ptr,
			   size_t bytes);
int tmm_cuda_host_alloc(struct tmm_backend *be, size_t bytes,
			int numa_node, void **ptr);
void tmm_cuda_host_free(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_cuda_copy_async(struct tmm_backend *be, enum tmm_engine engine,
			void *dst, const void *src, size_t bytes);
/* Sets device bytes on the compute stream (cudaMemsetAsync). */
int tmm_cuda_fill(struct tmm_backend *be, void *dst, int byte, size_t bytes);
int tmm_cuda_copy_on_device(struct tmm_backend *be, void *dst,
			    const void *src, size_t bytes);
int tmm_cuda_copy_sync(struct tmm_backend *be, void *dst, const void *src,
		       size_t bytes, bool to_device);

#endif /* TMM_BACKEND_CUDA_MEM_H */
