/* SPDX-License-Identifier: MIT */
/*
 * test_pool_map.c — the pool over mapped chunks (pool=chunks,
 * lib/mem/pool_map.c): chunks are mapped as blocks come to overlap them,
 * blocks go where they need the fewest new chunks, chunks stay cached
 * when the last block goes and are unmapped only above the cap, and a
 * refused mapping leaves the pool as it was.
 *
 * The mapper is a fake that records which chunks it holds and can be
 * told to refuse the n-th map, so that every answer is checked against
 * what was really mapped and unmapped.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "test_pool.h"

#define C TMM_POOL_CHUNK
#define MAX_CHUNKS 64

struct fake {
	bool held[MAX_CHUNKS];
	unsigned maps, unmaps;	/* calls */
	unsigned held_now;
	int refuse_at;		/* the n-th map call fails (1-based), 0: none */
	bool refuse_all;
	bool bad_call;		/* an unaligned, doubled or foreign call */
};

static int fake_map(void *arg, uint64_t offset, uint64_t bytes)
{
	struct fake *f = arg;
	uint64_t k = offset / C;

	f->maps++;
	if (offset % C || bytes != C || k >= MAX_CHUNKS || f->held[k]) {
		f->bad_call = true;
		return -EINVAL;
	}
	if (f->refuse_all || (f->refuse_at && (int)f->maps == f->refuse_at))
		return -ENOMEM;
	f->held[k] = true;
	f->held_now++;
	return 0;
}

static void fake_unmap(void *arg, uint64_t offset, uint64_t bytes)
{
	struct fake *f = arg;
	uint64_t k = offset / C;

	f->unmaps++;
	if (offset % C || bytes != C || k >= MAX_CHUNKS || !f->held[k]) {
		f->bad_call = true;
		return;
	}
	f->held[k] = false;
	f->held_now--;
}

static struct tmm_pool *mapped_pool(struct fake *f, uint64_t chunks,
				    uint64_t limit)
{
	struct tmm_pool_mapper m = { fake_map, fake_unmap, f };
	struct tmm_pool *pool = NULL;

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(tmm_pool_create_mapped(&pool, chunks * C, &m), 0);
	ck_assert(tmm_pool_is_mapped(pool));
	tmm_pool_set_limit(pool, limit);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	return pool;
}

/* The pool's figure of mapped bytes is the fake's, and both are sane. */
static void agree(const struct tmm_pool *pool, const struct fake *f)
{
	struct tmm_pool_stats st = stats_of(pool);

	ck_assert(!f->bad_call);
	ck_assert_int_eq(tmm_pool_check(pool), 0);
	ck_assert_uint_eq(st.mapped, (uint64_t)f->held_now * C);
	ck_assert_uint_ge(st.mapped_peak, st.mapped);
}

START_TEST(chunks_are_mapped_as_blocks_come_and_cached_as_they_go)
{
	struct fake f;
	struct tmm_pool *pool = mapped_pool(&f, 8, 3 * C);
	struct tmm_pool_block *a, *b;
	struct tmm_pool_stats st;

	ck_assert_uint_eq(stats_of(pool).mapped, 0);
	ck_assert_uint_eq(stats_of(pool).mapped_cap, 4 * C); /* 3 + 1 */
	/* A small block comes from the bottom: one chunk. */
	ck_assert_int_eq(tmm_pool_alloc(pool, 1000, &a), 0);
	ck_assert_uint_eq(a->offset, 0);
	ck_assert(f.held[0]);
	agree(pool, &f);
	/* A second small block shares it: no new mapping. */
	ck_assert_int_eq(tmm_pool_alloc(pool, 1000, &b), 0);
	ck_assert_uint_eq(f.maps, 1);
	agree(pool, &f);
	/* Freed, the chunk stays mapped (cached), and is used again. */
	tmm_pool_free(pool, a);
	tmm_pool_free(pool, b);
	ck_assert_uint_eq(f.held_now, 1);
	ck_assert_uint_eq(f.unmaps, 0);
	agree(pool, &f);
	ck_assert_int_eq(tmm_pool_alloc(pool, 5000, &a), 0);
	ck_assert_uint_eq(f.maps, 1);
	/* A large block goes to the end of its hole that needs fewer new
	 * chunks: the bottom, which shares chunk 0, needs one, the top of
	 * the range two. */
	ck_assert_int_eq(tmm_pool_alloc(pool, C + 1, &b), 0);
	ck_assert_uint_eq(b->offset, a->offset + a->size);
	ck_assert(f.held[1] && !f.held[7]);
	agree(pool, &f);
	st = stats_of(pool);
	ck_assert_uint_eq(st.mapped, 2 * C);
	ck_assert_uint_eq(st.in_use, a->size + b->size);
	/* Capacity is the virtual range; the free bytes the limit's. */
	ck_assert_uint_eq(st.capacity, 8 * C);
	ck_assert_uint_le(st.largest_free, 3 * C - st.in_use);
	tmm_pool_free(pool, a);
	tmm_pool_free(pool, b);
	agree(pool, &f);
	tmm_pool_destroy(pool);
	ck_assert(!f.bad_call);
	ck_assert_uint_eq(f.held_now, 0); /* destroy unmaps all */
}
END_TEST

/* Where both ends of a hole need as many new chunks, the arena's rule
 * holds: large blocks from the top, small ones from the bottom. */
START_TEST(ties_keep_large_blocks_at_the_top)
{
	struct fake f;
	struct tmm_pool *pool = mapped_pool(&f, 8, 6 * C);
	struct tmm_pool_block *a, *b;

	ck_assert_int_eq(tmm_pool_alloc(pool, C + 1, &a), 0);
	ck_assert_uint_eq(a->offset + a->size, 8 * C);
	ck_assert_int_eq(tmm_pool_alloc(pool, 4096, &b), 0);
	/* The hole's top shares chunk 6 with a: it needs none there. */
	ck_assert_uint_eq(b->offset + b->size, a->offset);
	ck_assert_uint_eq(f.held_now, 2);
	agree(pool, &f);
	tmm_pool_free(pool, b);
	tmm_pool_free(pool, a);
	tmm_pool_destroy(pool);
	/* Small, and no chunk to share at either end: the bottom. */
	pool = mapped_pool(&f, 8, 6 * C);
	ck_assert_int_eq(tmm_pool_alloc(pool, 4096, &b), 0);
	ck_assert_uint_eq(b->offset, 0);
	agree(pool, &f);
	tmm_pool_free(pool, b);
	tmm_pool_destroy(pool);
}
END_TEST

START_TEST(the_cap_is_kept_by_unmapping_cached_chunks_first)
{
	struct fake f;
	/* A limit of 2 chunks: a cap of 3. */
	struct tmm_pool *pool = mapped_pool(&f, 16, 2 * C);
	struct tmm_pool_block *a, *b, *c, *d;

	/* Three small blocks in three chunks, placed exactly. */
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 0, 4096, &a), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 5 * C, 4096, &b), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 9 * C, 4096, &c), 0);
	ck_assert_uint_eq(f.held_now, 3);
	agree(pool, &f);
	/* 12 KiB in use, far under the limit, but a block that needs a
	 * fourth chunk is refused, and the pool is unchanged. */
	ck_assert_int_eq(tmm_pool_alloc(pool, C, &d), -ENOMEM);
	ck_assert_uint_eq(stats_of(pool).used_blocks, 3);
	ck_assert_int_eq(stats_of(pool).map_failed, 0);
	agree(pool, &f);
	/* Once a chunk is only cached, it makes room. */
	tmm_pool_free(pool, b);
	ck_assert(f.held[5]);
	ck_assert_int_eq(tmm_pool_alloc(pool, C, &d), 0);
	ck_assert(!f.held[5]);
	ck_assert_uint_eq(f.held_now, 3);
	agree(pool, &f);
	/* Growing a block is capped too. */
	ck_assert_int_eq(tmm_pool_extend(pool, a, C), -ENOMEM);
	agree(pool, &f);
	tmm_pool_free(pool, d);
	ck_assert_int_eq(tmm_pool_extend(pool, a, C), 0);
	ck_assert(f.held[1]);
	agree(pool, &f);
	/* Trimming gives back the chunks below the one the block starts
	 * in. */
	ck_assert_int_eq(tmm_pool_trim(pool, a, C), 0);
	agree(pool, &f);
	tmm_pool_free(pool, a);
	tmm_pool_free(pool, c);
	agree(pool, &f);
	tmm_pool_destroy(pool);
	ck_assert_uint_eq(f.held_now, 0);
}
END_TEST

/* Compaction's placements pass the cap for a moment; frees restore it. */
START_TEST(alloc_at_passes_the_cap_and_frees_bring_it_back)
{
	struct fake f;
	struct tmm_pool *pool = mapped_pool(&f, 16, C);
	struct tmm_pool_block *b[4];

	/* Not during a compaction: within the limit, and capped like any
	 * allocation. */
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 0, C + 4096, &b[0]), -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 0, 4096, &b[0]), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 3 * C, 4096, &b[1]), 0);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 6 * C, 4096, &b[2]), -ENOMEM);
	agree(pool, &f);
	/* During one, it passes the cap, and frees unmap nothing. */
	tmm_pool_keep_mapped(pool, true);
	for (int i = 2; i < 4; i++)
		ck_assert_int_eq(tmm_pool_alloc_at(pool, (uint64_t)i * 3 * C,
						   4096, &b[i]), 0);
	ck_assert_uint_eq(f.held_now, 4); /* over the cap of 2 */
	tmm_pool_free(pool, b[0]);
	ck_assert_uint_eq(f.held_now, 4);
	agree(pool, &f);
	/* Let go, the cap comes back as far as free chunks allow. */
	tmm_pool_keep_mapped(pool, false);
	ck_assert_uint_eq(f.held_now, 3);
	for (int i = 1; i < 3; i++)
		tmm_pool_free(pool, b[i]);
	ck_assert_uint_le(f.held_now, 2);
	agree(pool, &f);
	/* Lowering the limit lowers the cap, unmapping cached chunks. */
	tmm_pool_set_limit(pool, 1);
	ck_assert_uint_eq(stats_of(pool).mapped_cap, 1 * C);
	ck_assert_uint_eq(f.held_now, 1);
	agree(pool, &f);
	tmm_pool_free(pool, b[3]);
	tmm_pool_destroy(pool);
	ck_assert_uint_eq(f.held_now, 0);
}
END_TEST

START_TEST(a_refused_mapping_leaves_the_pool_unchanged)
{
	struct fake f;
	struct tmm_pool *pool = mapped_pool(&f, 16, 8 * C);
	struct tmm_pool_block *a, *b;
	struct tmm_pool_stats before, after;

	ck_assert_int_eq(tmm_pool_alloc(pool, 1000, &a), 0);
	before = stats_of(pool);
	/* The third chunk of a four-chunk block is refused: the two mapped
	 * before it are unmapped again. */
	f.refuse_at = (int)f.maps + 3;
	ck_assert_int_eq(tmm_pool_alloc(pool, 4 * C, &b), -ENOMEM);
	after = stats_of(pool);
	ck_assert_uint_eq(after.in_use, before.in_use);
	ck_assert_uint_eq(after.used_blocks, before.used_blocks);
	ck_assert_uint_eq(after.free_blocks, before.free_blocks);
	ck_assert_uint_eq(after.mapped, before.mapped);
	ck_assert_int_eq(after.map_failed, 1);
	agree(pool, &f);
	/* The next one is granted, and the failure is forgotten. */
	ck_assert_int_eq(tmm_pool_alloc(pool, 4 * C, &b), 0);
	ck_assert_int_eq(stats_of(pool).map_failed, 0);
	agree(pool, &f);
	/* A refusal is retried once without the cache: freed chunks are
	 * unmapped and the mapping tried again. */
	tmm_pool_free(pool, b);
	ck_assert_uint_eq(f.held_now, 5);
	f.refuse_at = (int)f.maps + 1;
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 10 * C, C, &b), 0);
	ck_assert_uint_eq(f.held_now, 2);
	agree(pool, &f);
	tmm_pool_free(pool, b);
	/* Refused every time: alloc, alloc_at and extend all fail clean. */
	f.refuse_all = true;
	ck_assert_int_eq(tmm_pool_alloc(pool, 3 * C, &b), -ENOMEM);
	ck_assert_int_eq(tmm_pool_alloc_at(pool, 12 * C, 4096, &b), -ENOMEM);
	ck_assert_int_eq(stats_of(pool).map_failed, 1);
	ck_assert_int_eq(tmm_pool_extend(pool, a, 2 * C), -ENOMEM);
	ck_assert_uint_eq(stats_of(pool).used_blocks, 1);
	agree(pool, &f);
	tmm_pool_free(pool, a);
	tmm_pool_destroy(pool);
	ck_assert_uint_eq(f.held_now, 0);
}
END_TEST

/* Random blocks: whatever happens, the map agrees with the blocks and
 * the fake, and the cap holds whenever no alloc_at passed it. */
START_TEST(random_sequences_keep_the_map_true)
{
	struct fake f;
	struct tmm_pool *pool = mapped_pool(&f, 32, 10 * C);
	struct tmm_pool_block *live[64] = { 0 };
	uint64_t seed = 21;

	for (int step = 0; step < 4000; step++) {
		unsigned i = (unsigned)random_below(&seed, 64);

		if (live[i]) {
			tmm_pool_free(pool, live[i]);
			live[i] = NULL;
		} else {
			uint64_t bytes = 1 + random_below(&seed, C / 2);

			if (random_below(&seed, 8) == 0)
				bytes += random_below(&seed, 3 * C);
			if (random_below(&seed, 50) == 0)
				f.refuse_at = (int)f.maps + 1;
			(void)tmm_pool_alloc(pool, bytes, &live[i]);
			f.refuse_at = 0;
		}
		REQUIRE(!f.bad_call, "a bad mapper call at step %d", step);
		REQUIRE(tmm_pool_check(pool) == 0, "check at step %d", step);
		REQUIRE(stats_of(pool).mapped == (uint64_t)f.held_now * C,
			"mapped bytes at step %d", step);
		REQUIRE(f.held_now <= 11, "cap passed at step %d", step);
	}
	for (unsigned i = 0; i < 64; i++)
		tmm_pool_free(pool, live[i]);
	agree(pool, &f);
	tmm_pool_destroy(pool);
	ck_assert_uint_eq(f.held_now, 0);
}
END_TEST

void add_pool_map_tests(Suite *suite)
{
	TCase *tc = tcase_create("chunks");

	tcase_add_test(tc,
		       chunks_are_mapped_as_blocks_come_and_cached_as_they_go);
	tcase_add_test(tc, ties_keep_large_blocks_at_the_top);
	tcase_add_test(tc, the_cap_is_kept_by_unmapping_cached_chunks_first);
	tcase_add_test(tc, alloc_at_passes_the_cap_and_frees_bring_it_back);
	tcase_add_test(tc, a_refused_mapping_leaves_the_pool_unchanged);
	tcase_add_test(tc, random_sequences_keep_the_map_true);
	suite_add_tcase(suite, tc);
}
