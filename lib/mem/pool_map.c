/* SPDX-License-Identifier: MIT */
/*
 * pool_map.c — physical chunks under a pool's virtual range.
 *
 * With pool=chunks the pool hands out offsets into a virtual range twice
 * as large as the memory it may hold (lifecycle.c reserves it), and
 * physical memory is mapped under the range in fixed-size chunks
 * (TMM_POOL_CHUNK) only where allocated blocks lie.  Free bytes that are
 * scattered in holes then cost address space, of which there is plenty,
 * not device memory: an op whose tensors fit the budget needs only as
 * many chunks as its bytes fill, wherever the holes are.  The idea is the
 * one of PyTorch's expandable segments and of GMLake; the code is ours.
 *
 * Per chunk this file keeps how many allocated blocks overlap it and
 * whether it is mapped.  A chunk is mapped when the first block comes to
 * overlap it.  When the last one goes it stays mapped, cached, since the
 * next allocation is likely to land there again and mapping costs a
 * driver call; cached chunks are unmapped only when the mapped chunks
 * pass the cap (a chunk that blocks still overlap cannot be).
 *
 * The cap is what physical memory the pool may hold: pool.c sets it to
 * the byte limit rounded up to a chunk, plus one chunk, so that an op
 * whose tensors fit the limit, packed contiguously, fits the cap too
 * (ceil(bytes / chunk) chunks, and one more for the chunk a block below
 * them shares).  Compaction's moves map without the cap: they hold both
 * places of a tensor for a moment, and the cap comes back as the old
 * places are freed (tmm_pool_map_give unmaps down to it).
 */
#include <errno.h>
#include <stdlib.h>

#include "pool_map.h"
#include "lib/base/xalloc.h"

struct tmm_pool_map {
	struct tmm_pool_mapper mapper;
	uint64_t chunks;	/* in the range */
	uint64_t cap;		/* mapped may not pass it in a capped take */
	uint64_t mapped;	/* chunks mapped now */
	uint64_t mapped_peak;
	uint64_t cached;	/* mapped chunks with no user */
	bool map_failed;	/* the last take failed in a map callback */
	bool keep;		/* unmap nothing (tmm_pool_map_keep) */
	uint32_t *users;	/* [chunks]: blocks that overlap the chunk */
	uint8_t *is_mapped;	/* [chunks] */
};

int tmm_pool_map_create(struct tmm_pool_map **out, uint64_t chunks,
			const struct tmm_pool_mapper *mapper)
{
	struct tmm_pool_map *map;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (chunks == 0 || !mapper || !mapper->map || !mapper->unmap)
		return -EINVAL;
	map = tmm_calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	map->users = tmm_calloc(chunks, sizeof(*map->users));
	map->is_mapped = tmm_calloc(chunks, sizeof(*map->is_mapped));
	if (!map->users || !map->is_mapped) {
		free(map->users);
		free(map->is_mapped);
		free(map);
		return -ENOMEM;
	}
	map->mapper = *mapper;
	map->chunks = chunks;
	map->cap = chunks;
	*out = map;
	return 0;
}

static void unmap_chunk(struct tmm_pool_map *map, uint64_t k)
{
	map->mapper.unmap(map->mapper.arg, k * TMM_POOL_CHUNK,
			  TMM_POOL_CHUNK);
	map->is_mapped[k] = 0;
	map->mapped--;
}

void tmm_pool_map_destroy(struct tmm_pool_map *map)
{
	if (!map)
		return;
	for (uint64_t k = 0; k < map->chunks; k++)
		if (map->is_mapped[k])
			unmap_chunk(map, k);
	free(map->users);
	free(map->is_mapped);
	free(map);
}

/*
 * Unmaps up to `n` cached chunks outside [first, end), from the top of
 * the range down: the bottom is where packed tensors lie (compact.c),
 * and the next allocations are likeliest to land near them.  Returns how
 * many it unmapped.
 */
static uint64_t drop_cached(struct tmm_pool_map *map, uint64_t n,
			    uint64_t first, uint64_t end)
{
	uint64_t done = 0;

	if (map->keep)
		return 0;
	for (uint64_t k = map->chunks; k-- > 0 && done < n && map->cached;) {
		if (!map->is_mapped[k] || map->users[k] ||
		    (k >= first && k < end))
			continue;
		unmap_chunk(map, k);
		map->cached--;
		done++;
	}
	return done;
}

/* Maps the unmapped chunks of [first, end); on failure unmaps what it
 * mapped and returns the callback's error. */
static int map_span(struct tmm_pool_map *map, uint64_t first, uint64_t end)
{
	for (uint64_t k = first; k < end; k++) {
		int rc;

		if (map->is_mapped[k])
			continue;
		rc = map->mapper.map(map->mapper.arg, k * TMM_POOL_CHUNK,
				     TMM_POOL_CHUNK);
		if (rc < 0) {
			/* Back to how the call found the span. */
			while (k-- > first)
				if (map->is_mapped[k] == 2)
					unmap_chunk(map, k);
			return rc;
		}
		map->is_mapped[k] = 2; /* mapped by this call, for rollback */
		map->mapped++;
	}
	return 0;
}

int tmm_pool_map_take(struct tmm_pool_map *map, uint64_t first, uint64_t end,
		      bool capped)
{
	uint64_t missing = 0, cached_inside = 0;
	int rc;

	if (!map || first >= end || end > map->chunks)
		return -EINVAL;
	map->map_failed = false;
	for (uint64_t k = first; k < end; k++) {
		if (!map->is_mapped[k])
			missing++;
		else if (!map->users[k])
			cached_inside++;
	}
	if (capped && map->mapped + missing > map->cap) {
		uint64_t over = map->mapped + missing - map->cap;

		/* Only cached chunks outside the span may make room. */
		if (map->keep || over > map->cached - cached_inside)
			return -ENOMEM;
		drop_cached(map, over, first, end);
	}
	rc = map_span(map, first, end);
	if (rc < 0 && map->cached > cached_inside) {
		/* The device may be short of what the cache holds. */
		drop_cached(map, map->cached, first, end);
		rc = map_span(map, first, end);
	}
	if (rc < 0) {
		map->map_failed = true;
		return -ENOMEM;
	}
	for (uint64_t k = first; k < end; k++) {
		if (map->is_mapped[k] == 2)
			map->is_mapped[k] = 1;
		else if (!map->users[k])
			map->cached--; /* a cached chunk is used again */
		map->users[k]++;
	}
	if (map->mapped > map->mapped_peak)
		map->mapped_peak = map->mapped;
	return 0;
}

uint64_t tmm_pool_map_missing(const struct tmm_pool_map *map, uint64_t first,
			      uint64_t end)
{
	uint64_t n = 0;

	for (uint64_t k = first; map && k < end && k < map->chunks; k++)
		n += !map->is_mapped[k];
	return n;
}

void tmm_pool_map_give(struct tmm_pool_map *map, uint64_t first,
		       uint64_t end)
{
	if (!map || end > map->chunks)
		return;
	for (uint64_t k = first; k < end; k++) {
		if (!map->users[k])
			continue; /* a bug upstream: do not wrap around */
		if (--map->users[k] == 0)
			map->cached++;
	}
	if (map->mapped > map->cap)
		drop_cached(map, map->mapped - map->cap, 0, 0);
}

void tmm_pool_map_keep(struct tmm_pool_map *map, bool keep)
{
	if (!map)
		return;
	map->keep = keep;
	if (!keep && map->mapped > map->cap)
		drop_cached(map, map->mapped - map->cap, 0, 0);
}

void tmm_pool_map_set_cap(struct tmm_pool_map *map, uint64_t chunks)
{
	if (!map)
		return;
	map->cap = chunks < map->chunks ? chunks : map->chunks;
	if (map->mapped > map->cap)
		drop_cached(map, map->mapped - map->cap, 0, 0);
}

void tmm_pool_map_reset_peak(struct tmm_pool_map *map)
{
	if (map)
		map->mapped_peak = map->mapped;
}

void tmm_pool_map_get_stats(const struct tmm_pool_map *map,
			    struct tmm_pool_map_stats *st)
{
	if (!st)
		return;
	*st = (struct tmm_pool_map_stats){ 0 };
	if (!map)
		return;
	st->chunks = map->chunks;
	st->cap = map->cap;
	st->mapped = map->mapped;
	st->mapped_peak = map->mapped_peak;
	st->cached = map->cached;
	st->map_failed = map->map_failed;
}

uint32_t tmm_pool_map_users(const struct tmm_pool_map *map, uint64_t k)
{
	return map && k < map->chunks ? map->users[k] : 0;
}

bool tmm_pool_map_is_mapped(const struct tmm_pool_map *map, uint64_t k)
{
	return map && k < map->chunks && map->is_mapped[k];
}
