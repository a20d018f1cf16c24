/* SPDX-License-Identifier: MIT */
/*
 * test_pool.c — Check suite for the device memory pool (lib/mem/pool.c).
 *
 * The pool's answers are compared with a reference model that is slow but
 * obviously right (a sorted array of free ranges, best fit by scanning
 * them all), step by step over long random alloc/free sequences with fixed
 * seeds and three kinds of request sizes, with tmm_pool_check() after
 * every step.  Hand-made layouts with known answers cover coalescing in
 * every order, alignment and rounding, refused requests that must leave
 * the pool unchanged, fragmentation, largest_free and peak, and a block
 * corrupted through its public fields, which tmm_pool_check must notice.
 * The reference model and its random sequences are in test_pool_model.c.
 */
#include "check_main.h"
#include "lib/mem/pool.h"
#include "test_pool.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static struct tmm_pool_block *must_alloc(struct tmm_pool *pool,
					 uint64_t bytes)
{
	struct tmm_pool_block *block = NULL;

	ck_assert_int_eq(tmm_pool_alloc(pool, bytes, &block), 0);
	ck_assert_ptr_nonnull(block);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	return block;
}

static void assert_same_stats(const struct tmm_pool_stats *a,
			      const struct tmm_pool_stats *b)
{
	ck_assert_uint_eq(a->capacity, b->capacity);
	ck_assert_uint_eq(a->in_use, b->in_use);
	ck_assert_uint_eq(a->peak, b->peak);
	ck_assert_uint_eq(a->largest_free, b->largest_free);
	ck_assert_uint_eq(a->free_blocks, b->free_blocks);
	ck_assert_uint_eq(a->used_blocks, b->used_blocks);
	ck_assert_double_eq(a->fragmentation, b->fragmentation);
}

/* ------------------------------------------------------------------------
 * Hand-made layouts
 * ---------------------------------------------------------------------- */

START_TEST(test_limit_bounds_in_use_until_raised)
{
	struct tmm_pool *pool;
	struct tmm_pool_block *a, *b, *c;
	struct tmm_pool_stats st;

	ck_assert_int_eq(tmm_pool_create(&pool, 64 * 1024), 0);
	ck_assert_int_eq(tmm_pool_alloc(pool, 24 * 1024, &a), 0);
	/* Below in_use: nothing more fits, though the arena has room. */
	tmm_pool_set_limit(pool, 16 * 1024 + 100);
	tmm_pool_get_stats(pool, &st);
	ck_assert_uint_eq(st.limit, 16 * 1024); /* rounded down */
	ck_assert_int_eq(tmm_pool_alloc(pool, 256, &b), -ENOMEM);
	/* tmm_pool_fits says what tmm_pool_alloc would: no, past the
	 * limit, though the arena has a hole. */
	ck_assert_int_eq(tmm_pool_fits(pool, 256), 0);
	/* Freeing goes under it; then only what is left of it fits. */
	tmm_pool_free(pool, a);
	ck_assert_int_eq(tmm_pool_fits(pool, 16 * 1024), 1);
	ck_assert_int_eq(tmm_pool_fits(pool, 16 * 1024 + 1), 0);
	ck_assert_int_eq(tmm_pool_alloc(pool, 8 * 1024, &b), 0);
	ck_assert_int_eq(tmm_pool_fits(pool, 8 * 1024), 1);
	ck_assert_int_eq(tmm_pool_fits(pool, 8 * 1024 + 1), 0);
	tmm_pool_free(pool, b);
	ck_assert_int_eq(tmm_pool_alloc(pool, 16 * 1024, &b), 0);
	ck_assert_int_eq(tmm_pool_alloc(pool, 256, &c), -ENOMEM);
	/* Raised past the arena: capped at the capacity. */
	tmm_pool_set_limit(pool, 1 << 30);
	tmm_pool_get_stats(pool, &st);
	ck_assert_uint_eq(st.limit, 64 * 1024);
	ck_assert_int_eq(tmm_pool_alloc(pool, 48 * 1024, &c), 0);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_create_rejects_bad_capacity)
{
	struct tmm_pool *pool = (struct tmm_pool *)&pool;

	ck_assert_int_eq(tmm_pool_create(&pool, 0), -EINVAL);
	ck_assert_ptr_null(pool);
	ck_assert_int_eq(tmm_pool_create(&pool, UNIT - 1), -EINVAL);
	ck_assert_ptr_null(pool);
	ck_assert_int_eq(tmm_pool_create(NULL, 1 << 20), -EINVAL);

	/* An unaligned tail could never hold a block: it is dropped. */
	pool = new_pool(3 * UNIT + 100);
	ck_assert_uint_eq(stats_of(pool).capacity, 3 * UNIT);
	ck_assert_uint_eq(stats_of(pool).largest_free, 3 * UNIT);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_alignment_and_rounding)
{
	struct tmm_pool *pool = new_pool(64 * UNIT);
	static const uint64_t requests[] = { 1, 256, 257, 1000, 512, 255 };
	static const uint64_t offsets[] = { 0, 256, 512, 1024, 2048, 2560 };
	static const uint64_t sizes[] = { 256, 256, 512, 1024, 512, 256 };
	size_t i;

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		struct tmm_pool_block *b = must_alloc(pool, requests[i]);

		ck_assert_uint_eq(b->offset, offsets[i]);
		ck_assert_uint_eq(b->size, sizes[i]);
		ck_assert_uint_eq(b->offset % TMM_POOL_ALIGN, 0);
		ck_assert_uint_eq(b->size % TMM_POOL_ALIGN, 0);
	}
	ck_assert_uint_eq(stats_of(pool).in_use, 2816);
	ck_assert_uint_eq(stats_of(pool).used_blocks, 6);
	tmm_pool_destroy(pool);
}
END_TEST

/* Each refused request returns its error and leaves every figure alone. */
static void assert_refused(struct tmm_pool *pool, uint64_t bytes, int err)
{
	struct tmm_pool_stats before = stats_of(pool), after;
	struct tmm_pool_block *sentinel = (struct tmm_pool_block *)&before;
	struct tmm_pool_block *block = sentinel;

	ck_assert_int_eq(tmm_pool_alloc(pool, bytes, &block), err);
	ck_assert_ptr_eq(block, sentinel);
	ck_assert_int_eq(tmm_pool_fits(pool, bytes), 0);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	after = stats_of(pool);
	assert_same_stats(&before, &after);
}

START_TEST(test_bad_requests_leave_pool_unchanged)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool_block *blocks[16], *out = NULL;
	int i;

	must_alloc(pool, 1000);
	assert_refused(pool, 0, -EINVAL);
	assert_refused(pool, 16 * UNIT + 1, -ENOMEM);
	assert_refused(pool, UINT64_MAX, -ENOMEM);	/* no rounding wrap */
	assert_refused(pool, UINT64_MAX - 100, -ENOMEM);
	assert_refused(pool, 12 * UNIT + 1, -ENOMEM);	/* 12 units free */
	ck_assert_int_eq(tmm_pool_fits(pool, 12 * UNIT), 1);

	ck_assert_int_eq(tmm_pool_alloc(NULL, 1, &out), -EINVAL);
	ck_assert_int_eq(tmm_pool_alloc(pool, 1, NULL), -EINVAL);
	ck_assert_int_eq(tmm_pool_fits(NULL, 1), 0);
	tmm_pool_destroy(pool);

	/* Enough bytes free in total, but no single block big enough. */
	pool = new_pool(16 * UNIT);
	for (i = 0; i < 16; i++)
		blocks[i] = must_alloc(pool, UNIT);
	for (i = 0; i < 16; i += 2)
		tmm_pool_free(pool, blocks[i]);
	ck_assert_uint_eq(stats_of(pool).free_blocks, 8);
	assert_refused(pool, 2 * UNIT, -ENOMEM);
	assert_refused(pool, UNIT + 1, -ENOMEM);
	ck_assert_int_eq(tmm_pool_fits(pool, UNIT), 1);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_best_fit_prefers_smallest_then_lowest)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool_block *hole0 = must_alloc(pool, 2 * UNIT);
	struct tmm_pool_block *b, *hole2, *hole4;

	must_alloc(pool, UNIT);			/* 512: stays used */
	hole2 = must_alloc(pool, UNIT);		/* 768 */
	must_alloc(pool, UNIT);			/* 1024: stays used */
	hole4 = must_alloc(pool, UNIT);		/* 1280 */
	must_alloc(pool, 10 * UNIT);		/* 1536..4095: the rest */
	tmm_pool_free(pool, hole0);
	tmm_pool_free(pool, hole2);
	tmm_pool_free(pool, hole4);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	ck_assert_uint_eq(stats_of(pool).free_blocks, 3);

	/* Two one-unit holes beat the lower two-unit one; lowest first. */
	b = must_alloc(pool, 200);
	ck_assert_uint_eq(b->offset, 768);
	b = must_alloc(pool, UNIT);
	ck_assert_uint_eq(b->offset, 1280);
	b = must_alloc(pool, UNIT);
	ck_assert_uint_eq(b->offset, 0);	/* splits the two-unit hole */
	b = must_alloc(pool, UNIT);
	ck_assert_uint_eq(b->offset, 256);	/* and takes its rest */
	ck_assert_uint_eq(stats_of(pool).free_blocks, 0);
	assert_refused(pool, 1, -ENOMEM);
	tmm_pool_destroy(pool);
}
END_TEST

/* All six orders of freeing three adjacent blocks between two guards. */
static const int free_orders[6][3] = {
	{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
	{ 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
};

START_TEST(test_coalescing_three_adjacent_in_every_order)
{
	static const uint64_t sizes[3] = { UNIT, 2 * UNIT, 3 * UNIT };
	struct tmm_pool *pool = new_pool(8 * UNIT);
	struct tmm_pool_block *middle[3], *merged;
	bool freed[3] = { false, false, false };
	int k;

	must_alloc(pool, UNIT);			/* lower guard at 0 */
	for (k = 0; k < 3; k++)
		middle[k] = must_alloc(pool, sizes[k]);
	must_alloc(pool, UNIT);			/* upper guard, fills it */
	ck_assert_uint_eq(stats_of(pool).free_blocks, 0);

	for (k = 0; k < 3; k++) {
		int which = free_orders[_i][k];
		uint64_t runs = 0;
		int j;

		tmm_pool_free(pool, middle[which]);
		freed[which] = true;
		ck_assert_int_eq(tmm_pool_check(pool), 0);
		/* Each maximal run of freed neighbours is one free block. */
		for (j = 0; j < 3; j++)
			if (freed[j] && (j == 0 || !freed[j - 1]))
				runs++;
		ck_assert_uint_eq(stats_of(pool).free_blocks, runs);
	}
	ck_assert_uint_eq(stats_of(pool).free_blocks, 1);
	ck_assert_uint_eq(stats_of(pool).largest_free, 6 * UNIT);
	ck_assert_uint_eq(stats_of(pool).used_blocks, 2);

	/* The merged block is whole: one allocation takes all of it. */
	merged = must_alloc(pool, 6 * UNIT);
	ck_assert_uint_eq(merged->offset, UNIT);
	ck_assert_uint_eq(stats_of(pool).free_blocks, 0);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_everything_freed_is_one_block)
{
	enum { CAPACITY_UNITS = 20000 };
	struct tmm_pool *pool = new_pool(CAPACITY_UNITS * (uint64_t)UNIT);
	struct tmm_pool_block **blocks;
	struct tmm_pool_stats st;
	size_t count = 0, i;
	uint64_t rng = 7;

	blocks = calloc(CAPACITY_UNITS, sizeof(*blocks));
	ck_assert_ptr_nonnull(blocks);
	/* Fill to the last byte with blocks of mixed sizes. */
	for (;;) {
		struct tmm_pool_block *b = NULL;
		uint64_t bytes = 1 + random_below(&rng, 3 * UNIT);

		if (tmm_pool_alloc(pool, bytes, &b) < 0 &&
		    tmm_pool_alloc(pool, 1, &b) < 0)
			break;
		blocks[count++] = b;
	}
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	st = stats_of(pool);
	ck_assert_uint_eq(st.in_use, st.capacity);
	ck_assert_uint_eq(st.free_blocks, 0);
	ck_assert_double_eq(st.fragmentation, 0.0);

	/* Odd ones first: every free leaves isolated holes, then merges. */
	for (i = 1; i < count; i += 2)
		tmm_pool_free(pool, blocks[i]);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	ck_assert_uint_eq(stats_of(pool).free_blocks, count / 2);
	for (i = 0; i < count; i += 2)
		tmm_pool_free(pool, blocks[i]);
	ck_assert_int_eq(tmm_pool_check(pool), 0);

	st = stats_of(pool);
	ck_assert_uint_eq(st.free_blocks, 1);
	ck_assert_uint_eq(st.used_blocks, 0);
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_eq(st.largest_free, st.capacity);
	ck_assert_double_eq(st.fragmentation, 0.0);
	free(blocks);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_fragmentation_and_largest_free)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool_block *blocks[16];
	static const int holes[] = { 1, 2, 5, 8, 9, 10 };
	struct tmm_pool_stats st;
	size_t i;

	st = stats_of(pool);
	ck_assert_uint_eq(st.largest_free, 16 * UNIT);
	ck_assert_double_eq(st.fragmentation, 0.0);

	for (i = 0; i < 16; i++)
		blocks[i] = must_alloc(pool, UNIT);
	st = stats_of(pool);
	ck_assert_uint_eq(st.largest_free, 0);
	ck_assert_double_eq(st.fragmentation, 0.0);	/* nothing free */

	/* Free runs of 2, 1 and 3 units: 1536 bytes free, largest 768. */
	for (i = 0; i < sizeof(holes) / sizeof(holes[0]); i++)
		tmm_pool_free(pool, blocks[holes[i]]);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	st = stats_of(pool);
	ck_assert_uint_eq(st.in_use, 10 * UNIT);
	ck_assert_uint_eq(st.free_blocks, 3);
	ck_assert_uint_eq(st.used_blocks, 10);
	ck_assert_uint_eq(st.largest_free, 3 * UNIT);
	ck_assert_double_eq_tol(st.fragmentation, 0.5, 1e-12);

	/* One more isolated unit: 1 - 3/7. */
	tmm_pool_free(pool, blocks[15]);
	st = stats_of(pool);
	ck_assert_uint_eq(st.free_blocks, 4);
	ck_assert_uint_eq(st.largest_free, 3 * UNIT);
	ck_assert_double_eq_tol(st.fragmentation, 1.0 - 3.0 / 7.0, 1e-12);

	/* Freeing 11..14 joins 8..15 into 8 units of 11 free: 1 - 8/11. */
	for (i = 11; i < 15; i++)
		tmm_pool_free(pool, blocks[i]);
	st = stats_of(pool);
	ck_assert_uint_eq(st.free_blocks, 3);
	ck_assert_uint_eq(st.largest_free, 8 * UNIT);	/* 8..15 merged */
	ck_assert_double_eq_tol(st.fragmentation, 1.0 - 8.0 / 11.0, 1e-12);
	ck_assert_int_eq(tmm_pool_fits(pool, 8 * UNIT), 1);
	ck_assert_int_eq(tmm_pool_fits(pool, 8 * UNIT + 1), 0);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_peak_tracks_high_water_mark)
{
	struct tmm_pool *pool = new_pool(64 * UNIT);
	struct tmm_pool_block *a = must_alloc(pool, 1000);	/* 1024 */
	struct tmm_pool_block *b = must_alloc(pool, 2000);	/* 2048 */
	struct tmm_pool_stats st;

	st = stats_of(pool);
	ck_assert_uint_eq(st.in_use, 3072);
	ck_assert_uint_eq(st.peak, 3072);

	tmm_pool_free(pool, a);
	must_alloc(pool, 256);
	st = stats_of(pool);
	ck_assert_uint_eq(st.in_use, 2304);
	ck_assert_uint_eq(st.peak, 3072);	/* not lowered by a free */

	must_alloc(pool, 4096);
	st = stats_of(pool);
	ck_assert_uint_eq(st.in_use, 6400);
	ck_assert_uint_eq(st.peak, 6400);

	tmm_pool_free(pool, b);
	assert_refused(pool, 64 * UNIT, -ENOMEM);	/* a refusal: no peak */
	ck_assert_uint_eq(stats_of(pool).peak, 6400);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_free_ignores_null_double_and_foreign_blocks)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool *other = new_pool(16 * UNIT);
	struct tmm_pool_block *a, *b, *foreign;
	struct tmm_pool_stats before, after;

	a = must_alloc(pool, UNIT);
	b = must_alloc(pool, UNIT);
	must_alloc(pool, UNIT);
	foreign = must_alloc(other, UNIT);

	tmm_pool_free(NULL, a);
	tmm_pool_free(pool, NULL);
	tmm_pool_free(NULL, NULL);
	ck_assert_uint_eq(stats_of(pool).used_blocks, 3);

	/* b is freed alone (both neighbours used), then freed again. */
	tmm_pool_free(pool, b);
	before = stats_of(pool);
	tmm_pool_free(pool, b);
	tmm_pool_free(pool, foreign);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	ck_assert_int_eq(tmm_pool_check(other), 0);
	after = stats_of(pool);
	assert_same_stats(&before, &after);
	ck_assert_uint_eq(stats_of(other).used_blocks, 1);

	/* a merges into the free b, whose record is recycled: still ignored. */
	tmm_pool_free(pool, a);
	before = stats_of(pool);
	tmm_pool_free(pool, b);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	after = stats_of(pool);
	assert_same_stats(&before, &after);

	tmm_pool_destroy(other);
	tmm_pool_destroy(pool);
}
END_TEST

/*
 * The public part of a block is writable, so a caller can corrupt the
 * pool through it; tmm_pool_check must notice, and be content again once
 * the damage is undone.
 */
/* Records the blocks tmm_pool_walk reports, in its order. */
struct walked {
	uint64_t offset[16], size[16];
	int used[16];
	int n;
};

static void record_block(void *arg, const struct tmm_pool_block *b,
			 int used)
{
	struct walked *w = arg;

	if (w->n < 16) {
		w->offset[w->n] = b->offset;
		w->size[w->n] = b->size;
		w->used[w->n] = used;
	}
	w->n++;
}

/* Compaction's two helpers: an allocation at a chosen offset, and a walk
 * of every block in address order. */
START_TEST(test_alloc_at_and_walk)
{
	struct tmm_pool *pool = new_pool(64 * UNIT);
	struct tmm_pool_block *a, *b, *c;
	struct walked w = { .n = 0 };

	/* In the middle of the one free block: it splits in three. */
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 10 * UNIT, 3 * UNIT + 1, &a),
			 0);
	ck_assert_uint_eq(a->offset, 10 * UNIT);
	ck_assert_uint_eq(a->size, 4 * UNIT);
	tmm_pool_walk(pool, record_block, &w);
	ck_assert_int_eq(w.n, 3);
	ck_assert_uint_eq(w.offset[0], 0);
	ck_assert_uint_eq(w.size[0], 10 * UNIT);
	ck_assert_int_eq(w.used[0], 0);
	ck_assert_uint_eq(w.offset[1], 10 * UNIT);
	ck_assert_int_eq(w.used[1], 1);
	ck_assert_uint_eq(w.offset[2], 14 * UNIT);
	ck_assert_uint_eq(w.size[2], 50 * UNIT);
	ck_assert_int_eq(w.used[2], 0);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	ck_assert_uint_eq(tmm_pool_in_use(pool), 4 * UNIT);

	/* At the very start and the very end of holes: two-way splits. */
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 0, UNIT, &b), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 63 * UNIT, UNIT, &c), 0);
	ck_assert_int_eq(tmm_pool_check(pool), 0);

	/* Taken, overlapping, past the end or unaligned: refused, and the
	 * pool is unchanged. */
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 10 * UNIT, UNIT, &a),
			 -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 8 * UNIT, 4 * UNIT, &a),
			 -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 62 * UNIT, 2 * UNIT, &a),
			 -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 100 * UNIT, UNIT, &a),
			 -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 20 * UNIT + 1, UNIT, &a),
			 -EINVAL);
	ck_assert_uint_eq(tmm_pool_in_use(pool), 6 * UNIT);
	ck_assert_int_eq(tmm_pool_check(pool), 0);

	/* Freed, everything coalesces again. */
	tmm_pool_free(pool, b);
	tmm_pool_free(pool, c);
	w.n = 0;
	tmm_pool_walk(pool, record_block, &w);
	ck_assert_int_eq(w.n, 3);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	tmm_pool_destroy(pool);
}
END_TEST

/*
 * TSPLIT's memory reuse (Eq. 5) as the pool sees it: an input of 16 units
 * gives back 2 units per micro-op from its front while the output, placed
 * 2 units below it, grows into them.  The pair never holds more than the
 * input plus those 2 units.
 */
START_TEST(test_trim_and_extend_reuse_rows)
{
	struct tmm_pool *pool = new_pool(64 * UNIT);
	struct tmm_pool_block *in, *out, *guard;
	struct walked w = { .n = 0 };

	ck_assert_int_eq(tmm_pool_alloc_at(pool, 6 * UNIT, 2 * UNIT, &guard),
			 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 10 * UNIT, 16 * UNIT, &in),
			 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 8 * UNIT, 2 * UNIT, &out),
			 0);
	for (int k = 0; k < 8; k++) {
		if (k > 0)
			ck_assert_int_eq(tmm_pool_extend(pool, out, 2 * UNIT),
					 0);
		ck_assert_uint_eq(out->offset, 8 * UNIT);
		ck_assert_uint_eq(out->size, (uint64_t)(k + 1) * 2 * UNIT);
		if (k < 7) {
			ck_assert_int_eq(tmm_pool_trim(pool, in, 2 * UNIT), 0);
			ck_assert_uint_eq(in->offset,
					  (uint64_t)(10 + 2 * (k + 1)) * UNIT);
			ck_assert_uint_eq(in->size,
					  (uint64_t)(16 - 2 * (k + 1)) * UNIT);
		} else {
			tmm_pool_free(pool, in);
		}
		ck_assert_int_eq(tmm_pool_check(pool), 0);
	}
	ck_assert_uint_eq(out->size, 16 * UNIT);
	ck_assert_uint_eq(tmm_pool_in_use(pool), 18 * UNIT);
	{
		struct tmm_pool_stats st;

		tmm_pool_get_stats(pool, &st);
		ck_assert_uint_eq(st.peak, 20 * UNIT);
	}
	/* guard, out, and the rest free: nothing left over between. */
	tmm_pool_walk(pool, record_block, &w);
	ck_assert_int_eq(w.n, 4);
	ck_assert_uint_eq(w.offset[2], 8 * UNIT);
	ck_assert_uint_eq(w.offset[3], 24 * UNIT);
	ck_assert_uint_eq(w.size[3], 40 * UNIT);
	tmm_pool_free(pool, out);
	tmm_pool_free(pool, guard);
	ck_assert_uint_eq(tmm_pool_in_use(pool), 0);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	tmm_pool_destroy(pool);
}
END_TEST

/* Trims and extensions that cannot be done leave the pool as it was. */
START_TEST(test_trim_and_extend_refusals)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool_block *a, *b;
	struct walked w = { .n = 0 };

	ck_assert_int_eq(tmm_pool_alloc_at(pool, 0, 4 * UNIT, &a), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 4 * UNIT, 4 * UNIT, &b), 0);
	/* the whole block, more, unaligned, nothing */
	ck_assert_int_eq(tmm_pool_trim(pool, a, 4 * UNIT), -EINVAL);
	ck_assert_int_eq(tmm_pool_trim(pool, a, 8 * UNIT), -EINVAL);
	ck_assert_int_eq(tmm_pool_trim(pool, a, UNIT + 1), -EINVAL);
	ck_assert_int_eq(tmm_pool_trim(pool, a, 0), -EINVAL);
	ck_assert_int_eq(tmm_pool_trim(NULL, a, UNIT), -EINVAL);
	/* a's neighbour is used; b's is free but too small */
	ck_assert_int_eq(tmm_pool_extend(pool, a, UNIT), -ENOMEM);
	ck_assert_int_eq(tmm_pool_extend(pool, b, 9 * UNIT), -ENOMEM);
	ck_assert_int_eq(tmm_pool_extend(pool, b, 0), -EINVAL);
	ck_assert_uint_eq(a->offset, 0);
	ck_assert_uint_eq(a->size, 4 * UNIT);
	ck_assert_uint_eq(b->size, 4 * UNIT);
	ck_assert_uint_eq(tmm_pool_in_use(pool), 8 * UNIT);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	/* Taking all the free space after b leaves no empty free block;
	 * a rounded extension takes whole units. */
	ck_assert_int_eq(tmm_pool_extend(pool, b, 7 * UNIT + 1), 0);
	ck_assert_uint_eq(b->size, 12 * UNIT);
	tmm_pool_walk(pool, record_block, &w);
	ck_assert_int_eq(w.n, 2);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	/* A trimmed front with a used neighbour below is a free block of
	 * its own, which a later trim of the same block grows. */
	ck_assert_int_eq(tmm_pool_trim(pool, b, 2 * UNIT), 0);
	ck_assert_int_eq(tmm_pool_trim(pool, b, UNIT), 0);
	w.n = 0;
	tmm_pool_walk(pool, record_block, &w);
	ck_assert_int_eq(w.n, 3);
	ck_assert_uint_eq(w.offset[1], 4 * UNIT);
	ck_assert_uint_eq(w.size[1], 3 * UNIT);
	ck_assert_int_eq(w.used[1], 0);
	ck_assert_uint_eq(b->offset, 7 * UNIT);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	/* A freed block can be neither trimmed nor extended. */
	tmm_pool_free(pool, a);
	ck_assert_int_eq(tmm_pool_trim(pool, a, UNIT), -EINVAL);
	ck_assert_int_eq(tmm_pool_extend(pool, a, UNIT), -EINVAL);
	tmm_pool_free(pool, b);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_check_detects_corruption)
{
	struct tmm_pool *pool = new_pool(16 * UNIT);
	struct tmm_pool_block *a = must_alloc(pool, UNIT);
	struct tmm_pool_block *b = must_alloc(pool, 2 * UNIT);

	must_alloc(pool, UNIT);
	tmm_pool_free(pool, b);		/* a free hole between used blocks */
	ck_assert_int_eq(tmm_pool_check(pool), 0);

	a->size += UNIT;		/* overlaps the hole */
	ck_assert_int_eq(tmm_pool_check(pool), -EFAULT);
	a->size -= UNIT;
	ck_assert_int_eq(tmm_pool_check(pool), 0);

	a->offset += UNIT;		/* no longer where the list says */
	ck_assert_int_eq(tmm_pool_check(pool), -EFAULT);
	a->offset -= UNIT;

	a->size = 100;			/* not a multiple of the alignment */
	ck_assert_int_eq(tmm_pool_check(pool), -EFAULT);
	a->size = UNIT;
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(test_null_arguments_are_harmless)
{
	struct tmm_pool_stats st;

	memset(&st, 0xff, sizeof(st));
	tmm_pool_get_stats(NULL, &st);
	ck_assert_uint_eq(st.capacity, 0);
	ck_assert_uint_eq(st.free_blocks, 0);
	tmm_pool_get_stats(NULL, NULL);
	tmm_pool_destroy(NULL);
	ck_assert_int_ne(tmm_pool_check(NULL), 0);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *suite = suite_create("pool");
	TCase *layouts = tcase_create("layouts");

	tcase_add_test(layouts, test_create_rejects_bad_capacity);
	tcase_add_test(layouts, test_limit_bounds_in_use_until_raised);
	tcase_add_test(layouts, test_alignment_and_rounding);
	tcase_add_test(layouts, test_bad_requests_leave_pool_unchanged);
	tcase_add_test(layouts, test_best_fit_prefers_smallest_then_lowest);
	tcase_add_loop_test(layouts,
			    test_coalescing_three_adjacent_in_every_order, 0,
			    6);
	tcase_add_test(layouts, test_everything_freed_is_one_block);
	tcase_add_test(layouts, test_fragmentation_and_largest_free);
	tcase_add_test(layouts, test_peak_tracks_high_water_mark);
	tcase_add_test(layouts,
		       test_free_ignores_null_double_and_foreign_blocks);
	tcase_add_test(layouts, test_alloc_at_and_walk);
	tcase_add_test(layouts, test_trim_and_extend_reuse_rows);
	tcase_add_test(layouts, test_trim_and_extend_refusals);
	tcase_add_test(layouts, test_check_detects_corruption);
	tcase_add_test(layouts, test_null_arguments_are_harmless);
	suite_add_tcase(suite, layouts);

	add_pool_model_tests(suite);
	add_pool_map_tests(suite);
	return suite;
}

int main(void)
{
	return check_main(pool_suite);
}
