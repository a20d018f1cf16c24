/* SPDX-License-Identifier: MIT */
/*
 * test_pool.h — what the two files of the pool suite share (test_pool.c,
 * test_pool_model.c): the unit, a REQUIRE cheap in long loops, the
 * deterministic randomness, and making a pool and reading its figures.
 */
#ifndef TEST_POOL_H
#define TEST_POOL_H

#include <check.h>
#include <stdint.h>

#include "lib/mem/pool.h"

#define UNIT TMM_POOL_ALIGN

/*
 * ck_assert in a loop of thousands of steps reports a mark point each time
 * it passes, which is slow; this only calls into Check when it fails.
 */
#define REQUIRE(cond, ...)                                                 \
	do {                                                               \
		if (!(cond))                                               \
			ck_abort_msg(__VA_ARGS__);                         \
	} while (0)

/* ------------------------------------------------------------------------
 * Deterministic randomness: splitmix64, so sequences are the same on every
 * libc.
 * ---------------------------------------------------------------------- */

static inline uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t random_below(uint64_t *state, uint64_t bound)
{
	return next_random(state) % bound;
}

/* A new pool of `capacity` bytes, checked; and a pool's figures. */
static inline struct tmm_pool *new_pool(uint64_t capacity)
{
	struct tmm_pool *pool = NULL;

	ck_assert_int_eq(tmm_pool_create(&pool, capacity), 0);
	ck_assert_ptr_nonnull(pool);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	return pool;
}

static inline struct tmm_pool_stats stats_of(const struct tmm_pool *pool)
{
	struct tmm_pool_stats st;

	tmm_pool_get_stats(pool, &st);
	return st;
}

/* Adds the "reference model" case: long random sequences whose every
 * answer is compared with a slow but obviously right model
 * (test_pool_model.c). */
void add_pool_model_tests(Suite *suite);

/* Adds the "chunks" case: the pool over mapped chunks, with a fake
 * mapper (test_pool_map.c). */
void add_pool_map_tests(Suite *suite);

#endif /* TEST_POOL_H */
