/* SPDX-License-Identifier: MIT */
/*
 * backend.h — the one interface between the runtime and a device.
 *
 * The runtime (run.c, mover.c, pool.c's arena) reaches the device through
 * this vtable and nothing else, so the simulator and CUDA are
 * interchangeable.  The model is CUDA's: a compute stream and two copy
 * engines (host-to-device, device-to-host) that each run their work in
 * order; events mark a point in one engine's work; the host may ask whether
 * an event has completed, wait for it, or make another engine wait for it.
 *
 * Every function returning int returns 0 or a negative errno, and on
 * failure writes a message naming the call and the cause into be->error.
 */
#ifndef TMM_BACKEND_H
#define TMM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensormm.h"

struct tmm_config;

/* The four in-order work queues of a device. */
enum tmm_engine {
	TMM_ENGINE_COMPUTE = 0,
	TMM_ENGINE_H2D = 1, /* host-to-device copy engine */
	TMM_ENGINE_D2H = 2, /* device-to-host copy engine */
	/* The driver's migrations of managed ranges, either way, beside
	 * the copy engines: mode=uvm's tensors that a plan moves by
	 * prefetch while the rest go by copy (plan.h, TMM_ACT_MIGRATE), so
	 * that a copy queued after a slow migration to the host does not
	 * wait for it.  It takes prefetches only, and other engines'
	 * prefetches are not ordered after it: what runs on it touches
	 * only the ranges of the tensors it moves, which nothing else
	 * touches until they are back. */
	TMM_ENGINE_MIGRATE = 3,
	TMM_ENGINE_COUNT,
	/* Not a queue the runtime puts work on: the engine of a
	 * collective's event (collective_event below), which no engine's
	 * own order covers, so every engine that waits for it waits. */
	TMM_ENGINE_NET = TMM_ENGINE_COUNT
};

/*
 * An event: a point in one engine's queue.  On the simulator it is the
 * virtual time at which the work before it completes; on CUDA it wraps a
 * cudaEvent_t.  An event with `valid` false is complete by definition.
 */
typedef struct tmm_event {
	bool valid;
	enum tmm_engine engine;
	uint64_t t_ns;	/* sim: completion time */
	void *native;	/* cuda: cudaEvent_t */
} tmm_event;

/*
 * A wait measured on the device (engine_wait_timed): two points in the
 * waiting engine's queue, right before the wait and right after it.
 * With `valid` false there is nothing to measure (0 ns).
 */
typedef struct tmm_timed_wait {
	bool valid;
	uint64_t before_ns, after_ns; /* sim: the engine's times */
	void *before, *after;	      /* cuda: timed cudaEvent_t */
} tmm_timed_wait;

/* Advice on a managed range (cudaMemAdvise's flags, by meaning). */
enum tmm_advice {
	TMM_ADVISE_PREFERRED_DEVICE,
	TMM_ADVISE_PREFERRED_HOST,
	TMM_ADVISE_UNSET_PREFERRED,
	TMM_ADVISE_ACCESSED_BY_DEVICE,
	TMM_ADVISE_UNSET_ACCESSED_BY,
	TMM_ADVISE_READ_MOSTLY,
	TMM_ADVISE_UNSET_READ_MOSTLY
};

/* Where a prefetch moves a managed range. */
enum tmm_location {
	TMM_LOC_DEVICE,
	TMM_LOC_HOST
};

/*
 * One managed range that work is about to touch (managed_access): a kernel
 * of the next op, or the host itself.
 */
struct tmm_managed_range {
	void *ptr;
	size_t bytes;
	bool write;   /* written (else only read) */
	bool by_host; /* the host touches it, not a kernel */
};

/*
 * What the driver did with managed memory since open().  CUDA's driver
 * keeps its own books: there the figures are CUPTI's unified-memory
 * counters where they could be turned on (tmm_device_info's
 * managed_counted), else zeros; resident and resident_peak are always
 * zero there (managed_resident).
 */
struct tmm_managed_stats {
	uint64_t fault_batches, faults; /* device page faults serviced */
	uint64_t fault_bytes;	  /* migrated to the device by faults */
	uint64_t prefetch_bytes;  /* migrated to the device by prefetch */
	uint64_t evictions;	  /* blocks the driver evicted for room */
	uint64_t eviction_bytes;  /* ... of which written back to the host */
	uint64_t remote_bytes;	  /* accessed over the bus, not migrated */
	uint64_t discard_bytes;	  /* dropped with no write-back */
	uint64_t kernel_copy_bytes; /* copied to or from managed memory
				     * by the library's copy kernel
				     * (uvm_copier=kernel), either way:
				     * the backend's own count */
	uint64_t resident, resident_peak; /* device bytes holding pages */
	uint64_t stall_ns;	  /* compute time lost to faults */
};

/* What the runtime needs to know about the device. */
struct tmm_device_info {
	char name[48];		     /* profile or device name */
	int index;		     /* the device's index: CUDA's ordinal,
				      * or the simulator's virtual device
				      * (the `device` tunable) */
	uint64_t capacity;	     /* device memory, bytes */
	uint64_t free_at_open;	     /* free device memory when opened */
	bool simulated;		     /* figures are virtual */
	bool host_accessible;	     /* the host may dereference device
				      * pointers (sim backed mode) */
	bool phantom;		     /* sizes only: no bytes are kept */
	bool concurrent_managed;     /* managed memory may be prefetched /
				      * advised while kernels run */
	bool managed_resident;	     /* managed_stats counts the pages on
				      * the device (the sim); false where
				      * the driver keeps that to itself
				      * (CUDA) */
	bool managed_limit_binds;    /* the driver evicts managed pages at
				      * the managed_limit given (the sim);
				      * false: only where the device is
				      * full (CUDA) */
	bool managed_counted;	     /* managed_stats reports the driver's
				      * migrations and faults: the sim's
				      * own books, CUPTI's unified-memory
				      * counters on CUDA (managed_counts
				      * says why not) */
	int numa_node;		     /* the device's NUMA node, -1 unknown */
	/* The host link, as planners see it (swap time = latency + bytes /
	 * bandwidth): the profile's figures on the sim, an estimate on
	 * CUDA. */
	double h2d_gbps, d2h_gbps;   /* GB/s (1e9 bytes per second) */
	uint64_t copy_latency_ns;    /* fixed cost of one copy */
	/* Managed memory's paths, which mode=uvm chooses between
	 * (mover_uvm.c): pages moved by a prefetch each way, and pages
	 * made on the device by a prefetch to it (0: free).  The profile's
	 * on the sim; measured at open on CUDA, the pinned rates where
	 * they cannot be (uvm_paths says which). */
	double uvm_prefetch_h2d_gbps, uvm_prefetch_d2h_gbps;
	double uvm_fresh_gbps;
	/* Where copies of managed memory go by the library's copy kernel
	 * (uvm_copier=kernel, managed_copies_block_host false): its rates
	 * each way, which the copy way's moves take instead of the pinned
	 * copies'.  Measured at open on CUDA (managed_copier says how); the
	 * sim_copy_kernel_gbps tunable or the pinned rates on the sim.  0
	 * where the runtime's copies make them. */
	double kernel_copy_h2d_gbps, kernel_copy_d2h_gbps;
	unsigned kernel_copy_blocks; /* ... the most blocks a copy of it
				      * runs (CUDA's; 0 on the sim, which
				      * has no blocks) */
	/* ... and the share of the compute rate it takes while it runs
	 * beside compute, 0 to 1: on CUDA estimated at open as its blocks
	 * over the device's multiprocessors (each block of 256 threads
	 * holds a place on one), on the sim the sim_copy_kernel_sm
	 * tunable.  Policy auto's forecast slows compute by it while such
	 * copies run (hints/plan_forecast.c). */
	double kernel_copy_share;
	/* A prefetch starts only once the work queued before it on every
	 * stream has ended, the copy streams' included: CUDA's backend
	 * orders it so (after_other_streams, backend_cuda_managed.c), the
	 * simulator's after compute and its own pages' moves alone. */
	bool prefetch_after_copies;
	/* A copy to or from managed memory returns to the host only once it
	 * has run, its stream's earlier work included, so that the host can
	 * queue no kernel meanwhile: CUDA's runtime documents it for
	 * transfers involving Unified Memory ("API synchronization
	 * behavior"), and on the H200 mode=uvm's copy way ran its kernels
	 * and its copies one after the other (docs/gpu-h200-goals.md).  The
	 * simulator's are held the same way unless sim_managed_copy=queued.
	 * Not where uvm_copier=kernel makes them (cuda_copier.h). */
	bool managed_copies_block_host;
	/* The fixed cost of launching one op, which a split op pays once
	 * per micro-op (TSPLIT Eq. 6): the profile's on the sim, an
	 * estimate on CUDA. */
	uint64_t launch_ns;
	/* Collectives (TMM_OP_COLLECTIVE) cross the host link, so they and
	 * the swap copies share it: the profile's on the sim
	 * (net_over_pcie); false on CUDA, which cannot tell. */
	bool net_shares_link;
	/* The network a collective's bytes cross after its arithmetic:
	 * GB/s one rank sends and the fixed cost of one collective (the
	 * profile's on the sim; 0 on CUDA, which does not know them). */
	double net_gbps;
	uint64_t net_latency_ns;
	char pci_bus_id[32];	     /* "0000:3b:00.0", "" if none */
	char uuid[48];		     /* "GPU-…" as nvidia-smi prints it: one
				      * per MIG instance too; "" if none */
	char host_pinning[160];	     /* how pinned host buffers are had when
				      * not as asked, and why; "" when as
				      * asked (NUMA-placed, registered) */
	char timing[528];	     /* how op times are measured, and why
				      * not better ("" on the sim): room
				      * for a loader's message (dynlib.h) */
	char link[160];		     /* how h2d/d2h_gbps were had ("" on the
				      * sim: the profile's) */
	char managed_copier[384];    /* what makes copies of managed
				      * memory on the copy streams, and
				      * where uvm_copier=kernel was not
				      * had, why ("" on the sim) */
	char uvm_paths[160];	     /* how the uvm_* rates were had ("" on
				      * the sim: the profile's) */
	char managed_counts[200];    /* where managed_counted is false on a
				      * context that may use managed
				      * memory: why ("" otherwise) */
	char op_estimate[160];	     /* where op_estimate_ns's figures
				      * come from ("" without one) */
};

struct tmm_backend;

struct tmm_backend_ops {
	const char *name; /* "sim", "cuda" */

	/* Opens the device described by cfg; fills be->info. */
	int (*open)(struct tmm_backend *be, const struct tmm_config *cfg);
	/* Waits for all queued work and releases everything. */
	void (*close)(struct tmm_backend *be);

	/* Device memory (the pool's arena). */
	int (*dev_alloc)(struct tmm_backend *be, size_t bytes, void **ptr);
	void (*dev_free)(struct tmm_backend *be, void *ptr, size_t bytes);

	/*
	 * Virtual memory, for swap mode's pool=chunks (lib/mem/pool_map.c):
	 * va_reserve takes an address range of `bytes` with no memory
	 * behind it, aligned to `chunk`, the unit in which va_map and
	 * va_unmap will be called; it returns -ENOTSUP when the device
	 * cannot map memory in that unit.  va_map puts device memory
	 * under [ptr, ptr + bytes) of a reserved range (it counts against
	 * the device's memory as dev_alloc does; a fault site of
	 * device_alloc), va_unmap takes it away, and va_release gives the
	 * range back, unmapping what is still mapped.  All four NULL: not
	 * supported (pool=chunks then falls back to one arena).
	 */
	int (*va_reserve)(struct tmm_backend *be, size_t bytes, size_t chunk,
			  void **ptr);
	int (*va_map)(struct tmm_backend *be, void *ptr, size_t bytes);
	void (*va_unmap)(struct tmm_backend *be, void *ptr, size_t bytes);
	void (*va_release)(struct tmm_backend *be, void *ptr, size_t bytes);

	/* Managed (UVM) memory. */
	int (*managed_alloc)(struct tmm_backend *be, size_t bytes, void **ptr);
	void (*managed_free)(struct tmm_backend *be, void *ptr, size_t bytes);

	/*
	 * Pinned host memory, placed on `numa_node` when >= 0.  The host
	 * pool (hostmem.c) caches these, so they are not on the hot path.
	 */
	int (*host_alloc)(struct tmm_backend *be, size_t bytes, int numa_node,
			  void **ptr);
	void (*host_free)(struct tmm_backend *be, void *ptr, size_t bytes);

	/*
	 * Queues a copy of `bytes` from src to dst on engine H2D or D2H; it
	 * starts after the engine's earlier work.  Does not block the host.
	 */
	int (*copy_async)(struct tmm_backend *be, enum tmm_engine engine,
			  void *dst, const void *src, size_t bytes);
	/* Copies synchronously, ordered after all queued compute work. */
	int (*copy_sync)(struct tmm_backend *be, void *dst, const void *src,
			 size_t bytes, bool to_device);
	/*
	 * Queues a copy between two device addresses on the compute
	 * stream, after the ops queued so far and before later ones (the
	 * pool's compaction moves tensors this way).  Does not block the
	 * host.
	 */
	int (*copy_on_device)(struct tmm_backend *be, void *dst,
			      const void *src, size_t bytes);
	/*
	 * Sets `bytes` device bytes at dst to `byte` on the compute
	 * stream, after the ops queued so far and before later ones
	 * (tmm_tensor_fill, and the checking mode's poison).  Its time is
	 * the op's that asks for it (in its cost hint).  Does not block
	 * the host.
	 */
	int (*fill)(struct tmm_backend *be, void *dst, int byte,
		    size_t bytes);

	/*
	 * Managed ranges: migrate, advise, or drop without write-back.  A
	 * prefetch or a discard takes effect after the work already
	 * queued that touches the range, on any engine: the kernels that
	 * write it and its earlier migrations (the cuda backend waits for
	 * the other streams; the simulator starts a migration after
	 * compute and after the range's blocks are ready, sim_uvm.c).
	 */
	int (*prefetch)(struct tmm_backend *be, enum tmm_engine engine,
			void *ptr, size_t bytes, enum tmm_location to,
			int numa_node);
	/*
	 * Several ranges to one place, as one prefetch each would, taking
	 * effect after the same work: the device may order the ranges'
	 * migrations among themselves as it likes.  On failure no range is
	 * known to have moved.  NULL where the backend has no cheaper way
	 * than one prefetch per range (tmm_backend_prefetch_many).
	 */
	int (*prefetch_batch)(struct tmm_backend *be, enum tmm_engine engine,
			      const struct tmm_managed_range *ranges,
			      unsigned n, enum tmm_location to,
			      int numa_node);
	int (*advise)(struct tmm_backend *be, void *ptr, size_t bytes,
		      enum tmm_advice advice);
	int (*discard)(struct tmm_backend *be, void *ptr, size_t bytes);
	/*
	 * Tells the backend which managed ranges the next op's kernels (or,
	 * with by_host, the host) touch, before they run: the runtime calls
	 * it with every input and output of an op just before kernel_begin,
	 * and before it reads or writes a managed tensor from the host.  A
	 * simulated driver services the faults this causes (the stall is
	 * charged to the compute engine); a real one faults by itself, so
	 * CUDA only synchronises before a host access.
	 */
	int (*managed_access)(struct tmm_backend *be,
			      const struct tmm_managed_range *ranges,
			      unsigned n);
	/*
	 * Bounds the device memory that managed pages may occupy (the
	 * runtime's budget in mode=uvm with uvm_cap=driver), so that a small
	 * budget oversubscribes like a small device.  The simulator enforces
	 * it by evicting; CUDA cannot cap its driver and accepts it as a
	 * no-op (uvm_cap=library is the library holding the budget
	 * itself, lib/move/mover.c).
	 */
	int (*managed_limit)(struct tmm_backend *be, uint64_t bytes);
	/* The driver's managed-memory counters since open(). */
	int (*managed_stats)(struct tmm_backend *be,
			     struct tmm_managed_stats *st);

	/* Events. */
	int (*event_record)(struct tmm_backend *be, enum tmm_engine engine,
			    tmm_event *ev);
	/* 1 when complete, 0 when pending, negative errno on failure. */
	int (*event_query)(struct tmm_backend *be, const tmm_event *ev);
	/* The host waits for the event. */
	int (*event_sync)(struct tmm_backend *be, const tmm_event *ev);
	/* `engine` waits for the event before its later work. */
	int (*engine_wait)(struct tmm_backend *be, enum tmm_engine engine,
			   const tmm_event *ev);
	void (*event_release)(struct tmm_backend *be, tmm_event *ev);
	/*
	 * engine_wait, measured where the engine runs: *w brackets the
	 * wait in `engine`'s queue, and timed_wait_ns says later how long
	 * the engine stood still for ev.  The host's clock cannot say it
	 * where the host runs ahead of the device (a GPU): a copy still in
	 * flight when the host queues its reader may have ended long
	 * before the engine reaches the reader.  On failure *w is invalid
	 * and the engine may not wait: the caller orders it (engine_wait).
	 * timed_wait_ns waits on the host for the points to be reached,
	 * then releases *w, on failure too.  Both NULL: not measured.
	 */
	int (*engine_wait_timed)(struct tmm_backend *be,
				 enum tmm_engine engine, const tmm_event *ev,
				 tmm_timed_wait *w);
	int (*timed_wait_ns)(struct tmm_backend *be, tmm_timed_wait *w,
			     uint64_t *ns);

	/*
	 * Bracket an op's kernels on the compute stream.  kernel_end returns
	 * the op's duration in *ns when the backend knows it now (the sim's
	 * roofline), else 0 (CUDA reports it later from events or CUPTI).
	 */
	int (*kernel_begin)(struct tmm_backend *be, const struct tmm_cost *cost);
	int (*kernel_end)(struct tmm_backend *be, const struct tmm_cost *cost,
			  uint64_t *ns);
	/*
	 * Later times, for backends whose kernel_end reports 0 (NULL on the
	 * sim).  kernel_id returns the id of the bracket opened last (ids
	 * grow; 0: none).  kernel_times waits for the device and writes
	 * into ns[i] the duration of op i, the sum of its brackets: those
	 * with ids in (after[i], last[i]] (ranges ascending and apart;
	 * a split op has a bracket per piece); 0 where it has none.  It
	 * forgets every bracket so far, so the runtime calls it once per
	 * iteration, at its end.
	 */
	uint64_t (*kernel_id)(struct tmm_backend *be);
	int (*kernel_times)(struct tmm_backend *be, const uint64_t *after,
			    const uint64_t *last, uint64_t *ns, uint32_t n);
	/*
	 * The host waits for the kernels queued so far, as reading their
	 * times does (kernel_times): the runtime calls it once an iteration,
	 * at its end.  NULL where kernel_times waits, or where the host
	 * never runs ahead of the device (the sim in lockstep does
	 * nothing).
	 */
	int (*kernels_wait)(struct tmm_backend *be);

	/*
	 * The time an op with this cost hint is expected to take, without
	 * running it: a roofline, max(flops / peak, bytes / bandwidth) plus
	 * a launch.  The sim's is its profile's (the same as kernel_end's
	 * before jitter); CUDA's comes from the device properties and is an
	 * estimate (info.op_estimate says which).  A collective's network
	 * part is not in it: it runs beside the compute stream.  NULL: no
	 * prediction (a rehearsal then records zero-length ops).
	 */
	uint64_t (*op_estimate_ns)(struct tmm_backend *be,
				   const struct tmm_cost *cost);

	/* The compute stream handed to op callbacks (NULL on the sim). */
	void *(*compute_stream)(struct tmm_backend *be);
	/*
	 * Collectives (TMM_OP_COLLECTIVE) run beside the compute stream,
	 * as DDP's all-reduce runs beside the rest of the backward pass.
	 * comm_stream returns the stream a collective's callback is
	 * handed (NULL on the sim), after ordering it behind the compute
	 * stream's work so far: the collective reads what the kernels
	 * before it wrote.  collective_event writes an event (engine
	 * TMM_ENGINE_NET) at the end of all the work of the op bracketed
	 * last, its network part included; the compute stream does not
	 * wait for it, so the runtime hands one to each of the op's
	 * tensors and makes their later users wait (tmm_tensor_rec's
	 * net_by).  Each call writes an event of its own, released with
	 * event_release; or, where no event can be had, an invalid one
	 * (complete) once the host has waited for the work instead.  Both
	 * NULL: collectives run on the compute stream,
	 * in its order, and nothing waits for them apart.
	 */
	void *(*comm_stream)(struct tmm_backend *be);
	int (*collective_event)(struct tmm_backend *be, tmm_event *ev);

	/* The backend clock in nanoseconds (virtual on the sim). */
	uint64_t (*now_ns)(struct tmm_backend *be);
};

/* A backend instance: the ops, their state, and what open() found. */
struct tmm_backend {
	const struct tmm_backend_ops *ops;
	void *state;
	struct tmm_device_info info;
	char error[256];
};

/*
 * The backends built into this library declare their ops in their own
 * headers (backend_sim.h, backend_cuda.h); choosing and opening one is
 * backend_open.h's.
 */

/* ranges[0 .. n) to `to`: by the backend's prefetch_batch where it has
 * one, else one prefetch per range.  Returns 0 or the first error. */
int tmm_backend_prefetch_many(struct tmm_backend *be, enum tmm_engine engine,
			      const struct tmm_managed_range *ranges,
			      unsigned n, enum tmm_location to,
			      int numa_node);

/* Formats a message into be->error (printf-style) and returns `code`. */
int tmm_backend_fail(struct tmm_backend *be, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TMM_BACKEND_H */
