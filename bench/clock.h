/* SPDX-License-Identifier: MIT */
/*
 * clock.h — what the runtime benchmarks share: a wall clock and an op
 * that does nothing (so the figure is all libtensormm's overhead).
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in seconds. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A tmm_run_fn that does no work. */
static inline int bench_nothing(void *const *in, void *const *out,
				void *user, void *stream)
{
	(void)in;
	(void)out;
	(void)user;
	(void)stream;
	return 0;
}

#endif /* BENCH_CLOCK_H */
