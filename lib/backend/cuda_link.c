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
 */
#include <stdio.h>

#include "cuda_link.h"

#define BIG ((size_t)32 << 20)
#define SMALL ((size_t)4 << 10)

/* The time of one copy of `bytes` on `stream`, in ms, into *ms. */
static cudaError_t time_copy(void *dst, const void *src, size_t bytes,
			     cudaStream_t stream, float *ms)
{
	cudaEvent_t a = NULL, b = NULL;
	cudaError_t e = cudaEventCreate(&a);

	if (e == cudaSuccess)
		e = cudaEventCreate(&b);
	if (e == cudaSuccess)
		e = cudaEventRecord(a, stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
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

/* GB/s and ns of latency of one direction, from the two copy times. */
static cudaError_t measure(void *dst, const void *src, cudaStream_t stream,
			   double *gbps, uint64_t *latency_ns)
{
	float warm, small, big;
	cudaError_t e = time_copy(dst, src, SMALL, stream, &warm);

	if (e == cudaSuccess)
		e = time_copy(dst, src, SMALL, stream, &small);
	if (e == cudaSuccess)
		e = time_copy(dst, src, BIG, stream, &big);
	if (e != cudaSuccess)
		return e;
	if (big <= small)
		return cudaErrorUnknown; /* a clock that tells nothing */
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
	cudaError_t e = cudaMalloc(&dev, BIG);

	if (e == cudaSuccess)
		e = cudaMallocHost(&host, BIG);
	if (e == cudaSuccess)
		e = measure(dev, host, h2d, &in, &lat_in);
	if (e == cudaSuccess)
		e = measure(host, dev, d2h, &out, &lat_out);
	if (dev)
		(void)cudaFree(dev);
	if (host)
		(void)cudaFreeHost(host);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(info->link, sizeof(info->link),
			 "%.0f GB/s, estimated (measuring failed: %s)",
			 info->h2d_gbps, cudaGetErrorName(e));
		return;
	}
	info->h2d_gbps = in;
	info->d2h_gbps = out;
	info->copy_latency_ns = (lat_in + lat_out) / 2;
	snprintf(info->link, sizeof(info->link),
		 "%.1f GB/s to the device, %.1f GB/s to the host, %llu ns a "
		 "copy (pinned copies of %zu MiB, measured at open)",
		 in, out, (unsigned long long)info->copy_latency_ns,
		 BIG >> 20);
}
