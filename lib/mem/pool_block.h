/* SPDX-License-Identifier: MIT */
/*
 * pool_block.h — a block of the device pool: where it lies in the arena,
 * how large it is (both multiples of TMM_POOL_ALIGN, pool_align.h).
 *
 * pool.h gives this to the pool's users; it is a header of its own so
 * that the pool's inside (pool_index.h), which embeds a block in every
 * record, can have it without including pool.h, which would make
 * pool.c and pool_index.c depend on each other.
 */
#ifndef TMM_POOL_BLOCK_H
#define TMM_POOL_BLOCK_H

#include <stdint.h>

#include "lib/base/pool_align.h"

/* A block handed out by the pool (or a free one, internally). */
struct tmm_pool_block {
	uint64_t offset; /* from the arena base, a multiple of TMM_POOL_ALIGN */
	uint64_t size;	 /* rounded up to TMM_POOL_ALIGN */
};

#endif /* TMM_POOL_BLOCK_H */
