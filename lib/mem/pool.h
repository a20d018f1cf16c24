/* SPDX-License-Identifier: MIT */
/*
 * pool.h — the device memory pool.
 *
 * One arena per context, carved into blocks by best fit with coalescing of
 * free neighbours (large blocks from the top of their hole, small ones
 * from the bottom), every block aligned to TMM_POOL_ALIGN bytes
 * (SuperNeurons §3.2.1: one big allocation up front, then a pool, because
 * cudaMalloc/cudaFree are slow and synchronise the device).
 *
 * The pool manages offsets only: block metadata lives in host memory, never
 * in the arena, because device memory is not host-accessible.  Block
 * records are recycled, so after warm-up alloc and free do no host
 * allocation.
 *
 * pool=chunks (tmm_pool_create_mapped): the offsets are into a virtual
 * range twice the size of the memory the pool may hold, and physical
 * memory is mapped under it in TMM_POOL_CHUNK chunks only where blocks
 * lie (pool_map.c), so that holes between blocks cost no device memory
 * and fragmentation cannot refuse an allocation the limit has room for,
 * once the blocks are packed (compact.c).  Allocation then also keeps
 * the mapped chunks within a cap: the limit rounded up to a chunk, plus
 * one chunk.
 */
#ifndef TMM_POOL_H
#define TMM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_block.h"
#include "pool_map.h"

/* Blocks of at least this size are carved from the top of a free hole,
 * smaller ones from its bottom, to keep the two apart. */
#define TMM_POOL_LARGE (64u * 1024u)

struct tmm_pool;

struct tmm_pool_stats {
	uint64_t capacity;	/* arena bytes */
	uint64_t limit;		/* tmm_pool_alloc keeps in_use within it */
	uint64_t in_use;	/* bytes in allocated blocks */
	uint64_t peak;		/* high-water mark of in_use */
	uint64_t largest_free;	/* the largest free block */
	uint64_t free_blocks;	/* number of free blocks */
	uint64_t used_blocks;	/* number of allocated blocks */
	double fragmentation;	/* 1 - largest_free / (capacity - in_use);
				 * 0 when nothing is free */
	/* pool=chunks (0 for an arena): physical bytes mapped under the
	 * virtual range, their high-water mark, the most a capped
	 * allocation may map, and whether the last tmm_pool_alloc or
	 * tmm_pool_extend (or a tmm_pool_alloc_at since: a compaction's)
	 * failed because the backend refused to map a chunk.  There capacity is
	 * the virtual range, and largest_free and fragmentation count only
	 * the free bytes the limit allows. */
	uint64_t mapped, mapped_peak, mapped_cap;
	int map_failed;
};

/* Creates a pool over an arena of `capacity` bytes, rounded down to
 * TMM_POOL_ALIGN.  Returns 0, -ENOMEM, -EINVAL (capacity < TMM_POOL_ALIGN). */
int tmm_pool_create(struct tmm_pool **out, uint64_t capacity);
void tmm_pool_destroy(struct tmm_pool *pool);

/*
 * Creates a pool over a virtual range of `va_bytes` (rounded down to
 * TMM_POOL_CHUNK) under which nothing is mapped yet: mapper maps and
 * unmaps physical chunks as blocks come and go (pool_map.h).  The limit
 * starts at the whole range; tmm_pool_set_limit sets it, and the cap of
 * mapped chunks with it.  Returns 0, -EINVAL (less than one chunk, or a
 * mapper without callbacks), -ENOMEM.  tmm_pool_destroy unmaps what is
 * mapped.
 */
int tmm_pool_create_mapped(struct tmm_pool **out, uint64_t va_bytes,
			   const struct tmm_pool_mapper *mapper);

/* Whether the pool maps chunks (pool=chunks) rather than owning an
 * arena: there fragmentation costs address space, not device memory. */
bool tmm_pool_is_mapped(const struct tmm_pool *pool);

/*
 * pool=chunks: while `keep` (a compaction moving tensors), freeing a
 * block unmaps nothing, so that a tensor's block may be freed before its
 * bytes are copied out of it, and tmm_pool_alloc_at maps past the cap
 * (an arena keeps its bytes anyway: there it only marks the move).  Let
 * go, the mapped chunks come back under the cap as far as free chunks
 * allow.
 */
void tmm_pool_keep_mapped(struct tmm_pool *pool, bool keep);

/*
 * Allocates `bytes` (> 0), rounded up to TMM_POOL_ALIGN, from the smallest
 * free block that fits (ties: lowest offset); pool=chunks, at the end of
 * it that needs fewer chunks mapped.  Returns 0 and sets *out,
 * -ENOMEM when no free block is large enough, or (pool=chunks) when the
 * chunks it needs would pass the cap after cached ones are unmapped, or
 * the backend refuses to map one (the pool is unchanged), or -EINVAL for
 * 0 bytes.
 */
int tmm_pool_alloc(struct tmm_pool *pool, uint64_t bytes,
		   struct tmm_pool_block **out);

/* Returns a block to the pool and merges it with free neighbours.  NULL,
 * and blocks this pool did not hand out, are ignored. */
void tmm_pool_free(struct tmm_pool *pool, struct tmm_pool_block *block);

/*
 * Allocates exactly [offset, offset + bytes rounded up), which must lie in
 * one free block (compaction chooses where blocks go).  Returns 0 and sets
 * *out, -ENOMEM when that range is not free (the pool is unchanged), or
 * -EINVAL for 0 bytes or an unaligned offset.  pool=chunks: -ENOMEM too
 * when its chunks would pass the cap or its bytes the limit, except while
 * the pool is kept mapped (tmm_pool_keep_mapped): a compaction's move
 * holds two places for a moment, and freeing the old one brings the
 * mapped chunks back under the cap.
 */
int tmm_pool_alloc_at(struct tmm_pool *pool, uint64_t offset,
		      uint64_t bytes, struct tmm_pool_block **out);

/*
 * Sets the most bytes tmm_pool_alloc may have allocated at once (rounded
 * down to TMM_POOL_ALIGN, at most the capacity; the capacity at creation).
 * Lowering it below in_use frees nothing: the caller evicts down to it
 * (tmm_mover_shrink_to), and until then allocations fail.  It is a count
 * of bytes, not a region of the arena: a process sharing the device
 * (gpu_share.c) holds this many bytes wherever they lie.  tmm_pool_alloc_at
 * ignores it: compaction holds holes only for the moment of a move.
 * pool=chunks: the cap of mapped chunks follows (the limit rounded up to
 * a chunk, plus one), and cached chunks above it are unmapped; there
 * tmm_pool_alloc_at keeps to the limit too, except in a compaction (the
 * range is larger than the limit, where an arena is not).
 */
void tmm_pool_set_limit(struct tmm_pool *pool, uint64_t limit);

/*
 * Gives back the first `bytes` (a nonzero multiple of TMM_POOL_ALIGN,
 * less than its size) of an allocated block, which keeps the rest: its
 * offset moves up by `bytes`.  Returns 0, -EINVAL (bad arguments, or a
 * block not allocated from this pool), or -ENOMEM (no host record for
 * the freed range; the pool is unchanged).
 */
int tmm_pool_trim(struct tmm_pool *pool, struct tmm_pool_block *block,
		  uint64_t bytes);

/*
 * Grows an allocated block by `bytes` rounded up to TMM_POOL_ALIGN, into
 * the free space right after it; its offset stays.  Returns 0, -EINVAL,
 * or -ENOMEM when the space after it is not free or not large enough, or
 * the growth would pass the limit or (pool=chunks) the cap, or a chunk
 * cannot be mapped (the pool is unchanged).
 */
int tmm_pool_extend(struct tmm_pool *pool, struct tmm_pool_block *block,
		    uint64_t bytes);

/* Calls fn for every block, free (used 0) or allocated (used 1), in
 * address order.  fn must not change the pool. */
void tmm_pool_walk(const struct tmm_pool *pool,
		   void (*fn)(void *arg, const struct tmm_pool_block *block,
			      int used),
		   void *arg);

/* 1 when `block` is an allocated block of this pool, else 0 (also for
 * NULL): which of several pools a block came from. */
int tmm_pool_owns(const struct tmm_pool *pool,
		  const struct tmm_pool_block *block);

/* Would an allocation of `bytes` succeed now: a hole that holds it, and
 * room under the limit?  (pool=chunks: a chunk that fails to map is not
 * foreseen.) */
int tmm_pool_fits(const struct tmm_pool *pool, uint64_t bytes);

void tmm_pool_get_stats(const struct tmm_pool *pool,
			struct tmm_pool_stats *st);

/* Bytes in allocated blocks: what get_stats gives as in_use, in O(1) for
 * the tracker's hot path. */
uint64_t tmm_pool_in_use(const struct tmm_pool *pool);

/* The high-water marks (of in_use and, with pool=chunks, of mapped)
 * start again from what is in use now. */
void tmm_pool_reset_peak(struct tmm_pool *pool);

/* Checks every internal invariant (for tests; pool_check.c); returns 0,
 * -EFAULT on a violation, -EINVAL for a NULL pool. */
int tmm_pool_check(const struct tmm_pool *pool);

#endif /* TMM_POOL_H */
