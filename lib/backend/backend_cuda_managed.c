/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_managed.c — the CUDA backend's managed ranges: prefetch
 * (one range, or a batch of them), advice, discard, the host's accesses,
 * and the driver's counters.  The allocations are backend_cuda_mem.c's.
 *
 * The CUDA 13 signatures (a struct cudaMemLocation for prefetch and
 * advise) are the main path; CUDA 12.2+ has the same calls under _v2
 * names, and older runtimes take the device-ordinal forms.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda_managed.h"
#include "backend_cuda_mem.h"
#include "cuda_copier.h"
#include "cuda_timing.h"

/*
 * Prefetch and advice by struct cudaMemLocation, which can name a host
 * NUMA node: the plain names in CUDA 13, the _v2 names since CUDA 12.2.
 * Older runtimes take a device ordinal (cudaCpuDeviceId for the host).
 */
#if CUDART_VERSION >= 13000
#define CUDA_MEMLOC 1
#define cuda_prefetch_loc cudaMemPrefetchAsync
#define cuda_advise_loc cudaMemAdvise
#elif CUDART_VERSION >= 12020
#define CUDA_MEMLOC 1
#define cuda_prefetch_loc cudaMemPrefetchAsync_v2
#define cuda_advise_loc cudaMemAdvise_v2
#else
#define CUDA_MEMLOC 0
#endif

/* ------------------------------------------------------------------------
 * Managed ranges
 * ---------------------------------------------------------------------- */

#if CUDA_MEMLOC
/* A refusal that means "no host NUMA locations here", not a bad range. */
static bool numa_refused(cudaError_t e)
{
	return e == cudaErrorInvalidValue || e == cudaErrorNotSupported ||
	       e == cudaErrorInvalidDevice;
}

static struct cudaMemLocation loc_device(const struct cuda_state *s)
{
	struct cudaMemLocation l = { .type = cudaMemLocationTypeDevice,
				     .id = s->device };
	return l;
}

static struct cudaMemLocation loc_host(const struct cuda_state *s, int node)
{
	struct cudaMemLocation l = { .type = cudaMemLocationTypeHost,
				     .id = 0 };

	if (node >= 0 && s->host_numa_ok) {
		l.type = cudaMemLocationTypeHostNuma;
		l.id = node;
	}
	return l;
}
#endif

/*
 * Makes stream `engine` wait for the work queued so far on every other
 * stream, before a prefetch or a discard of a managed range queued there.
 * Neither may run beside a kernel or a migration of the same bytes (Runtime
 * API, cudaMemDiscardBatchAsync: reads, writes or prefetches that run at
 * the same time as a discard are undefined; cudaMemPrefetchAsync is ordered
 * only within its own stream), and the range's last writer, migration or
 * discard may be on any stream.  So the move takes effect where the device
 * reached when it was asked for, as the swap engine's copies do and as the
 * simulator's prefetches do (sim_uvm.c starts them after compute).  The
 * waits are the GPU's; the host goes on.  The events go back to the spares
 * at once: a wait keeps the point it captured.  A copy stream with no work
 * queued by this backend since `engine` last waited for it here is
 * skipped: `engine` is ordered after all of it already (issue #19: two
 * event records and two waits for every prefetch of every op, with
 * nothing on the copy streams, were host time in every step).  The
 * compute stream is never skipped: the op callbacks queue kernels there
 * that the backend does not see.  Nor is any stream skipped for a
 * prefetch on the migrate stream or for a discard.  But a prefetch on a
 * copy stream does not wait for the migrate stream: what runs there
 * touches only the ranges of tensors away by migration, which no copy
 * touches until they are back, and a range freed meanwhile is discarded
 * on the compute stream first (backend.h, TMM_ENGINE_MIGRATE).  Were it
 * to wait, the fresh pages of each copy back would queue behind the
 * slow migrations to the host (9.9 GB/s on the H200), and the copy
 * after them, which holds the host, with them.  On failure *call names
 * the CUDA call that failed, for the message.
 */
static cudaError_t after_other_streams(struct cuda_state *s,
				       enum tmm_engine engine,
				       const char **call)
{
	for (int i = 0; i < TMM_ENGINE_COUNT; i++) {
		cudaEvent_t ev;
		cudaError_t e;

		if (i == (int)engine)
			continue;
		if (i == TMM_ENGINE_MIGRATE &&
		    (engine == TMM_ENGINE_H2D || engine == TMM_ENGINE_D2H))
			continue;
		if (i != TMM_ENGINE_COMPUTE &&
		    s->waited[engine][i] == s->queued[i])
			continue;
		if (s->nspare > 0) {
			ev = s->spare[--s->nspare];
		} else {
			*call = "cudaEventCreateWithFlags";
			e = cudaEventCreateWithFlags(&ev,
						     cudaEventDisableTiming);
			if (e != cudaSuccess)
				return e;
		}
		*call = "cudaEventRecord";
		e = cudaEventRecord(ev, s->stream[i]);
		if (e == cudaSuccess) {
			*call = "cudaStreamWaitEvent";
			e = cudaStreamWaitEvent(s->stream[engine], ev, 0);
		}
		if (s->nspare < CUDA_EVENT_CACHE)
			s->spare[s->nspare++] = ev;
		else
			(void)cudaEventDestroy(ev);
		if (e != cudaSuccess)
			return e;
		s->waited[engine][i] = s->queued[i];
	}
	return cudaSuccess;
}

/*
 * Migrates a managed range on `engine`'s stream, after the work queued so
 * far on every stream (after_other_streams).  To the host it goes to
 * `numa_node` when >= 0; a driver that refuses host NUMA locations (old
 * driver, no HMM) gets plain host from then on: placement is a hint, the
 * migration is what counts.
 */
int tmm_cuda_prefetch(struct tmm_backend *be, enum tmm_engine engine,
		      void *ptr, size_t bytes, enum tmm_location to,
		      int numa_node)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	const char *where = to == TMM_LOC_DEVICE ? "device" : "host";
	const char *call = "";
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_cuda_bad_engine(be, "prefetch", engine);
	if (bytes == 0)
		return 0;
	e = after_other_streams(s, engine, &call);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "%s, ordering a prefetch (%p, %zu "
				     "bytes) after the other streams", call,
				     ptr, bytes);
	s->queued[engine]++;
#if CUDA_MEMLOC
	struct cudaMemLocation l = to == TMM_LOC_DEVICE
					   ? loc_device(s)
					   : loc_host(s, numa_node);

	e = cuda_prefetch_loc(ptr, bytes, l, 0, s->stream[engine]);
	if (e != cudaSuccess && l.type == cudaMemLocationTypeHostNuma &&
	    numa_refused(e)) {
		(void)cudaGetLastError();
		l = loc_host(s, -1);
		e = cuda_prefetch_loc(ptr, bytes, l, 0, s->stream[engine]);
		if (e == cudaSuccess)
			s->host_numa_ok = false;
	}
#else
	/* Before CUDA 12.2: a device ordinal, cudaCpuDeviceId for host. */
	(void)numa_node;
	e = cudaMemPrefetchAsync(ptr, bytes,
				 to == TMM_LOC_DEVICE ? s->device
						      : cudaCpuDeviceId,
				 s->stream[engine]);
#endif
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e,
				     "cudaMemPrefetchAsync(%p, %zu bytes, %s, "
				     "node %d)", ptr, bytes, where, numa_node);
	return 0;
}

/* Ranges one batch call takes at most: a longer run is cut in calls of
 * this many, each ordered once. */
#define PREFETCH_BATCH_MAX 64

#if CUDART_VERSION >= 13000
/* Whether `e` says the runtime has no batched prefetch to give (a driver
 * older than the runtime), rather than that a range is wrong. */
static bool batch_refused(cudaError_t e)
{
	return e == cudaErrorNotSupported ||
	       e == cudaErrorCallRequiresNewerDriver;
}

/* ranges[0 .. n) to one place in one cudaMemPrefetchBatchAsync, ordered
 * after the other streams once (n <= PREFETCH_BATCH_MAX). */
static cudaError_t batch_call(struct cuda_state *s, enum tmm_engine engine,
			      const struct tmm_managed_range *ranges,
			      unsigned n, enum tmm_location to, int numa_node,
			      const char **call)
{
	void *ptrs[PREFETCH_BATCH_MAX];
	size_t sizes[PREFETCH_BATCH_MAX], first = 0;
	struct cudaMemLocation l = to == TMM_LOC_DEVICE
					   ? loc_device(s)
					   : loc_host(s, numa_node);
	cudaError_t e;

	for (unsigned i = 0; i < n; i++) {
		ptrs[i] = ranges[i].ptr;
		sizes[i] = ranges[i].bytes;
	}
	e = after_other_streams(s, engine, call);
	if (e != cudaSuccess)
		return e;
	s->queued[engine]++;
	*call = "cudaMemPrefetchBatchAsync";
	e = cudaMemPrefetchBatchAsync(ptrs, sizes, n, &l, &first, 1, 0,
				      s->stream[engine]);
	if (e != cudaSuccess && l.type == cudaMemLocationTypeHostNuma &&
	    numa_refused(e) && !batch_refused(e)) {
		(void)cudaGetLastError();
		l = loc_host(s, -1);
		e = cudaMemPrefetchBatchAsync(ptrs, sizes, n, &l, &first, 1,
					      0, s->stream[engine]);
		if (e == cudaSuccess)
			s->host_numa_ok = false;
	}
	return e;
}
#endif

/*
 * A run of prefetches to one place costs one ordering after the other
 * streams and one driver call (CUDA 13's batched prefetch; the ranges'
 * migrations may run in any order among themselves, which is all one
 * where ranges do not overlap), where one by one each costs both: the
 * mover gathers the prefetches the plan fires together (issue #19).
 * Where the runtime has no batch, or refuses it once, the ranges go one
 * by one (tmm_cuda_prefetch).  Ranges of 0 bytes are skipped.
 */
int tmm_cuda_prefetch_batch(struct tmm_backend *be, enum tmm_engine engine,
			    const struct tmm_managed_range *ranges, unsigned n,
			    enum tmm_location to, int numa_node)
{
	struct cuda_state *s = st_of(be);
	unsigned done = 0;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_cuda_bad_engine(be, "prefetch_batch", engine);
#if CUDART_VERSION >= 13000
	while (s->prefetch_batch_ok && n - done > 1) {
		CUDA_ON_DEVICE(be);
		struct tmm_managed_range part[PREFETCH_BATCH_MAX];
		unsigned k = 0, start = done;
		const char *call = "";
		cudaError_t e;

		for (; done < n && k < PREFETCH_BATCH_MAX; done++)
			if (ranges[done].bytes)
				part[k++] = ranges[done];
		if (k == 0)
			break;
		e = batch_call(s, engine, part, k, to, numa_node, &call);
		if (e == cudaSuccess)
			continue;
		if (batch_refused(e) &&
		    strcmp(call, "cudaMemPrefetchBatchAsync") == 0) {
			/* Ordered already: the singles order again. */
			(void)cudaGetLastError();
			s->prefetch_batch_ok = false;
			done = start;
			break;
		}
		return tmm_cuda_fail(be, e, "%s, %s %u ranges to the %s, the "
				     "first %p (%zu bytes)", call,
				     strcmp(call, "cudaMemPrefetchBatchAsync")
					     ? "ordering after the other "
					       "streams a prefetch of"
					     : "prefetching",
				     k, to == TMM_LOC_DEVICE ? "device" : "host",
				     part[0].ptr, part[0].bytes);
	}
#endif
	for (; done < n; done++) {
		int rc = tmm_cuda_prefetch(be, engine, ranges[done].ptr,
					   ranges[done].bytes, to, numa_node);

		if (rc < 0)
			return rc;
	}
	return 0;
}

int tmm_cuda_advise(struct tmm_backend *be, void *ptr, size_t bytes,
		    enum tmm_advice advice)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	enum cudaMemoryAdvise a;
	bool host = false;
	cudaError_t e;

	switch (advice) {
	case TMM_ADVISE_PREFERRED_DEVICE:
		a = cudaMemAdviseSetPreferredLocation;
		break;
	case TMM_ADVISE_PREFERRED_HOST:
		a = cudaMemAdviseSetPreferredLocation;
		host = true;
		break;
	case TMM_ADVISE_UNSET_PREFERRED:
		a = cudaMemAdviseUnsetPreferredLocation;
		break;
	case TMM_ADVISE_ACCESSED_BY_DEVICE:
		a = cudaMemAdviseSetAccessedBy;
		break;
	case TMM_ADVISE_UNSET_ACCESSED_BY:
		a = cudaMemAdviseUnsetAccessedBy;
		break;
	case TMM_ADVISE_READ_MOSTLY:
		a = cudaMemAdviseSetReadMostly;
		break;
	case TMM_ADVISE_UNSET_READ_MOSTLY:
		a = cudaMemAdviseUnsetReadMostly;
		break;
	default:
		return tmm_backend_fail(be, -EINVAL,
					"advise: unknown advice %d",
					(int)advice);
	}
	if (bytes == 0)
		return 0;
#if CUDA_MEMLOC
	/*
	 * The location is the device except for "preferred: host", which
	 * names the host node swapped-out tensors belong on (the tunable,
	 * else the GPU's node).  Read-mostly and the unsets ignore it.
	 */
	struct cudaMemLocation l = host ? loc_host(s, s->host_node)
					: loc_device(s);

	e = cuda_advise_loc(ptr, bytes, a, l);
	if (e != cudaSuccess && l.type == cudaMemLocationTypeHostNuma &&
	    numa_refused(e)) {
		(void)cudaGetLastError();
		l = loc_host(s, -1);
		e = cuda_advise_loc(ptr, bytes, a, l);
		if (e == cudaSuccess)
			s->host_numa_ok = false;
	}
#else
	e = cudaMemAdvise(ptr, bytes, a, host ? cudaCpuDeviceId : s->device);
#endif
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e,
				     "cudaMemAdvise(%p, %zu bytes, advice %d)",
				     ptr, bytes, (int)a);
	return 0;
}

/*
 * Drops a managed range's contents without writing them back.  It is
 * queued on the compute stream because that is where the range's last
 * reader ran, and after the copy streams' work (after_other_streams),
 * where a migration of the range may still run.
 */
int tmm_cuda_discard(struct tmm_backend *be, void *ptr, size_t bytes)
{
	CUDA_ON_DEVICE(be);
#if CUDART_VERSION >= 13000
	struct cuda_state *s = st_of(be);
	const char *call = "";
	cudaError_t e;
	void *ptrs[1] = { ptr };
	size_t sizes[1] = { bytes };

	/*
	 * Without concurrent managed access the driver refuses discards.
	 * Keeping the bytes is a valid discard (the contents become
	 * undefined, and old contents are one such), so do nothing.
	 */
	if (bytes == 0 || !be->info.concurrent_managed)
		return 0;
	e = after_other_streams(s, TMM_ENGINE_COMPUTE, &call);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "%s, ordering a discard (%p, %zu "
				     "bytes) after the other streams", call,
				     ptr, bytes);
	e = cudaMemDiscardBatchAsync(ptrs, sizes, 1, 0,
				     s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e,
				     "cudaMemDiscardBatchAsync(%p, %zu bytes)",
				     ptr, bytes);
	return 0;
#else
	/*
	 * Before CUDA 13 the runtime has no discard.  Keeping the bytes is
	 * still correct (see above); only the write-back is not saved.
	 */
	(void)be;
	(void)ptr;
	(void)bytes;
	return 0;
#endif
}

/*
 * The real driver services device faults by itself, so a kernel's ranges
 * need no word.  The host, though, may touch managed memory only once the
 * work that uses it has finished: with concurrent managed access that is
 * our streams' work (the kernels run on the compute stream, the moves on
 * the copy streams); without it any running kernel forbids host access,
 * and only a device-wide wait will do (Programming Guide, "Unified Memory:
 * coherency and concurrency").  The host waits once, then each range it
 * touches is said (tmm_cuda_host_touch), for the test double to check.
 */
int tmm_cuda_managed_access(struct tmm_backend *be,
			    const struct tmm_managed_range *ranges,
			    unsigned n)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e = cudaSuccess;
	bool waited = false;

	for (unsigned i = 0; i < n; i++) {
		if (!ranges[i].by_host)
			continue;
		if (!waited && !be->info.concurrent_managed) {
			e = cudaDeviceSynchronize();
		} else if (!waited) {
			/* A copy stream with nothing queued since the host
			 * last waited for it here has nothing to wait for. */
			for (int k = 0; k < TMM_ENGINE_COUNT &&
					e == cudaSuccess; k++) {
				if (k != TMM_ENGINE_COMPUTE &&
				    s->synced[k] == s->queued[k])
					continue;
				e = cudaStreamSynchronize(s->stream[k]);
				if (e == cudaSuccess)
					s->synced[k] = s->queued[k];
			}
		}
		if (e != cudaSuccess)
			return tmm_cuda_fail(be, e, "waiting for the device "
					     "before the host touches managed "
					     "memory");
		waited = true;
		tmm_cuda_host_touch(ranges[i].ptr, ranges[i].bytes,
				    ranges[i].write);
	}
	return 0;
}

/* The host touches managed memory: nothing to do on a real GPU (see the
 * declaration in backend_cuda_managed.h). */
__attribute__((weak)) void tmm_cuda_host_touch(const void *ptr, size_t bytes,
					       bool write)
{
	(void)ptr;
	(void)bytes;
	(void)write;
}

/* The driver's use of device memory cannot be capped from here. */
int tmm_cuda_managed_limit(struct tmm_backend *be, uint64_t bytes)
{
	(void)be;
	(void)bytes;
	return 0;
}

/* The driver's books, as CUPTI's unified-memory counters read them
 * (cuda_um.h): the migrations each way and the device page faults, as
 * of the last iteration's end; zeros where they are off.  What is
 * resident the driver does not say. */
int tmm_cuda_managed_stats(struct tmm_backend *be,
			   struct tmm_managed_stats *st)
{
	struct cuda_state *s = st_of(be);
	struct tmm_cuda_um_sums um;

	if (!st)
		return 0;
	memset(st, 0, sizeof(*st));
	if (!s)
		return 0;
	st->kernel_copy_bytes = tmm_cuda_copier_bytes(s->copier);
	if (!s->timing)
		return 0;
	tmm_cuda_timing_managed(s->timing, &um);
	st->fault_batches = um.fault_groups;
	st->faults = um.faults;
	st->fault_bytes = um.fault_bytes;
	st->prefetch_bytes = um.prefetch_bytes;
	st->evictions = um.evictions;
	st->eviction_bytes = um.eviction_bytes;
	st->stall_ns = um.fault_ns;
	return 0;
}
