/* SPDX-License-Identifier: MIT */
/*
 * cudafake.h — the CUDA test double: what a test may ask of it beyond the
 * CUDA runtime's own entry points (which it implements on host memory,
 * with the prototypes of the real cuda_runtime_api.h).
 *
 * Streams and events are queues of work that the double runs in an order
 * chosen by a seed, within the rules CUDA guarantees: in order within a
 * stream, after the events a stream waits for, and the legacy default
 * stream ordered with every blocking stream.  Every copy, memset,
 * prefetch, discard and kernel launch declares the bytes it reads and
 * writes; two of them on overlapping bytes, one a write, that no chain
 * of those rules orders, are a race, reported with both call sites.
 *
 * The environment sets it up for programs that do not call it:
 * CUDAFAKE_SEED (the order; default 1), CUDAFAKE_DEVICES (how many
 * devices, 1 to 16; default 1), CUDAFAKE_MEMORY (each device's
 * bytes; default 1 GiB), CUDAFAKE_PAGE (managed memory's page; default
 * 64 KiB), CUDAFAKE_CONCURRENT_MANAGED=0 (a device without concurrent
 * managed access), CUDAFAKE_NUMA_NODE (the GPU's host node; default
 * none), CUDAFAKE_RACES=abort (abort at the first race, with its report
 * on stderr), CUDAFAKE_CUPTI=records (CUPTI delivers activity records;
 * default: it refuses profiling).
 */
#ifndef CUDAFAKE_H
#define CUDAFAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

/* A byte range a kernel reads or writes. */
struct cudafake_range {
	const void *ptr;
	size_t bytes;
	bool write;
};

/*
 * Forgets every race and counter and reseeds the order: what a test does
 * before each run it checks.  Allocations, streams and events stay.
 */
void cudafake_reset(unsigned seed);

/*
 * A kernel: fn(arg) is its host twin, run when the double runs the
 * stream's work there; r[0 .. n) are the bytes it reads and writes.
 * Returns cudaSuccess or cudaErrorInvalidResourceHandle.
 */
cudaError_t cudafake_launch(cudaStream_t stream, void (*fn)(void *),
			    void *arg, const struct cudafake_range *r,
			    unsigned n);

/*
 * The host is about to touch [p, p + n) of managed memory, reading it or
 * (write) writing it: a race is reported with each queued operation on
 * those bytes that the host has not waited for and that conflicts with
 * the access (a write, a discard; for a host write, any use).  The cuda
 * backend says so itself before every host access it orders
 * (tmm_cuda_managed_access); a test may ask directly.
 */
void cudafake_host_access(const void *p, size_t n, bool write);

/* The races found since the last reset, and the report of race i. */
unsigned cudafake_races(void);
const char *cudafake_race(unsigned i);

/* Operations queued on the legacy default stream since the last reset:
 * each serialises with every blocking stream. */
unsigned long cudafake_legacy_ops(void);

/*
 * Which device did what, for programs that drive several
 * (CUDAFAKE_DEVICES): the device an allocation of device or managed
 * memory holding ptr was made on (the current one at cudaMalloc or
 * cudaMallocManaged; -1: none holds it); the device memory in use on a
 * device (cudaMalloc and cuMemCreate); and the kernels queued on a
 * device's streams since the program began.
 */
int cudafake_device_of(const void *ptr);
size_t cudafake_device_in_use(int device);
unsigned long cudafake_kernels_on(int device);

/* cudaDeviceSynchronize calls since the program began: each waits for
 * every stream, the program's own included. */
unsigned long cudafake_device_syncs(void);

/*
 * Moves of managed memory towards the host since the program began, the
 * calls a swap-out of a managed tensor is made of: prefetches to a host
 * location (cudaMemPrefetchAsync), and copies whose source is managed
 * and whose destination is not (cudaMemcpyAsync), each with its bytes.
 * A test takes the difference over the run it checks.
 */
struct cudafake_moves_out {
	unsigned long prefetches, copies;
	size_t prefetch_bytes, copy_bytes;
	/* by the library's copy kernel (library.c), not in copies */
	unsigned long kernel_copies;
	size_t kernel_copy_bytes;
};
void cudafake_moves_out(struct cudafake_moves_out *m);

/*
 * Calls of the runtime entry points a training step may make, since the
 * program began (failed calls included): what a test counts to hold the
 * library's per-op and per-step driver work to what it needs (mode=uvm
 * with nothing to move making no more calls than it must).  cudaMemcpy
 * and cudaMemcpyAsync count together as copies.
 */
struct cudafake_calls {
	unsigned long event_records, stream_waits, event_queries, event_syncs;
	unsigned long stream_syncs, device_syncs;
	unsigned long prefetches, advises, discards;
	unsigned long copies, memsets, mem_get_info;
	/* cudaMemPrefetchBatchAsync calls, and the prefetches they
	 * queued (not counted in prefetches) */
	unsigned long prefetch_batches, batched_prefetches;
	/* launches of the library's copy kernel (library.c), any way, and
	 * the blocks of the last one's grid */
	unsigned long kernel_copies, last_kernel_grid;
};
void cudafake_calls(struct cudafake_calls *c);

/* The granularity of managed memory: a discard poisons whole pages of
 * it (within the allocation), as the driver may. */
size_t cudafake_page_size(void);

/* Device bytes mapped now under reserved ranges by cuMemMap (vmm.c):
 * pool=chunks' physical memory.  CUDAFAKE_VMM=0 makes a device without
 * virtual memory management; CUDAFAKE_VMM_GRANULARITY sets its unit
 * (default 2 MiB). */
size_t cudafake_vmm_mapped(void);

/*
 * CUPTI on the double (cupti.c, built where the toolkit has CUPTI): a
 * driver that refuses profiling (the default), or one that delivers
 * activity records whose start and end follow the double's queue order.
 * Set before the code under test opens CUPTI.
 */
enum cudafake_cupti {
	CUDAFAKE_CUPTI_REFUSE,
	CUDAFAKE_CUPTI_RECORDS,
};
void cudafake_cupti_mode(enum cudafake_cupti mode);

/* Activity records written into the client's buffers so far. */
unsigned long cudafake_cupti_records(void);

/*
 * Unified-memory counters (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
 * in records mode: each prefetch the double runs gives a record of its
 * bytes to or from its device, cause USER.  The double has no pages to
 * fault or evict, so the driver's own work is the test's to stand in
 * for: a group of `pages` device page faults on `device`, serviced in
 * `ns` and moving `bytes` to it (cause COHERENCE), and an eviction of
 * `bytes` from it; each written when the counters are on.  With refuse,
 * cuptiActivityConfigureUnifiedMemoryCounter fails as a driver that does
 * not count does (CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED).
 */
void cudafake_cupti_um_fault(int device, const void *ptr, uint64_t pages,
			     uint64_t bytes, uint64_t ns);
void cudafake_cupti_um_evict(int device, const void *ptr, uint64_t bytes);
void cudafake_cupti_um_refuse(bool refuse);

/*
 * cuDNN on the double (cudnn.c, built where the toolkit has cuDNN): one
 * result of a _v7 algorithm query, cuDNN's perf struct in plain ints
 * (algo, cudnnStatus_t, cudnnDeterminism_t, cudnnMathType_t).  The
 * queries answer r[0 .. n) from now on; n = 0 gives back the double's own
 * list (cudnn.c).
 */
struct cudafake_cudnn_result {
	int algo;
	int status;
	size_t memory;
	int determinism;
	int math;
};
void cudafake_cudnn_results(const struct cudafake_cudnn_result *r, int n);

/* cuBLAS on the double (cublas.c, built where the toolkit has cuBLAS):
 * the cublasSgemm calls queued since the program began. */
unsigned long cudafake_cublas_sgemms(void);

/* The byte a discarded page reads as until it is written or
 * prefetched. */
#define CUDAFAKE_POISON 0xdb

#endif /* CUDAFAKE_H */
