/*
 * backend_cuda.c — the backend on a real GPU, through the CUDA runtime.
 *
 * It maps backend.h's model one to one onto CUDA: the compute engine and
 * the two copy engines are three non-blocking streams (non-blocking, so
 * that work on the legacy default stream from other code in the process
 * does not serialise against them); events are cudaEvents recorded on
 * those streams; managed ranges are moved and advised with
 * cudaMemPrefetchAsync / cudaMemAdvise.  Pinned host buffers are first
 * placed on a NUMA node with libnuma (numa_place.c) and then registered
 * with cudaHostRegister, which is what cudaMallocHost cannot do: it gives
 * no say over where the pages are.
 *
 * Written in C against cuda_runtime_api.h, so no nvcc is needed.  The
 * CUDA 13 signatures (a struct cudaMemLocation for prefetch and advise)
 * are the main path; CUDA 12.2+ has the same calls under _v2 names, and
 * older runtimes take the device-ordinal forms.
 *
 * Errors: every failed call is turned into a negative errno and a message
 * in be->error naming the call, its arguments and CUDA's own description.
 * Device 0 is used; CUDA_VISIBLE_DEVICES chooses which GPU that is.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda.h"
#include "cuda_timing.h"
#include "numa_place.h"
#include "lib/base/tunables.h"

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

/* Released events kept for reuse: a swap records two per tensor. */
#define CUDA_EVENT_CACHE 64

struct cuda_state {
	int device;
	cudaStream_t stream[TMM_ENGINE_COUNT];
	/* Op durations: CUPTI or event pairs (cuda_timing.h). */
	struct tmm_cuda_timing *timing;
	cudaEvent_t spare[CUDA_EVENT_CACHE];
	int nspare;
	/* Host NUMA node for advice (preferred location host), -1: any. */
	int host_node;
	/* Cleared when the driver refuses host NUMA locations. */
	bool host_numa_ok;
	/* The roofline of op_estimate_ns: peak fp32 flop/s and device
	 * memory bytes/s, from the device's attributes (0: unknown). */
	double peak_flops, mem_bytes_per_s;
};

static struct cuda_state *st_of(struct tmm_backend *be)
{
	return be->state;
}

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
static int cuda_fail(struct tmm_backend *be, cudaError_t e, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));

static int cuda_fail(struct tmm_backend *be, cudaError_t e, const char *fmt,
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

/* ------------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------- */

/*
 * CUDA writes PCI addresses as "00000000:3B:00.0"; info.pci_bus_id and
 * sysfs use "0000:3b:00.0".  Left as CUDA wrote it (lower-cased) when it
 * does not parse.
 */
static void pci_id_copy(char *dst, size_t len, const char *cuda_id)
{
	unsigned dom, bus, dev, fn;
	char tail;

	dst[0] = '\0';
	if (sscanf(cuda_id, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn,
		   &tail) == 4 &&
	    snprintf(dst, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn) > 0)
		return;
	for (size_t i = 0; i + 1 < len && cuda_id[i]; i++) {
		char c = cuda_id[i];

		dst[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		dst[i + 1] = '\0';
	}
}

static void cuda_release_all(struct cuda_state *s)
{
	for (int i = 0; i < s->nspare; i++)
		cudaEventDestroy(s->spare[i]);
	s->nspare = 0;
	tmm_cuda_timing_close(s->timing);
	for (int i = 0; i < TMM_ENGINE_COUNT; i++)
		if (s->stream[i])
			cudaStreamDestroy(s->stream[i]);
	free(s);
}

/*
 * FP32 lanes per SM by compute capability: 64 on Volta, Turing and A100
 * (8.0), 128 from 8.6 on (Ampere consumer, Ada, Hopper, Blackwell).  The
 * runtime does not report it, hence the table.
 */
static int fp32_lanes_per_sm(int major, int minor)
{
	if (major < 8 || (major == 8 && minor == 0))
		return 64;
	return 128;
}

/*
 * The figures behind op_estimate_ns.  Peaks, not what a kernel reaches:
 * an estimate for a first plan, which re-planning on drift corrects with
 * measured times.  Where an attribute is missing the estimate is 0 and
 * op_estimate_ns falls back to the launch cost alone.
 */
static void roofline_from_attributes(struct cuda_state *s,
				     struct tmm_device_info *info, int major,
				     int minor, int sms)
{
	int clock_khz = 0, mem_khz = 0, bus_bits = 0;

	if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate,
				   s->device) != cudaSuccess)
		clock_khz = 0;
	if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate,
				   s->device) != cudaSuccess ||
	    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth,
				   s->device) != cudaSuccess)
		mem_khz = bus_bits = 0;
	(void)cudaGetLastError();
	/* One fused multiply-add per lane per clock: two flops. */
	s->peak_flops = 2.0 * fp32_lanes_per_sm(major, minor) * sms *
			clock_khz * 1e3;
	/* Double data rate: two transfers per memory clock. */
	s->mem_bytes_per_s = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;
	snprintf(info->op_estimate, sizeof(info->op_estimate),
		 "an estimate: the roofline of %.1f TFLOP/s fp32 and %.0f "
		 "GB/s, peaks from the device attributes",
		 s->peak_flops / 1e12, s->mem_bytes_per_s / 1e9);
}

/* A kernel launch as the host sees it: an estimate. */
#define CUDA_LAUNCH_NS 5000u

static uint64_t cuda_op_estimate_ns(struct tmm_backend *be,
				    const struct tmm_cost *cost)
{
	struct cuda_state *s = st_of(be);
	double compute_s = 0, memory_s = 0;

	if (cost && s->peak_flops > 0 && cost->flops > 0)
		compute_s = cost->flops / s->peak_flops;
	if (cost && s->mem_bytes_per_s > 0 && cost->bytes > 0)
		memory_s = cost->bytes / s->mem_bytes_per_s;
	return CUDA_LAUNCH_NS +
	       (uint64_t)(1e9 * (compute_s > memory_s ? compute_s : memory_s));
}

static int cuda_open(struct tmm_backend *be, const struct tmm_config *cfg)
{
	struct tmm_device_info *info = &be->info;
	struct cudaDeviceProp prop;
	struct cuda_state *s;
	char bus_id[32] = "", why[128];
	size_t free_b = 0, total_b = 0, len;
	int n = 0, attr = 0, rc;
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

	s = calloc(1, sizeof(*s));
	if (!s)
		return tmm_backend_fail(be, -ENOMEM,
					"cuda backend: out of memory");
	s->device = 0;
	s->host_numa_ok = true;

	e = cudaSetDevice(s->device);
	if (e != cudaSuccess) {
		rc = cuda_fail(be, e, "cudaSetDevice(%d)", s->device);
		goto err;
	}
	e = cudaGetDeviceProperties(&prop, s->device);
	if (e != cudaSuccess) {
		rc = cuda_fail(be, e, "cudaGetDeviceProperties(%d)",
			       s->device);
		goto err;
	}
	e = cudaDeviceGetAttribute(&attr, cudaDevAttrConcurrentManagedAccess,
				   s->device);
	if (e != cudaSuccess) {
		rc = cuda_fail(be, e, "cudaDeviceGetAttribute("
			       "ConcurrentManagedAccess)");
		goto err;
	}
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess) {
		rc = cuda_fail(be, e, "cudaMemGetInfo");
		goto err;
	}

	for (int i = 0; i < TMM_ENGINE_COUNT; i++) {
		e = cudaStreamCreateWithFlags(&s->stream[i],
					      cudaStreamNonBlocking);
		if (e != cudaSuccess) {
			s->stream[i] = NULL;
			rc = cuda_fail(be, e, "cudaStreamCreateWithFlags");
			goto err;
		}
	}
	/* CUPTI unless cupti=off; events where CUPTI cannot be had. */
	rc = tmm_cuda_timing_open(&s->timing, s->stream[TMM_ENGINE_COMPUTE],
				  cfg ? cfg->cupti : true, why, sizeof(why));
	if (rc < 0) {
		rc = tmm_backend_fail(be, rc, "cuda backend: out of memory");
		goto err;
	}
	snprintf(info->timing, sizeof(info->timing), "%s%s%s%s",
		 tmm_cuda_timing_method(s->timing), why[0] ? " (" : "", why,
		 why[0] ? ")" : "");

	/* The name is a nicety: cut to fit rather than fail. */
	len = strnlen(prop.name, sizeof(info->name) - 1);

	memcpy(info->name, prop.name, len);
	info->name[len] = '\0';
	info->capacity = prop.totalGlobalMem;
	info->free_at_open = free_b;
	info->simulated = false;
	info->host_accessible = false;
	info->phantom = false;
	info->concurrent_managed = attr != 0;
	/* The runtime API does not report the link's width or generation.
	 * Capuchin §4.3 measured 12 GB/s of pinned PCIe 3.0 x16 copies; a
	 * faster link only makes the plans conservative.  An estimate. */
	info->h2d_gbps = 12.0;
	info->d2h_gbps = 12.0;
	info->copy_latency_ns = 10000;
	roofline_from_attributes(s, info, prop.major, prop.minor,
				 prop.multiProcessorCount);
	/* Not measured: 5 us is a common figure for one kernel launch and
	 * its synchronisation.  An estimate. */
	info->launch_ns = 5000;

	/* Placement is an optimisation: an unknown node is not an error. */
	if (cudaDeviceGetPCIBusId(bus_id, (int)sizeof(bus_id), s->device) ==
	    cudaSuccess) {
		pci_id_copy(info->pci_bus_id, sizeof(info->pci_bus_id),
			    bus_id);
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

	if (!s)
		return;
	/*
	 * Only our streams are waited for and no cudaDeviceReset(): the
	 * CUDA context is shared with the rest of the process (the user's
	 * own kernels, cuDNN handles), which must outlive us.
	 */
	for (int i = 0; i < TMM_ENGINE_COUNT; i++)
		if (s->stream[i])
			cudaStreamSynchronize(s->stream[i]);
	cuda_release_all(s);
	(void)cudaGetLastError();
	be->state = NULL;
}

/* ------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------- */

static int cuda_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
{
	cudaError_t e;

	*ptr = NULL;
	/* cudaMalloc(0) succeeds with NULL, which no caller expects. */
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL, "cudaMalloc(0 bytes)");
	e = cudaMalloc(ptr, bytes);
	if (e != cudaSuccess) {
		*ptr = NULL;
		return cuda_fail(be, e, "cudaMalloc(%zu bytes)", bytes);
	}
	return 0;
}

/*
 * The frees return nothing: a cudaFree only fails when the context is
 * already lost, and then the next call that can report it will.
 */
static void cuda_dev_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	(void)be;
	(void)bytes;
	if (ptr && cudaFree(ptr) != cudaSuccess)
		(void)cudaGetLastError();
}

static int cuda_managed_alloc(struct tmm_backend *be, size_t bytes,
			      void **ptr)
{
	cudaError_t e;

	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL,
					"cudaMallocManaged(0 bytes)");
	/* Global: any stream may touch it, our copy streams included. */
	e = cudaMallocManaged(ptr, bytes, cudaMemAttachGlobal);
	if (e != cudaSuccess) {
		*ptr = NULL;
		return cuda_fail(be, e, "cudaMallocManaged(%zu bytes)", bytes);
	}
	return 0;
}

static void cuda_managed_free(struct tmm_backend *be, void *ptr,
			      size_t bytes)
{
	cuda_dev_free(be, ptr, bytes);
}

/*
 * Pinned host memory on a chosen node: allocated there by libnuma, then
 * registered.  Registration pins the pages, and pinning faults them in
 * under the node's memory policy, so they land where they were asked to.
 */
static int cuda_host_alloc(struct tmm_backend *be, size_t bytes,
			   int numa_node, void **ptr)
{
	cudaError_t e;
	void *p;

	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL, "host_alloc(0 bytes)");
	errno = 0;
	p = tmm_numa_alloc(bytes, numa_node);
	if (!p) {
		int err = errno ? errno : ENOMEM;

		return tmm_backend_fail(be, -err,
					"tmm_numa_alloc(%zu bytes, node %d): "
					"%s", bytes, numa_node, strerror(err));
	}
	e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
	if (e != cudaSuccess) {
		tmm_numa_free(p, bytes);
		return cuda_fail(be, e, "cudaHostRegister(%zu bytes, node %d)",
				 bytes, numa_node);
	}
	*ptr = p;
	return 0;
}

static void cuda_host_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	(void)be;
	if (!ptr)
		return;
	if (cudaHostUnregister(ptr) != cudaSuccess)
		(void)cudaGetLastError();
	tmm_numa_free(ptr, bytes);
}

/* ------------------------------------------------------------------------
 * Copies
 * ---------------------------------------------------------------------- */

static int cuda_copy_async(struct tmm_backend *be, enum tmm_engine engine,
			   void *dst, const void *src, size_t bytes)
{
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if (engine != TMM_ENGINE_H2D && engine != TMM_ENGINE_D2H)
		return tmm_backend_fail(be, -EINVAL,
					"copy_async: engine %d is not a copy "
					"engine", (int)engine);
	if (bytes == 0)
		return 0;
	/* Default: unified addressing tells the direction from the pointers. */
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
			    s->stream[engine]);
	if (e != cudaSuccess)
		return cuda_fail(be, e, "cudaMemcpyAsync(%zu bytes, %s)",
				 bytes,
				 engine == TMM_ENGINE_H2D ? "H2D" : "D2H");
	return 0;
}

static int cuda_copy_on_device(struct tmm_backend *be, void *dst,
			       const void *src, size_t bytes)
{
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if (bytes == 0)
		return 0;
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
			    s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return cuda_fail(be, e,
				 "cudaMemcpyAsync(%zu bytes, device to device)",
				 bytes);
	return 0;
}

/*
 * cudaMemcpy runs on the legacy default stream, which our non-blocking
 * streams do not order against, hence the explicit wait for compute.
 */
static int cuda_copy_sync(struct tmm_backend *be, void *dst, const void *src,
			  size_t bytes, bool to_device)
{
	struct cuda_state *s = st_of(be);
	const char *dir = to_device ? "to device" : "to host";
	cudaError_t e;

	if (bytes == 0)
		return 0;
	e = cudaStreamSynchronize(s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return cuda_fail(be, e, "cudaStreamSynchronize(compute) "
				 "before a copy %s", dir);
	e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
	if (e != cudaSuccess)
		return cuda_fail(be, e, "cudaMemcpy(%zu bytes %s)", bytes,
				 dir);
	return 0;
}

/* ------------------------------------------------------------------------
 * Managed ranges
 * ---------------------------------------------------------------------- */

/* The message for an engine number out of range. */
static int bad_engine(struct tmm_backend *be, const char *what,
		      enum tmm_engine engine)
{
	return tmm_backend_fail(be, -EINVAL, "%s: no engine %d", what,
				(int)engine);
}

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
 * Migrates a managed range on `engine`'s stream.  To the host it goes to
 * `numa_node` when >= 0; a driver that refuses host NUMA locations (old
 * driver, no HMM) gets plain host from then on: placement is a hint, the
 * migration is what counts.
 */
static int cuda_prefetch(struct tmm_backend *be, enum tmm_engine engine,
			 void *ptr, size_t bytes, enum tmm_location to,
			 int numa_node)
{
	struct cuda_state *s = st_of(be);
	const char *where = to == TMM_LOC_DEVICE ? "device" : "host";
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return bad_engine(be, "prefetch", engine);
	if (bytes == 0)
		return 0;
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
		return cuda_fail(be, e,
				 "cudaMemPrefetchAsync(%p, %zu bytes, %s, "
				 "node %d)", ptr, bytes, where, numa_node);
	return 0;
}

static int cuda_advise(struct tmm_backend *be, void *ptr, size_t bytes,
		       enum tmm_advice advice)
{
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
		return cuda_fail(be, e,
				 "cudaMemAdvise(%p, %zu bytes, advice %d)",
				 ptr, bytes, (int)a);
	return 0;
}

/*
 * Drops a managed range's contents without writing them back.  It is
 * queued on the compute stream because that is where the range's last
 * reader ran: the discard must come after it.
 */
static int cuda_discard(struct tmm_backend *be, void *ptr, size_t bytes)
{
#if CUDART_VERSION >= 13000
	struct cuda_state *s = st_of(be);
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
	e = cudaMemDiscardBatchAsync(ptrs, sizes, 1, 0,
				     s->stream[TMM_ENGINE_COMPUTE]);
	if (e != cudaSuccess)
		return cuda_fail(be, e,
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
 * work that uses it has finished (without concurrent managed access, any
 * running kernel forbids it), so a host access waits for the device.
 */
static int cuda_managed_access(struct tmm_backend *be,
			       const struct tmm_managed_range *ranges,
			       unsigned n)
{
	cudaError_t e;

	for (unsigned i = 0; i < n; i++) {
		if (!ranges[i].by_host)
			continue;
		e = cudaDeviceSynchronize();
		if (e != cudaSuccess)
			return cuda_fail(be, e, "cudaDeviceSynchronize before "
					 "the host touches managed memory");
		break;
	}
	return 0;
}

/* The driver's use of device memory cannot be capped from here. */
static int cuda_managed_limit(struct tmm_backend *be, uint64_t bytes)
{
	(void)be;
	(void)bytes;
	return 0;
}

/* The driver keeps its own books (nvidia-smi, nsys): report zeros. */
static int cuda_managed_stats(struct tmm_backend *be,
			      struct tmm_managed_stats *st)
{
	(void)be;
	if (st)
		memset(st, 0, sizeof(*st));
	return 0;
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
	struct cuda_state *s = st_of(be);
	cudaEvent_t ce;
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return bad_engine(be, "event_record", engine);
	if (s->nspare > 0) {
		ce = s->spare[--s->nspare];
	} else {
		e = cudaEventCreateWithFlags(&ce, cudaEventDisableTiming);
		if (e != cudaSuccess)
			return cuda_fail(be, e, "cudaEventCreateWithFlags");
	}
	e = cudaEventRecord(ce, s->stream[engine]);
	if (e != cudaSuccess) {
		s->spare[s->nspare++] = ce;
		return cuda_fail(be, e, "cudaEventRecord(engine %d)",
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
	cudaError_t e;

	if (!ev->valid || !ev->native)
		return 1;
	e = cudaEventQuery((cudaEvent_t)ev->native);
	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady)
		return 0;
	return cuda_fail(be, e, "cudaEventQuery(engine %d)", (int)ev->engine);
}

static int cuda_event_sync(struct tmm_backend *be, const tmm_event *ev)
{
	cudaError_t e;

	if (!ev->valid || !ev->native)
		return 0;
	e = cudaEventSynchronize((cudaEvent_t)ev->native);
	if (e != cudaSuccess)
		return cuda_fail(be, e, "cudaEventSynchronize(engine %d)",
				 (int)ev->engine);
	return 0;
}

static int cuda_engine_wait(struct tmm_backend *be, enum tmm_engine engine,
			    const tmm_event *ev)
{
	struct cuda_state *s = st_of(be);
	cudaError_t e;

	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return bad_engine(be, "engine_wait", engine);
	/* Complete by definition, or already ordered by the stream itself. */
	if (!ev->valid || !ev->native || ev->engine == engine)
		return 0;
	e = cudaStreamWaitEvent(s->stream[engine], (cudaEvent_t)ev->native, 0);
	if (e != cudaSuccess)
		return cuda_fail(be, e, "cudaStreamWaitEvent(engine %d waits "
				 "for engine %d)", (int)engine,
				 (int)ev->engine);
	return 0;
}

static void cuda_event_release(struct tmm_backend *be, tmm_event *ev)
{
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
 * answers the durations at the iteration's end.
 */
static int cuda_kernel_begin(struct tmm_backend *be,
			     const struct tmm_cost *cost)
{
	char err[200];
	int rc;

	(void)cost;
	rc = tmm_cuda_timing_begin(st_of(be)->timing, err, sizeof(err));
	if (rc < 0)
		return tmm_backend_fail(be, rc, "timing an op: %s", err);
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
	if (rc < 0)
		return tmm_backend_fail(be, rc, "timing an op: %s", err);
	return 0;
}

static uint64_t cuda_kernel_id(struct tmm_backend *be)
{
	return tmm_cuda_timing_last(st_of(be)->timing);
}

static int cuda_kernel_times(struct tmm_backend *be, const uint64_t *ids,
			     uint64_t *ns, uint32_t n)
{
	char err[200];
	int rc;

	rc = tmm_cuda_timing_collect(st_of(be)->timing, ids, ns, n, err,
				     sizeof(err));
	if (rc < 0)
		return tmm_backend_fail(be, rc, "reading op times: %s", err);
	return 0;
}

static void *cuda_compute_stream(struct tmm_backend *be)
{
	return st_of(be)->stream[TMM_ENGINE_COMPUTE];
}

static uint64_t cuda_now_ns(struct tmm_backend *be)
{
	struct timespec ts;

	(void)be;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const struct tmm_backend_ops tmm_backend_cuda_ops = {
	.name = "cuda",
	.open = cuda_open,
	.close = cuda_close,
	.dev_alloc = cuda_dev_alloc,
	.dev_free = cuda_dev_free,
	.managed_alloc = cuda_managed_alloc,
	.managed_free = cuda_managed_free,
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.copy_async = cuda_copy_async,
	.copy_sync = cuda_copy_sync,
	.copy_on_device = cuda_copy_on_device,
	.prefetch = cuda_prefetch,
	.advise = cuda_advise,
	.discard = cuda_discard,
	.managed_access = cuda_managed_access,
	.managed_limit = cuda_managed_limit,
	.managed_stats = cuda_managed_stats,
	.event_record = cuda_event_record,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.engine_wait = cuda_engine_wait,
	.event_release = cuda_event_release,
	.kernel_begin = cuda_kernel_begin,
	.kernel_end = cuda_kernel_end,
	.kernel_id = cuda_kernel_id,
	.kernel_times = cuda_kernel_times,
	.op_estimate_ns = cuda_op_estimate_ns,
	.compute_stream = cuda_compute_stream,
	.now_ns = cuda_now_ns,
};
