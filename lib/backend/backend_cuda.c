/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda.c — the backend on a real GPU, through the CUDA runtime:
 * the device, its streams and events, op timing, and the ops table.
 *
 * It maps backend.h's model one to one onto CUDA: the compute engine and
 * the two copy engines are three non-blocking streams (non-blocking, so
 * that work on the legacy default stream from other code in the process
 * does not serialise against them); events are cudaEvents recorded on
 * those streams; managed ranges are moved and advised with
 * cudaMemPrefetchAsync / cudaMemAdvise (backend_cuda_mem.c).
 *
 * Written in C against cuda_runtime_api.h, so no nvcc is needed.
 *
 * Errors: every failed call is turned into a negative errno and a message
 * in be->error naming the call, its arguments and CUDA's own description
 * (tmm_cuda_fail, backend_cuda_mem.c).
 *
 * The device is the `device` tunable's (an index, after
 * CUDA_VISIBLE_DEVICES, or a UUID; current: the calling thread's current
 * device), resolved once at open (cuda_device.c, with the device's UUID,
 * PCI address and roofline).  Every entry point that calls CUDA
 * makes it current on the calling thread and gives the thread's own back
 * when it returns (CUDA_ON_DEVICE, backend_cuda_mem.h), open and close
 * included, so that one thread may drive contexts on several devices.
 *
 * Memory, copies and managed ranges are backend_cuda_mem.c's.  This file
 * holds the ops table, so it calls into backend_cuda_mem.c and never the
 * other way; struct cuda_state spans the two (backend_cuda_mem.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda.h"
#include "cuda_copier.h"
#include "cuda_device.h"
#include "cuda_link.h"
#include "backend_cuda_managed.h"
#include "backend_cuda_mem.h"
#include "backend_cuda_vmm.h"
#include "cuda_timing.h"
#include "numa_place.h"
#include "lib/base/dynlib.h"
#include "lib/base/tunables.h"
#include "lib/base/xalloc.h"

/* ------------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------- */

static void cuda_release_all(struct cuda_state *s)
{
	for (int i = 0; i < s->nspare; i++)
		cudaEventDestroy(s->spare[i]);
	s->nspare = 0;
	tmm_cuda_timing_close(s->timing);
	tmm_cuda_copier_close(s->copier);
	for (int i = 0; i < TMM_ENGINE_COUNT; i++)
		if (s->stream[i])
			cudaStreamDestroy(s->stream[i]);
	if (s->comm)
		cudaStreamDestroy(s->comm);
	free(s);
}

int tmm_cuda_device_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

static int cuda_open_on(struct tmm_backend *be, const struct tmm_config *cfg,
			struct cuda_state *s);

/*
 * The priority of engine i's stream.  With uvm_copier=kernel the copy
 * streams run the copy kernel: at the greatest priority its blocks take
 * the first multiprocessors that free up, rather than wait behind every
 * block of the kernel running on the compute stream, as a copy engine's
 * copy would not.  A priority only orders kernels: the copy engines'
 * copies are as before.  Else the default, the least.
 */
static int stream_priority(const struct tmm_config *cfg, int i)
{
	int least = 0, greatest = 0;

	if (!cfg || cfg->mode == TMM_MODE_SWAP ||
	    cfg->uvm_copier != TMM_UVM_COPIER_KERNEL ||
	    (i != TMM_ENGINE_H2D && i != TMM_ENGINE_D2H))
		return 0;
	if (cudaDeviceGetStreamPriorityRange(&least, &greatest) !=
	    cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return greatest;
}

/*
 * uvm_copier=kernel, for a context that may use managed memory: the copy
 * kernel (cuda_copier.h), so that copies with a managed end hold the host
 * no longer.  Where it cannot be had the runtime's copies stay, which
 * only costs time: info says why, and the context logs it.
 */
static void cuda_copier_open(struct cuda_state *s,
			     const struct tmm_config *cfg,
			     struct tmm_device_info *info)
{
	char why[160] = "";

	info->managed_copies_block_host = true;
	if (!cfg || cfg->mode == TMM_MODE_SWAP) {
		info->managed_copier[0] = '\0';
		return;
	}
	if (cfg->uvm_copier != TMM_UVM_COPIER_KERNEL) {
		snprintf(info->managed_copier, sizeof(info->managed_copier),
			 "cudaMemcpyAsync, which holds the host until the "
			 "copy has run (uvm_copier=runtime)");
		return;
	}
	if (tmm_cuda_copier_open(&s->copier, s->device,
				 cfg->uvm_copier_blocks, why,
				 sizeof(why)) < 0) {
		snprintf(info->managed_copier, sizeof(info->managed_copier),
			 "cudaMemcpyAsync, which holds the host: "
			 "uvm_copier=kernel was asked, but %s", why);
		return;
	}
	info->managed_copies_block_host = false;
	/* Its blocks and rate follow when the link is measured. */
	snprintf(info->managed_copier, sizeof(info->managed_copier),
		 "the library's copy kernel (uvm_copier=kernel)");
}

/*
 * The copy kernel's share of compute while it runs beside compute,
 * estimated: each of its blocks holds a place on one multiprocessor, so
 * a kernel beside it has up to that many fewer.  Not measured: a block
 * that shares a multiprocessor with a compute kernel's takes less of it,
 * and one that turns a kernel's last wave into two costs more.
 */
static void copier_share(struct tmm_device_info *info, int sms)
{
	size_t len = strlen(info->managed_copier);
	double share;

	if (sms <= 0 || !info->kernel_copy_blocks)
		return;
	share = (double)info->kernel_copy_blocks / sms;
	info->kernel_copy_share = share < 1 ? share : 1;
	snprintf(info->managed_copier + len,
		 sizeof(info->managed_copier) - len,
		 "; while it runs, about %.0f%% of compute (%u of %d "
		 "multiprocessors, estimated)",
		 100 * info->kernel_copy_share, info->kernel_copy_blocks, sms);
}

/* Resolves the device, then opens it with it current, and gives the
 * caller's current device back. */
static int cuda_open(struct tmm_backend *be, const struct tmm_config *cfg)
{
	struct tmm_device_info *info = &be->info;
	struct cuda_state *s;
	int n = 0, device = 0, prev, rc;
	cudaError_t e;

	be->state = NULL;
	memset(info, 0, sizeof(*info));
	info->numa_node = -1;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		if (e == cudaSuccess)
			e = cudaErrorNoDevice;
		(void)cudaGetLastError();
		return tmm_backend_fail(be, -ENODEV, "no CUDA device: %s",
					cudaGetErrorString(e));
	}
	rc = tmm_cuda_resolve_device(be, cfg, n, &device);
	if (rc < 0) {
		(void)cudaGetLastError();
		return rc;
	}

	s = tmm_calloc(1, sizeof(*s));
	if (!s)
		return tmm_backend_fail(be, -ENOMEM,
					"cuda backend: out of memory");
	s->device = device;
	s->host_numa_ok = true;
	s->prefetch_batch_ok = true;
	s->kernel_caller_device = -1;
	info->index = device;

	prev = tmm_cuda_device_enter(s);
	rc = cuda_open_on(be, cfg, s);
	tmm_cuda_device_leave(&prev);
	return rc;
}

static int cuda_open_on(struct tmm_backend *be, const struct tmm_config *cfg,
			struct cuda_state *s)
{
	struct tmm_device_info *info = &be->info;
	struct cudaDeviceProp prop;
	char bus_id[32] = "", why[TMM_DYNLIB_WHY];
	size_t free_b = 0, total_b = 0, len;
	int attr = 0, rc;
	cudaError_t e;

	/* tmm_cuda_device_enter does not report a failure: this does. */
	e = cudaSetDevice(s->device);
	if (e != cudaSuccess) {
		rc = tmm_cuda_fail(be, e, "cudaSetDevice(%d)", s->device);
		goto err;
	}
	e = cudaGetDeviceProperties(&prop, s->device);
	if (e != cudaSuccess) {
		rc = tmm_cuda_fail(be, e, "cudaGetDeviceProperties(%d)",
				   s->device);
		goto err;
	}
	e = cudaDeviceGetAttribute(&attr, cudaDevAttrConcurrentManagedAccess,
				   s->device);
	if (e != cudaSuccess) {
		rc = tmm_cuda_fail(be, e, "cudaDeviceGetAttribute("
				   "ConcurrentManagedAccess)");
		goto err;
	}
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess) {
		rc = tmm_cuda_fail(be, e, "cudaMemGetInfo");
		goto err;
	}

	for (int i = 0; i < TMM_ENGINE_COUNT; i++) {
		s->queued[i] = 1; /* unknown work: wait for it once */
		e = cudaStreamCreateWithPriority(&s->stream[i],
						 cudaStreamNonBlocking,
						 stream_priority(cfg, i));
		if (e != cudaSuccess) {
			s->stream[i] = NULL;
			rc = tmm_cuda_fail(be, e,
					   "cudaStreamCreateWithPriority");
			goto err;
		}
	}
	e = cudaStreamCreateWithFlags(&s->comm, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		s->comm = NULL;
		rc = tmm_cuda_fail(be, e, "cudaStreamCreateWithFlags(comm)");
		goto err;
	}
	/* CUPTI unless cupti=off; events where CUPTI cannot be had. */
	rc = tmm_cuda_timing_open(&s->timing, s->stream[TMM_ENGINE_COMPUTE],
				  cfg ? cfg->cupti : true,
				  cfg ? cfg->dl_path : NULL, why, sizeof(why));
	if (rc < 0) {
		rc = tmm_backend_fail(be, rc, "cuda backend: out of memory");
		goto err;
	}
	snprintf(info->timing, sizeof(info->timing), "%s%s%s%s",
		 tmm_cuda_timing_method(s->timing), why[0] ? " (" : "", why,
		 why[0] ? ")" : "");
	/* The driver's own migrations and faults, for a context that may
	 * use managed memory and asks: CUPTI's unified-memory counters
	 * (cuda_um.h).  Not by default: on the H200 they made a step in
	 * mode=uvm with nothing to migrate 1.35x as long
	 * (docs/gpu-h200-goals.md). */
	if (cfg && cfg->mode != TMM_MODE_SWAP && cfg->uvm_counters)
		info->managed_counted = tmm_cuda_timing_count_managed(
			s->timing, info->managed_counts,
			sizeof(info->managed_counts));
	else if (!cfg || cfg->mode != TMM_MODE_SWAP)
		snprintf(info->managed_counts, sizeof(info->managed_counts),
			 "uvm_counters=off (the default: on counts them, at "
			 "a cost on every step)");

	/* The name is a nicety: cut to fit rather than fail. */
	len = strnlen(prop.name, sizeof(info->name) - 1);

	memcpy(info->name, prop.name, len);
	info->name[len] = '\0';
	info->capacity = prop.totalGlobalMem;
	tmm_cuda_uuid_format(info->uuid, sizeof(info->uuid), prop.uuid.bytes);
	info->free_at_open = free_b;
	info->simulated = false;
	info->host_accessible = false;
	info->phantom = false;
	info->concurrent_managed = attr != 0;
	info->prefetch_after_copies = true; /* after_other_streams */
	cuda_copier_open(s, cfg, info);
	/* The runtime API does not report the link's width or generation,
	 * so it is measured (cuda_link.c).  Where it cannot be, Capuchin
	 * §4.3's 12 GB/s of pinned PCIe 3.0 x16 copies: a faster link only
	 * makes the plans conservative. */
	info->h2d_gbps = 12.0;
	info->d2h_gbps = 12.0;
	info->copy_latency_ns = 10000;
	tmm_cuda_link_measure(info, s->stream[TMM_ENGINE_H2D],
			      s->stream[TMM_ENGINE_D2H]);
	/* The copy kernel's own rate, for the forecast: its copies are
	 * not the copy engines'. */
	if (s->copier) {
		tmm_cuda_link_measure_kernel(info, s->copier,
					     cfg->uvm_copier_blocks,
					     s->stream[TMM_ENGINE_H2D],
					     s->stream[TMM_ENGINE_D2H]);
		tmm_cuda_copier_restart_count(s->copier);
		copier_share(info, prop.multiProcessorCount);
	}
	if (info->concurrent_managed)
		tmm_cuda_link_measure_managed(info, s->device,
					      s->stream[TMM_ENGINE_H2D],
					      s->stream[TMM_ENGINE_D2H]);
	else
		snprintf(info->uvm_paths, sizeof(info->uvm_paths),
			 "not measured: no concurrent managed access");
	tmm_cuda_roofline(s, info, prop.major, prop.minor,
			  prop.multiProcessorCount);
	/* Not measured: 5 us is a common figure for one kernel launch and
	 * its synchronisation.  An estimate. */
	info->launch_ns = 5000;

	/* Placement is an optimisation: an unknown node is not an error. */
	if (cudaDeviceGetPCIBusId(bus_id, (int)sizeof(bus_id), s->device) ==
	    cudaSuccess) {
		tmm_cuda_pci_id_copy(info->pci_bus_id,
				     sizeof(info->pci_bus_id), bus_id);
		info->numa_node = tmm_numa_node_of_pci("/sys", bus_id);
	}
#if CUDART_VERSION >= 12020
	/* The driver knows too (CUDA 12.2+), e.g. where sysfs says -1. */
	if (info->numa_node < 0) {
		int node = -1;

		if (cudaDeviceGetAttribute(&node, cudaDevAttrHostNumaId,
					   s->device) == cudaSuccess &&
		    node >= 0)
			info->numa_node = node;
	}
#endif
	(void)cudaGetLastError();

	s->host_node = cfg && cfg->host_numa_node >= 0 ? cfg->host_numa_node
						       : info->numa_node;
	be->state = s;
	return 0;

err:
	cuda_release_all(s);
	return rc;
}

/* Waits for all queued work on the device, then releases our resources. */
static void cuda_close(struct tmm_backend *be)
{
	struct cuda_state *s = st_of(be);
	int prev;

	if (!s)
		return;
	prev = tmm_cuda_device_enter(s);
	/*
	 * Only our streams are waited for and no cudaDeviceReset(): the
	 * CUDA context is shared with the rest of the process (the user's
	 * own kernels, cuDNN handles), which must outlive us.
	 */
	for (int i = 0; i < TMM_ENGINE_COUNT; i++)
		if (s->stream[i])
			cudaStreamSynchronize(s->stream[i]);
	if (s->comm)
		cudaStreamSynchronize(s->comm);
	tmm_cuda_vmm_close(be);
	cuda_release_all(s);
	(void)cudaGetLastError();
	be->state = NULL;
	tmm_cuda_device_leave(&prev);
}

/* ------------------------------------------------------------------------
 * Events
 * ---------------------------------------------------------------------- */

/*
 * Records a timing-free event (cheaper to record and to wait on) on the
 * engine's stream.  The event comes from the spare list when it can: a
 * cudaEvent may be recorded again once its owner has released it, even
 * while still pending, because waits already queued on it keep the point
 * they captured.
 */
static int cuda_event_record(struct tmm_backend *be, enum tmm_engine engine,
			     tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaEvent_t ce;
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_cuda_bad_engine(be, "event_record", engine);
	if (s->nspare > 0) {
		ce = s->spare[--s->nspare];
	} else {
		e = cudaEventCreateWithFlags(&ce, cudaEventDisableTiming);
		if (e != cudaSuccess)
			return tmm_cuda_fail(be, e, "cudaEventCreateWithFlags");
	}
	e = cudaEventRecord(ce, s->stream[engine]);
	if (e != cudaSuccess) {
		s->spare[s->nspare++] = ce;
		return tmm_cuda_fail(be, e, "cudaEventRecord(engine %d)",
				     (int)engine);
	}
	ev->valid = true;
	ev->engine = engine;
	ev->t_ns = be->ops->now_ns(be); /* when recorded, host clock */
	ev->native = ce;
	return 0;
}

static int cuda_event_query(struct tmm_backend *be, const tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	cudaError_t e;

	if (!ev->valid || !ev->native)
		return 1;
	e = cudaEventQuery((cudaEvent_t)ev->native);
	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady)
		return 0;
	return tmm_cuda_fail(be, e, "cudaEventQuery(engine %d)",
			     (int)ev->engine);
}

static int cuda_event_sync(struct tmm_backend *be, const tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	cudaError_t e;

	if (!ev->valid || !ev->native)
		return 0;
	e = cudaEventSynchronize((cudaEvent_t)ev->native);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaEventSynchronize(engine %d)",
				     (int)ev->engine);
	return 0;
}

static int cuda_engine_wait(struct tmm_backend *be, enum tmm_engine engine,
			    const tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_cuda_bad_engine(be, "engine_wait", engine);
	/* Complete by definition, or already ordered by the stream itself. */
	if (!ev->valid || !ev->native || ev->engine == engine)
		return 0;
	e = cudaStreamWaitEvent(s->stream[engine], (cudaEvent_t)ev->native, 0);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaStreamWaitEvent(engine %d "
				     "waits for engine %d)", (int)engine,
				     (int)ev->engine);
	return 0;
}

/* The wait bracketed by two timed events (cuda_timing.c's). */
static int cuda_engine_wait_timed(struct tmm_backend *be,
				  enum tmm_engine engine, const tmm_event *ev,
				  tmm_timed_wait *w)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	char err[160];
	int rc;

	*w = (tmm_timed_wait){ 0 };
	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_cuda_bad_engine(be, "engine_wait_timed", engine);
	/* Nothing to wait for: it stands still for nothing. */
	if (!ev->valid || !ev->native || ev->engine == engine)
		return 0;
	rc = tmm_cuda_timing_wait(s->timing, s->stream[engine], ev->native,
				  &w->before, &w->after, err, sizeof(err));
	if (rc < 0)
		return tmm_backend_fail(be, rc, "a timed wait of engine %d "
					"for engine %d: %s", (int)engine,
					(int)ev->engine, err);
	w->valid = true;
	return 0;
}

static int cuda_timed_wait_ns(struct tmm_backend *be, tmm_timed_wait *w,
			      uint64_t *ns)
{
	CUDA_ON_DEVICE(be);
	char err[160];
	int rc = 0;

	*ns = 0;
	if (w->valid)
		rc = tmm_cuda_timing_waited(st_of(be)->timing, w->before,
					    w->after, ns, err, sizeof(err));
	*w = (tmm_timed_wait){ 0 };
	if (rc < 0)
		return tmm_backend_fail(be, rc, "measuring a wait: %s", err);
	return 0;
}

static void cuda_event_release(struct tmm_backend *be, tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);

	if (ev->valid && ev->native) {
		if (s && s->nspare < CUDA_EVENT_CACHE)
			s->spare[s->nspare++] = (cudaEvent_t)ev->native;
		else if (cudaEventDestroy((cudaEvent_t)ev->native) !=
			 cudaSuccess)
			(void)cudaGetLastError();
	}
	ev->valid = false;
	ev->native = NULL;
}

/* ------------------------------------------------------------------------
 * Ops, streams, clock
 * ---------------------------------------------------------------------- */

/*
 * Brackets the op on the compute stream for cuda_timing.c.  Its kernels
 * run long after kernel_end returns, so *ns is 0 here; kernel_times
 * answers the durations at the iteration's end.  In between the op's
 * callback launches its kernels on our compute stream, so our device is
 * current on the calling thread until kernel_end gives the caller's back.
 */
static int cuda_kernel_begin(struct tmm_backend *be,
			     const struct tmm_cost *cost)
{
	struct cuda_state *s = st_of(be);
	char err[200];
	int rc;

	(void)cost;
	s->kernel_caller_device = tmm_cuda_device_enter(s);
	rc = tmm_cuda_timing_begin(s->timing, err, sizeof(err));
	if (rc < 0) {
		tmm_cuda_device_leave(&s->kernel_caller_device);
		s->kernel_caller_device = -1;
		return tmm_backend_fail(be, rc, "timing an op: %s", err);
	}
	return 0;
}

static int cuda_kernel_end(struct tmm_backend *be,
			   const struct tmm_cost *cost, uint64_t *ns)
{
	char err[200];
	int rc;

	(void)cost;
	if (ns)
		*ns = 0;
	rc = tmm_cuda_timing_end(st_of(be)->timing, err, sizeof(err));
	tmm_cuda_device_leave(&st_of(be)->kernel_caller_device);
	st_of(be)->kernel_caller_device = -1;
	if (rc < 0)
		return tmm_backend_fail(be, rc, "timing an op: %s", err);
	return 0;
}

static uint64_t cuda_kernel_id(struct tmm_backend *be)
{
	return tmm_cuda_timing_last(st_of(be)->timing);
}

static int cuda_kernel_times(struct tmm_backend *be, const uint64_t *after,
			     const uint64_t *last, uint64_t *ns, uint32_t n)
{
	CUDA_ON_DEVICE(be);
	char err[200];
	int rc;

	rc = tmm_cuda_timing_collect(st_of(be)->timing, after, last, ns, n,
				     err, sizeof(err));
	if (rc < 0)
		return tmm_backend_fail(be, rc, "reading op times: %s", err);
	return 0;
}

static void *cuda_compute_stream(struct tmm_backend *be)
{
	return st_of(be)->stream[TMM_ENGINE_COMPUTE];
}

/*
 * A collective's stream: it first waits for the compute stream's work so
 * far, which wrote what the collective reads.  Its own kernels (NCCL's)
 * then run beside the compute stream's later ones; the runtime orders
 * the users of its tensors after collective_event.  NULL where the wait
 * cannot be queued: the callback then runs on the compute stream, in its
 * order, which is slower but right.
 */
static void *cuda_comm_stream(struct tmm_backend *be)
{
	struct cuda_state *s = st_of(be);
	tmm_event after = { 0 };
	int rc;

	rc = cuda_event_record(be, TMM_ENGINE_COMPUTE, &after);
	if (rc == 0 && cudaStreamWaitEvent(s->comm, (cudaEvent_t)after.native,
					   0) != cudaSuccess)
		rc = -EIO;
	cuda_event_release(be, &after);
	if (rc < 0) {
		(void)cudaGetLastError();
		return s->stream[TMM_ENGINE_COMPUTE];
	}
	return s->comm;
}

/*
 * Where no event can mark the collective's end, the host waits for the
 * comm stream instead: its work is then over, which the invalid event
 * handed out says (complete by definition), and no later user of its
 * tensors is left unordered.  Slower, but right, as comm_stream's
 * fallback is.  Fails, naming both calls, only where the wait fails too.
 */
static int comm_event_fallback(struct tmm_backend *be, cudaError_t why,
			       const char *call, tmm_event *ev)
{
	cudaError_t e;

	(void)cudaGetLastError();
	e = cudaStreamSynchronize(st_of(be)->comm);
	if (e != cudaSuccess)
		return tmm_cuda_fail(be, e, "cudaStreamSynchronize(comm "
				     "stream), after %s failed (%s)", call,
				     cudaGetErrorName(why));
	*ev = (tmm_event){ 0 };
	return 0;
}

/* The end of the comm stream's work so far: the last collective's. */
static int cuda_collective_event(struct tmm_backend *be, tmm_event *ev)
{
	CUDA_ON_DEVICE(be);
	struct cuda_state *s = st_of(be);
	cudaEvent_t ce;
	cudaError_t e;

	if (s->nspare > 0) {
		ce = s->spare[--s->nspare];
	} else {
		e = cudaEventCreateWithFlags(&ce, cudaEventDisableTiming);
		if (e != cudaSuccess)
			return comm_event_fallback(be, e,
						   "cudaEventCreateWithFlags",
						   ev);
	}
	e = cudaEventRecord(ce, s->comm);
	if (e != cudaSuccess) {
		s->spare[s->nspare++] = ce;
		return comm_event_fallback(be, e,
					   "cudaEventRecord(comm stream)", ev);
	}
	ev->valid = true;
	ev->engine = TMM_ENGINE_NET;
	ev->t_ns = be->ops->now_ns(be);
	ev->native = ce;
	return 0;
}

__attribute__((weak)) uint64_t tmm_cuda_host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cuda_now_ns(struct tmm_backend *be)
{
	(void)be;
	return tmm_cuda_host_ns();
}

const struct tmm_backend_ops tmm_backend_cuda_ops = {
	.name = "cuda",
	.open = cuda_open,
	.close = cuda_close,
	.dev_alloc = tmm_cuda_dev_alloc,
	.dev_free = tmm_cuda_dev_free,
	.va_reserve = tmm_cuda_va_reserve,
	.va_map = tmm_cuda_va_map,
	.va_unmap = tmm_cuda_va_unmap,
	.va_release = tmm_cuda_va_release,
	.managed_alloc = tmm_cuda_managed_alloc,
	.managed_free = tmm_cuda_managed_free,
	.host_alloc = tmm_cuda_host_alloc,
	.host_free = tmm_cuda_host_free,
	.copy_async = tmm_cuda_copy_async,
	.copy_sync = tmm_cuda_copy_sync,
	.copy_on_device = tmm_cuda_copy_on_device,
	.fill = tmm_cuda_fill,
	.prefetch = tmm_cuda_prefetch,
	.prefetch_batch = tmm_cuda_prefetch_batch,
	.advise = tmm_cuda_advise,
	.discard = tmm_cuda_discard,
	.managed_access = tmm_cuda_managed_access,
	.managed_limit = tmm_cuda_managed_limit,
	.managed_stats = tmm_cuda_managed_stats,
	.event_record = cuda_event_record,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.engine_wait = cuda_engine_wait,
	.event_release = cuda_event_release,
	.engine_wait_timed = cuda_engine_wait_timed,
	.timed_wait_ns = cuda_timed_wait_ns,
	.kernel_begin = cuda_kernel_begin,
	.kernel_end = cuda_kernel_end,
	.kernel_id = cuda_kernel_id,
	.kernel_times = cuda_kernel_times,
	.op_estimate_ns = tmm_cuda_op_estimate_ns,
	.compute_stream = cuda_compute_stream,
	.comm_stream = cuda_comm_stream,
	.collective_event = cuda_collective_event,
	.now_ns = cuda_now_ns,
};
