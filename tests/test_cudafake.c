/* SPDX-License-Identifier: MIT */
/*
 * test_cudafake.c — the CUDA test double keeps CUDA's rules and breaks
 * every order it may: within a stream in order, across streams in an
 * order the seed chooses, after an awaited event, the legacy stream with
 * the blocking ones; unordered accesses to the same bytes are reported
 * with both call sites, and so are the host's accesses to bytes queued
 * work uses that it has not waited for; a discard poisons whole managed
 * pages; with
 * CUDAFAKE_LAG the device falls behind the host until it waits, and
 * with CUDAFAKE_KERNEL_COST a kernel takes time by its bytes; events
 * are stamped on a timeline where streams run side by side, and with
 * CUDAFAKE_CLOCK=timeline the host's clock is its time on it.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/backend/backend_cuda.h"

#define SEEDS 40

static cudaStream_t stream(unsigned flags)
{
	cudaStream_t s;

	ck_assert_int_eq(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
	return s;
}

START_TEST(a_stream_runs_in_order)
{
	uint8_t *dev, src[64];

	memset(src, 7, sizeof(src));
	ck_assert_int_eq(cudaMalloc((void **)&dev, sizeof(src)), cudaSuccess);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		cudaStream_t a = stream(cudaStreamNonBlocking);

		cudafake_reset(seed);
		ck_assert_int_eq(cudaMemsetAsync(dev, 1, sizeof(src), a),
				 cudaSuccess);
		ck_assert_int_eq(cudaMemcpyAsync(dev, src, sizeof(src),
						 cudaMemcpyDefault, a),
				 cudaSuccess);
		ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);
		ck_assert_int_eq(memcmp(dev, src, sizeof(src)), 0);
		ck_assert_uint_eq(cudafake_races(), 0);
		ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	}
	ck_assert_int_eq(cudaFree(dev), cudaSuccess);
}
END_TEST

/* Two streams write one byte with nothing to order them: a race, and the
 * seed decides which write lands last, the same way every time. */
static int last_writer(unsigned seed, uint8_t *dev)
{
	cudaStream_t a = stream(cudaStreamNonBlocking);
	cudaStream_t b = stream(cudaStreamNonBlocking);

	cudafake_reset(seed);
	ck_assert_int_eq(cudaMemsetAsync(dev, 1, 1, a), cudaSuccess);
	ck_assert_int_eq(cudaMemsetAsync(dev, 2, 1, b), cudaSuccess);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_uint_eq(cudafake_races(), 1);
	ck_assert_ptr_nonnull(strstr(cudafake_race(0), "cudaMemsetAsync"));
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(b), cudaSuccess);
	return *dev;
}

START_TEST(streams_run_in_the_seeds_order)
{
	uint8_t *dev;
	unsigned won[3] = { 0 };

	ck_assert_int_eq(cudaMalloc((void **)&dev, 1), cudaSuccess);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		int w = last_writer(seed, dev);

		ck_assert(w == 1 || w == 2);
		won[w]++;
		ck_assert_int_eq(last_writer(seed, dev), w);
	}
	ck_assert_msg(won[1] && won[2], "one order only: %u / %u", won[1],
		      won[2]);
	ck_assert_int_eq(cudaFree(dev), cudaSuccess);
}
END_TEST

/* Both call sites are named: this file's functions, from its own
 * symbol table. */
__attribute__((noinline)) static void write_on(cudaStream_t s, uint8_t *p)
{
	ck_assert_int_eq(cudaMemsetAsync(p, 3, 1, s), cudaSuccess);
}

__attribute__((noinline)) static void read_on(cudaStream_t s, uint8_t *dst,
					    const uint8_t *p)
{
	ck_assert_int_eq(cudaMemcpyAsync(dst, p, 1, cudaMemcpyDefault, s),
			 cudaSuccess);
}

START_TEST(a_race_names_both_call_sites)
{
	cudaStream_t a = stream(cudaStreamNonBlocking);
	cudaStream_t b = stream(cudaStreamNonBlocking);
	uint8_t *dev, host, other;

	ck_assert_int_eq(cudaMalloc((void **)&dev, 1), cudaSuccess);
	cudafake_reset(1);
	write_on(a, dev);
	read_on(b, &host, dev);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_uint_eq(cudafake_races(), 1);
	ck_assert_msg(strstr(cudafake_race(0), "write_on") &&
			      strstr(cudafake_race(0), "read_on"),
		      "%s", cudafake_race(0));
	/* Two reads do not race. */
	cudafake_reset(1);
	read_on(a, &host, dev);
	read_on(b, &other, dev);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(cudaFree(dev), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(b), cudaSuccess);
}
END_TEST

START_TEST(an_awaited_event_orders_streams)
{
	uint8_t *x, y;
	cudaEvent_t e;

	ck_assert_int_eq(cudaMalloc((void **)&x, 1), cudaSuccess);
	ck_assert_int_eq(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
			 cudaSuccess);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		cudaStream_t a = stream(cudaStreamNonBlocking);
		cudaStream_t b = stream(cudaStreamNonBlocking);

		cudafake_reset(seed);
		y = 0;
		ck_assert_int_eq(cudaMemsetAsync(x, 9, 1, a), cudaSuccess);
		ck_assert_int_eq(cudaEventRecord(e, a), cudaSuccess);
		ck_assert_int_eq(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
		ck_assert_int_eq(cudaMemcpyAsync(&y, x, 1, cudaMemcpyDefault,
						 b),
				 cudaSuccess);
		ck_assert_int_eq(cudaStreamSynchronize(b), cudaSuccess);
		ck_assert_int_eq(y, 9);
		ck_assert_uint_eq(cudafake_races(), 0);
		ck_assert_int_eq(cudaEventQuery(e), cudaSuccess);
		ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
		ck_assert_int_eq(cudaStreamDestroy(b), cudaSuccess);
	}
	ck_assert_int_eq(cudaEventDestroy(e), cudaSuccess);
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
}
END_TEST

/* The legacy stream waits for blocking streams, not for non-blocking
 * ones (Runtime API, "Stream synchronization behavior"). */
START_TEST(the_legacy_stream_orders_blocking_streams_only)
{
	uint8_t *x, y;

	ck_assert_int_eq(cudaMalloc((void **)&x, 1), cudaSuccess);
	for (unsigned flags = 0; flags < 2; flags++) {
		cudaStream_t a = stream(flags ? cudaStreamNonBlocking
					      : cudaStreamDefault);

		cudafake_reset(3);
		ck_assert_int_eq(cudaMemsetAsync(x, 5, 1, a), cudaSuccess);
		ck_assert_int_eq(cudaMemcpyAsync(&y, x, 1, cudaMemcpyDefault,
						 NULL),
				 cudaSuccess);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		ck_assert_uint_eq(cudafake_legacy_ops(), 1);
		ck_assert_uint_eq(cudafake_races(), flags ? 1 : 0);
		ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	}
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
}
END_TEST

START_TEST(a_discard_poisons_whole_pages)
{
	size_t page = cudafake_page_size();
	cudaStream_t a = stream(cudaStreamNonBlocking);
	uint8_t *m, other;
	void *p;
	size_t n;

	ck_assert_int_eq(cudaMallocManaged((void **)&m, 3 * page,
					   cudaMemAttachGlobal),
			 cudaSuccess);
	memset(m, 1, 3 * page);
	p = m + page + 10;
	n = 10;
	cudafake_reset(1);
	ck_assert_int_eq(cudaMemDiscardBatchAsync(&p, &n, 1, 0, a),
			 cudaSuccess);
	ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);
	for (size_t i = 0; i < 3 * page; i++)
		ck_assert_int_eq(m[i], i / page == 1 ? CUDAFAKE_POISON : 1);
	/* Not on the legacy stream, not outside managed memory. */
	ck_assert_int_eq(cudaMemDiscardBatchAsync(&p, &n, 1, 0, NULL),
			 cudaErrorInvalidValue);
	p = &other;
	ck_assert_int_eq(cudaMemDiscardBatchAsync(&p, &n, 1, 0, a),
			 cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
	ck_assert_int_eq(cudaFree(m), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
}
END_TEST

/*
 * The host's own accesses to managed memory (cudafake_host_access, which
 * the cuda backend calls before each): one that comes before a wait for
 * a kernel writing the bytes, or for a discard of them, races with it;
 * after the wait none does.  A read beside a migration does not (managed
 * memory stays coherent for a reader); a write does, as a kernel's does
 * in the double.  Bytes no queued work touches never race.
 */
START_TEST(a_host_access_races_with_unwaited_work)
{
	size_t page = cudafake_page_size();
	cudaStream_t a = stream(cudaStreamNonBlocking);
	struct cudaMemLocation dev = { .type = cudaMemLocationTypeDevice,
				       .id = 0 };
	uint8_t *m;
	void *p;
	size_t n = page;

	ck_assert_int_eq(cudaMallocManaged((void **)&m, 2 * page,
					   cudaMemAttachGlobal),
			 cudaSuccess);
	setenv("CUDAFAKE_LAG", "1000000", 1);
	cudafake_reset(1);
	ck_assert_int_eq(cudaMemsetAsync(m, 1, page, a), cudaSuccess);
	cudafake_host_access(m + page, page, true); /* other bytes */
	ck_assert_uint_eq(cudafake_races(), 0);
	cudafake_host_access(m + 10, 1, false);
	ck_assert_uint_eq(cudafake_races(), 1);
	ck_assert_msg(strstr(cudafake_race(0), "the host reads") &&
			      strstr(cudafake_race(0), "cudaMemsetAsync"),
		      "%s", cudafake_race(0));
	ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);
	cudafake_host_access(m, page, true);
	ck_assert_uint_eq(cudafake_races(), 1);

	p = m;
	ck_assert_int_eq(cudaMemDiscardBatchAsync(&p, &n, 1, 0, a),
			 cudaSuccess);
	cudafake_host_access(m, page, false);
	ck_assert_uint_eq(cudafake_races(), 2);
	ck_assert_msg(strstr(cudafake_race(1), "cudaMemDiscardBatchAsync"),
		      "%s", cudafake_race(1));
	ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);

	ck_assert_int_eq(cudaMemPrefetchAsync(m, page, dev, 0, a),
			 cudaSuccess);
	cudafake_host_access(m, page, false);
	ck_assert_uint_eq(cudafake_races(), 2);
	cudafake_host_access(m, page, true);
	ck_assert_uint_eq(cudafake_races(), 3);
	unsetenv("CUDAFAKE_LAG");
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_int_eq(cudaFree(m), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
}
END_TEST

struct twin {
	uint8_t *out;
	uint8_t value;
};

static void kernel(void *arg)
{
	struct twin *t = arg;

	*t->out = t->value;
}

/* A kernel's host twin runs in stream order and its bytes are checked
 * like a copy's. */
START_TEST(a_kernel_runs_its_host_twin)
{
	uint8_t *x, y = 0;
	cudaStream_t a = stream(cudaStreamNonBlocking);
	struct twin t;
	struct cudafake_range r;

	ck_assert_int_eq(cudaMalloc((void **)&x, 1), cudaSuccess);
	t = (struct twin){ x, 42 };
	r = (struct cudafake_range){ x, 1, true };
	cudafake_reset(2);
	ck_assert_int_eq(cudafake_launch(a, kernel, &t, &r, 1), cudaSuccess);
	ck_assert_int_eq(cudaMemcpyAsync(&y, x, 1, cudaMemcpyDefault, a),
			 cudaSuccess);
	ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);
	ck_assert_int_eq(y, 42);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
}
END_TEST

/* The time a kernel over `bytes` takes on the double's clock, in ms, with
 * CUDAFAKE_KERNEL_COST set to cost (NULL: unset). */
static float kernel_ms(uint8_t *x, size_t bytes, const char *cost)
{
	cudaStream_t a = stream(cudaStreamNonBlocking);
	cudaEvent_t before, after;
	struct twin t = { x, 1 };
	struct cudafake_range r = { x, bytes, true };
	float ms = -1;

	if (cost)
		ck_assert_int_eq(setenv("CUDAFAKE_KERNEL_COST", cost, 1), 0);
	ck_assert_int_eq(cudaEventCreate(&before), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&after), cudaSuccess);
	ck_assert_int_eq(cudaEventRecord(before, a), cudaSuccess);
	ck_assert_int_eq(cudafake_launch(a, kernel, &t, &r, 1), cudaSuccess);
	ck_assert_int_eq(cudaEventRecord(after, a), cudaSuccess);
	ck_assert_int_eq(cudaEventSynchronize(after), cudaSuccess);
	ck_assert_int_eq(cudaEventElapsedTime(&ms, before, after),
			 cudaSuccess);
	ck_assert_int_eq(unsetenv("CUDAFAKE_KERNEL_COST"), 0);
	ck_assert_int_eq(cudaEventDestroy(before), cudaSuccess);
	ck_assert_int_eq(cudaEventDestroy(after), cudaSuccess);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	return ms;
}

/* CUDAFAKE_KERNEL_COST: a kernel takes as long as a copy of that many
 * (a decimal) times its bytes (10 GB/s), so that plans made from the
 * double's times see compute as a real GPU's do; unset, a microsecond. */
START_TEST(a_kernel_costs_what_its_bytes_say)
{
	size_t bytes = (size_t)1 << 20;
	uint8_t *x;

	ck_assert_int_eq(cudaMalloc((void **)&x, bytes), cudaSuccess);
	cudafake_reset(4);
	ck_assert_float_lt(kernel_ms(x, bytes, NULL), 0.01f);
	/* 8 MiB at 10 GB/s: 0.84 ms, and the events' microseconds. */
	ck_assert_float_gt(kernel_ms(x, bytes, "8"), 0.83f);
	ck_assert_float_lt(kernel_ms(x, bytes, "8"), 0.86f);
	/* A decimal: 0.5 MiB, 0.05 ms; not a positive number: unset. */
	ck_assert_float_gt(kernel_ms(x, bytes, "0.5"), 0.052f);
	ck_assert_float_lt(kernel_ms(x, bytes, "0.5"), 0.056f);
	ck_assert_float_lt(kernel_ms(x, bytes, "-2"), 0.01f);
	ck_assert_float_lt(kernel_ms(x, bytes, "8x"), 0.01f);
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
}
END_TEST

/* CUDAFAKE_LAG: a device that lags leaves queued work queued until the
 * host waits, where one that keeps up runs some at every call. */
static unsigned ops_done_before_a_wait(uint8_t *dev, const char *lag)
{
	cudaStream_t a = stream(cudaStreamNonBlocking);
	unsigned done = 0;

	if (lag)
		ck_assert_int_eq(setenv("CUDAFAKE_LAG", lag, 1), 0);
	else
		ck_assert_int_eq(unsetenv("CUDAFAKE_LAG"), 0);
	cudafake_reset(5);
	for (unsigned k = 0; k < 32; k++) {
		cudaEvent_t e;

		ck_assert_int_eq(cudaEventCreate(&e), cudaSuccess);
		ck_assert_int_eq(cudaMemsetAsync(dev + k, 1, 1, a),
				 cudaSuccess);
		ck_assert_int_eq(cudaEventRecord(e, a), cudaSuccess);
		/* A stream's own work runs in order: an event done says
		 * every memset before it is. */
		if (cudaEventQuery(e) == cudaSuccess)
			done = k + 1;
		ck_assert_int_eq(cudaEventDestroy(e), cudaSuccess);
	}
	ck_assert_int_eq(cudaStreamSynchronize(a), cudaSuccess);
	for (unsigned k = 0; k < 32; k++)
		ck_assert_uint_eq(dev[k], 1);
	ck_assert_int_eq(unsetenv("CUDAFAKE_LAG"), 0);
	ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
	memset(dev, 0, 32);
	return done;
}

START_TEST(a_lagging_device_runs_only_when_waited_for)
{
	uint8_t *dev;

	ck_assert_int_eq(cudaMallocManaged((void **)&dev, 32,
					   cudaMemAttachGlobal),
			 cudaSuccess);
	memset(dev, 0, 32);
	ck_assert_uint_gt(ops_done_before_a_wait(dev, NULL), 0);
	ck_assert_uint_eq(ops_done_before_a_wait(dev, "1000000"), 0);
	ck_assert_int_eq(cudaFree(dev), cudaSuccess);
}
END_TEST

/* Milliseconds on the device timeline from `a` to `b`. */
static float elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = -1;

	ck_assert_int_eq(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
	return ms;
}

/*
 * Two streams' memsets of 1 MiB (0.1 ms each at the double's 10 GB/s)
 * run side by side on the device timeline, whatever order the seed runs
 * them in; once the second waits for the first's event, they run one
 * after the other.  A wait on work already done costs a stream that is
 * behind the host nothing.
 */
START_TEST(streams_run_side_by_side_on_the_timeline)
{
	size_t bytes = (size_t)1 << 20;
	cudaEvent_t a0, a1, b1, mid;
	uint8_t *x;

	ck_assert_int_eq(cudaMalloc((void **)&x, 2 * bytes), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&a0), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&a1), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&b1), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&mid), cudaSuccess);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		cudaStream_t a = stream(cudaStreamNonBlocking);
		cudaStream_t b = stream(cudaStreamNonBlocking);

		for (unsigned ordered = 0; ordered < 2; ordered++) {
			cudafake_reset(seed);
			ck_assert_int_eq(cudaEventRecord(a0, a), cudaSuccess);
			ck_assert_int_eq(cudaMemsetAsync(x, 1, bytes, a),
					 cudaSuccess);
			ck_assert_int_eq(cudaEventRecord(a1, a), cudaSuccess);
			if (ordered)
				ck_assert_int_eq(cudaStreamWaitEvent(b, a1, 0),
						 cudaSuccess);
			ck_assert_int_eq(cudaMemsetAsync(x + bytes, 2, bytes,
							 b),
					 cudaSuccess);
			ck_assert_int_eq(cudaEventRecord(b1, b), cudaSuccess);
			ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
			ck_assert_float_ge(elapsed_ms(a0, a1), 0.1f);
			if (ordered)
				ck_assert_float_ge(elapsed_ms(a0, b1), 0.2f);
			else
				ck_assert_float_lt(elapsed_ms(a0, b1), 0.15f);
		}
		/* Waiting for a1, long done, behind work of its own: b
		 * goes on at once. */
		ck_assert_int_eq(cudaMemsetAsync(x + bytes, 3, bytes, b),
				 cudaSuccess);
		ck_assert_int_eq(cudaEventRecord(a0, b), cudaSuccess);
		ck_assert_int_eq(cudaStreamWaitEvent(b, a1, 0), cudaSuccess);
		ck_assert_int_eq(cudaEventRecord(mid, b), cudaSuccess);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		ck_assert_float_eq(elapsed_ms(a0, mid), 0.0f);
		ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
		ck_assert_int_eq(cudaStreamDestroy(b), cudaSuccess);
	}
	ck_assert_int_eq(cudaEventDestroy(a0), cudaSuccess);
	ck_assert_int_eq(cudaEventDestroy(a1), cudaSuccess);
	ck_assert_int_eq(cudaEventDestroy(b1), cudaSuccess);
	ck_assert_int_eq(cudaEventDestroy(mid), cudaSuccess);
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
}
END_TEST

/*
 * Two streams' memsets of 1 MiB (0.1 ms each), side by side, then a wait
 * for both: on the timeline's clock the host's clock moves by one memset
 * and the launches, as a GPU's host's wall clock does, and an event is
 * not complete before the host's time reaches it, even where the double
 * has run its work; on the serial clock (the default) it moves by both.
 */
START_TEST(the_host_clock_can_follow_the_timeline)
{
	size_t bytes = (size_t)1 << 20;
	cudaEvent_t done;
	uint64_t t0, ns;
	uint8_t *x;

	ck_assert_int_eq(cudaMalloc((void **)&x, 2 * bytes), cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&done), cudaSuccess);
	for (unsigned timeline = 0; timeline < 2; timeline++) {
		cudaStream_t a = stream(cudaStreamNonBlocking);
		cudaStream_t b = stream(cudaStreamNonBlocking);

		if (timeline)
			setenv("CUDAFAKE_CLOCK", "timeline", 1);
		cudafake_reset(1);
		t0 = tmm_cuda_host_ns();
		ck_assert_int_eq(cudaMemsetAsync(x, 1, bytes, a), cudaSuccess);
		ck_assert_int_eq(cudaMemsetAsync(x + bytes, 2, bytes, b),
				 cudaSuccess);
		ck_assert_int_eq(cudaEventRecord(done, b), cudaSuccess);
		if (timeline)
			ck_assert_int_eq(cudaEventQuery(done),
					 cudaErrorNotReady);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		ck_assert_int_eq(cudaEventQuery(done), cudaSuccess);
		ns = tmm_cuda_host_ns() - t0;
		if (timeline) {
			ck_assert_uint_ge(ns, 100000);
			ck_assert_uint_lt(ns, 150000);
		} else {
			ck_assert_uint_ge(ns, 200000);
		}
		unsetenv("CUDAFAKE_CLOCK");
		ck_assert_int_eq(cudaStreamDestroy(a), cudaSuccess);
		ck_assert_int_eq(cudaStreamDestroy(b), cudaSuccess);
	}
	ck_assert_int_eq(cudaEventDestroy(done), cudaSuccess);
	ck_assert_int_eq(cudaFree(x), cudaSuccess);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cudafake");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, a_stream_runs_in_order);
	tcase_add_test(tc, streams_run_in_the_seeds_order);
	tcase_add_test(tc, a_race_names_both_call_sites);
	tcase_add_test(tc, an_awaited_event_orders_streams);
	tcase_add_test(tc, the_legacy_stream_orders_blocking_streams_only);
	tcase_add_test(tc, a_discard_poisons_whole_pages);
	tcase_add_test(tc, a_host_access_races_with_unwaited_work);
	tcase_add_test(tc, a_kernel_runs_its_host_twin);
	tcase_add_test(tc, a_lagging_device_runs_only_when_waited_for);
	tcase_add_test(tc, a_kernel_costs_what_its_bytes_say);
	tcase_add_test(tc, streams_run_side_by_side_on_the_timeline);
	tcase_add_test(tc, the_host_clock_can_follow_the_timeline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
