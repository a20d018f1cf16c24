/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_copy.c — the swap engine's copy bandwidth against the peak
 * of plain pinned cudaMemcpyAsync.
 *
 * Peak: cudaMallocHost buffers, cudaMemcpyAsync on one stream, each
 * direction alone.  Swap engine: the cuda backend as the runtime drives
 * it (host buffers placed on the GPU's NUMA node and registered, copies
 * on the H2D and D2H engines' streams, completion by recorded events).
 * Both move the same bytes in the same chunk size; the best of several
 * rounds is kept.  A swap engine much below the peak means the placement
 * or the streams cost bandwidth.
 *
 *   bench/bench_cuda_copy [--mib N] [--chunk-mib N] [--min-ratio R]
 *
 * Exit status: 0, 1 when either direction of the swap engine reaches
 * less than R (default 0.8) of the peak or on an error, 77 without a GPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lib/backend/backend.h"
#include "lib/backend/backend_open.h"
#include "clock.h"
#include "cuda_check.h"
#include "lib/base/tunables.h"

#define ROUNDS 5

#define cuda_check(e, call) bench_cuda_check("bench_cuda_copy", e, call)

/* GB/s of the best round of `total` bytes in `chunk` pieces, plain. */
static int peak(void *dev, void *host, size_t total, size_t chunk,
		bool to_device, double *gbps)
{
	cudaStream_t s;
	double best = 0;

	if (cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
		       "cudaStreamCreateWithFlags"))
		return -1;
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = bench_now_s(), dt;

		for (size_t off = 0; off < total; off += chunk) {
			char *d = (char *)dev + off, *h = (char *)host + off;
			cudaError_t e = to_device
				? cudaMemcpyAsync(d, h, chunk,
						  cudaMemcpyHostToDevice, s)
				: cudaMemcpyAsync(h, d, chunk,
						  cudaMemcpyDeviceToHost, s);

			if (cuda_check(e, "cudaMemcpyAsync"))
				return -1;
		}
		if (cuda_check(cudaStreamSynchronize(s),
			       "cudaStreamSynchronize"))
			return -1;
		dt = bench_now_s() - t0;
		if (total / dt / 1e9 > best)
			best = total / dt / 1e9;
	}
	cudaStreamDestroy(s);
	*gbps = best;
	return 0;
}

/* The same through the backend's copy engines and events. */
static int engine(struct tmm_backend *be, void *dev, void *host,
		  size_t total, size_t chunk, bool to_device, double *gbps)
{
	enum tmm_engine eng = to_device ? TMM_ENGINE_H2D : TMM_ENGINE_D2H;
	double best = 0;

	for (int r = 0; r < ROUNDS; r++) {
		double t0 = bench_now_s(), dt;
		tmm_event ev = { 0 };

		for (size_t off = 0; off < total; off += chunk) {
			char *d = (char *)dev + off, *h = (char *)host + off;
			int rc = to_device
				? be->ops->copy_async(be, eng, d, h, chunk)
				: be->ops->copy_async(be, eng, h, d, chunk);

			if (rc < 0) {
				fprintf(stderr, "bench_cuda_copy: %s\n",
					be->error);
				return -1;
			}
		}
		if (be->ops->event_record(be, eng, &ev) < 0 ||
		    be->ops->event_sync(be, &ev) < 0) {
			fprintf(stderr, "bench_cuda_copy: %s\n", be->error);
			return -1;
		}
		be->ops->event_release(be, &ev);
		dt = bench_now_s() - t0;
		if (total / dt / 1e9 > best)
			best = total / dt / 1e9;
	}
	*gbps = best;
	return 0;
}

static int parse(const char *v, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return errno || *end || end == v || *out < lo || *out > hi ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct tmm_backend be = { 0 };
	struct tmm_config cfg;
	double mib = 1024, chunk_mib = 64, min_ratio = 0.8;
	double p_in, p_out, e_in, e_out;
	size_t total, chunk;
	void *dev = NULL, *plain = NULL, *placed = NULL;
	char err[256];
	int n = 0, status = 1;

	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		int bad;

		if (!strcmp(a, "--mib"))
			bad = parse(v, 1, 1 << 20, &mib);
		else if (!strcmp(a, "--chunk-mib"))
			bad = parse(v, 1, 1 << 20, &chunk_mib);
		else if (!strcmp(a, "--min-ratio"))
			bad = parse(v, 0, 10, &min_ratio);
		else
			bad = -1;
		if (bad) {
			fprintf(stderr, "usage: bench_cuda_copy [--mib N] "
				"[--chunk-mib N] [--min-ratio R]\n");
			return 2;
		}
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		printf("bench_cuda_copy: no CUDA device; skipped\n");
		return 77;
	}
	chunk = (size_t)chunk_mib << 20;
	total = ((size_t)mib << 20) / chunk * chunk;
	if (total == 0) {
		fprintf(stderr, "bench_cuda_copy: --mib is below one chunk\n");
		return 2;
	}

	if (tmm_config_load(&cfg, "backend=cuda", err, sizeof(err)) < 0 ||
	    tmm_backend_open(&be, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_cuda_copy: %s\n", err);
		return 1;
	}
	if (cuda_check(cudaMalloc(&dev, total), "cudaMalloc") ||
	    cuda_check(cudaMallocHost(&plain, total), "cudaMallocHost"))
		goto out;
	if (be.ops->host_alloc(&be, total, cfg.host_numa_node >= 0
					      ? cfg.host_numa_node
					      : be.info.numa_node,
			       &placed) < 0) {
		fprintf(stderr, "bench_cuda_copy: %s\n", be.error);
		goto out;
	}
	memset(plain, 1, total);
	memset(placed, 1, total);
	if (peak(dev, plain, total, chunk, true, &p_in) ||
	    peak(dev, plain, total, chunk, false, &p_out) ||
	    engine(&be, dev, placed, total, chunk, true, &e_in) ||
	    engine(&be, dev, placed, total, chunk, false, &e_out))
		goto out;

	printf("%s, NUMA node %d, %zu MiB in %zu MiB chunks, best of %d\n",
	       be.info.name, be.info.numa_node, total >> 20, chunk >> 20,
	       ROUNDS);
	printf("  host to device: peak %6.2f GB/s, swap engine %6.2f GB/s "
	       "(%.0f%%)\n", p_in, e_in, 100 * e_in / p_in);
	printf("  device to host: peak %6.2f GB/s, swap engine %6.2f GB/s "
	       "(%.0f%%)\n", p_out, e_out, 100 * e_out / p_out);
	status = e_in >= min_ratio * p_in && e_out >= min_ratio * p_out
			 ? 0
			 : 1;
	if (status)
		printf("  below %.0f%% of the peak\n", 100 * min_ratio);
out:
	if (placed)
		be.ops->host_free(&be, placed, total);
	cudaFreeHost(plain);
	cudaFree(dev);
	tmm_backend_close(&be);
	return status;
}
