/* SPDX-License-Identifier: MIT */
/*
 * runtime.c — the CUDA runtime entry points the project calls, on host
 * memory, with the real prototypes (cuda_runtime_api.h is included, so
 * the compiler holds every definition to its declaration).
 *
 * The devices themselves (how many, which is current, what they report)
 * are device.c's.  Device memory is host memory the double counts
 * against each device's CUDAFAKE_MEMORY (on the calling thread's current
 * device, which every allocation records: cudafake_device_of); managed
 * memory is host memory in whole pages, so a discard can poison whole
 * pages without touching another allocation;
 * pinned and registered host memory is plain memory.  Every asynchronous
 * call is queued on its stream (queue.c) with the bytes it reads and
 * writes; the copies, sets, prefetches, advice and discards are moves.c's.
 * Where the double's behaviour is an assumption about CUDA, the comment
 * names the section of the CUDA Runtime API reference it follows.  The
 * `fault` tunable's sites here (lib/base/fault.h): cudaMalloc,
 * cudaMallocManaged, cudaMallocHost, cudaHostRegister, cudaEventRecord,
 * cudaStreamWaitEvent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "lib/base/fault.h"

#define SITE __builtin_return_address(0)

enum alloc_kind { ALLOC_DEVICE, ALLOC_MANAGED, ALLOC_PINNED, ALLOC_REGISTERED };

struct alloc {
	uintptr_t lo, hi;
	enum alloc_kind kind;
	int device;		/* the current device when it was made */
};

static struct {
	bool ready;
	unsigned seed;
	size_t memory;		/* the device's bytes */
	size_t in_use[FAKE_DEVICES]; /* cudaMalloc'd and cuMemCreate'd,
				      * per device */
	size_t page;
	struct alloc *allocs;
	size_t n_allocs, cap_allocs;
	cudaError_t last;	/* for cudaGetLastError */
	/* Moves of managed bytes to the host (cudafake.h), since the
	 * program began. */
	struct cudafake_moves_out moves_out;
	/* Calls of the entry points the library's hot path makes
	 * (cudafake.h), since the program began. */
	struct cudafake_calls calls;
} rt;

size_t fake_env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return dflt;
	n = strtoull(v, &end, 10);
	return *end ? dflt : (size_t)n;
}

static void init(void)
{
	if (rt.ready)
		return;
	rt.ready = true;
	rt.seed = (unsigned)fake_env_size("CUDAFAKE_SEED", 1);
	rt.memory = fake_env_size("CUDAFAKE_MEMORY", (size_t)1 << 30);
	/* The UVM driver's big pages (64 KiB) are the unit it migrates
	 * and, for this double, discards. */
	rt.page = fake_env_size("CUDAFAKE_PAGE", (size_t)64 << 10);
}

void fake_init(void)
{
	init();
}

struct cudafake_calls *fake_calls_count(void)
{
	return &rt.calls;
}

struct cudafake_moves_out *fake_moves_out_count(void)
{
	return &rt.moves_out;
}

unsigned fake_env_seed(void)
{
	init();
	return rt.seed;
}

/* Read at every call, as CUDAFAKE_CONCURRENT_MANAGED is, so that one
 * test program can run a device that keeps up and one that lags. */
unsigned fake_env_lag(void)
{
	size_t lag = fake_env_size("CUDAFAKE_LAG", 1);

	return lag < 1 ? 1 : lag > UINT32_MAX ? UINT32_MAX : (unsigned)lag;
}

bool fake_env_timeline_clock(void)
{
	const char *v = getenv("CUDAFAKE_CLOCK");

	return v && strcmp(v, "timeline") == 0;
}

size_t cudafake_page_size(void)
{
	init();
	return rt.page;
}

/* Every failure goes through here: it is what cudaGetLastError reports. */
static cudaError_t fail(cudaError_t e)
{
	rt.last = e;
	return e;
}

cudaError_t fake_fail(cudaError_t e)
{
	return fail(e);
}

size_t fake_memory(void)
{
	init();
	return rt.memory;
}

/*
 * Whether an injected fault fails this call of CUDA's `call`: asked by
 * its own name and by the library's site of the same kind (fault.h), so
 * that one sweep fails device_alloc, pinned_alloc or copy on either
 * backend.  Both are counted, whichever fails.
 */
static bool injected(const char *call, const char *site)
{
	bool by_call = tmm_fault_hit(call);
	bool by_site = tmm_fault_hit(site);

	return by_call || by_site;
}

bool injected_fault(const char *call, const char *site)
{
	return injected(call, site);
}

bool fake_device_take(int device, size_t bytes)
{
	init();
	if (bytes > rt.memory - rt.in_use[device])
		return false;
	rt.in_use[device] += bytes;
	return true;
}

void fake_device_give(int device, size_t bytes)
{
	rt.in_use[device] -= bytes;
}

size_t cudafake_device_in_use(int device)
{
	return device >= 0 && device < FAKE_DEVICES ? rt.in_use[device] : 0;
}

static struct alloc *find(const void *p, enum alloc_kind kind)
{
	uintptr_t a = (uintptr_t)p;

	for (size_t i = 0; i < rt.n_allocs; i++)
		if (rt.allocs[i].kind == kind && a >= rt.allocs[i].lo &&
		    a < rt.allocs[i].hi)
			return &rt.allocs[i];
	return NULL;
}

static bool track(void *p, size_t bytes, enum alloc_kind kind)
{
	if (rt.n_allocs == rt.cap_allocs) {
		size_t cap = rt.cap_allocs ? 2 * rt.cap_allocs : 64;
		void *n = realloc(rt.allocs, cap * sizeof(*rt.allocs));

		if (!n)
			return false;
		rt.allocs = n;
		rt.cap_allocs = cap;
	}
	rt.allocs[rt.n_allocs++] = (struct alloc){ (uintptr_t)p,
						   (uintptr_t)p + bytes, kind,
						   fake_current_device() };
	return true;
}

int cudafake_device_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (size_t i = 0; i < rt.n_allocs; i++)
		if ((rt.allocs[i].kind == ALLOC_DEVICE ||
		     rt.allocs[i].kind == ALLOC_MANAGED) &&
		    a >= rt.allocs[i].lo && a < rt.allocs[i].hi)
			return rt.allocs[i].device;
	return -1;
}

/* Forgets the allocation that starts at p; false when there is none.
 * *device receives the device it was made on. */
static bool untrack(void *p, enum alloc_kind kind, size_t *bytes,
		    int *device)
{
	for (size_t i = 0; i < rt.n_allocs; i++) {
		struct alloc *a = &rt.allocs[i];

		if (a->kind != kind || a->lo != (uintptr_t)p)
			continue;
		if (bytes)
			*bytes = a->hi - a->lo;
		if (device)
			*device = a->device;
		*a = rt.allocs[--rt.n_allocs];
		return true;
	}
	return false;
}

/* ---- errors and the device ------------------------------------------ */

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = rt.last;

	rt.last = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return rt.last;
}

const char *cudaGetErrorName(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "cudaSuccess";
	case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
	case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
	case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
	case cudaErrorInvalidResourceHandle:
		return "cudaErrorInvalidResourceHandle";
	case cudaErrorNotReady: return "cudaErrorNotReady";
	case cudaErrorHostMemoryAlreadyRegistered:
		return "cudaErrorHostMemoryAlreadyRegistered";
	case cudaErrorHostMemoryNotRegistered:
		return "cudaErrorHostMemoryNotRegistered";
	case cudaErrorNotSupported: return "cudaErrorNotSupported";
	case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
	default: return "cudaErrorUnknown";
	}
}

const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error (cudafake)";
	case cudaErrorInvalidValue: return "invalid argument (cudafake)";
	case cudaErrorMemoryAllocation: return "out of memory (cudafake)";
	case cudaErrorInvalidDevice: return "invalid device ordinal (cudafake)";
	case cudaErrorNotReady: return "device not ready (cudafake)";
	case cudaErrorInvalidResourceHandle:
		return "invalid resource handle (cudafake)";
	default: return "an error the double reports (cudafake)";
	}
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	rt.calls.mem_get_info++;
	init();
	if (!free_bytes || !total)
		return fail(cudaErrorInvalidValue);
	*total = rt.memory;
	*free_bytes = rt.memory - rt.in_use[fake_current_device()];
	return cudaSuccess;
}

static unsigned long device_syncs;

void cudafake_moves_out(struct cudafake_moves_out *m)
{
	*m = rt.moves_out;
}

void cudafake_calls(struct cudafake_calls *c)
{
	*c = rt.calls;
}

unsigned long cudafake_device_syncs(void)
{
	return device_syncs;
}

cudaError_t cudaDeviceSynchronize(void)
{
	device_syncs++;
	rt.calls.device_syncs++;
	fake_sync_all();
	return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
	fake_sync_all();
	return cudaSuccess;
}

/* ---- memory ----------------------------------------------------------- */

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
	init();
	if (!ptr)
		return fail(cudaErrorInvalidValue);
	*ptr = NULL;
	if (bytes == 0)
		return cudaSuccess; /* NULL, as the runtime gives */
	if (bytes > rt.memory - rt.in_use[fake_current_device()] ||
	    injected("cudaMalloc", TMM_SITE_DEVICE_ALLOC))
		return fail(cudaErrorMemoryAllocation);
	*ptr = malloc(bytes);
	if (!*ptr || !track(*ptr, bytes, ALLOC_DEVICE)) {
		free(*ptr);
		*ptr = NULL;
		return fail(cudaErrorMemoryAllocation);
	}
	rt.in_use[fake_current_device()] += bytes;
	return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
	size_t bytes;
	int device;

	init();
	if (!ptr)
		return cudaSuccess;
	/* cudaFree synchronises the device (Runtime API, "API
	 * synchronization behavior"). */
	fake_sync_all();
	if (untrack(ptr, ALLOC_DEVICE, &bytes, &device)) {
		rt.in_use[device] -= bytes;
		free(ptr);
		return cudaSuccess;
	}
	if (untrack(ptr, ALLOC_MANAGED, NULL, NULL)) {
		free(ptr);
		return cudaSuccess;
	}
	return fail(cudaErrorInvalidValue);
}

cudaError_t cudaMallocManaged(void **ptr, size_t bytes, unsigned int flags)
{
	size_t rounded;

	init();
	(void)flags;
	if (!ptr || bytes == 0)
		return fail(cudaErrorInvalidValue);
	if (injected("cudaMallocManaged", TMM_SITE_DEVICE_ALLOC))
		return fail(cudaErrorMemoryAllocation);
	rounded = (bytes + rt.page - 1) / rt.page * rt.page;
	*ptr = aligned_alloc(rt.page, rounded);
	if (!*ptr || !track(*ptr, rounded, ALLOC_MANAGED)) {
		free(*ptr);
		*ptr = NULL;
		return fail(cudaErrorMemoryAllocation);
	}
	return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
	init();
	if (!ptr)
		return fail(cudaErrorInvalidValue);
	if (injected("cudaMallocHost", TMM_SITE_PINNED_ALLOC)) {
		*ptr = NULL;
		return fail(cudaErrorMemoryAllocation);
	}
	*ptr = malloc(bytes ? bytes : 1);
	if (!*ptr || !track(*ptr, bytes, ALLOC_PINNED)) {
		free(*ptr);
		*ptr = NULL;
		return fail(cudaErrorMemoryAllocation);
	}
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr)
{
	init();
	if (!ptr)
		return cudaSuccess;
	fake_sync_all();
	if (!untrack(ptr, ALLOC_PINNED, NULL, NULL))
		return fail(cudaErrorInvalidValue);
	free(ptr);
	return cudaSuccess;
}

cudaError_t cudaHostRegister(void *ptr, size_t bytes, unsigned int flags)
{
	init();
	(void)flags;
	if (!ptr || bytes == 0)
		return fail(cudaErrorInvalidValue);
	if (find(ptr, ALLOC_REGISTERED))
		return fail(cudaErrorHostMemoryAlreadyRegistered);
	/* What some virtual machines answer (issue #20). */
	if (tmm_fault_hit("cudaHostRegister"))
		return fail(cudaErrorNotSupported);
	return track(ptr, bytes, ALLOC_REGISTERED)
		       ? cudaSuccess
		       : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaHostUnregister(void *ptr)
{
	init();
	return untrack(ptr, ALLOC_REGISTERED, NULL, NULL)
		       ? cudaSuccess
		       : fail(cudaErrorHostMemoryNotRegistered);
}

/*
 * The whole pages of managed memory that [p, p + n) touches, within its
 * allocation: what a discard may drop (the driver works in pages, so a
 * discard of part of a page may take all of it).  False outside managed
 * memory.
 */
bool fake_managed_pages(const void *p, size_t n, uintptr_t *lo,
			uintptr_t *hi)
{
	const struct alloc *a = find(p, ALLOC_MANAGED);

	if (!a || n == 0 || (uintptr_t)p + n > a->hi)
		return false;
	*lo = (uintptr_t)p - ((uintptr_t)p - a->lo) % rt.page;
	*hi = (uintptr_t)p + n;
	*hi += (rt.page - (*hi - a->lo) % rt.page) % rt.page;
	if (*hi > a->hi)
		*hi = a->hi;
	return true;
}

bool fake_managed(const void *p, size_t n)
{
	const struct alloc *a = find(p, ALLOC_MANAGED);

	return a && (uintptr_t)p + n <= a->hi;
}

void fake_discard(void *p, size_t n)
{
	uintptr_t lo, hi;

	if (fake_managed_pages(p, n, &lo, &hi))
		memset((void *)lo, CUDAFAKE_POISON, hi - lo);
}

/* ---- streams and events ---------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
	if (!stream)
		return fail(cudaErrorInvalidValue);
	*stream = fake_stream_new(!(flags & cudaStreamNonBlocking),
				  fake_current_device());
	return *stream ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

/* CUDA's range on current GPUs: 0 the least, -5 the greatest (lower
 * runs first). */
#define FAKE_PRIORITY_LEAST 0
#define FAKE_PRIORITY_GREATEST (-5)

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
	if (least)
		*least = FAKE_PRIORITY_LEAST;
	if (greatest)
		*greatest = FAKE_PRIORITY_GREATEST;
	return cudaSuccess;
}

/* A priority out of the range is clamped into it, as CUDA's is. */
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream,
					 unsigned int flags, int priority)
{
	cudaError_t e = cudaStreamCreateWithFlags(stream, flags);

	if (e == cudaSuccess)
		fake_stream(*stream)->priority =
			priority > FAKE_PRIORITY_LEAST ? FAKE_PRIORITY_LEAST
			: priority < FAKE_PRIORITY_GREATEST
				? FAKE_PRIORITY_GREATEST
				: priority;
	return e;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
	struct CUstream_st *s = fake_stream(stream);

	if (!s || !priority)
		return fail(cudaErrorInvalidValue);
	*priority = s->priority;
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
	return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	struct CUstream_st *s = fake_stream(stream);

	if (!s || s->slot < 2)
		return fail(cudaErrorInvalidResourceHandle);
	fake_stream_free(s);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct CUstream_st *s = fake_stream(stream);

	rt.calls.stream_syncs++;
	if (!s)
		return fail(cudaErrorInvalidResourceHandle);
	/* Injected as the stream's work having failed, which a
	 * synchronisation is where the runtime reports it. */
	if (tmm_fault_hit("cudaStreamSynchronize"))
		return fail(cudaErrorLaunchFailure);
	fake_sync_stream(s);
	return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	if (!event)
		return fail(cudaErrorInvalidValue);
	/* Injected as the shortage the Runtime API lists for the call. */
	if (tmm_fault_hit("cudaEventCreateWithFlags"))
		return fail(cudaErrorMemoryAllocation);
	*event = calloc(1, sizeof(**event));
	if (!*event)
		return fail(cudaErrorMemoryAllocation);
	(*event)->live = true;
	(*event)->device = fake_current_device();
	(*event)->timing = !(flags & cudaEventDisableTiming);
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	if (!event || !event->live)
		return fail(cudaErrorInvalidResourceHandle);
	/* Work still queued that records or waits for it keeps it: the
	 * double syncs first rather than keep dead events alive. */
	fake_sync_all();
	event->live = false;
	free(event);
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	struct fake_op *op;

	rt.calls.event_records++;
	if (!event || !event->live)
		return fail(cudaErrorInvalidResourceHandle);
	/* An injected failure answers one of the errors the Runtime API
	 * lists for the call, and queues nothing. */
	if (tmm_fault_hit("cudaEventRecord"))
		return fail(cudaErrorInvalidResourceHandle);
	op = fake_op_new(OP_RECORD, stream);
	if (!op)
		return fail(cudaErrorInvalidResourceHandle);
	/* An event is recorded in a stream of its own device (Runtime
	 * API, cudaEventRecord). */
	if (op->s->device >= 0 && op->s->device != event->device) {
		free(op);
		return fail(cudaErrorInvalidResourceHandle);
	}
	op->ev = event;
	return fake_enqueue(op, NULL, 0, "cudaEventRecord", SITE);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
				unsigned int flags)
{
	struct fake_op *op;

	rt.calls.stream_waits++;
	(void)flags;
	if (!event || !event->live)
		return fail(cudaErrorInvalidResourceHandle);
	if (tmm_fault_hit("cudaStreamWaitEvent"))
		return fail(cudaErrorInvalidResourceHandle);
	op = fake_op_new(OP_WAIT, stream);
	if (!op)
		return fail(cudaErrorInvalidResourceHandle);
	op->ev = event;
	return fake_enqueue(op, NULL, 0, "cudaStreamWaitEvent", SITE);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	rt.calls.event_queries++;
	if (!event || !event->live)
		return fail(cudaErrorInvalidResourceHandle);
	/* Not ready is no error: cudaGetLastError does not report it. */
	return fake_event_done(event) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	rt.calls.event_syncs++;
	if (!event || !event->live)
		return fail(cudaErrorInvalidResourceHandle);
	/* Injected as the work before the event having failed, as
	 * cudaStreamSynchronize's is. */
	if (tmm_fault_hit("cudaEventSynchronize"))
		return fail(cudaErrorLaunchFailure);
	fake_sync_event(event);
	return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	if (!ms || !start || !end || !start->live || !end->live)
		return fail(cudaErrorInvalidResourceHandle);
	if (!start->timing || !end->timing)
		return fail(cudaErrorInvalidResourceHandle);
	if (!start->recorded || !end->recorded ||
	    start->reached < start->recorded || end->reached < end->recorded)
		return fail(cudaErrorNotReady);
	*ms = (float)(end->at_ms - start->at_ms);
	return cudaSuccess;
}
