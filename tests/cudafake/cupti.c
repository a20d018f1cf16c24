/* SPDX-License-Identifier: MIT */
/*
 * cupti.c — the CUPTI entry points the cuda backend calls, in one of two
 * modes (cudafake_cupti_mode, or CUDAFAKE_CUPTI=records|refuse).  The
 * library loads CUPTI rather than links it: it reaches these through the
 * double's libcupti.so.N (cupti_so.c, stand_in.h), which hands each call
 * to them through the table at the end of this file.
 *
 *
 *   refuse   (the default) a driver that refuses profiling: registering
 *            and enabling fail with CUPTI_ERROR_NOT_SUPPORTED, so op
 *            times come from cudaEvent pairs, the backend's fallback;
 *   records  activity records, as CUPTI's activity API writes them:
 *            every call that queues work (queue.c, fake_enqueue) gets a
 *            correlation id and, with CUPTI_ACTIVITY_KIND_RUNTIME on, a
 *            runtime API record, preceded by an external correlation
 *            record for the id this thread pushed; the work itself, when
 *            the double runs it (queue.c, step), gets a kernel, memcpy or
 *            memset record with the same correlation id, its stream's
 *            and context's ids, and start and end from the double's
 *            clock, so the times follow the seeded queue order.
 *
 * Where the double assumes CUPTI's behaviour, the comment names the
 * section of the CUPTI API reference (cupti_activity.h documents the
 * same) it follows.  Only calls that queue work are API calls here: the
 * records of the others (cudaGetLastError...) carry no device work, and
 * a reader must read past them anyway.
 */
#include "config.h"

#include <cupti.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"
#include "stand_in.h"

/* The record layouts of the headers' CUPTI (cuda_timing.c reads the
 * same ones). */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif

/* External ids one thread may push (CUPTI keeps a stack per thread and
 * kind; the backend pushes one at a time). */
#define MAX_PUSHED 32

static struct {
	bool ready;
	enum cudafake_cupti mode;
	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	uint64_t enabled;	/* a bit per CUpti_ActivityKind below 64 */
	uint32_t next_corr;
	uint8_t *buf;		/* the buffer being filled, from requested */
	size_t size, used;
	unsigned long delivered, dropped;
	/* Unified-memory counters configured on, a bit per
	 * CUpti_ActivityUnifiedMemoryCounterKind; refuse_um: configuring
	 * fails. */
	uint32_t um_kinds;
	bool refuse_um;
} cu;

static _Thread_local uint64_t pushed[MAX_PUSHED];
static _Thread_local unsigned n_pushed;

static void init(void)
{
	const char *m = getenv("CUDAFAKE_CUPTI");

	if (cu.ready)
		return;
	cu.ready = true;
	cu.mode = m && strcmp(m, "records") == 0 ? CUDAFAKE_CUPTI_RECORDS
						  : CUDAFAKE_CUPTI_REFUSE;
}

void cudafake_cupti_mode(enum cudafake_cupti mode)
{
	init();
	cu.mode = mode;
}

unsigned long cudafake_cupti_records(void)
{
	return cu.delivered;
}

static bool on(CUpti_ActivityKind kind)
{
	return (unsigned)kind < 64 && (cu.enabled >> kind & 1);
}

/* The stored size of a record of `kind`: what cuptiActivityGetNextRecord
 * steps over, 8-byte aligned as CUPTI's records are
 * (PACKED_ALIGNMENT). */
static size_t record_size(CUpti_ActivityKind kind)
{
	size_t n;

	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		n = sizeof(kernel_record);
		break;
#if CUPTI_API_VERSION >= 130000
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		n = sizeof(CUpti_ActivityMemcpy6);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		n = sizeof(CUpti_ActivityMemset4);
		break;
#endif
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		n = sizeof(CUpti_ActivityAPI);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		n = sizeof(CUpti_ActivityExternalCorrelation);
		break;
	case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
		n = sizeof(CUpti_ActivityUnifiedMemoryCounter3);
		break;
	default:
		return 0;
	}
	return (n + 7) & ~(size_t)7;
}

/* Hands the buffer being filled to the client (CUPTI API reference,
 * CUpti_BuffersCallbackCompleteFunc: the client owns it from then on). */
static void complete(void)
{
	uint8_t *b = cu.buf;
	size_t size = cu.size, used = cu.used;

	cu.buf = NULL;
	cu.size = cu.used = 0;
	if (b && cu.completed)
		cu.completed(NULL, 0, b, size, used);
}

/*
 * Room for one record of `kind` in the buffer being filled, asking the
 * client for a new one when it is full (CUPTI API reference,
 * cuptiActivityRegisterCallbacks: CUPTI requests a buffer when it needs
 * one and completes it when it is full or flushed).  NULL when the
 * client gave none: the record is dropped, as CUPTI drops it.
 */
static void *room(CUpti_ActivityKind kind)
{
	size_t need = record_size(kind);
	size_t max_records = 0;
	void *r;

	if (cu.buf && cu.used + need > cu.size)
		complete();
	if (!cu.buf && cu.requested) {
		cu.requested(&cu.buf, &cu.size, &max_records);
		cu.used = 0;
		if (cu.buf && cu.size < need) {
			/* Too small to hold anything: given straight back. */
			complete();
		}
	}
	if (!cu.buf) {
		cu.dropped++;
		return NULL;
	}
	r = cu.buf + cu.used;
	memset(r, 0, need);
	cu.used += need;
	cu.delivered++;
	return r;
}

/* A timestamp in CUPTI's unit (ns) from the double's clock (ms). */
static uint64_t ns_of(double ms)
{
	return (uint64_t)(ms * 1e6 + 0.5);
}

/* The callback id of the runtime call that queued `op`. */
static CUpti_CallbackId cbid_of(const struct fake_op *op)
{
	switch (op->kind) {
	case OP_COPY: return CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
	case OP_SET: return CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
	case OP_KERNEL: return CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	case OP_RECORD: return CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020;
	case OP_WAIT:
		return CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020;
	default: return CUPTI_RUNTIME_TRACE_CBID_INVALID;
	}
}

uint32_t fake_cupti_api(const struct fake_op *op)
{
	CUpti_ActivityAPI *api;
	uint32_t corr;

	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS || !cu.enabled)
		return 0;
	/* Every API call has its own correlation id, never 0 (CUPTI API
	 * reference, CUpti_ActivityAPI::correlationId). */
	corr = ++cu.next_corr;
	if (!on(CUPTI_ACTIVITY_KIND_RUNTIME))
		return corr;
	/* cuptiActivityPushExternalCorrelationId: an API record made inside
	 * an external region is preceded by an external correlation record
	 * (one per kind; the double knows CUSTOM0 only). */
	if (n_pushed && on(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
		CUpti_ActivityExternalCorrelation *x =
			room(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);

		if (x) {
			x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
			x->externalKind =
				CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
			x->externalId = pushed[n_pushed - 1];
			x->correlationId = corr;
		}
	}
	api = room(CUPTI_ACTIVITY_KIND_RUNTIME);
	if (api) {
		api->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		api->cbid = cbid_of(op);
		api->start = api->end = ns_of(fake_clock_ms());
		api->processId = (uint32_t)getpid();
		api->correlationId = corr;
	}
	return corr;
}

/* CUPTI's id of the CPU in a unified-memory record's srcId or dstId
 * (the double's choice: no device has it). */
#define CPU_ID UINT32_MAX

/* One unified-memory counter record of `kind`, where it is configured
 * and the kind is on. */
static void um_record(CUpti_ActivityUnifiedMemoryCounterKind kind,
		      uint64_t value, uint64_t start, uint64_t end,
		      const void *ptr, uint32_t src, uint32_t dst,
		      uint32_t flags)
{
	CUpti_ActivityUnifiedMemoryCounter3 *r;

	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS ||
	    !on(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) ||
	    !(cu.um_kinds >> kind & 1))
		return;
	r = room(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
	if (!r)
		return;
	r->kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
	r->counterKind = kind;
	r->value = value;
	r->start = start;
	r->end = end;
	r->address = (uint64_t)(uintptr_t)ptr;
	r->srcId = src;
	r->dstId = dst;
	r->processId = (uint32_t)getpid();
	r->flags = flags;
}

void cudafake_cupti_um_fault(int device, const void *ptr, uint64_t pages,
			     uint64_t bytes, uint64_t ns)
{
	uint64_t at = ns_of(fake_clock_ms());

	um_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
		  pages, at, at + ns, ptr, (uint32_t)device, 0,
		  CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ);
	um_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
		  bytes, at, at + ns, ptr, CPU_ID, (uint32_t)device,
		  CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
}

void cudafake_cupti_um_evict(int device, const void *ptr, uint64_t bytes)
{
	uint64_t at = ns_of(fake_clock_ms());

	um_record(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
		  bytes, at, at, ptr, (uint32_t)device, CPU_ID,
		  CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION);
}

void cudafake_cupti_um_refuse(bool refuse)
{
	init();
	cu.refuse_um = refuse;
}

void fake_cupti_ran(const struct fake_op *op, double start_ms, double end_ms)
{
	/* The ids CUPTI gives: the device's, its (primary) context's, and
	 * the stream's within that context (fake_stream_cupti_id). */
	uint32_t device = (uint32_t)op->device;
	uint32_t context = device + 1;
	uint32_t stream = fake_stream_cupti_id(op->s);

	/* A prefetch is a migration the user asked for (CUPTI API
	 * reference, CUpti_ActivityUnifiedMemoryMigrationCause USER). */
	if (op->kind == OP_PREFETCH)
		um_record(op->value
				  ? CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD
				  : CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
			  op->bytes, ns_of(start_ms), ns_of(end_ms), op->dst,
			  op->value ? CPU_ID : device,
			  op->value ? device : CPU_ID,
			  CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER);
	if (!op->corr || cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return;
	if (op->kind == OP_KERNEL &&
	    (on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
	     on(CUPTI_ACTIVITY_KIND_KERNEL))) {
		CUpti_ActivityKind kind =
			on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
				? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
				: CUPTI_ACTIVITY_KIND_KERNEL;
		kernel_record *k = room(kind);

		if (!k)
			return;
		k->kind = kind;
		k->start = ns_of(start_ms);
		k->end = ns_of(end_ms);
		k->deviceId = device;
		k->contextId = context;
		k->streamId = stream;
		k->correlationId = op->corr;
		k->name = "cudafake_kernel";
#if CUPTI_API_VERSION >= 130000
	} else if (op->kind == OP_COPY && on(CUPTI_ACTIVITY_KIND_MEMCPY)) {
		CUpti_ActivityMemcpy6 *m = room(CUPTI_ACTIVITY_KIND_MEMCPY);

		if (!m)
			return;
		m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m->bytes = op->bytes;
		m->start = ns_of(start_ms);
		m->end = ns_of(end_ms);
		m->deviceId = device;
		m->contextId = context;
		m->streamId = stream;
		m->correlationId = op->corr;
	} else if (op->kind == OP_SET && on(CUPTI_ACTIVITY_KIND_MEMSET)) {
		CUpti_ActivityMemset4 *m = room(CUPTI_ACTIVITY_KIND_MEMSET);

		if (!m)
			return;
		m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
		m->value = (uint32_t)op->value;
		m->bytes = op->bytes;
		m->start = ns_of(start_ms);
		m->end = ns_of(end_ms);
		m->deviceId = device;
		m->contextId = context;
		m->streamId = stream;
		m->correlationId = op->corr;
#endif
	}
}

/* ---- the entry points ------------------------------------------------ */

/* The CUPTI API version the double reports: the headers', unless
 * CUDAFAKE_CUPTI_VERSION names another (an older library loaded at run
 * time than the one built against). */
CUptiResult cuptiGetVersion(uint32_t *version)
{
	const char *v = getenv("CUDAFAKE_CUPTI_VERSION");

	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	switch (result) {
	case CUPTI_SUCCESS:
		*str = "CUPTI_SUCCESS";
		break;
	case CUPTI_ERROR_QUEUE_EMPTY:
		*str = "CUPTI_ERROR_QUEUE_EMPTY (cudafake)";
		break;
	case CUPTI_ERROR_INVALID_STREAM:
		*str = "CUPTI_ERROR_INVALID_STREAM (cudafake)";
		break;
	case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED (cudafake)";
		break;
	default:
		*str = "CUPTI is not available on the CUDA test double";
		break;
	}
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(
	CUpti_BuffersCallbackRequestFunc requested,
	CUpti_BuffersCallbackCompleteFunc completed)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	cu.requested = requested;
	cu.completed = completed;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (!record_size(kind))
		return CUPTI_ERROR_NOT_COMPATIBLE;
	cu.enabled |= 1ull << kind;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if ((unsigned)kind < 64)
		cu.enabled &= ~(1ull << kind);
	return CUPTI_SUCCESS;
}

/*
 * cuptiActivityFlushAll: with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED the buffer
 * being filled is completed too, however little it holds; without, only
 * full buffers are, and the double has completed those already.  The
 * completion runs on the calling thread before the call returns.
 */
CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && cu.buf)
		complete();
	return CUPTI_SUCCESS;
}

/*
 * cuptiActivityGetNextRecord: *record NULL asks for the first record of
 * the buffer, else for the one after *record; past the valid bytes,
 * CUPTI_ERROR_MAX_LIMIT_REACHED.
 */
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
				       CUpti_Activity **record)
{
	size_t at = 0, step;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (*record) {
		step = record_size((*record)->kind);
		if (!step)
			return CUPTI_ERROR_INVALID_KIND;
		at = (size_t)((uint8_t *)*record - buffer) + step;
	}
	if (at >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + at);
	return record_size((*record)->kind) ? CUPTI_SUCCESS
					    : CUPTI_ERROR_INVALID_KIND;
}

/* cuptiActivityPushExternalCorrelationId: a stack per thread. */
CUptiResult cuptiActivityPushExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
	    n_pushed == MAX_PUSHED)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pushed[n_pushed++] = id;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPopExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t *last)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!n_pushed)
		return CUPTI_ERROR_QUEUE_EMPTY;
	n_pushed--;
	if (last)
		*last = pushed[n_pushed];
	return CUPTI_SUCCESS;
}

/* cuptiGetDeviceId: a NULL context means the calling thread's current
 * one, so its device. */
CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *device)
{
	if (!device)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (context)
		return CUPTI_ERROR_INVALID_CONTEXT; /* the double has none */
	*device = (uint32_t)fake_current_device();
	return CUPTI_SUCCESS;
}

/* cuptiGetStreamIdEx: the stream's id, unique within its context. */
CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream,
			       uint8_t per_thread, uint32_t *id)
{
	struct CUstream_st *s;

	if (!id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (context)
		return CUPTI_ERROR_INVALID_CONTEXT;
	s = fake_stream(!stream && per_thread ? cudaStreamPerThread
					      : (cudaStream_t)stream);
	if (!s)
		return CUPTI_ERROR_INVALID_STREAM;
	*id = fake_stream_cupti_id(s);
	return CUPTI_SUCCESS;
}

/*
 * cuptiActivityConfigureUnifiedMemoryCounter: the counters to turn on
 * when the kind is enabled; a driver that cannot count refuses with
 * CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED (CUPTI API reference).
 */
CUptiResult cuptiActivityConfigureUnifiedMemoryCounter(
	CUpti_ActivityUnifiedMemoryCounterConfig *config, uint32_t count)
{
	init();
	if (cu.mode != CUDAFAKE_CUPTI_RECORDS)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (!config || !count)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (cu.refuse_um)
		return CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED;
	for (uint32_t i = 0; i < count; i++) {
		if ((unsigned)config[i].kind >= 32)
			return CUPTI_ERROR_INVALID_PARAMETER;
		if (config[i].enable)
			cu.um_kinds |= 1u << config[i].kind;
		else
			cu.um_kinds &= ~(1u << config[i].kind);
	}
	return CUPTI_SUCCESS;
}

/* What the double's libcupti.so.N hands its calls to (stand_in.h). */
const struct tmm_cupti cudafake_cupti = {
	TMM_CUPTI_CALLS(CUDAFAKE_STAND_IN_CALL)
};
