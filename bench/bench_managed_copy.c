/* SPDX-License-Identifier: MIT */
/*
 * bench_managed_copy.c — whether a copy of managed memory holds the host.
 *
 * On the H200, every step of mode=uvm by its copy way took the
 * unconstrained step plus its copies, as if kernels and copies ran one
 * after the other, where swap mode's copies of cudaMalloc'd memory hid
 * under the kernels (docs/gpu-h200-goals.md).  CUDA's runtime documents
 * transfers involving Unified Memory as synchronous with respect to the
 * host.  This program measures it, beside the copy of plain device memory
 * that swap mode makes:
 *
 *  - alone: how long the host spent in cudaMemcpyAsync, against how long
 *    the copy ran on the device (events), each way, from a device buffer
 *    and from managed memory on the device;
 *  - beside work: with a run of memsets queued first on another stream
 *    (the stand-in for kernels), how long the copy call held the host,
 *    and whether work and copy together took the longer of the two
 *    (overlap) or their sum.
 *
 * A call that holds the host about as long as its copy runs is what the
 * forecast's uvm_copies_serial assumes.  Best (least) of several rounds.
 *
 *   bench/bench_managed_copy [--mib N]
 *
 * Exit status: 0, 1 on a CUDA error, 2 for a wrong option, 77 without a
 * GPU.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "clock.h"
#include "cuda_check.h"

#define ROUNDS 5
/* Memsets of the work buffer queued before the copy: enough to outlast
 * it several times over on any GPU this library targets. */
#define WORK_SETS 40

#define cuda_check(e, call) bench_cuda_check("bench_managed_copy", e, call)

struct buffers {
	void *dev, *managed, *host, *work;
	size_t bytes, work_bytes;
	cudaStream_t copy, compute;
	cudaEvent_t a, b, w0, w1;
};

/* What one measurement gave, in ms: the host's time in the call, and
 * the copy's on the device. */
struct sample {
	double call_ms, copy_ms;
};

/* Queues the run of memsets that stands in for kernels on `compute`. */
static int queue_work(struct buffers *b)
{
	for (int i = 0; i < WORK_SETS; i++)
		if (cuda_check(cudaMemsetAsync(b->work, i & 0xff, b->work_bytes,
					       b->compute),
			       "cudaMemsetAsync"))
			return -1;
	return 0;
}

/*
 * One copy between `dev_side` and the pinned buffer, `to_host` or not,
 * with the work queued first on the compute stream when `beside`: the
 * host's time in the call and the copy's time on the device, in *s.
 */
static int copy_once(struct buffers *b, void *dev_side, bool to_host,
		     bool beside, struct sample *s)
{
	double t0, t1;
	float ms;

	if (cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
		return -1;
	if (beside && queue_work(b))
		return -1;
	if (cuda_check(cudaEventRecord(b->a, b->copy), "cudaEventRecord"))
		return -1;
	t0 = bench_now_s();
	if (cuda_check(cudaMemcpyAsync(to_host ? b->host : dev_side,
				       to_host ? dev_side : b->host, b->bytes,
				       cudaMemcpyDefault, b->copy),
		       "cudaMemcpyAsync"))
		return -1;
	t1 = bench_now_s();
	if (cuda_check(cudaEventRecord(b->b, b->copy), "cudaEventRecord") ||
	    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
	    cuda_check(cudaEventElapsedTime(&ms, b->a, b->b),
		       "cudaEventElapsedTime"))
		return -1;
	s->call_ms = (t1 - t0) * 1e3;
	s->copy_ms = ms;
	return 0;
}

/* The least of ROUNDS samples, each field on its own. */
static int best_of(struct buffers *b, void *dev_side, bool to_host,
		   bool beside, struct sample *best)
{
	struct sample s;

	for (int r = 0; r < ROUNDS; r++) {
		if (copy_once(b, dev_side, to_host, beside, &s))
			return -1;
		if (r == 0 || s.call_ms < best->call_ms)
			best->call_ms = s.call_ms;
		if (r == 0 || s.copy_ms < best->copy_ms)
			best->copy_ms = s.copy_ms;
	}
	return 0;
}

/* The work alone, on the device, in ms (least of ROUNDS). */
static int work_alone(struct buffers *b, double *out)
{
	float ms;

	for (int r = 0; r < ROUNDS; r++) {
		if (cuda_check(cudaEventRecord(b->w0, b->compute),
			       "cudaEventRecord") ||
		    queue_work(b) ||
		    cuda_check(cudaEventRecord(b->w1, b->compute),
			       "cudaEventRecord") ||
		    cuda_check(cudaEventSynchronize(b->w1),
			       "cudaEventSynchronize") ||
		    cuda_check(cudaEventElapsedTime(&ms, b->w0, b->w1),
			       "cudaEventElapsedTime"))
			return -1;
		if (r == 0 || ms < *out)
			*out = ms;
	}
	return 0;
}

static int setup(struct buffers *b, size_t bytes)
{
	int device;

	memset(b, 0, sizeof(*b));
	b->bytes = bytes;
	b->work_bytes = 4 * bytes;
	if (cuda_check(cudaGetDevice(&device), "cudaGetDevice") ||
	    cuda_check(cudaMalloc(&b->dev, bytes), "cudaMalloc") ||
	    cuda_check(cudaMalloc(&b->work, b->work_bytes), "cudaMalloc") ||
	    cuda_check(cudaMallocManaged(&b->managed, bytes,
					 cudaMemAttachGlobal),
		       "cudaMallocManaged") ||
	    cuda_check(cudaMallocHost(&b->host, bytes), "cudaMallocHost") ||
	    cuda_check(cudaStreamCreateWithFlags(&b->copy,
						 cudaStreamNonBlocking),
		       "cudaStreamCreateWithFlags") ||
	    cuda_check(cudaStreamCreateWithFlags(&b->compute,
						 cudaStreamNonBlocking),
		       "cudaStreamCreateWithFlags") ||
	    cuda_check(cudaEventCreate(&b->a), "cudaEventCreate") ||
	    cuda_check(cudaEventCreate(&b->b), "cudaEventCreate") ||
	    cuda_check(cudaEventCreate(&b->w0), "cudaEventCreate") ||
	    cuda_check(cudaEventCreate(&b->w1), "cudaEventCreate"))
		return -1;
	memset(b->host, 3, bytes);
	/* The managed pages made and on the device, as mode=uvm's are when
	 * it copies them out. */
	return cuda_check(cudaMemset(b->managed, 3, bytes), "cudaMemset") ||
	       cuda_check(cudaMemset(b->dev, 3, bytes), "cudaMemset") ||
	       cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static void teardown(struct buffers *b)
{
	cudaEvent_t events[] = { b->a, b->b, b->w0, b->w1 };
	cudaStream_t streams[] = { b->copy, b->compute };

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i])
			cudaEventDestroy(events[i]);
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
		if (streams[i])
			cudaStreamDestroy(streams[i]);
	cudaFreeHost(b->host);
	cudaFree(b->managed);
	cudaFree(b->work);
	cudaFree(b->dev);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		bool managed, to_host;
	} rows[] = {
		{ "device memory to host", false, true },
		{ "managed memory to host", true, true },
		{ "host to device memory", false, false },
		{ "host to managed memory", true, false },
	};
	struct buffers b;
	double work_ms = 0;
	int n = 0, status = 1;
	long mib = 64;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
			mib = strtol(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: bench_managed_copy [--mib N]\n");
			return 2;
		}
	}
	if (mib <= 0 || mib > 4096) {
		fprintf(stderr, "bench_managed_copy: --mib must be 1 to 4096\n");
		return 2;
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		printf("bench_managed_copy: no CUDA device; skipped\n");
		return 77;
	}
	if (setup(&b, (size_t)mib << 20) || work_alone(&b, &work_ms))
		goto out;
	printf("Whether a copy of managed memory holds the host: %ld MiB, "
	       "pinned host buffer, best of %d.\nBeside: %d memsets of %ld "
	       "MiB queued first on another stream, %.2f ms alone on the "
	       "device.\n\n", mib, ROUNDS, WORK_SETS, 4 * mib, work_ms);
	printf("| copy | copy ms | call ms alone | held alone | call ms "
	       "beside | held beside |\n|---|---:|---:|---|---:|---|\n");
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		void *side = rows[r].managed ? b.managed : b.dev;
		struct sample alone, beside;

		if (best_of(&b, side, rows[r].to_host, false, &alone) ||
		    best_of(&b, side, rows[r].to_host, true, &beside))
			goto out;
		/* Held: the call lasted half the copy or more. */
		printf("| %s | %.2f | %.3f | %s | %.3f | %s |\n", rows[r].name,
		       alone.copy_ms, alone.call_ms,
		       alone.call_ms >= 0.5 * alone.copy_ms ? "yes" : "no",
		       beside.call_ms,
		       beside.call_ms >= 0.5 * alone.copy_ms ? "yes" : "no");
	}
	printf("\n*held beside*: the call lasted half the copy or more with "
	       "work on another stream; a call that waits for that work too "
	       "lasts about %.2f ms more.\n", work_ms);
	status = 0;
out:
	teardown(&b);
	return status;
}
