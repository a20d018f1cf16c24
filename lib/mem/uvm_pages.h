/* SPDX-License-Identifier: MIT */
/*
 * uvm_pages.h — what the library knows of where the managed arena's pages
 * are (uvm_pages.c).  uvm_arena.h includes it.
 */
#ifndef TMM_UVM_PAGES_H
#define TMM_UVM_PAGES_H

#include <stdbool.h>
#include <stdint.h>

struct tmm_uvm_arena;

/*
 * What the library knows of where the arena's pages are, a big page at a
 * time, so that it need not ask the driver to put pages where they are
 * already (issue #19: a prefetch of pages already on the device still
 * costs a driver call and its ordering events, every op of every step).
 * tmm_uvm_arena_note(..., true) after the device has populated
 * [ptr, ptr + bytes) (a kernel touched it, a prefetch to the device was
 * queued), false after anything that may take pages off it (a discard, a
 * prefetch to the host, a host access).  Knowledge, not a guarantee: the
 * driver may still evict a page on its own where the device runs out,
 * and the caller only skips hints on it (a fault brings back what a hint
 * would have).  A new segment knows nothing.  Ranges no segment holds
 * are ignored.
 */
void tmm_uvm_arena_note(struct tmm_uvm_arena *a, const void *ptr,
			uint64_t bytes, bool on_device);

/* Whether every big page of [ptr, ptr + bytes) is noted on the device. */
bool tmm_uvm_arena_on_device(const struct tmm_uvm_arena *a, const void *ptr,
			     uint64_t bytes);

#endif /* TMM_UVM_PAGES_H */
