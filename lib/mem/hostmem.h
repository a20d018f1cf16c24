/* SPDX-License-Identifier: MIT */
/*
 * hostmem.h — the pinned host buffer pool.
 *
 * Swapped-out tensors live in pinned host buffers (pinned, so the copy
 * engines can DMA them without a staging copy).  Pinning is slow (it maps
 * and locks pages), so buffers are cached by size class and reused: in
 * steady state swapping does no host allocation.  Buffers are placed on one
 * NUMA node: TENSORMM_HOST_NUMA_NODE if set, else the GPU's node, else
 * local.
 */
#ifndef TMM_HOSTMEM_H
#define TMM_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

struct tmm_backend;
struct tmm_hostmem;

struct tmm_hostmem_stats {
	uint64_t in_use;	/* bytes handed out (size-class rounded) */
	uint64_t cached;	/* bytes of free buffers kept for reuse */
	uint64_t allocations;	/* buffers obtained from the backend */
	uint64_t reuses;	/* requests served from the cache */
	int numa_node;		/* where buffers are placed, -1 local */
};

/*
 * Creates a pool that allocates through `be` on `numa_node` (-1: local)
 * and keeps at most `cache_limit` bytes of free buffers (0: no limit).
 */
int tmm_hostmem_create(struct tmm_hostmem **out, struct tmm_backend *be,
		       int numa_node, uint64_t cache_limit);
/* Frees every buffer, in use or cached. */
void tmm_hostmem_destroy(struct tmm_hostmem *hm);

/* A buffer of at least `bytes`.  Returns 0, -ENOMEM (message in be). */
int tmm_hostmem_get(struct tmm_hostmem *hm, size_t bytes, void **ptr);
/* Returns a buffer obtained with the same `bytes`. */
void tmm_hostmem_put(struct tmm_hostmem *hm, void *ptr, size_t bytes);

/* Gives every cached (free) buffer back to the backend; returns the
 * bytes given back.  Buffers in use stay. */
uint64_t tmm_hostmem_release_cached(struct tmm_hostmem *hm);

void tmm_hostmem_get_stats(const struct tmm_hostmem *hm,
			   struct tmm_hostmem_stats *st);

#endif /* TMM_HOSTMEM_H */
