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
	s->maps[i] = (struct sim_map){ ptr, bytes, kind, numa };
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
		struct sim_map m = { p, bytes, kind, numa };

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
	if (tmm_sim_uvm_access(sim_of(be)->uvm, sim_of(be)->t, ranges, n,
			       &bad) < 0)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_access: [%p, +%zu) is not "
					"inside one managed allocation",
					ranges[bad].ptr, ranges[bad].bytes);
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
	return 0;
}
