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
 * Then two ways around it that mode=uvm could take, each measured so that
 * the next GPU says which is worth building (docs/gpu-h200-goals.md):
 *
 *  - a thread of its own: the managed copy out is called from a second
 *    host thread while this one queues the work.  Whether the work's
 *    queueing is held too (a lock in the runtime), and whether work and
 *    copy then overlap on the device;
 *  - a prefetch beside it: a prefetch of other managed pages to the host
 *    queued on a third stream just before the managed copy out.  Whether
 *    the held copy waits for that migration too, and whether the two
 *    overlap, which a plan mixing the two ways out per tensor needs.
 *
 * Last, the way built since (uvm_copier=kernel, lib/backend/cuda_copier.h):
 * the library's copy kernel, each way, at 4, 16 and 64 blocks a copy.
 * Its rate alone against the copy engine's (the same bytes, device
 * memory, the table above: the bound it is held to), how long its launch
 * held the host, and beside the work: whether the two overlap, and how
 * much longer the work took for the multiprocessors the copy took.
 *
 *   bench/bench_managed_copy [--mib N]
 *
 * Exit status: 0, 1 on a CUDA error, 2 for a wrong option, 77 without a
 * GPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "clock.h"
#include "cuda_check.h"
#include "lib/backend/cuda_copier.h"

#define ROUNDS 5
/* Memsets of the work buffer queued before the copy: enough to outlast
 * it several times over on any GPU this library targets. */
#define WORK_SETS 40

#define cuda_check(e, call) bench_cuda_check("bench_managed_copy", e, call)

struct buffers {
	void *dev, *managed, *host, *work;
	void *other; /* managed pages a prefetch moves beside the copy */
	size_t bytes, work_bytes;
	cudaStream_t copy, compute, migrate;
	cudaEvent_t a, b, w0, w1;
};

/* What one measurement gave, in ms: the host's time in the call, and
 * the copy's on the device. */
struct sample {
	double call_ms, copy_ms;
};

/* The device's time from event `from` to event `to`, in ms. */
static int elapsed(cudaEvent_t from, cudaEvent_t to, double *ms)
{
	float f;

	if (cuda_check(cudaEventElapsedTime(&f, from, to),
		       "cudaEventElapsedTime"))
		return -1;
	*ms = f;
	return 0;
}

/* Keeps the least of a round's figures: round 0 sets it. */
static void least(double *best, double v, int round)
{
	if (round == 0 || v < *best)
		*best = v;
}

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
	    elapsed(b->a, b->b, &s->copy_ms))
		return -1;
	s->call_ms = (t1 - t0) * 1e3;
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
		least(&best->call_ms, s.call_ms, r);
		least(&best->copy_ms, s.copy_ms, r);
	}
	return 0;
}

/* The work alone, on the device, in ms (least of ROUNDS). */
static int work_alone(struct buffers *b, double *out)
{
	double ms;

	for (int r = 0; r < ROUNDS; r++) {
		if (cuda_check(cudaEventRecord(b->w0, b->compute),
			       "cudaEventRecord") ||
		    queue_work(b) ||
		    cuda_check(cudaEventRecord(b->w1, b->compute),
			       "cudaEventRecord") ||
		    cuda_check(cudaEventSynchronize(b->w1),
			       "cudaEventSynchronize") ||
		    elapsed(b->w0, b->w1, &ms))
			return -1;
		least(out, ms, r);
	}
	return 0;
}

/* ---- ways around it ---------------------------------------------------- */

/* What one trial of a way around gave, in ms. */
struct around {
	double held_ms;	  /* the managed copy's call, in its thread */
	double queue_ms;  /* this thread queueing the work (thread way) */
	double copy_ms;	  /* the copy on the device */
	double other_ms;  /* the work, or the prefetch, on the device */
	double both_ms;	  /* from the first start to the last end */
};

/* The managed copy out, timed in the thread that calls it; `calling`
 * says it is about to call (or has failed before: e). */
struct copier {
	struct buffers *b;
	int device;
	atomic_int calling;
	double held_ms;
	cudaError_t e;
};

static void *copy_in_thread(void *arg)
{
	struct copier *c = arg;
	double t0;

	c->e = cudaSetDevice(c->device);
	t0 = bench_now_s();
	atomic_store(&c->calling, 1);
	if (c->e == cudaSuccess)
		c->e = cudaMemcpyAsync(c->b->host, c->b->managed, c->b->bytes,
				       cudaMemcpyDefault, c->b->copy);
	c->held_ms = (bench_now_s() - t0) * 1e3;
	if (c->e == cudaSuccess)
		c->e = cudaEventRecord(c->b->b, c->b->copy);
	return NULL;
}

/*
 * A trial's device times, once its events are recorded: the copy (a to
 * b), the other work (w0 to w1), and both together, from w0, recorded
 * first, to whichever ends last.
 */
static int trial_times(struct buffers *b, struct around *r)
{
	double to_copy_end;

	if (cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
	    elapsed(b->a, b->b, &r->copy_ms) ||
	    elapsed(b->w0, b->w1, &r->other_ms) ||
	    elapsed(b->w0, b->b, &to_copy_end))
		return -1;
	r->both_ms = to_copy_end > r->other_ms ? to_copy_end : r->other_ms;
	return 0;
}

/* One trial: the copy out called from a second thread while this one
 * queues the work on the compute stream. */
static int thread_once(struct buffers *b, struct around *r)
{
	struct copier c = { .b = b };
	pthread_t th;
	double t0;

	if (cuda_check(cudaGetDevice(&c.device), "cudaGetDevice") ||
	    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
	    cuda_check(cudaEventRecord(b->w0, b->compute), "cudaEventRecord") ||
	    cuda_check(cudaEventRecord(b->a, b->copy), "cudaEventRecord"))
		return -1;
	if (pthread_create(&th, NULL, copy_in_thread, &c) != 0) {
		fprintf(stderr, "bench_managed_copy: pthread_create failed\n");
		return -1;
	}
	/* Queue the work while the other thread is in its call: from
	 * 50 us after it enters, well inside a copy of a MiB or more. */
	while (!atomic_load(&c.calling))
		;
	t0 = bench_now_s();
	while (bench_now_s() - t0 < 50e-6)
		;
	t0 = bench_now_s();
	if (queue_work(b) ||
	    cuda_check(cudaEventRecord(b->w1, b->compute), "cudaEventRecord")) {
		pthread_join(th, NULL);
		return -1;
	}
	r->queue_ms = (bench_now_s() - t0) * 1e3;
	pthread_join(th, NULL);
	if (cuda_check(c.e, "cudaMemcpyAsync (its thread)"))
		return -1;
	r->held_ms = c.held_ms;
	return trial_times(b, r);
}

/* One trial: a prefetch of other managed pages to the host on a third
 * stream, then the copy out; the pages go back to the device after. */
static int prefetch_once(struct buffers *b, struct around *r)
{
	struct cudaMemLocation host = { .type = cudaMemLocationTypeHost };
	struct cudaMemLocation dev = { .type = cudaMemLocationTypeDevice };
	double t0;
	int device;

	if (cuda_check(cudaGetDevice(&device), "cudaGetDevice"))
		return -1;
	dev.id = device;
	if (cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
	    cuda_check(cudaEventRecord(b->w0, b->migrate), "cudaEventRecord") ||
	    cuda_check(cudaMemPrefetchAsync(b->other, b->bytes, host, 0,
					    b->migrate),
		       "cudaMemPrefetchAsync") ||
	    cuda_check(cudaEventRecord(b->w1, b->migrate), "cudaEventRecord") ||
	    cuda_check(cudaEventRecord(b->a, b->copy), "cudaEventRecord"))
		return -1;
	t0 = bench_now_s();
	if (cuda_check(cudaMemcpyAsync(b->host, b->managed, b->bytes,
				       cudaMemcpyDefault, b->copy),
		       "cudaMemcpyAsync"))
		return -1;
	r->held_ms = (bench_now_s() - t0) * 1e3;
	r->queue_ms = 0;
	if (cuda_check(cudaEventRecord(b->b, b->copy), "cudaEventRecord") ||
	    trial_times(b, r))
		return -1;
	return cuda_check(cudaMemPrefetchAsync(b->other, b->bytes, dev, 0,
					       b->migrate),
			  "cudaMemPrefetchAsync") ||
	       cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* The least of ROUNDS trials, each field on its own. */
static int best_around(struct buffers *b,
		       int (*once)(struct buffers *, struct around *),
		       struct around *best)
{
	struct around r;

	for (int i = 0; i < ROUNDS; i++) {
		if (once(b, &r))
			return -1;
		least(&best->held_ms, r.held_ms, i);
		least(&best->queue_ms, r.queue_ms, i);
		least(&best->copy_ms, r.copy_ms, i);
		least(&best->other_ms, r.other_ms, i);
		least(&best->both_ms, r.both_ms, i);
	}
	return 0;
}

/* The two ways around, as a table. */
static int ways_around(struct buffers *b)
{
	struct around th, pf;

	if (best_around(b, thread_once, &th) ||
	    best_around(b, prefetch_once, &pf))
		return -1;
	printf("\nWays around it, the managed copy to the host in each (best "
	       "of %d):\n\n", ROUNDS);
	printf("| way | copy ms | other ms | call ms | held | together ms | "
	       "sum ms | overlap |\n|---|---:|---:|---:|---|---:|---:|---|\n");
	printf("| copy from a thread of its own, work queued here | %.2f | "
	       "%.2f | %.3f | %s (queueing here: %.3f ms) | %.2f | %.2f | "
	       "%s |\n", th.copy_ms, th.other_ms, th.held_ms,
	       th.queue_ms >= 0.5 * th.copy_ms ? "this thread too"
					       : "its thread alone",
	       th.queue_ms, th.both_ms, th.copy_ms + th.other_ms,
	       th.both_ms < 0.8 * (th.copy_ms + th.other_ms) ? "yes" : "no");
	printf("| copy after a prefetch of other pages to the host on a "
	       "stream of its own | %.2f | %.2f | %.3f | %s | %.2f | %.2f | "
	       "%s |\n", pf.copy_ms, pf.other_ms, pf.held_ms,
	       pf.held_ms >= 0.5 * pf.other_ms + pf.copy_ms
		       ? "for the prefetch too"
		       : "for the copy alone",
	       pf.both_ms, pf.copy_ms + pf.other_ms,
	       pf.both_ms < 0.8 * (pf.copy_ms + pf.other_ms) ? "yes" : "no");
	printf("\n*other ms*: the work, or the prefetch, on its stream in "
	       "the same trial; *call ms*: the managed copy's call; *held*: "
	       "whether queueing the work here took half the copy or more "
	       "while the other thread was in its copy (a lock in the "
	       "runtime), or whether the copy's call lasted the prefetch "
	       "too; *overlap*: together under 0.8 of the sum.  A thread of "
	       "its own would let mode=uvm's copies hide if it holds its "
	       "thread alone and they overlap; a mix of the two ways out "
	       "per tensor needs the copy to wait for the prefetch neither "
	       "on the host nor on the device.\n");
	return 0;
}

/* ---- the library's copy kernel ------------------------------------------ */

/* One trial of the copy kernel: the copy alone, or (beside) with the work
 * queued first on the compute stream; the work's time too. */
static int kernel_once(struct buffers *b, struct tmm_cuda_copier *k,
		       bool to_host, bool beside, struct around *r)
{
	double t0;

	if (cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
	    cuda_check(cudaEventRecord(b->w0, b->compute), "cudaEventRecord"))
		return -1;
	if (beside && queue_work(b))
		return -1;
	if (cuda_check(cudaEventRecord(b->w1, b->compute), "cudaEventRecord") ||
	    cuda_check(cudaEventRecord(b->a, b->copy), "cudaEventRecord"))
		return -1;
	t0 = bench_now_s();
	if (cuda_check(tmm_cuda_copier_launch(k, to_host ? b->host : b->managed,
					      to_host ? b->managed : b->host,
					      b->bytes, b->copy),
		       "the copy kernel"))
		return -1;
	r->held_ms = (bench_now_s() - t0) * 1e3;
	r->queue_ms = 0;
	return cuda_check(cudaEventRecord(b->b, b->copy), "cudaEventRecord") ||
	       trial_times(b, r);
}

/* One row of the copy kernel's table: one way, one block count, best of
 * ROUNDS alone and beside the work (dev_ms: the copy engine's time for
 * the same bytes that way). */
static int kernel_row(struct buffers *b, struct tmm_cuda_copier *k,
		      unsigned blocks, bool to_host, double work_ms,
		      double dev_ms)
{
	struct around alone = { 0 }, beside = { 0 }, r;
	double gb = (double)b->bytes / 1e9;

	for (int n = 0; n < ROUNDS; n++) {
		if (kernel_once(b, k, to_host, false, &r))
			return -1;
		least(&alone.copy_ms, r.copy_ms, n);
		least(&alone.held_ms, r.held_ms, n);
		if (kernel_once(b, k, to_host, true, &r))
			return -1;
		least(&beside.copy_ms, r.copy_ms, n);
		least(&beside.other_ms, r.other_ms, n);
		least(&beside.both_ms, r.both_ms, n);
	}
	printf("| %s | %u | %.2f | %.1f | %.1f | %.3f | %.2f | %.2f | %s | "
	       "%.2f |\n", to_host ? "managed to host" : "host to managed",
	       blocks, alone.copy_ms, gb / (alone.copy_ms / 1e3),
	       gb / (dev_ms / 1e3), alone.held_ms, beside.both_ms,
	       alone.copy_ms + work_ms,
	       beside.both_ms < 0.8 * (alone.copy_ms + work_ms) ? "yes" : "no",
	       beside.other_ms);
	return 0;
}

/* The copy kernel's table: each way at each block count, against the copy
 * engine's rate (dev_ms: the same bytes of device memory, each way). */
static int by_kernel(struct buffers *b, int device, double work_ms,
		     const double dev_ms[2])
{
	static const unsigned blocks[] = { 4, 16, 64 };
	char why[160] = "";

	printf("\nBy the library's copy kernel (uvm_copier=kernel), managed "
	       "memory on the device and the pinned buffer, best of %d:\n\n",
	       ROUNDS);
	printf("| way | blocks | copy ms | GB/s | copy engine GB/s | call ms | "
	       "together ms | sum ms | overlap | work ms beside (alone "
	       "%.2f) |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n",
	       work_ms);
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		struct tmm_cuda_copier *k;
		int rc = 0;

		if (tmm_cuda_copier_open(&k, device, blocks[i], why,
					 sizeof(why)) < 0 ||
		    tmm_cuda_copier_note(k, b->managed, b->bytes) < 0) {
			printf("| (no copy kernel: %s) |\n", why);
			tmm_cuda_copier_close(k);
			return 0;
		}
		for (int to_host = 1; rc == 0 && to_host >= 0; to_host--)
			rc = kernel_row(b, k, blocks[i], to_host, work_ms,
					dev_ms[to_host]);
		tmm_cuda_copier_close(k);
		if (rc)
			return -1;
	}
	printf("\n*copy engine GB/s*: cudaMemcpyAsync of device memory, the "
	       "same bytes (the first table): the rate the kernel is held "
	       "to.  *call ms*: the launch's hold on the host.  *together*: "
	       "the work queued first, then the copy; *overlap*: under 0.8 "
	       "of the sum.  *work ms beside*: the work's own time with the "
	       "copy beside it, against alone: what the copy's blocks cost "
	       "the kernels.\n");
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
	    cuda_check(cudaMallocManaged(&b->other, bytes,
					 cudaMemAttachGlobal),
		       "cudaMallocManaged") ||
	    cuda_check(cudaMallocHost(&b->host, bytes), "cudaMallocHost") ||
	    cuda_check(cudaStreamCreateWithFlags(&b->copy,
						 cudaStreamNonBlocking),
		       "cudaStreamCreateWithFlags") ||
	    cuda_check(cudaStreamCreateWithFlags(&b->compute,
						 cudaStreamNonBlocking),
		       "cudaStreamCreateWithFlags") ||
	    cuda_check(cudaStreamCreateWithFlags(&b->migrate,
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
	       cuda_check(cudaMemset(b->other, 5, bytes), "cudaMemset") ||
	       cuda_check(cudaMemset(b->dev, 3, bytes), "cudaMemset") ||
	       cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static void teardown(struct buffers *b)
{
	cudaEvent_t events[] = { b->a, b->b, b->w0, b->w1 };
	cudaStream_t streams[] = { b->copy, b->compute, b->migrate };

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i])
			cudaEventDestroy(events[i]);
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
		if (streams[i])
			cudaStreamDestroy(streams[i]);
	cudaFreeHost(b->host);
	cudaFree(b->managed);
	cudaFree(b->other);
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
	double work_ms = 0, dev_ms[2] = { 0, 0 };
	int n = 0, device = 0, status = 1;
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
		if (!rows[r].managed)
			dev_ms[rows[r].to_host] = alone.copy_ms;
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
	if (ways_around(&b) ||
	    cuda_check(cudaGetDevice(&device), "cudaGetDevice") ||
	    by_kernel(&b, device, work_ms, dev_ms))
		goto out;
	status = 0;
out:
	teardown(&b);
	return status;
}
