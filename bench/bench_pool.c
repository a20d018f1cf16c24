/* SPDX-License-Identifier: MIT */
/*
 * bench_pool.c — how fast the device memory pool allocates and frees.
 *
 * The runtime allocates every tensor output from the pool on its hot path,
 * so an alloc+free pair must stay cheap even with many tensors alive; the
 * target is under 200 ns per pair with 10,000 live blocks.  This program
 * fills a pool with live blocks of random sizes (256 B .. 1 MiB, fixed
 * seed), then repeatedly frees a random live block and allocates a new
 * random size in its place, and reports the time per pair.
 *
 * The pool manages offsets only, so the arena is 64 GiB of numbers: no
 * device (or host) memory of that size is touched.
 *
 * Usage: bench_pool [live_blocks [pairs]]   (defaults 10000 2000000)
 */
#include "machine.h"
#include "lib/mem/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARENA_BYTES (64ull << 30)
#define MIN_REQUEST 256ull
#define MAX_REQUEST (1ull << 20)
#define TARGET_NS_PER_PAIR 200.0
#define SEED 0x9001ull
#define ROUNDS 5

/* xorshift64*: a cheap generator, so the loop times the pool, not it. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/*
 * A uniform number below `bound` (< 2^32) by multiply-shift: a 64-bit
 * division would cost about as much as a fifth of the pair being timed.
 */
static uint64_t random_below(uint64_t *rng, uint64_t bound)
{
	return ((next_random(rng) >> 32) * bound) >> 32;
}

static uint64_t random_request(uint64_t *rng)
{
	return MIN_REQUEST + random_below(rng, MAX_REQUEST - MIN_REQUEST + 1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Parses a positive count argument; returns 0 when it is not one. */
static unsigned long long parse_count(const char *text)
{
	unsigned long long value;
	char *end;

	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno || end == text || *end != '\0' || text[0] == '-')
		return 0;
	return value;
}

/*
 * Frees a random live block and allocates a new random size in its slot,
 * `pairs` times.  Returns 0, or the error of a failed allocation.
 */
static int churn(struct tmm_pool *pool, struct tmm_pool_block **live,
		 unsigned long long live_count, unsigned long long pairs,
		 uint64_t *rng)
{
	unsigned long long i;

	for (i = 0; i < pairs; i++) {
		uint64_t victim = random_below(rng, live_count);
		int rc;

		tmm_pool_free(pool, live[victim]);
		rc = tmm_pool_alloc(pool, random_request(rng), &live[victim]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned long long live_count = 10000, pairs = 2000000, i;
	unsigned long long rounds, done = 0;
	struct tmm_pool_block **live;
	struct tmm_pool *pool;
	struct tmm_pool_stats st;
	uint64_t rng = SEED;
	double round_ns[ROUNDS], total_ns = 0, median, mean;
	char machine[384];
	int rc;

	if (argc > 3 || (argc > 1 && !(live_count = parse_count(argv[1]))) ||
	    (argc > 2 && !(pairs = parse_count(argv[2]))) ||
	    live_count > UINT32_MAX) {
		fprintf(stderr, "usage: %s [live_blocks [pairs]]\n", argv[0]);
		return 2;
	}

	rc = tmm_pool_create(&pool, ARENA_BYTES);
	if (rc < 0) {
		fprintf(stderr, "bench_pool: tmm_pool_create: %s\n",
			strerror(-rc));
		return 1;
	}
	live = calloc(live_count, sizeof(*live));
	if (!live) {
		fprintf(stderr, "bench_pool: out of host memory\n");
		tmm_pool_destroy(pool);
		return 1;
	}

	for (i = 0; i < live_count; i++) {
		rc = tmm_pool_alloc(pool, random_request(&rng), &live[i]);
		if (rc < 0)
			goto alloc_failed;
	}
	/* A warm-up, so that slab growth and cold caches are not timed. */
	rc = churn(pool, live, live_count, live_count, &rng);
	if (rc < 0)
		goto alloc_failed;

	/*
	 * Timed in rounds: on a shared machine a neighbour's burst spoils a
	 * round, not the result, when the median round is the figure.
	 */
	rounds = pairs < ROUNDS ? pairs : ROUNDS;
	for (i = 0; i < rounds; i++) {
		unsigned long long n = (pairs - done) / (rounds - i);
		double start = now_ns(), elapsed;

		rc = churn(pool, live, live_count, n, &rng);
		if (rc < 0)
			goto alloc_failed;
		elapsed = now_ns() - start;
		round_ns[i] = elapsed / (double)n;
		total_ns += elapsed;
		done += n;
	}
	mean = total_ns / (double)pairs;
	qsort(round_ns, rounds, sizeof(round_ns[0]), compare_doubles);
	median = round_ns[rounds / 2];

	tmm_pool_get_stats(pool, &st);
	bench_describe_machine(machine, sizeof(machine));

	printf("pool alloc+free: %.1f ns per pair, median of %llu rounds "
	       "(target < %.0f ns: %s)\n",
	       median, rounds, TARGET_NS_PER_PAIR,
	       median < TARGET_NS_PER_PAIR ? "met" : "MISSED");
	printf("rounds: fastest %.1f ns, slowest %.1f ns; mean over all "
	       "pairs %.1f ns\n",
	       round_ns[0], round_ns[rounds - 1], mean);
	printf("live blocks: %llu (pool says %llu used, %llu free)\n",
	       live_count, (unsigned long long)st.used_blocks,
	       (unsigned long long)st.free_blocks);
	printf("in use: %.2f GiB of %.0f GiB, peak %.2f GiB\n",
	       (double)st.in_use / (1u << 30),
	       (double)st.capacity / (1u << 30),
	       (double)st.peak / (1u << 30));
	printf("fragmentation at end: %.4f (largest free %.2f GiB)\n",
	       st.fragmentation, (double)st.largest_free / (1u << 30));
	printf("measured: %llu pairs in %llu rounds after %llu warm-up "
	       "pairs; sizes %llu B .. %llu B uniform, seed %#llx; one "
	       "thread; wall time from clock_gettime(CLOCK_MONOTONIC) around "
	       "each round (includes the random number generator); %s; built "
	       "with the project's CFLAGS\n",
	       pairs, rounds, live_count, MIN_REQUEST, MAX_REQUEST, SEED,
	       machine);

	tmm_pool_destroy(pool);
	free(live);
	return 0;

alloc_failed:
	fprintf(stderr, "bench_pool: tmm_pool_alloc: %s\n", strerror(-rc));
	tmm_pool_destroy(pool);
	free(live);
	return 1;
}
