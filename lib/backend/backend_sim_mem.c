/* SPDX-License-Identifier: MIT */
/*
 * backend_sim_mem.c — the simulated GPU's memory.
 *
 * Memory comes in two modes.  Backed: real, lazily committed memory, so the
 * bytes a tensor holds survive every swap and tests check data integrity
 * end to end.  Phantom: address-space reservations with no access rights,
 * so sizes and times are simulated for models far larger than this
 * machine's RAM, and any stray dereference faults at once instead of
 * silently reading garbage.  Either way the device capacity is enforced to
 * the byte.
 *
 * Virtual memory (va_reserve and va_map, for pool=chunks) is modelled on
 * CUDA's: a reserved range has no access rights, and mapping a chunk
 * makes it read-write, backed by fresh pages in backed mode (its old
 * bytes are gone, as with a new cuMemCreate), and counts against the
 * device's capacity as dev_alloc does.
 *
 * Managed memory goes through a model of the UVM driver (sim_uvm.c): page
 * residency, fault batches, LRU eviction, prefetch and advice, with their
 * costs on the same three timelines.
 *
 * The other half of the simulator, its engines and clocks, is
 * backend_sim.c, which holds the ops table and calls in here; struct sim
 * spans the two (backend_sim_mem.h).  Nothing here calls backend_sim.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "backend_sim_mem.h"
#include "numa_place.h"
#include "lib/base/sim_profile.h"
#include "sim_uvm.h"
#include "lib/base/fault.h"
#include "lib/base/xalloc.h"

/* Discarded managed bytes read back as this, so tests notice their use. */
#define SIM_POISON 0xDB

static const char *const kind_name[] = {
	[SIM_DEV] = "device",
	[SIM_MANAGED] = "managed",
	[SIM_HOST] = "host",
	[SIM_VA] = "reserved virtual",
};

/* ------------------------------------------------------------------------
 * Allocation bookkeeping
 * ---------------------------------------------------------------------- */

/*
 * Reserves `bytes` of address space.  MAP_NORESERVE keeps a 16 GiB arena
 * free of swap accounting: backed memory costs only the pages touched, and
 * a PROT_NONE phantom costs nothing but page tables never filled.
 */
static void *sim_map_region(size_t bytes, bool phantom)
{
	void *p;

	p = mmap(NULL, bytes, phantom ? PROT_NONE : PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void tmm_sim_unmap(const struct sim_map *m)
{
	free(m->mapped);
	if (m->numa)
		tmm_numa_free(m->ptr, m->bytes);
	else
		munmap(m->ptr, m->bytes);
}

/* The index of the first allocation whose address is not below ptr. */
static size_t sim_lower_bound(const struct sim *s, const void *ptr)
{
	size_t lo = 0, hi = s->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)s->maps[mid].ptr < (uintptr_t)ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Records an allocation, keeping the array sorted by address: in
 * mode=uvm every tensor is a managed allocation, made and freed each step,
 * so finding one must not cost a scan of thousands.
 */
static int sim_track(struct sim *s, void *ptr, size_t bytes,
		     enum sim_kind kind, bool numa)
{
	struct sim_map *m;
	size_t cap, i;

	if (s->nmaps == s->maps_cap) {
		cap = s->maps_cap ? 2 * s->maps_cap : 16;
		m = tmm_realloc(s->maps, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		s->maps = m;
		s->maps_cap = cap;
	}
	i = sim_lower_bound(s, ptr);
	memmove(&s->maps[i + 1], &s->maps[i],
		(s->nmaps - i) * sizeof(*s->maps));
	s->maps[i] = (struct sim_map){ ptr, bytes, kind, numa, 0, NULL };
	s->nmaps++;
	return 0;
}

/* The index of the allocation starting at ptr, or -1 (binary search). */
static long sim_find(const struct sim *s, const void *ptr)
{
	size_t i = sim_lower_bound(s, ptr);

	return i < s->nmaps && s->maps[i].ptr == ptr ? (long)i : -1;
}

/* True when [ptr, ptr + bytes) lies inside one managed allocation. */
static bool sim_in_managed(const struct sim *s, const void *ptr, size_t bytes)
{
	return tmm_sim_uvm_contains(s->uvm, ptr, bytes);
}

static void sim_untrack(struct sim *s, size_t i)
{
	memmove(&s->maps[i], &s->maps[i + 1],
		(s->nmaps - i - 1) * sizeof(*s->maps));
	s->nmaps--;
}

/*
 * Allocates and records one region of `kind`.  Host memory in backed mode
 * comes from the NUMA placer, everything else from an anonymous mapping.
 */
static int sim_alloc(struct tmm_backend *be, const char *call,
		     enum sim_kind kind, size_t bytes, int numa_node,
		     void **ptr)
{
	struct sim *s = sim_of(be);
	bool numa = kind == SIM_HOST && !s->phantom;
	void *p;

	if (!ptr)
		return tmm_backend_fail(be, -EINVAL, "sim %s: ptr is NULL",
					call);
	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(be, -EINVAL,
					"sim %s: 0 bytes requested", call);
	if (tmm_fault_now(kind == SIM_HOST ? TMM_SITE_PINNED_ALLOC
					   : TMM_SITE_DEVICE_ALLOC))
		return tmm_backend_fail(be, -ENOMEM,
					"sim %s: %zu bytes of %s memory refused "
					"(an injected fault, site %s)", call,
					bytes, kind_name[kind],
					kind == SIM_HOST ? TMM_SITE_PINNED_ALLOC
							 : TMM_SITE_DEVICE_ALLOC);
	p = numa ? tmm_numa_alloc(bytes, numa_node)
		 : sim_map_region(bytes, s->phantom);
	if (!p)
		return tmm_backend_fail(be, -ENOMEM,
					"sim %s: cannot map %zu bytes of %s "
					"memory (%s)", call, bytes,
					kind_name[kind], strerror(errno));
	if (sim_track(s, p, bytes, kind, numa) < 0) {
		struct sim_map m = { p, bytes, kind, numa, 0, NULL };

		tmm_sim_unmap(&m);
		return tmm_backend_fail(be, -ENOMEM,
					"sim %s: out of memory recording a "
					"%zu-byte allocation", call, bytes);
	}
	*ptr = p;
	return 0;
}

/*
 * Frees a region recorded as `kind`.  The free functions return nothing,
 * so a pointer the simulator did not hand out, or one of another kind, is
 * left alone (unmapping a stranger's memory would be worse) and reported
 * in be->error for whoever looks.
 */
static void sim_release(struct tmm_backend *be, const char *call,
			enum sim_kind kind, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);
	long i;

	if (!s || !ptr)
		return;
	i = sim_find(s, ptr);
	if (i < 0 || s->maps[i].kind != kind) {
		tmm_backend_fail(be, -EINVAL,
				 "sim %s: %p is not a live %s allocation",
				 call, ptr, kind_name[kind]);
		return;
	}
	if (s->maps[i].bytes != bytes)
		tmm_backend_fail(be, -EINVAL,
				 "sim %s: %p freed with %zu bytes, allocated "
				 "with %zu", call, ptr, bytes,
				 s->maps[i].bytes);
	if (kind == SIM_DEV)
		s->c.dev_allocated -= s->maps[i].bytes;
	tmm_sim_unmap(&s->maps[i]);
	sim_untrack(s, (size_t)i);
}

/* ------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------- */

int tmm_sim_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
{
	struct sim *s = sim_of(be);
	uint64_t free_bytes = s->capacity - s->c.dev_allocated;
	int rc;

	if (ptr)
		*ptr = NULL;
	if (bytes > free_bytes)
		return tmm_backend_fail(be, -ENOMEM,
					"sim dev_alloc: %zu bytes requested, "
					"%" PRIu64 " of %" PRIu64 " free on %s",
					bytes, free_bytes, s->capacity,
					s->prof->name);
	rc = sim_alloc(be, "dev_alloc", SIM_DEV, bytes, -1, ptr);
	if (rc < 0)
		return rc;
	s->c.dev_allocated += bytes;
	s->c.dev_peak = max_u64(s->c.dev_peak, s->c.dev_allocated);
	return 0;
}

void tmm_sim_dev_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	sim_release(be, "dev_free", SIM_DEV, ptr, bytes);
}

/* ------------------------------------------------------------------------
 * Virtual memory
 * ---------------------------------------------------------------------- */

/*
 * A range aligned to `chunk`, as cuMemAddressReserve gives one: mmap
 * aligns only to a page, so a chunk more is reserved and the ends cut.
 */
int tmm_sim_va_reserve(struct tmm_backend *be, size_t bytes, size_t chunk,
		       void **ptr)
{
	struct sim *s = sim_of(be);
	size_t chunks, head;
	uint8_t *mapped;
	char *p;

	if (!ptr)
		return tmm_backend_fail(be, -EINVAL,
					"sim va_reserve: ptr is NULL");
	*ptr = NULL;
	if (bytes == 0 || chunk == 0 || bytes % chunk ||
	    chunk % (size_t)sysconf(_SC_PAGESIZE))
		return tmm_backend_fail(be, -EINVAL,
					"sim va_reserve: %zu bytes in chunks of "
					"%zu (a nonzero multiple of the chunk, "
					"itself of the page size, is needed)",
					bytes, chunk);
	p = mmap(NULL, bytes + chunk, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return tmm_backend_fail(be, -ENOMEM,
					"sim va_reserve: cannot reserve %zu "
					"bytes of address space (%s)", bytes,
					strerror(errno));
	head = (chunk - (uintptr_t)p % chunk) % chunk;
	if (head)
		munmap(p, head);
	munmap(p + head + bytes, chunk - head);
	p += head;
	chunks = bytes / chunk;
	mapped = tmm_calloc(chunks, 1);
	if (!mapped || sim_track(s, p, bytes, SIM_VA, false) < 0) {
		free(mapped);
		munmap(p, bytes);
		return tmm_backend_fail(be, -ENOMEM,
					"sim va_reserve: out of memory "
					"recording a %zu-byte range", bytes);
	}
	s->maps[sim_find(s, p)].chunk = chunk;
	s->maps[sim_find(s, p)].mapped = mapped;
	*ptr = p;
	return 0;
}

/*
 * The reserved range that holds [ptr, ptr + bytes) in whole chunks, and
 * its first chunk there in *first; NULL (with be->error) when there is
 * none.
 */
static struct sim_map *sim_va_find(struct tmm_backend *be, const char *call,
				   const void *ptr, size_t bytes,
				   size_t *first)
{
	struct sim *s = sim_of(be);
	size_t i = sim_lower_bound(s, ptr);
	struct sim_map *m;
	uintptr_t off;

	if (i == s->nmaps || s->maps[i].ptr != ptr) {
		if (i == 0) {
			m = NULL;
			goto bad;
		}
		i--;
	}
	m = &s->maps[i];
	off = (uintptr_t)ptr - (uintptr_t)m->ptr;
	if (m->kind != SIM_VA || !bytes || off % m->chunk ||
	    bytes % m->chunk || off > m->bytes || bytes > m->bytes - off)
		goto bad;
	*first = off / m->chunk;
	return m;
bad:
	tmm_backend_fail(be, -EINVAL,
			 "sim %s: [%p, +%zu) is not whole chunks of one "
			 "reserved range", call, ptr, bytes);
	return NULL;
}

int tmm_sim_va_map(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);
	uint64_t free_bytes = s->capacity - s->c.dev_allocated;
	struct sim_map *m;
	size_t first, n;

	m = sim_va_find(be, "va_map", ptr, bytes, &first);
	if (!m)
		return -EINVAL;
	n = bytes / m->chunk;
	for (size_t k = first; k < first + n; k++)
		if (m->mapped[k])
			return tmm_backend_fail(be, -EINVAL,
						"sim va_map: chunk %zu of the "
						"range at %p is mapped already",
						k, m->ptr);
	if (tmm_fault_now(TMM_SITE_DEVICE_ALLOC))
		return tmm_backend_fail(be, -ENOMEM,
					"sim va_map: %zu bytes of device "
					"memory refused (an injected fault, "
					"site %s)", bytes,
					TMM_SITE_DEVICE_ALLOC);
	if (bytes > free_bytes)
		return tmm_backend_fail(be, -ENOMEM,
					"sim va_map: %zu bytes requested, "
					"%" PRIu64 " of %" PRIu64 " free on %s",
					bytes, free_bytes, s->capacity,
					s->prof->name);
	/* Fresh pages over the range: whatever it held is gone. */
	if (!s->phantom &&
	    mmap(ptr, bytes, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0) == MAP_FAILED)
		return tmm_backend_fail(be, -ENOMEM,
					"sim va_map: cannot map %zu bytes at "
					"%p (%s)", bytes, ptr, strerror(errno));
	memset(m->mapped + first, 1, n);
	s->c.dev_allocated += bytes;
	s->c.dev_peak = max_u64(s->c.dev_peak, s->c.dev_allocated);
	return 0;
}

/* Back to no access: the pages are dropped, and a later map finds
 * fresh ones.  A range not mapped is reported and left alone. */
static void sim_va_drop(struct sim *s, struct sim_map *m, size_t first,
			size_t n)
{
	char *p = (char *)m->ptr + first * m->chunk;

	if (!s->phantom)
		(void)mmap(p, n * m->chunk, PROT_NONE,
			   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
				   MAP_NORESERVE,
			   -1, 0);
	memset(m->mapped + first, 0, n);
	s->c.dev_allocated -= n * m->chunk;
}

void tmm_sim_va_unmap(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim_map *m;
	size_t first, n;

	if (!sim_of(be) || !ptr)
		return;
	m = sim_va_find(be, "va_unmap", ptr, bytes, &first);
	if (!m)
		return;
	n = bytes / m->chunk;
	for (size_t k = first; k < first + n; k++)
		if (!m->mapped[k]) {
			tmm_backend_fail(be, -EINVAL,
					 "sim va_unmap: chunk %zu of the range "
					 "at %p is not mapped", k, m->ptr);
			return;
		}
	sim_va_drop(sim_of(be), m, first, n);
}

void tmm_sim_va_release(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);
	long i;

	if (!s || !ptr)
		return;
	i = sim_find(s, ptr);
	if (i >= 0 && s->maps[i].kind == SIM_VA) {
		struct sim_map *m = &s->maps[i];

		for (size_t k = 0; k < m->bytes / m->chunk; k++)
			if (m->mapped[k])
				sim_va_drop(s, m, k, 1);
	}
	sim_release(be, "va_release", SIM_VA, ptr, bytes);
}

/*
 * Managed memory oversubscribes the device: it takes no device capacity
 * until the UVM model migrates its pages there.
 */
int tmm_sim_managed_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
{
	struct sim *s = sim_of(be);
	int rc = sim_alloc(be, "managed_alloc", SIM_MANAGED, bytes, -1, ptr);

	if (rc < 0)
		return rc;
	if (tmm_sim_uvm_add(s->uvm, *ptr, bytes) < 0) {
		sim_release(be, "managed_alloc", SIM_MANAGED, *ptr, bytes);
		*ptr = NULL;
		return tmm_backend_fail(be, -ENOMEM,
					"sim managed_alloc: out of memory "
					"recording a %zu-byte allocation",
					bytes);
	}
	s->c.managed_allocs++;
	return 0;
}

void tmm_sim_managed_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (s && ptr)
		tmm_sim_uvm_remove(s->uvm, ptr);
	sim_release(be, "managed_free", SIM_MANAGED, ptr, bytes);
}

int tmm_sim_host_alloc(struct tmm_backend *be, size_t bytes, int numa_node,
		       void **ptr)
{
	return sim_alloc(be, "host_alloc", SIM_HOST, bytes, numa_node, ptr);
}

void tmm_sim_host_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	sim_release(be, "host_free", SIM_HOST, ptr, bytes);
}

/* ------------------------------------------------------------------------
 * Managed ranges
 * ---------------------------------------------------------------------- */

static int sim_check_managed(struct tmm_backend *be, const char *call,
			     const void *ptr, size_t bytes)
{
	if (!sim_in_managed(sim_of(be), ptr, bytes))
		return tmm_backend_fail(be, -EINVAL,
					"sim %s: [%p, +%zu) is not inside one "
					"managed allocation", call, ptr, bytes);
	return 0;
}

/*
 * The UVM model moves the pages that are not already where they go, at
 * copy engine speed; the bytes themselves stay where they are (backed
 * memory is host-accessible either way).
 */
int tmm_sim_prefetch(struct tmm_backend *be, enum tmm_engine engine,
		     void *ptr, size_t bytes, enum tmm_location to,
		     int numa_node)
{
	struct sim *s = sim_of(be);
	uint64_t moved, busy;
	int rc;

	(void)numa_node; /* the simulated host has one node */
	/* CUDA takes a prefetch on any stream; the compute stream's runs in
	 * order with the kernels (mover_uvm.c makes fresh pages there). */
	if ((unsigned)engine >= TMM_ENGINE_COUNT)
		return tmm_backend_fail(be, -EINVAL,
					"sim prefetch: engine %d is not one "
					"of the device's (0 to %d)", engine,
					TMM_ENGINE_COUNT - 1);
	if (to != TMM_LOC_DEVICE && to != TMM_LOC_HOST)
		return tmm_backend_fail(be, -EINVAL,
					"sim prefetch: location %d is neither "
					"device nor host", to);
	if (bytes == 0)
		return 0;
	rc = sim_check_managed(be, "prefetch", ptr, bytes);
	if (rc < 0)
		return rc;
	if (tmm_fault_now(TMM_SITE_COPY))
		return tmm_backend_fail(be, -EIO,
					"sim prefetch: %zu bytes at %p not "
					"migrated (an injected fault, site %s)",
					bytes, ptr, TMM_SITE_COPY);
	/* After the compute queued so far, as CUDA's backend orders it. */
	sim_compute_issue(s);
	rc = tmm_sim_uvm_prefetch(s->uvm, s->t, engine, ptr, bytes, to,
				  &moved, &busy);
	if (rc < 0 || !moved)
		return rc;
	s->c.busy_ns[engine] += busy;
	if (to == TMM_LOC_DEVICE) {
		s->c.bytes_h2d += moved;
		s->c.copies_h2d++;
	} else {
		s->c.bytes_d2h += moved;
		s->c.copies_d2h++;
	}
	return 0;
}

int tmm_sim_advise(struct tmm_backend *be, void *ptr, size_t bytes,
		   enum tmm_advice advice)
{
	switch (advice) {
	case TMM_ADVISE_PREFERRED_DEVICE:
	case TMM_ADVISE_PREFERRED_HOST:
	case TMM_ADVISE_UNSET_PREFERRED:
	case TMM_ADVISE_ACCESSED_BY_DEVICE:
	case TMM_ADVISE_UNSET_ACCESSED_BY:
	case TMM_ADVISE_READ_MOSTLY:
	case TMM_ADVISE_UNSET_READ_MOSTLY:
		break;
	default:
		return tmm_backend_fail(be, -EINVAL,
					"sim advise: unknown advice %d",
					advice);
	}
	if (bytes == 0)
		return 0;
	if (sim_check_managed(be, "advise", ptr, bytes) < 0)
		return -EINVAL;
	if (tmm_fault_now(TMM_SITE_ADVISE))
		return tmm_backend_fail(be, -EIO,
					"sim advise: advice %d on %zu bytes at "
					"%p not taken (an injected fault, site "
					"%s)", advice, bytes, ptr,
					TMM_SITE_ADVISE);
	return tmm_sim_uvm_advise(sim_of(be)->uvm, ptr, bytes, advice);
}

/*
 * The pages go with no write-back.  Device and host copies share one
 * buffer here, so the bytes are poisoned: whoever reads a discarded range
 * without rewriting it first sees 0xDB, not its old contents.  The driver
 * drops whole big pages, so every byte of the pages the range touches is
 * poisoned, not only the range: bytes of another tensor that share a page
 * with it would be lost on a real GPU, and are here.
 */
int tmm_sim_discard(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);
	void *lo;
	size_t len;
	int rc;

	if (bytes == 0)
		return 0;
	rc = sim_check_managed(be, "discard", ptr, bytes);
	if (rc < 0)
		return rc;
	if (tmm_fault_now(TMM_SITE_DISCARD))
		return tmm_backend_fail(be, -EIO,
					"sim discard: %zu bytes at %p kept (an "
					"injected fault, site %s)",
					bytes, ptr, TMM_SITE_DISCARD);
	if (!s->phantom && tmm_sim_uvm_pages_of(s->uvm, ptr, bytes, &lo, &len))
		memset(lo, SIM_POISON, len);
	return tmm_sim_uvm_discard(s->uvm, ptr, bytes);
}

/* The faults (or host touches) of the next work, on the compute engine. */
int tmm_sim_managed_access(struct tmm_backend *be,
			   const struct tmm_managed_range *ranges,
			   unsigned n)
{
	unsigned bad = 0;

	if (n && !ranges)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_access: %u ranges at "
					"NULL", n);
	sim_compute_issue(sim_of(be));
	if (tmm_sim_uvm_access(sim_of(be)->uvm, sim_of(be)->t, ranges, n,
			       &bad) < 0)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_access: [%p, +%zu) is not "
					"inside one managed allocation",
					ranges[bad].ptr, ranges[bad].bytes);
	/* The host touches managed memory once the device is done with
	 * it: ahead, it waits for the compute engine. */
	for (unsigned i = 0; i < n; i++)
		if (ranges[i].by_host)
			sim_host_wait(sim_of(be),
				      sim_of(be)->t[TMM_ENGINE_COMPUTE]);
	return 0;
}

int tmm_sim_managed_limit(struct tmm_backend *be, uint64_t bytes)
{
	struct sim *s = sim_of(be);

	if (bytes > s->capacity)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_limit: %llu bytes is more "
					"than the %llu-byte device",
					(unsigned long long)bytes,
					(unsigned long long)s->capacity);
	tmm_sim_uvm_set_limit(s->uvm, bytes);
	return 0;
}

int tmm_sim_managed_stats(struct tmm_backend *be,
			  struct tmm_managed_stats *st)
{
	if (!st)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_stats: st is NULL");
	tmm_sim_uvm_stats(sim_of(be)->uvm, st);
	st->kernel_copy_bytes = sim_of(be)->kernel_copy_bytes;
	return 0;
}
