/* SPDX-License-Identifier: MIT */
/*
 * moves.c — the CUDA runtime's copies, sets, prefetches, advice and
 * discards on the double, split from runtime.c, which keeps the
 * allocations, errors, streams and events these calls rest on (fake.h).
 *
 * Every call is queued on its stream (queue.c) with the bytes it reads
 * and writes.  Where the double's behaviour is an assumption about CUDA,
 * the comment names the section of the CUDA Runtime API reference it
 * follows.  The `fault` tunable's sites here (lib/base/fault.h):
 * cudaMemcpyAsync, cudaMemPrefetchAsync, cudaMemPrefetchBatchAsync.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "lib/base/fault.h"

#define SITE __builtin_return_address(0)

/* Copies with a managed end return only once done, as CUDA's do, unless
 * CUDAFAKE_MANAGED_COPY=async. */
static bool managed_copies_sync(void)
{
	const char *v = getenv("CUDAFAKE_MANAGED_COPY");

	return !(v && strcmp(v, "async") == 0);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
			    enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct fake_access a[2] = {
		{ (uintptr_t)src, (uintptr_t)src + bytes, USE_READ },
		{ (uintptr_t)dst, (uintptr_t)dst + bytes, USE_WRITE },
	};
	struct CUstream_st *s;
	struct fake_op *op;
	bool managed;
	cudaError_t e;

	fake_calls_count()->copies++;
	(void)kind;
	if (bytes == 0)
		return cudaSuccess;
	if (!dst || !src)
		return fake_fail(cudaErrorInvalidValue);
	if (injected_fault("cudaMemcpyAsync", TMM_SITE_COPY))
		return fake_fail(cudaErrorLaunchFailure);
	op = fake_op_new(OP_COPY, stream);
	if (!op)
		return fake_fail(cudaErrorInvalidResourceHandle);
	op->dst = dst;
	op->src = src;
	op->bytes = bytes;
	managed = fake_managed(src, 1) || fake_managed(dst, 1);
	if (fake_managed(src, 1) && !fake_managed(dst, 1)) {
		fake_moves_out_count()->copies++;
		fake_moves_out_count()->copy_bytes += bytes;
	}
	s = op->s;
	e = fake_enqueue(op, a, 2, "cudaMemcpyAsync", SITE);
	/* CUDA's runtime API, "API synchronization behavior": transfers
	 * involving Unified Memory are fully synchronous with respect to the
	 * host.  On the H200 that made mode=uvm's copies serial with its
	 * kernels (docs/gpu-h200-goals.md). */
	if (e == cudaSuccess && managed && managed_copies_sync())
		fake_sync_stream(s);
	return e;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
		       enum cudaMemcpyKind kind)
{
	struct fake_access a[2] = {
		{ (uintptr_t)src, (uintptr_t)src + bytes, USE_READ },
		{ (uintptr_t)dst, (uintptr_t)dst + bytes, USE_WRITE },
	};
	struct fake_op *op;
	cudaError_t e;

	fake_calls_count()->copies++;
	(void)kind;
	if (bytes == 0)
		return cudaSuccess;
	if (!dst || !src)
		return fake_fail(cudaErrorInvalidValue);
	/* On the legacy default stream, and the host waits for it (Runtime
	 * API, "API synchronization behavior"). */
	op = fake_op_new(OP_COPY, NULL);
	if (!op)
		return fake_fail(cudaErrorMemoryAllocation);
	op->dst = dst;
	op->src = src;
	op->bytes = bytes;
	e = fake_enqueue(op, a, 2, "cudaMemcpy", SITE);
	fake_sync_stream(fake_stream(NULL));
	return e;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
			    cudaStream_t stream)
{
	struct fake_access a = { (uintptr_t)dst, (uintptr_t)dst + bytes,
				 USE_WRITE };
	struct fake_op *op;

	fake_calls_count()->memsets++;
	if (bytes == 0)
		return cudaSuccess;
	if (!dst)
		return fake_fail(cudaErrorInvalidValue);
	op = fake_op_new(OP_SET, stream);
	if (!op)
		return fake_fail(cudaErrorInvalidResourceHandle);
	op->dst = dst;
	op->value = value;
	op->bytes = bytes;
	return fake_enqueue(op, &a, 1, "cudaMemsetAsync", SITE);
}

cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t bytes,
				 struct cudaMemLocation location,
				 unsigned int flags, cudaStream_t stream)
{
	/* A migration moves the bytes and keeps their values: it races with
	 * a write or another migration of them, not with a read (queue.c,
	 * conflict()).  It is ordered in its stream like a kernel (Runtime
	 * API, cudaMemPrefetchAsync). */
	struct fake_access a = { (uintptr_t)ptr, (uintptr_t)ptr + bytes,
				 USE_MIGRATE };
	struct fake_op *op;

	fake_calls_count()->prefetches++;
	fake_init();
	if (flags || bytes == 0 || !fake_managed(ptr, bytes))
		return fake_fail(cudaErrorInvalidValue);
	if (injected_fault("cudaMemPrefetchAsync", TMM_SITE_COPY))
		return fake_fail(cudaErrorNotSupported);
	op = fake_op_new(OP_PREFETCH, stream);
	if (!op)
		return fake_fail(cudaErrorInvalidResourceHandle);
	op->dst = (void *)ptr;
	op->bytes = bytes;
	/* Where to (cupti.c writes the migration's record): 1 the device. */
	op->value = location.type == cudaMemLocationTypeDevice;
	if (location.type != cudaMemLocationTypeDevice) {
		fake_moves_out_count()->prefetches++;
		fake_moves_out_count()->prefetch_bytes += bytes;
	}
	return fake_enqueue(op, &a, 1, "cudaMemPrefetchAsync", SITE);
}

/*
 * Runtime API, cudaMemPrefetchBatchAsync: flags must be zero, the stream
 * must not be the legacy NULL stream, the first of prefetchLocIdxs is 0,
 * each greater than the one before and below count, numPrefetchLocs at
 * most count; each prefetch is cudaMemPrefetchAsync's, in any order
 * among themselves (here, the order given; the race detector sees each).
 * CUDAFAKE_PREFETCH_BATCH=0 makes a driver older than the runtime, which
 * refuses the call (cudaErrorNotSupported).
 */
cudaError_t cudaMemPrefetchBatchAsync(void **dptrs, size_t *sizes,
				      size_t count,
				      struct cudaMemLocation *prefetchLocs,
				      size_t *prefetchLocIdxs,
				      size_t numPrefetchLocs,
				      unsigned long long flags,
				      cudaStream_t stream)
{
	fake_calls_count()->prefetch_batches++;
	fake_init();
	if (!fake_env_size("CUDAFAKE_PREFETCH_BATCH", 1))
		return fake_fail(cudaErrorNotSupported);
	if (flags || !dptrs || !sizes || count == 0 || !prefetchLocs ||
	    !prefetchLocIdxs || numPrefetchLocs == 0 ||
	    numPrefetchLocs > count || prefetchLocIdxs[0] != 0 ||
	    stream == NULL || stream == cudaStreamLegacy)
		return fake_fail(cudaErrorInvalidValue);
	for (size_t k = 1; k < numPrefetchLocs; k++)
		if (prefetchLocIdxs[k] <= prefetchLocIdxs[k - 1] ||
		    prefetchLocIdxs[k] >= count)
			return fake_fail(cudaErrorInvalidValue);
	for (size_t i = 0; i < count; i++)
		if (sizes[i] == 0 || !fake_managed(dptrs[i], sizes[i]))
			return fake_fail(cudaErrorInvalidValue);
	if (injected_fault("cudaMemPrefetchBatchAsync", TMM_SITE_COPY))
		return fake_fail(cudaErrorUnknown);
	for (size_t i = 0, k = 0; i < count; i++) {
		struct fake_access a = { (uintptr_t)dptrs[i],
					 (uintptr_t)dptrs[i] + sizes[i],
					 USE_MIGRATE };
		struct fake_op *op = fake_op_new(OP_PREFETCH, stream);
		cudaError_t e;

		while (k + 1 < numPrefetchLocs && prefetchLocIdxs[k + 1] <= i)
			k++;
		if (!op)
			return fake_fail(cudaErrorInvalidResourceHandle);
		op->dst = dptrs[i];
		op->bytes = sizes[i];
		op->value = prefetchLocs[k].type == cudaMemLocationTypeDevice;
		fake_calls_count()->batched_prefetches++;
		if (!op->value) {
			fake_moves_out_count()->prefetches++;
			fake_moves_out_count()->prefetch_bytes += sizes[i];
		}
		e = fake_enqueue(op, &a, 1, "cudaMemPrefetchBatchAsync", SITE);
		if (e != cudaSuccess)
			return fake_fail(e);
	}
	return cudaSuccess;
}

cudaError_t cudaMemAdvise(const void *ptr, size_t bytes,
			  enum cudaMemoryAdvise advice,
			  struct cudaMemLocation location)
{
	fake_calls_count()->advises++;
	(void)advice;
	(void)location;
	fake_init();
	/* Advice changes no bytes and is not stream-ordered: it only has
	 * to name managed memory. */
	if (bytes == 0 || !fake_managed(ptr, bytes))
		return fake_fail(cudaErrorInvalidValue);
	return cudaSuccess;
}

cudaError_t cudaMemDiscardBatchAsync(void **ptrs, size_t *sizes, size_t count,
				     unsigned long long flags,
				     cudaStream_t stream)
{
	fake_calls_count()->discards++;
	fake_init();
	/* Runtime API, cudaMemDiscardBatchAsync: flags must be zero, the
	 * stream must not be the legacy NULL stream, every range managed;
	 * reads of a discarded range before a write or a prefetch return
	 * indeterminate values (here: CUDAFAKE_POISON). */
	if (flags || !ptrs || !sizes || stream == NULL ||
	    stream == cudaStreamLegacy)
		return fake_fail(cudaErrorInvalidValue);
	for (size_t i = 0; i < count; i++) {
		/* It writes (poisons) the whole pages it touches. */
		struct fake_access a = { 0, 0, USE_WRITE };
		struct fake_op *op;
		cudaError_t e;

		if (!fake_managed_pages(ptrs[i], sizes[i], &a.lo, &a.hi))
			return fake_fail(cudaErrorInvalidValue);
		op = fake_op_new(OP_DISCARD, stream);
		if (!op)
			return fake_fail(cudaErrorInvalidResourceHandle);
		op->dst = ptrs[i];
		op->bytes = sizes[i];
		e = fake_enqueue(op, &a, 1, "cudaMemDiscardBatchAsync", SITE);
		if (e != cudaSuccess)
			return fake_fail(e);
	}
	return cudaSuccess;
}
