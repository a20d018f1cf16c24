/* SPDX-License-Identifier: MIT */
/*
 * pool_map.h — which chunks of a pool's virtual range hold physical
 * memory (pool=chunks, swap mode; see pool_map.c for the method).
 *
 * The pool (pool.c) owns one of these when it is created with a mapper
 * (tmm_pool_create_mapped, pool.h) and tells it every change of the
 * chunks its allocated blocks overlap; nothing else calls it.
 */
#ifndef TMM_POOL_MAP_H
#define TMM_POOL_MAP_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The chunk: the unit in which physical memory is mapped and unmapped.
 * 2 MiB is the granularity CUDA recommends for cuMemCreate on current
 * GPUs (cuMemGetAllocationGranularity with
 * CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), and the simulator uses the same,
 * so that a run on it maps what a run on a GPU would.
 */
#define TMM_POOL_CHUNK (2ull << 20)

/*
 * How a pool maps physical memory under its virtual range: map backs
 * [offset, offset + bytes) of the range (chunk-aligned) and returns 0 or
 * a negative errno, unmap gives those bytes back.  arg is passed to both.
 */
struct tmm_pool_mapper {
	int (*map)(void *arg, uint64_t offset, uint64_t bytes);
	void (*unmap)(void *arg, uint64_t offset, uint64_t bytes);
	void *arg;
};

struct tmm_pool_map;

/*
 * A map of `chunks` chunks, none mapped, with every chunk allowed (the
 * cap).  Returns 0, -EINVAL (no chunk, no map callback), -ENOMEM.
 */
int tmm_pool_map_create(struct tmm_pool_map **out, uint64_t chunks,
			const struct tmm_pool_mapper *mapper);
/* Unmaps every mapped chunk and frees the map; NULL is ignored. */
void tmm_pool_map_destroy(struct tmm_pool_map *map);

/* The chunks [*first, *end) that [offset, offset + bytes) overlaps. */
static inline void tmm_pool_map_span(uint64_t offset, uint64_t bytes,
				     uint64_t *first, uint64_t *end)
{
	*first = offset / TMM_POOL_CHUNK;
	*end = (offset + bytes + TMM_POOL_CHUNK - 1) / TMM_POOL_CHUNK;
}

/*
 * One more block overlaps each chunk of [first, end): those not mapped
 * are mapped.  With `capped`, the mapped chunks may not pass the cap:
 * cached chunks (mapped, no block) are unmapped to make room, and when
 * that is not enough it returns -ENOMEM.  A map callback that fails is
 * retried once after every cached chunk is unmapped (the device may be
 * short of memory that the cache holds); if it fails again, what this
 * call mapped is unmapped, it returns -ENOMEM and map_failed says so.
 * On failure no count changes.
 */
int tmm_pool_map_take(struct tmm_pool_map *map, uint64_t first, uint64_t end,
		      bool capped);

/* How many chunks of [first, end) are not mapped. */
uint64_t tmm_pool_map_missing(const struct tmm_pool_map *map, uint64_t first,
			      uint64_t end);

/* One block fewer overlaps each chunk of [first, end); chunks left with
 * none stay mapped (cached) unless the mapped chunks pass the cap. */
void tmm_pool_map_give(struct tmm_pool_map *map, uint64_t first,
		       uint64_t end);

/*
 * While `keep`, nothing is unmapped, the cap waits, and capped takes that
 * would need room from the cache fail: a compaction frees a tensor's
 * block before it copies the bytes out of it (compact.c).  Let go, the
 * cached chunks above the cap are unmapped.
 */
void tmm_pool_map_keep(struct tmm_pool_map *map, bool keep);

/* Sets the cap in chunks (at most the range's), unmapping cached chunks
 * down to it when they are above. */
void tmm_pool_map_set_cap(struct tmm_pool_map *map, uint64_t chunks);

/* mapped_peak starts again from the chunks mapped now. */
void tmm_pool_map_reset_peak(struct tmm_pool_map *map);

struct tmm_pool_map_stats {
	uint64_t chunks;	/* in the virtual range */
	uint64_t cap;		/* the most mapped by a capped take */
	uint64_t mapped;	/* chunks mapped now */
	uint64_t mapped_peak;	/* high-water mark of mapped */
	uint64_t cached;	/* mapped chunks no block overlaps */
	bool map_failed;	/* the last take failed in a map callback */
};

void tmm_pool_map_get_stats(const struct tmm_pool_map *map,
			    struct tmm_pool_map_stats *st);

/* How many blocks overlap chunk k, and whether it is mapped (for
 * tmm_pool_check, which counts the blocks itself). */
uint32_t tmm_pool_map_users(const struct tmm_pool_map *map, uint64_t k);
bool tmm_pool_map_is_mapped(const struct tmm_pool_map *map, uint64_t k);

#endif /* TMM_POOL_MAP_H */
