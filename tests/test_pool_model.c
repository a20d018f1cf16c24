/* SPDX-License-Identifier: MIT */
/*
 * test_pool_model.c — the "reference model" case of the pool suite
 * (test_pool.c): the device memory pool (lib/mem/pool.c and its index of
 * free blocks, lib/mem/pool_index.c) against a model.
 *
 * The model is slow but obviously right: a sorted array of free ranges,
 * best fit by scanning them all, merging with the two neighbours.  Long
 * random alloc/free sequences with fixed seeds and three kinds of request
 * sizes go to both, and every answer, every figure and tmm_pool_check()
 * are compared after every step.
 */
#include "lib/mem/pool.h"
#include "test_pool.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * The reference model: free ranges sorted by offset, best fit by a full
 * scan, merging by looking at the two neighbours in the array.
 * ---------------------------------------------------------------------- */

struct free_range {
	uint64_t offset;
	uint64_t size;
};

struct reference_pool {
	uint64_t capacity;
	uint64_t in_use;
	uint64_t peak;
	size_t count;
	size_t room;
	struct free_range *ranges;
};

static uint64_t rounded(uint64_t bytes)
{
	return (bytes + UNIT - 1) / UNIT * UNIT;
}

static void ref_init(struct reference_pool *ref, uint64_t capacity)
{
	memset(ref, 0, sizeof(*ref));
	ref->capacity = capacity;
	ref->room = 16;
	ref->ranges = malloc(ref->room * sizeof(ref->ranges[0]));
	ck_assert_ptr_nonnull(ref->ranges);
	ref->ranges[0] = (struct free_range){ 0, capacity };
	ref->count = 1;
}

static void ref_fini(struct reference_pool *ref)
{
	free(ref->ranges);
}

/* Index of the best-fitting range, or -1: smallest, then lowest offset. */
static long ref_best_fit(const struct reference_pool *ref, uint64_t size)
{
	long best = -1;
	size_t i;

	for (i = 0; i < ref->count; i++) {
		if (ref->ranges[i].size < size)
			continue;
		/* Strictly smaller only: ranges are in offset order. */
		if (best < 0 || ref->ranges[i].size < ref->ranges[best].size)
			best = (long)i;
	}
	return best;
}

static bool ref_alloc(struct reference_pool *ref, uint64_t bytes,
		      uint64_t *offset)
{
	uint64_t size = rounded(bytes);
	long best = ref_best_fit(ref, size);
	struct free_range *range;

	if (best < 0)
		return false;
	range = &ref->ranges[best];
	if (size >= TMM_POOL_LARGE) {
		/* Large blocks come from the top of the hole. */
		*offset = range->offset + range->size - size;
	} else {
		*offset = range->offset;
		range->offset += size;
	}
	range->size -= size;
	if (range->size == 0) {
		memmove(range, range + 1,
			(ref->count - (size_t)best - 1) * sizeof(*range));
		ref->count--;
	}
	ref->in_use += size;
	if (ref->in_use > ref->peak)
		ref->peak = ref->in_use;
	return true;
}

static void ref_free(struct reference_pool *ref, uint64_t offset,
		     uint64_t size)
{
	size_t at = 0;
	bool joins_lower, joins_higher;

	while (at < ref->count && ref->ranges[at].offset < offset)
		at++;
	joins_lower = at > 0 && ref->ranges[at - 1].offset +
					ref->ranges[at - 1].size == offset;
	joins_higher = at < ref->count &&
		       offset + size == ref->ranges[at].offset;

	if (joins_lower && joins_higher) {
		ref->ranges[at - 1].size += size + ref->ranges[at].size;
		memmove(&ref->ranges[at], &ref->ranges[at + 1],
			(ref->count - at - 1) * sizeof(ref->ranges[0]));
		ref->count--;
	} else if (joins_lower) {
		ref->ranges[at - 1].size += size;
	} else if (joins_higher) {
		ref->ranges[at].offset = offset;
		ref->ranges[at].size += size;
	} else {
		if (ref->count == ref->room) {
			ref->room *= 2;
			ref->ranges = realloc(ref->ranges,
					      ref->room *
						      sizeof(ref->ranges[0]));
			ck_assert_ptr_nonnull(ref->ranges);
		}
		memmove(&ref->ranges[at + 1], &ref->ranges[at],
			(ref->count - at) * sizeof(ref->ranges[0]));
		ref->ranges[at] = (struct free_range){ offset, size };
		ref->count++;
	}
	ref->in_use -= size;
}

static uint64_t ref_largest(const struct reference_pool *ref)
{
	uint64_t largest = 0;
	size_t i;

	for (i = 0; i < ref->count; i++)
		if (ref->ranges[i].size > largest)
			largest = ref->ranges[i].size;
	return largest;
}

/* ------------------------------------------------------------------------
 * Random sequences against the reference model
 * ---------------------------------------------------------------------- */

struct live_block {
	struct tmm_pool_block *block;
	uint64_t offset;
	uint64_t size;
};

typedef uint64_t request_fn(uint64_t *rng, uint64_t capacity);

/* Mostly small requests, some medium, a few that fill much of the arena. */
static uint64_t mixed_request(uint64_t *rng, uint64_t capacity)
{
	uint64_t kind = random_below(rng, 100);

	if (kind < 65)
		return 1 + random_below(rng, 4 * UNIT);
	if (kind < 95)
		return 1 + random_below(rng, capacity / 32);
	return 1 + random_below(rng, capacity / 3);
}

/*
 * Sizes spread evenly over the powers of two up to a quarter of a large
 * arena, so that both the pool's exact size classes (below 1 MiB) and its
 * wider ones above get traffic, and searches cross many bitmap words.
 */
static uint64_t wide_request(uint64_t *rng, uint64_t capacity)
{
	unsigned top = 0;

	while ((capacity / 4) >> (top + 1))
		top++;
	return 1 + random_below(rng, 1ull << random_below(rng, top + 1));
}

/*
 * A few sizes over and over, as a network's tensors are: many free blocks
 * of one size, where the lowest offset must win among equals.
 */
static uint64_t few_sizes_request(uint64_t *rng, uint64_t capacity)
{
	static const uint64_t sizes[] = {
		256, 700, 4096, 65536, (1 << 20) + 256, 3 << 20,
	};

	(void)capacity;
	return sizes[random_below(rng, sizeof(sizes) / sizeof(sizes[0]))];
}

static void run_random_sequence(uint64_t seed, uint64_t capacity,
				int steps, request_fn *request)
{
	struct tmm_pool *pool = new_pool(capacity);
	struct reference_pool ref;
	struct live_block *live;
	size_t live_count = 0;
	uint64_t rng = seed;
	int step;

	ref_init(&ref, capacity);
	live = calloc((size_t)steps, sizeof(*live));
	ck_assert_ptr_nonnull(live);

	for (step = 0; step < steps; step++) {
		/* Alternate filling and draining phases to reach both ends. */
		uint64_t alloc_percent = (step / 400) % 2 ? 35 : 70;
		struct tmm_pool_stats st;

		if (live_count == 0 ||
		    random_below(&rng, 100) < alloc_percent) {
			uint64_t bytes = request(&rng, capacity);
			struct tmm_pool_block *block = NULL;
			uint64_t want = 0;
			bool ref_ok = ref_alloc(&ref, bytes, &want);
			int fits = tmm_pool_fits(pool, bytes);
			int rc = tmm_pool_alloc(pool, bytes, &block);

			REQUIRE(fits == (int)ref_ok,
				"seed %llu step %d: fits %d, model %d",
				(unsigned long long)seed, step, fits, ref_ok);
			if (!ref_ok) {
				REQUIRE(rc == -ENOMEM && block == NULL,
					"seed %llu step %d: rc %d, not -ENOMEM",
					(unsigned long long)seed, step, rc);
			} else {
				REQUIRE(rc == 0,
					"seed %llu step %d: rc %d for %llu B",
					(unsigned long long)seed, step, rc,
					(unsigned long long)bytes);
				REQUIRE(block->offset == want &&
						block->size == rounded(bytes),
					"seed %llu step %d: got %llu+%llu, "
					"model %llu+%llu",
					(unsigned long long)seed, step,
					(unsigned long long)block->offset,
					(unsigned long long)block->size,
					(unsigned long long)want,
					(unsigned long long)rounded(bytes));
				live[live_count++] = (struct live_block){
					block, block->offset, block->size
				};
			}
		} else {
			size_t victim = random_below(&rng, live_count);
			struct live_block gone = live[victim];

			live[victim] = live[--live_count];
			/* The pool must not have moved a live block. */
			REQUIRE(gone.block->offset == gone.offset &&
					gone.block->size == gone.size,
				"seed %llu step %d: live block changed",
				(unsigned long long)seed, step);
			ref_free(&ref, gone.offset, gone.size);
			tmm_pool_free(pool, gone.block);
		}

		REQUIRE(tmm_pool_check(pool) == 0,
			"seed %llu step %d: tmm_pool_check failed",
			(unsigned long long)seed, step);
		tmm_pool_get_stats(pool, &st);
		REQUIRE(st.capacity == capacity && st.in_use == ref.in_use &&
				st.peak == ref.peak &&
				st.free_blocks == ref.count &&
				st.used_blocks == live_count &&
				st.largest_free == ref_largest(&ref),
			"seed %llu step %d: stats differ from the model",
			(unsigned long long)seed, step);
	}

	/* Draining everything must give back the whole arena in one piece. */
	while (live_count > 0)
		tmm_pool_free(pool, live[--live_count].block);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	{
		struct tmm_pool_stats st = stats_of(pool);

		ck_assert_uint_eq(st.free_blocks, 1);
		ck_assert_uint_eq(st.largest_free, capacity);
		ck_assert_uint_eq(st.in_use, 0);
		ck_assert_double_eq(st.fragmentation, 0.0);
	}

	free(live);
	ref_fini(&ref);
	tmm_pool_destroy(pool);
}

static const uint64_t random_seeds[] = {
	1, 42, 1234, 0xdeadbeefull, 20240607, 0x5eed5eed5eedull,
};

START_TEST(test_random_sequences_match_reference_model)
{
	/* A small arena fills up and fragments; a larger one grows slabs. */
	run_random_sequence(random_seeds[_i], 256 * UNIT, 4000, mixed_request);
	run_random_sequence(random_seeds[_i] ^ 0xabcdef, 4096 * UNIT, 2500,
			    mixed_request);
}
END_TEST

START_TEST(test_wide_sizes_match_reference_model)
{
	run_random_sequence(random_seeds[_i] ^ 0x1, 1ull << 30, 2500,
			    wide_request);
}
END_TEST

START_TEST(test_repeated_sizes_match_reference_model)
{
	run_random_sequence(random_seeds[_i] ^ 0x2, 48ull << 20, 2500,
			    few_sizes_request);
}
END_TEST

void add_pool_model_tests(Suite *suite)
{
	TCase *model = tcase_create("reference model");
	int seeds = (int)(sizeof(random_seeds) / sizeof(random_seeds[0]));

	/* Valgrind slows the model runs well past Check's default 4 s. */
	tcase_set_timeout(model, 120);
	tcase_add_loop_test(model, test_random_sequences_match_reference_model,
			    0, seeds);
	/* Big arenas have 4,000+ classes for every check to visit: fewer. */
	tcase_add_loop_test(model, test_wide_sizes_match_reference_model, 0,
			    seeds / 2 + 1);
	tcase_add_loop_test(model, test_repeated_sizes_match_reference_model,
			    0, seeds / 2 + 1);
	suite_add_tcase(suite, model);
}
