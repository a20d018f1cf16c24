/* SPDX-License-Identifier: MIT */
/*
 * cuda_link.c — the host link's speed, measured when the cuda backend
 * opens, for the planners' swap times (issue #20: it was fixed at 12 GB/s,
 * Capuchin's PCIe 3.0 figure, whatever the link).
 *
 * Pinned copies of two sizes in each direction on the backend's own copy
 * streams, timed by events: the slope between them is the bandwidth, what
 * is left of the small one's time the fixed cost of a copy.  A copy is
 * made first to wake the link.  Where the buffers cannot be had (a small
 * or full device), the estimate stays, and the reason is kept.
 *
 * Managed memory has paths of its own, and on the H100 they were far
 * apart (docs/gpu-h100.md): a prefetch to the host moved 8.7 GB/s where a
 * pinned copy moved 55.  mode=uvm chooses how to evict by these rates, so
 * they are measured too: one managed buffer, timed as a prefetch makes
 * its pages on the device, sends them to the host and brings them back.
 *
 * And where mode=uvm copies managed memory by the library's own kernel
 * (uvm_copier=kernel, cuda_copier.h), that kernel's rate is its own: it
 * reads or writes pinned host memory over the link from a few blocks, a
 * round trip a load, where a copy engine streams.  So it is timed the
 * way the pinned copies are, between pinned and managed buffers, and the
 * forecast moves the copy way's bytes at its rate (guide_input.c).
 * Unless a count is asked for, its blocks are chosen by the same timing:
 * the fewest that bring the link near the pinned copies' rate.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cuda_copier.h"
#include "cuda_link.h"

#define BIG ((size_t)32 << 20)
#define SMALL ((size_t)4 << 10)

/* One piece of work to time, issued on the stream it is timed on. */
typedef cudaError_t (*issue_fn)(const void *work, cudaStream_t stream);

/* The time `issue` takes on `stream`, in ms, into *ms: a pair of events
 * around it, waited for. */
static cudaError_t time_on(issue_fn issue, const void *work,
			   cudaStream_t stream, float *ms)
{
	cudaEvent_t a = NULL, b = NULL;
	cudaError_t e = cudaEventCreate(&a);

	if (e == cudaSuccess)
		e = cudaEventCreate(&b);
	if (e == cudaSuccess)
		e = cudaEventRecord(a, stream);
	if (e == cudaSuccess)
		e = issue(work, stream);
	if (e == cudaSuccess)
		e = cudaEventRecord(b, stream);
	if (e == cudaSuccess)
		e = cudaEventSynchronize(b);
	if (e == cudaSuccess)
		e = cudaEventElapsedTime(ms, a, b);
	if (a)
		(void)cudaEventDestroy(a);
	if (b)
		(void)cudaEventDestroy(b);
	return e;
}

/* A copy by the runtime (kernel NULL) or by the copy kernel. */
struct copy_work {
	struct tmm_cuda_copier *kernel;
	void *dst;
	const void *src;
	size_t bytes;
};

static cudaError_t issue_copy(const void *work, cudaStream_t stream)
{
	const struct copy_work *c = work;

	if (c->kernel)
		return tmm_cuda_copier_launch(c->kernel, c->dst, c->src,
					      c->bytes, stream);
	return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDefault,
			       stream);
}

/* The time of one copy of `bytes` on `stream`, in ms, into *ms. */
static cudaError_t time_copy(struct tmm_cuda_copier *kernel, void *dst,
			     const void *src, size_t bytes,
			     cudaStream_t stream, float *ms)
{
	struct copy_work c = { kernel, dst, src, bytes };

	return time_on(issue_copy, &c, stream, ms);
}

/*
 * Best of ROUNDS: one copy's time is at the mercy of whatever else the
 * device or the bus is finishing (a context just destroyed, another
 * process).  On the H200 one sample gave 20 GB/s where the link moves 54,
 * and once a 4 KiB copy outlasted a 32 MiB one.
 */
#define ROUNDS 3

/* GB/s and ns of latency of one direction, from the best times of small
 * and large copies (by `kernel`, or the runtime's where NULL); *flat set
 * when the large were no slower (a clock that tells nothing:
 * cudaErrorUnknown returned). */
static cudaError_t measure(struct tmm_cuda_copier *kernel, void *dst,
			   const void *src, cudaStream_t stream, double *gbps,
			   uint64_t *latency_ns, bool *flat)
{
	float warm, small = 0, big = 0, ms;
	cudaError_t e = time_copy(kernel, dst, src, SMALL, stream, &warm);

	for (int r = 0; e == cudaSuccess && r < ROUNDS; r++) {
		e = time_copy(kernel, dst, src, SMALL, stream, &ms);
		if (e == cudaSuccess && (r == 0 || ms < small))
			small = ms;
		if (e == cudaSuccess)
			e = time_copy(kernel, dst, src, BIG, stream, &ms);
		if (e == cudaSuccess && (r == 0 || ms < big))
			big = ms;
	}
	if (e != cudaSuccess)
		return e;
	if (big <= small) {
		*flat = true;
		return cudaErrorUnknown;
	}
	*gbps = (double)(BIG - SMALL) / ((double)(big - small) * 1e6);
	*latency_ns = small * 1e6 > SMALL / *gbps
			      ? (uint64_t)(small * 1e6 - SMALL / *gbps)
			      : 0;
	return cudaSuccess;
}

void tmm_cuda_link_measure(struct tmm_device_info *info,
			   cudaStream_t h2d, cudaStream_t d2h)
{
	void *dev = NULL, *host = NULL;
	uint64_t lat_in = 0, lat_out = 0;
	double in = 0, out = 0;
	bool flat = false;
	cudaError_t e = cudaMalloc(&dev, BIG);

	if (e == cudaSuccess)
		e = cudaMallocHost(&host, BIG);
	if (e == cudaSuccess)
		e = measure(NULL, dev, host, h2d, &in, &lat_in, &flat);
	if (e == cudaSuccess)
		e = measure(NULL, host, dev, d2h, &out, &lat_out, &flat);
	if (dev)
		(void)cudaFree(dev);
	if (host)
		(void)cudaFreeHost(host);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(info->link, sizeof(info->link),
			 "%.0f GB/s, estimated (measuring failed: %s)",
			 info->h2d_gbps,
			 flat ? "the large copies were no slower than the "
				"small ones"
			      : cudaGetErrorName(e));
		return;
	}
	info->h2d_gbps = in;
	info->d2h_gbps = out;
	info->copy_latency_ns = (lat_in + lat_out) / 2;
	snprintf(info->link, sizeof(info->link),
		 "%.1f GB/s to the device, %.1f GB/s to the host, %llu ns a "
		 "copy (pinned copies of %zu MiB, best of %d, measured at "
		 "open)",
		 in, out, (unsigned long long)info->copy_latency_ns,
		 BIG >> 20, ROUNDS);
}

/* The copy kernel's rate each way at its blocks now, into *in, *out. */
static cudaError_t measure_kernel_rates(struct tmm_cuda_copier *kernel,
					void *managed, void *host,
					cudaStream_t h2d, cudaStream_t d2h,
					double *in, double *out, bool *flat)
{
	uint64_t latency_ns = 0;
	cudaError_t e = measure(kernel, managed, host, h2d, in, &latency_ns,
				flat);

	if (e == cudaSuccess)
		e = measure(kernel, host, managed, d2h, out, &latency_ns,
			    flat);
	return e;
}

/*
 * uvm_copier_blocks=0: the fewest blocks of blocks_tried whose rate both
 * ways reaches KERNEL_ENOUGH of the pinned copies', else the fastest.
 * More blocks than the link needs only take multiprocessors from the
 * kernels beside the copies; fewer leave the link idle, since each
 * thread waits a round trip over it for each load.
 */
static const unsigned blocks_tried[] = { 4, 8, 16, 32, 64 };
#define KERNEL_ENOUGH 0.9

static double slower(double a, double b)
{
	return a < b ? a : b;
}

static cudaError_t choose_kernel_blocks(struct tmm_device_info *info,
					struct tmm_cuda_copier *kernel,
					void *managed, void *host,
					cudaStream_t h2d, cudaStream_t d2h,
					double *in, double *out, bool *flat)
{
	double enough = KERNEL_ENOUGH * slower(info->h2d_gbps, info->d2h_gbps);
	double best_in = 0, best_out = 0, i = 0, o = 0;
	unsigned best = 0;
	cudaError_t e = cudaSuccess;

	for (size_t k = 0; e == cudaSuccess &&
			   k < sizeof(blocks_tried) / sizeof(blocks_tried[0]);
	     k++) {
		tmm_cuda_copier_set_blocks(kernel, blocks_tried[k]);
		e = measure_kernel_rates(kernel, managed, host, h2d, d2h, &i,
					 &o, flat);
		if (e != cudaSuccess)
			break;
		if (!best || slower(i, o) > slower(best_in, best_out)) {
			best = blocks_tried[k];
			best_in = i;
			best_out = o;
		}
		if (slower(best_in, best_out) >= enough)
			break;
	}
	tmm_cuda_copier_set_blocks(kernel, best ? best : 16);
	*in = best_in;
	*out = best_out;
	return e;
}

void tmm_cuda_link_measure_kernel(struct tmm_device_info *info,
				  struct tmm_cuda_copier *kernel,
				  unsigned blocks, cudaStream_t h2d,
				  cudaStream_t d2h)
{
	void *managed = NULL, *host = NULL;
	double in = 0, out = 0;
	bool flat = false;
	size_t len = strlen(info->managed_copier);
	cudaError_t e = cudaMallocManaged(&managed, BIG, cudaMemAttachGlobal);

	/* Until measured, the pinned copies' rates. */
	info->kernel_copy_h2d_gbps = info->h2d_gbps;
	info->kernel_copy_d2h_gbps = info->d2h_gbps;
	if (e == cudaSuccess)
		e = cudaMallocHost(&host, BIG);
	/* In first: the warming copy makes the managed pages on the device,
	 * where the copy way's evictions find them. */
	if (e == cudaSuccess && blocks)
		e = measure_kernel_rates(kernel, managed, host, h2d, d2h, &in,
					 &out, &flat);
	else if (e == cudaSuccess)
		e = choose_kernel_blocks(info, kernel, managed, host, h2d, d2h,
					 &in, &out, &flat);
	if (managed)
		(void)cudaFree(managed);
	if (host)
		(void)cudaFreeHost(host);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		if (!blocks)
			tmm_cuda_copier_set_blocks(kernel, 16);
		info->kernel_copy_blocks = tmm_cuda_copier_blocks(kernel);
		snprintf(info->managed_copier + len,
			 sizeof(info->managed_copier) - len,
			 ", at most %u blocks a copy%s; its rate is the pinned "
			 "copies', estimated (measuring it failed: %s)",
			 tmm_cuda_copier_blocks(kernel),
			 blocks ? "" : " (uvm_copier_blocks=0, not chosen)",
			 flat ? "the large copies were no slower"
			      : cudaGetErrorName(e));
		return;
	}
	info->kernel_copy_h2d_gbps = in;
	info->kernel_copy_d2h_gbps = out;
	info->kernel_copy_blocks = tmm_cuda_copier_blocks(kernel);
	snprintf(info->managed_copier + len,
		 sizeof(info->managed_copier) - len,
		 ", at most %u blocks a copy%s, %.1f GB/s to the device, "
		 "%.1f GB/s to the host (%zu MiB, best of %d, measured at "
		 "open)",
		 tmm_cuda_copier_blocks(kernel),
		 blocks ? " (uvm_copier_blocks)"
			: " (uvm_copier_blocks=0: the fewest of 4 to 64 to "
			  "reach 90% of the pinned copies' rate)",
		 in, out, BIG >> 20, ROUNDS);
}

#if CUDART_VERSION >= 12020
#if CUDART_VERSION >= 13000
#define prefetch_to cudaMemPrefetchAsync
#else
#define prefetch_to cudaMemPrefetchAsync_v2
#endif

struct prefetch_work {
	void *p;
	size_t bytes;
	struct cudaMemLocation loc;
};

static cudaError_t issue_prefetch(const void *work, cudaStream_t stream)
{
	const struct prefetch_work *w = work;

	return prefetch_to(w->p, w->bytes, w->loc, 0, stream);
}

/* The time of one prefetch of `bytes` at p to `loc` on `stream`, in ms. */
static cudaError_t time_prefetch(void *p, size_t bytes,
				 struct cudaMemLocation loc,
				 cudaStream_t stream, float *ms)
{
	struct prefetch_work w = { p, bytes, loc };

	return time_on(issue_prefetch, &w, stream, ms);
}

/* GB/s of `bytes` moved in `ms`; 0 for a clock that says nothing. */
static double rate(size_t bytes, float ms)
{
	return ms > 0 ? (double)bytes / ((double)ms * 1e6) : 0;
}

void tmm_cuda_link_measure_managed(struct tmm_device_info *info, int device,
				   cudaStream_t h2d, cudaStream_t d2h)
{
	struct cudaMemLocation dev = { .type = cudaMemLocationTypeDevice,
				       .id = device };
	struct cudaMemLocation host = { .type = cudaMemLocationTypeHost };
	float fresh = 0, out = 0, in = 0;
	void *p = NULL;
	cudaError_t e = cudaMallocManaged(&p, BIG, cudaMemAttachGlobal);

	info->uvm_prefetch_h2d_gbps = info->h2d_gbps;
	info->uvm_prefetch_d2h_gbps = info->d2h_gbps;
	info->uvm_fresh_gbps = 0;
	if (e == cudaSuccess)
		e = time_prefetch(p, BIG, dev, h2d, &fresh);
	if (e == cudaSuccess)
		e = time_prefetch(p, BIG, host, d2h, &out);
	if (e == cudaSuccess)
		e = time_prefetch(p, BIG, dev, h2d, &in);
	if (p)
		(void)cudaFree(p);
	if (e != cudaSuccess || !(out > 0) || !(in > 0)) {
		(void)cudaGetLastError();
		snprintf(info->uvm_paths, sizeof(info->uvm_paths),
			 "the pinned rates, estimated (measuring managed "
			 "prefetches failed: %s)",
			 e != cudaSuccess ? cudaGetErrorName(e)
					  : "a clock that tells nothing");
		return;
	}
	info->uvm_fresh_gbps = rate(BIG, fresh);
	info->uvm_prefetch_d2h_gbps = rate(BIG, out);
	info->uvm_prefetch_h2d_gbps = rate(BIG, in);
	snprintf(info->uvm_paths, sizeof(info->uvm_paths),
		 "prefetch %.1f GB/s to the device, %.1f GB/s to the host, "
		 "%.1f GB/s for fresh pages (%zu MiB managed, measured at "
		 "open)",
		 info->uvm_prefetch_h2d_gbps, info->uvm_prefetch_d2h_gbps,
		 info->uvm_fresh_gbps, BIG >> 20);
}
#else
void tmm_cuda_link_measure_managed(struct tmm_device_info *info, int device,
				   cudaStream_t h2d, cudaStream_t d2h)
{
	(void)device;
	(void)h2d;
	(void)d2h;
	info->uvm_prefetch_h2d_gbps = info->h2d_gbps;
	info->uvm_prefetch_d2h_gbps = info->d2h_gbps;
	info->uvm_fresh_gbps = 0;
	snprintf(info->uvm_paths, sizeof(info->uvm_paths),
		 "the pinned rates, estimated (this CUDA runtime has no "
		 "prefetch by location)");
}
#endif
