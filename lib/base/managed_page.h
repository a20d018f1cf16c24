/* SPDX-License-Identifier: MIT */
/*
 * managed_page.h — the granularity of managed (UVM) memory.
 *
 * The nvidia-uvm driver keeps managed memory in 2 MiB VA blocks
 * (UVM_VA_BLOCK_BITS 21, uvm_va_block_types.h) and migrates, evicts and
 * discards it in 64 KiB big pages (UVM_MIN_BIG_PAGE_SIZE) on the GPUs
 * this library targets.  The runtime sub-allocates managed segments
 * (lib/mem/uvm_arena.c) in whole big pages, so that a discard or a
 * migration of one tensor never takes a page holding another tensor's
 * bytes, and sizes the segments in whole blocks.  The simulator's profiles
 * (sim_profile.c) model the same driver with these same figures, and
 * the CUDA test double's managed page is the big page too.  A driver
 * with smaller pages is served as well: 64 KiB is a multiple of them.
 */
#ifndef TMM_MANAGED_PAGE_H
#define TMM_MANAGED_PAGE_H

#include <stdint.h>

/* The big page: the unit a managed block is aligned and sized to. */
#define TMM_MANAGED_PAGE (64u * 1024u)

/* The VA block: the unit a managed segment is sized to. */
#define TMM_MANAGED_BLOCK (2u * 1024u * 1024u)

/* The bytes of the whole big pages that `bytes` of a managed block
 * take: what the arena hands out, and what the driver moves. */
static inline uint64_t tmm_managed_pages_bytes(uint64_t bytes)
{
	return (bytes + TMM_MANAGED_PAGE - 1) / TMM_MANAGED_PAGE *
	       TMM_MANAGED_PAGE;
}

#endif /* TMM_MANAGED_PAGE_H */
