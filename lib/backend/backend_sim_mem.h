/* SPDX-License-Identifier: MIT */
/*
 * backend_sim_mem.h — the simulated GPU's memory, as backend_sim.c sees
 * it, and the simulator's state.
 *
 * The simulator is three files: backend_sim.c (engines, clocks, open and
 * close, the ops table), backend_sim_mem.c (allocations and managed
 * ranges) and backend_sim_copy.c (copies).  struct sim spans them and is
 * defined here, in the header of a part that backend_sim.c calls:
 * backend_sim.c includes this header and puts these functions in its ops
 * table, while the other two never include backend_sim.h nor call back,
 * so the parts make no loop.
 *
 * Private to the simulator: the runtime reaches memory through backend.h's
 * ops, and tests through backend_sim.h.
 */
#ifndef TMM_BACKEND_SIM_MEM_H
#define TMM_BACKEND_SIM_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "backend_sim_counters.h"
#include "lib/base/sim_profile.h"
#include "sim_network.h"
#include "sim_uvm.h"

/* SIM_VA: a reserved virtual range, with device memory mapped under
 * some of its chunks (va_reserve, va_map). */
enum sim_kind { SIM_DEV, SIM_MANAGED, SIM_HOST, SIM_VA };

/* One live allocation, remembered so close() can return it. */
struct sim_map {
	void *ptr;
	size_t bytes;
	enum sim_kind kind;
	bool numa; /* from tmm_numa_alloc (backed host memory) */
	/* SIM_VA only: the unit of va_map, and which chunks are mapped */
	size_t chunk;
	uint8_t *mapped;
};

/*
 * The simulator's state.  It spans two files: backend_sim.c keeps the
 * profile, the jitter and the engines' clocks; backend_sim_mem.c the
 * allocations and the managed-memory driver; the counters belong to both.
 */
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
	/* sim_host=ahead: the host has a clock of its own, and issues
	 * work ahead of the engines until it waits (backend_sim.c).  In
	 * lockstep the host's time is the compute engine's, and `host`
	 * is unused. */
	bool ahead;
	uint64_t host;
	/* sim_managed_copy=held: a copy with a managed end returns to the
	 * host only once done, as CUDA's (copy_async, backend_sim.c). */
	bool managed_copy_held;
	/* uvm_copier=kernel: such copies are the copy kernel's, which
	 * hold no host; their bytes, for managed_stats. */
	bool copy_kernel;
	uint64_t kernel_copy_bytes;
	/* Its copies' rate each way (sim_copy_kernel_gbps, else the
	 * profile's pinned rates), the share of the compute rate it takes
	 * while it runs (sim_copy_kernel_sm), and when the copies it ran
	 * last on each copy engine run, back to back: [lo, hi). */
	double kernel_h2d_gbps, kernel_d2h_gbps;
	double kernel_sm;
	uint64_t kernel_lo[TMM_ENGINE_COUNT], kernel_hi[TMM_ENGINE_COUNT];
	struct tmm_sim_counters c;
	struct sim_map *maps;
	size_t nmaps, maps_cap;
	struct tmm_sim_uvm *uvm; /* the managed-memory driver */
	struct tmm_sim_net net;	 /* the network engine (sim_network.c) */
	uint64_t last_end;	 /* when the op bracketed last ends, its
				  * network part included
				  * (collective_event) */
	bool in_kernel;	   /* between kernel_begin and kernel_end: a copy
			    * on the device queued now is the op's work,
			    * timed by its cost hint (a view's gather) */
};

static inline struct sim *sim_of(struct tmm_backend *be)
{
	return be->state;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The host's time: when what it asks for now is issued. */
static inline uint64_t sim_host_now(const struct sim *s)
{
	return s->ahead ? s->host : s->t[TMM_ENGINE_COMPUTE];
}

/*
 * Work queued on the compute engine starts no earlier than the host
 * issues it: ahead of the host, the engine may have run dry while the
 * host was busy or waiting.  In lockstep the two clocks are one.
 */
static inline void sim_compute_issue(struct sim *s)
{
	if (s->ahead && s->t[TMM_ENGINE_COMPUTE] < s->host)
		s->t[TMM_ENGINE_COMPUTE] = s->host;
}

/* The host waits until t (ahead; in lockstep it waits in the compute
 * engine's clock, which the caller moves). */
static inline void sim_host_until(struct sim *s, uint64_t t)
{
	if (s->ahead && s->host < t)
		s->host = t;
}

/* sim_host_until, counted as the host waiting for the device. */
static inline void sim_host_wait(struct sim *s, uint64_t t)
{
	if (s->ahead && t > s->host)
		s->c.host_wait_ns += t - s->host;
	sim_host_until(s, t);
}

static inline bool is_copy_engine(enum tmm_engine e)
{
	return e == TMM_ENGINE_H2D || e == TMM_ENGINE_D2H;
}

/* Returns one recorded region to the system (close unmaps what is left). */
void tmm_sim_unmap(const struct sim_map *m);

/*
 * The ops of device, managed and host memory and of managed ranges, for
 * backend_sim.c's table (backend.h says what each does).
 */
int tmm_sim_dev_alloc(struct tmm_backend *be, size_t bytes, void **ptr);
void tmm_sim_dev_free(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_sim_va_reserve(struct tmm_backend *be, size_t bytes, size_t chunk,
		       void **ptr);
int tmm_sim_va_map(struct tmm_backend *be, void *ptr, size_t bytes);
void tmm_sim_va_unmap(struct tmm_backend *be, void *ptr, size_t bytes);
void tmm_sim_va_release(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_sim_managed_alloc(struct tmm_backend *be, size_t bytes, void **ptr);
void tmm_sim_managed_free(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_sim_host_alloc(struct tmm_backend *be, size_t bytes, int numa_node,
		       void **ptr);
void tmm_sim_host_free(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_sim_prefetch(struct tmm_backend *be, enum tmm_engine engine,
		     void *ptr, size_t bytes, enum tmm_location to,
		     int numa_node);
int tmm_sim_advise(struct tmm_backend *be, void *ptr, size_t bytes,
		   enum tmm_advice advice);
int tmm_sim_discard(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_sim_managed_access(struct tmm_backend *be,
			   const struct tmm_managed_range *ranges,
			   unsigned n);
int tmm_sim_managed_limit(struct tmm_backend *be, uint64_t bytes);
int tmm_sim_managed_stats(struct tmm_backend *be,
			  struct tmm_managed_stats *st);

#endif /* TMM_BACKEND_SIM_MEM_H */
