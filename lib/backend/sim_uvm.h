/* SPDX-License-Identifier: MIT */
/*
 * sim_uvm.h — the simulated GPU's managed-memory driver.
 *
 * A model of how the nvidia-uvm driver keeps managed memory: residency per
 * 2 MiB VA block, migrated in 64 KiB big pages; device page faults
 * serviced in batches; least recently used blocks evicted to the host when
 * device memory is full; prefetches on the copy engines; advice
 * (preferred location, accessed-by, read-mostly); discard.  Only where
 * pages are and what moving them costs is modelled: in backed mode the
 * bytes of an allocation stay in one host-addressable buffer.  The figures
 * come from the hardware profile (sim_profile.c); docs/uvm-model.md
 * describes the model.
 *
 * backend_sim.c owns one of these (open, close) and backend_sim_mem.c
 * passes the engine clocks in; every cost lands on those timelines.
 */
#ifndef TMM_SIM_UVM_H
#define TMM_SIM_UVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "lib/base/sim_profile.h"

struct tmm_sim_uvm;

/*
 * A driver for profile p whose managed pages may occupy `limit` device
 * bytes.  Returns 0 or -ENOMEM (p has more than 64 big pages per block:
 * -EINVAL).
 */
int tmm_sim_uvm_create(struct tmm_sim_uvm **out,
		       const struct tmm_sim_profile *p, uint64_t limit);
void tmm_sim_uvm_destroy(struct tmm_sim_uvm *u);

/* Sets the device bytes managed pages may occupy; evicts nothing now (the
 * next fault or prefetch makes room). */
void tmm_sim_uvm_set_limit(struct tmm_sim_uvm *u, uint64_t limit);

/* Registers a new managed allocation (no page populated anywhere).
 * Returns 0 or -ENOMEM. */
int tmm_sim_uvm_add(struct tmm_sim_uvm *u, void *ptr, size_t bytes);

/* Forgets the allocation starting at ptr and its pages. */
void tmm_sim_uvm_remove(struct tmm_sim_uvm *u, const void *ptr);

/* True when [ptr, ptr + bytes) lies inside one managed allocation
 * (binary search: O(log n) in the number of allocations). */
bool tmm_sim_uvm_contains(const struct tmm_sim_uvm *u, const void *ptr,
			  size_t bytes);

/*
 * Work is about to touch ranges[0..n): device faults for the pages a
 * kernel touches that are not on the device, in batches, with evictions
 * to make room; remote access where advice says so; host touches move
 * pages back.  Advances t[TMM_ENGINE_COMPUTE] by the stall.  Returns 0, or
 * -EINVAL when a range is not inside one managed allocation (*bad receives
 * its index).
 */
int tmm_sim_uvm_access(struct tmm_sim_uvm *u, uint64_t *t,
		       const struct tmm_managed_range *ranges, unsigned n,
		       unsigned *bad);

/*
 * Migrates a range to `to` on copy engine e, after the compute work
 * issued so far; later accesses to its blocks wait for it.  *moved
 * receives the bytes copied (pages already there, or with no contents,
 * cost nothing) and *busy_ns how long engine e copied.  Returns 0 or
 * -EINVAL (not managed).
 */
int tmm_sim_uvm_prefetch(struct tmm_sim_uvm *u, uint64_t *t,
			 enum tmm_engine e, const void *ptr, size_t bytes,
			 enum tmm_location to, uint64_t *moved,
			 uint64_t *busy_ns);

/* Applies advice to the big pages of a range.  Returns 0 or -EINVAL. */
int tmm_sim_uvm_advise(struct tmm_sim_uvm *u, const void *ptr, size_t bytes,
		       enum tmm_advice advice);

/* Drops the big pages a range touches, whole, with no write-back.
 * Returns 0 or -EINVAL. */
int tmm_sim_uvm_discard(struct tmm_sim_uvm *u, const void *ptr,
			size_t bytes);

/* The whole big pages [*lo, *lo + *len) that [ptr, ptr + bytes) touches,
 * within its allocation: what a discard of the range drops.  False when
 * the range is empty or not inside one managed allocation. */
bool tmm_sim_uvm_pages_of(const struct tmm_sim_uvm *u, const void *ptr,
			  size_t bytes, void **lo, size_t *len);

/* The counters since creation. */
void tmm_sim_uvm_stats(const struct tmm_sim_uvm *u,
		       struct tmm_managed_stats *st);

#endif /* TMM_SIM_UVM_H */
