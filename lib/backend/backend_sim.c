/*
 * backend_sim.c — the simulated GPU.
 *
 * A device made of three in-order engines (compute, host-to-device copy,
 * device-to-host copy) whose clocks are virtual nanoseconds.  The host runs
 * in lockstep with the compute engine: the host's "now" is the compute
 * engine's time, so a kernel advances it by the op's roofline duration
 * while a copy queued on a copy engine does not, exactly as an async copy
 * overlaps host work on a real GPU.  Events are timestamps on an engine's
 * timeline; waiting on one moves the waiter's clock forward.
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
 * Durations come from the hardware profile (sim_profile.c); optional
 * jitter, drawn from a seeded generator, makes ops miss their predicted
 * time the way real kernels do, reproducibly.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend.h"
#include "backend_sim.h"
#include "numa_place.h"
#include "lib/base/sim_profile.h"
#include "sim_uvm.h"
#include "lib/base/tunables.h"

/* Marks a live sim state, so the counters accessor can refuse others. */
#define SIM_MAGIC UINT64_C(0x73696d2d67707521)

/* Discarded managed bytes read back as this, so tests notice their use. */
#define SIM_POISON 0xDB

/* A jittered op never takes less than this fraction of its roofline. */
#define SIM_JITTER_FLOOR 0.05

enum sim_kind { SIM_DEV, SIM_MANAGED, SIM_HOST };

/* One live allocation, remembered so close() can return it. */
struct sim_map {
	void *ptr;
	size_t bytes;
	enum sim_kind kind;
	bool numa; /* from tmm_numa_alloc (backed host memory) */
};

struct sim {
	uint64_t magic;
	const struct tmm_sim_profile *prof;
	uint64_t capacity;
	bool phantom;
	double jitter;
	uint64_t rng;	   /* splitmix64 state */
	bool have_spare;   /* Box-Muller makes normals in pairs */
	double spare;
	uint64_t t[TMM_ENGINE_COUNT]; /* each engine's time, virtual ns */
	struct tmm_sim_counters c;
	struct sim_map *maps;
	size_t nmaps, maps_cap;
	struct tmm_sim_uvm *uvm; /* the managed-memory driver */
};

static const char *const kind_name[] = {
	[SIM_DEV] = "device",
	[SIM_MANAGED] = "managed",
	[SIM_HOST] = "host",
};

static struct sim *sim_of(struct tmm_backend *be)
{
	return be->state;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* ------------------------------------------------------------------------
 * Seeded jitter
 * ---------------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, well mixed. */
static uint64_t rng_next(struct sim *s)
{
	uint64_t z;

	s->rng += UINT64_C(0x9e3779b97f4a7c15);
	z = s->rng;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A uniform double in (0, 1]: never 0, so log() below stays finite. */
static double rng_unit(struct sim *s)
{
	return (double)((rng_next(s) >> 11) + 1) * 0x1.0p-53;
}

/* A standard normal deviate (Box-Muller; the second of a pair is kept). */
static double rng_normal(struct sim *s)
{
	double r, theta;

	if (s->have_spare) {
		s->have_spare = false;
		return s->spare;
	}
	r = sqrt(-2.0 * log(rng_unit(s)));
	theta = 2.0 * M_PI * rng_unit(s);
	s->spare = r * sin(theta);
	s->have_spare = true;
	return r * cos(theta);
}

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

static void sim_unmap(const struct sim_map *m)
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
		m = realloc(s->maps, cap * sizeof(*m));
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
	p = numa ? tmm_numa_alloc(bytes, numa_node)
		 : sim_map_region(bytes, s->phantom);
	if (!p)
		return tmm_backend_fail(be, -ENOMEM,
					"sim %s: cannot map %zu bytes of %s "
					"memory (%s)", call, bytes,
					kind_name[kind], strerror(errno));
	if (sim_track(s, p, bytes, kind, numa) < 0) {
		struct sim_map m = { p, bytes, kind, numa };

		sim_unmap(&m);
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
	sim_unmap(&s->maps[i]);
	sim_untrack(s, (size_t)i);
}

/* ------------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------- */

static int sim_unknown_profile(struct tmm_backend *be, const char *name)
{
	const struct tmm_sim_profile *p;
	char list[160] = "";
	size_t n, i, len = 0;

	p = tmm_sim_profiles(&n);
	for (i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i ? ", " : "", p[i].name);
	return tmm_backend_fail(be, -EINVAL,
				"sim open: unknown sim_profile \"%s\"; "
				"known profiles: %s", name, list);
}

static int sim_open(struct tmm_backend *be, const struct tmm_config *cfg)
{
	const struct tmm_sim_profile *prof;
	struct sim *s;

	be->state = NULL;
	if (!cfg)
		return tmm_backend_fail(be, -EINVAL, "sim open: no config");
	prof = tmm_sim_profile_find(cfg->sim_profile);
	if (!prof)
		return sim_unknown_profile(be, cfg->sim_profile);
	if (cfg->sim_memory != TMM_SIM_BACKED &&
	    cfg->sim_memory != TMM_SIM_PHANTOM)
		return tmm_backend_fail(be, -EINVAL,
					"sim open: sim_memory %d is neither "
					"backed nor phantom", cfg->sim_memory);
	if (!(cfg->sim_jitter >= 0 && cfg->sim_jitter <= 1))
		return tmm_backend_fail(be, -EINVAL,
					"sim open: sim_jitter %g is outside "
					"0..1", cfg->sim_jitter);
	s = calloc(1, sizeof(*s));
	if (!s)
		return tmm_backend_fail(be, -ENOMEM,
					"sim open: out of memory");
	s->magic = SIM_MAGIC;
	s->prof = prof;
	s->capacity = cfg->sim_capacity ? cfg->sim_capacity : prof->capacity;
	s->phantom = cfg->sim_memory == TMM_SIM_PHANTOM;
	s->jitter = cfg->sim_jitter;
	s->rng = cfg->sim_seed;
	/* Until the runtime sets a budget, managed pages may fill the
	 * whole device. */
	if (tmm_sim_uvm_create(&s->uvm, prof, s->capacity) < 0) {
		free(s);
		return tmm_backend_fail(be, -ENOMEM,
					"sim open: cannot set up the managed-"
					"memory model for %s", prof->name);
	}
	be->state = s;

	memset(&be->info, 0, sizeof(be->info));
	snprintf(be->info.name, sizeof(be->info.name), "%s", prof->name);
	be->info.capacity = s->capacity;
	be->info.free_at_open = s->capacity;
	be->info.simulated = true;
	be->info.host_accessible = !s->phantom;
	be->info.phantom = s->phantom;
	/* The UVM model prefetches and advises while kernels run, as a
	 * Pascal or later GPU on Linux does. */
	be->info.concurrent_managed = true;
	be->info.numa_node = -1;
	be->info.h2d_gbps = prof->h2d_gbps;
	be->info.d2h_gbps = prof->d2h_gbps;
	be->info.copy_latency_ns = prof->copy_latency_ns;
	snprintf(be->info.op_estimate, sizeof(be->info.op_estimate),
		 "the roofline of profile %s (simulated)", prof->name);
	be->info.launch_ns = prof->launch_ns;
	be->info.pci_bus_id[0] = '\0';
	return 0;
}

/* Virtual time needs no draining: returning the memory is all there is. */
static void sim_close(struct tmm_backend *be)
{
	struct sim *s = sim_of(be);
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nmaps; i++)
		sim_unmap(&s->maps[i]);
	free(s->maps);
	tmm_sim_uvm_destroy(s->uvm);
	s->magic = 0;
	free(s);
	be->state = NULL;
}

/* ------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------- */

static int sim_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
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

static void sim_dev_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	sim_release(be, "dev_free", SIM_DEV, ptr, bytes);
}

/*
 * Managed memory oversubscribes the device: it takes no device capacity
 * until the UVM model migrates its pages there.
 */
static int sim_managed_alloc(struct tmm_backend *be, size_t bytes, void **ptr)
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
	return 0;
}

static void sim_managed_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (s && ptr)
		tmm_sim_uvm_remove(s->uvm, ptr);
	sim_release(be, "managed_free", SIM_MANAGED, ptr, bytes);
}

static int sim_host_alloc(struct tmm_backend *be, size_t bytes, int numa_node,
			  void **ptr)
{
	return sim_alloc(be, "host_alloc", SIM_HOST, bytes, numa_node, ptr);
}

static void sim_host_free(struct tmm_backend *be, void *ptr, size_t bytes)
{
	sim_release(be, "host_free", SIM_HOST, ptr, bytes);
}

/* ------------------------------------------------------------------------
 * Copies
 * ---------------------------------------------------------------------- */

static bool is_copy_engine(enum tmm_engine e)
{
	return e == TMM_ENGINE_H2D || e == TMM_ENGINE_D2H;
}

static bool is_engine(enum tmm_engine e)
{
	return (unsigned)e < TMM_ENGINE_COUNT;
}

/*
 * Queues `bytes` on copy engine e: it starts when both the engine is free
 * and the host has issued it (the compute engine's time), and holds the
 * engine until it ends.
 */
static void sim_queue_copy(struct sim *s, enum tmm_engine e, uint64_t bytes,
			   bool to_device)
{
	uint64_t d = tmm_sim_copy_ns(s->prof, bytes, to_device);
	uint64_t start = max_u64(s->t[e], s->t[TMM_ENGINE_COMPUTE]);

	s->t[e] = start + d;
	s->c.busy_ns[e] += d;
	if (to_device) {
		s->c.bytes_h2d += bytes;
		s->c.copies_h2d++;
	} else {
		s->c.bytes_d2h += bytes;
		s->c.copies_d2h++;
	}
}

static int sim_copy_async(struct tmm_backend *be, enum tmm_engine engine,
			  void *dst, const void *src, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (!is_copy_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_async: engine %d is not a "
					"copy engine (H2D %d, D2H %d)", engine,
					TMM_ENGINE_H2D, TMM_ENGINE_D2H);
	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_async: %zu bytes from %p to "
					"%p", bytes, src, dst);
	/* The bytes land at once; only the clock says when. */
	if (!s->phantom)
		memcpy(dst, src, bytes);
	sim_queue_copy(s, engine, bytes, engine == TMM_ENGINE_H2D);
	return 0;
}

/*
 * A synchronous copy waits for queued compute work and for earlier copies
 * in its direction, then holds the host until it ends.  That wait is the
 * caller's choice, so it is not counted as a stall.
 */
static int sim_copy_sync(struct tmm_backend *be, void *dst, const void *src,
			 size_t bytes, bool to_device)
{
	struct sim *s = sim_of(be);
	enum tmm_engine e = to_device ? TMM_ENGINE_H2D : TMM_ENGINE_D2H;

	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_sync: %zu bytes from %p to "
					"%p", bytes, src, dst);
	if (!s->phantom)
		memcpy(dst, src, bytes);
	sim_queue_copy(s, e, bytes, to_device);
	s->t[TMM_ENGINE_COMPUTE] = s->t[e];
	return 0;
}

/* A device-to-device copy is compute work: it reads and writes device
 * memory at the roofline's memory bandwidth. */
static int sim_copy_on_device(struct tmm_backend *be, void *dst,
			      const void *src, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_on_device: %zu bytes from "
					"%p to %p", bytes, src, dst);
	if (!s->phantom)
		memcpy(dst, src, bytes);
	s->t[TMM_ENGINE_COMPUTE] += tmm_sim_op_ns(s->prof, 0,
						  2.0 * (double)bytes);
	return 0;
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
static int sim_prefetch(struct tmm_backend *be, enum tmm_engine engine,
			void *ptr, size_t bytes, enum tmm_location to,
			int numa_node)
{
	struct sim *s = sim_of(be);
	uint64_t moved, busy;
	int rc;

	(void)numa_node; /* the simulated host has one node */
	if (!is_copy_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim prefetch: engine %d is not a copy "
					"engine (H2D %d, D2H %d)", engine,
					TMM_ENGINE_H2D, TMM_ENGINE_D2H);
	if (to != TMM_LOC_DEVICE && to != TMM_LOC_HOST)
		return tmm_backend_fail(be, -EINVAL,
					"sim prefetch: location %d is neither "
					"device nor host", to);
	if (bytes == 0)
		return 0;
	rc = sim_check_managed(be, "prefetch", ptr, bytes);
	if (rc < 0)
		return rc;
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

static int sim_advise(struct tmm_backend *be, void *ptr, size_t bytes,
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
 * without rewriting it first sees 0xDB, not its old contents.
 */
static int sim_discard(struct tmm_backend *be, void *ptr, size_t bytes)
{
	int rc;

	if (bytes == 0)
		return 0;
	rc = sim_check_managed(be, "discard", ptr, bytes);
	if (rc < 0)
		return rc;
	if (!sim_of(be)->phantom)
		memset(ptr, SIM_POISON, bytes);
	return tmm_sim_uvm_discard(sim_of(be)->uvm, ptr, bytes);
}

/* The faults (or host touches) of the next work, on the compute engine. */
static int sim_managed_access(struct tmm_backend *be,
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

static int sim_managed_limit(struct tmm_backend *be, uint64_t bytes)
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

static int sim_managed_stats(struct tmm_backend *be,
			     struct tmm_managed_stats *st)
{
	if (!st)
		return tmm_backend_fail(be, -EINVAL,
					"sim managed_stats: st is NULL");
	tmm_sim_uvm_stats(sim_of(be)->uvm, st);
	return 0;
}

/* ------------------------------------------------------------------------
 * Events
 * ---------------------------------------------------------------------- */

static int sim_event_record(struct tmm_backend *be, enum tmm_engine engine,
			    tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_record: event is NULL");
	if (!is_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim event_record: no engine %d",
					engine);
	ev->valid = true;
	ev->engine = engine;
	ev->t_ns = sim_of(be)->t[engine];
	ev->native = NULL;
	return 0;
}

/* The host's now is compute time: an event is done once that passes it. */
static int sim_event_query(struct tmm_backend *be, const tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_query: event is NULL");
	if (!ev->valid)
		return 1;
	return ev->t_ns <= sim_of(be)->t[TMM_ENGINE_COMPUTE];
}

/* Moves `engine` forward to the event; compute waiting is a stall. */
static void sim_wait_until(struct sim *s, enum tmm_engine engine, uint64_t t)
{
	if (t <= s->t[engine])
		return;
	if (engine == TMM_ENGINE_COMPUTE)
		s->c.stall_ns += t - s->t[engine];
	s->t[engine] = t;
}

static int sim_event_sync(struct tmm_backend *be, const tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_sync: event is NULL");
	if (ev->valid)
		sim_wait_until(sim_of(be), TMM_ENGINE_COMPUTE, ev->t_ns);
	return 0;
}

static int sim_engine_wait(struct tmm_backend *be, enum tmm_engine engine,
			   const tmm_event *ev)
{
	if (!is_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim engine_wait: no engine %d",
					engine);
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim engine_wait: event is NULL");
	if (ev->valid)
		sim_wait_until(sim_of(be), engine, ev->t_ns);
	return 0;
}

/* A sim event is a plain timestamp: nothing to release. */
static void sim_event_release(struct tmm_backend *be, tmm_event *ev)
{
	(void)be;
	(void)ev;
}

/* ------------------------------------------------------------------------
 * Kernels and the clock
 * ---------------------------------------------------------------------- */

/* The whole op is timed at kernel_end, from its cost hint. */
static int sim_kernel_begin(struct tmm_backend *be,
			    const struct tmm_cost *cost)
{
	(void)be;
	(void)cost;
	return 0;
}

static int sim_kernel_end(struct tmm_backend *be, const struct tmm_cost *cost,
			  uint64_t *ns)
{
	struct sim *s = sim_of(be);
	double scale;
	uint64_t d;

	/* An op without a cost hint still pays its launch. */
	d = tmm_sim_op_ns(s->prof, cost ? cost->flops : 0,
			  cost ? cost->bytes : 0);
	if (s->jitter > 0) {
		scale = 1.0 + s->jitter * rng_normal(s);
		if (scale < SIM_JITTER_FLOOR)
			scale = SIM_JITTER_FLOOR;
		d = (uint64_t)llround((double)d * scale);
	}
	s->t[TMM_ENGINE_COMPUTE] += d;
	s->c.busy_ns[TMM_ENGINE_COMPUTE] += d;
	s->c.kernels++;
	if (ns)
		*ns = d;
	return 0;
}

/* The profile's roofline without jitter: what the planner is told to
 * expect, while kernel_end draws what the device "really" took. */
static uint64_t sim_op_estimate_ns(struct tmm_backend *be,
				   const struct tmm_cost *cost)
{
	return tmm_sim_op_ns(sim_of(be)->prof, cost ? cost->flops : 0,
			     cost ? cost->bytes : 0);
}

static void *sim_compute_stream(struct tmm_backend *be)
{
	(void)be;
	return NULL;
}

static uint64_t sim_now_ns(struct tmm_backend *be)
{
	struct sim *s = sim_of(be);

	return s ? s->t[TMM_ENGINE_COMPUTE] : 0;
}

/* ------------------------------------------------------------------------
 * The vtable and the counters
 * ---------------------------------------------------------------------- */

const struct tmm_backend_ops tmm_backend_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.dev_alloc = sim_dev_alloc,
	.dev_free = sim_dev_free,
	.managed_alloc = sim_managed_alloc,
	.managed_free = sim_managed_free,
	.host_alloc = sim_host_alloc,
	.host_free = sim_host_free,
	.copy_async = sim_copy_async,
	.copy_sync = sim_copy_sync,
	.copy_on_device = sim_copy_on_device,
	.prefetch = sim_prefetch,
	.advise = sim_advise,
	.discard = sim_discard,
	.managed_access = sim_managed_access,
	.managed_limit = sim_managed_limit,
	.managed_stats = sim_managed_stats,
	.event_record = sim_event_record,
	.event_query = sim_event_query,
	.event_sync = sim_event_sync,
	.engine_wait = sim_engine_wait,
	.event_release = sim_event_release,
	.kernel_begin = sim_kernel_begin,
	.kernel_end = sim_kernel_end,
	.op_estimate_ns = sim_op_estimate_ns,
	.compute_stream = sim_compute_stream,
	.now_ns = sim_now_ns,
};

int tmm_sim_get_counters(const struct tmm_backend *be,
			 struct tmm_sim_counters *c)
{
	const struct sim *s;

	if (!be || !c || be->ops != &tmm_backend_sim_ops || !be->state)
		return -EINVAL;
	s = be->state;
	if (s->magic != SIM_MAGIC)
		return -EINVAL;
	*c = s->c;
	memcpy(c->engine_ns, s->t, sizeof(c->engine_ns));
	return 0;
}
