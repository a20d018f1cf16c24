/* SPDX-License-Identifier: MIT */
/*
 * stats_shm.h — live counters in POSIX shared memory, for tensormm-stat.
 *
 * Each context with stats_shm=on owns one segment.  The layout below is
 * this file's, not the public struct tmm_stats's: the API may grow its
 * struct freely, while a reader built from another release must be able
 * to tell that a segment is not laid out as it expects.  So a segment
 * starts with a magic, a layout version and its size, and a reader refuses
 * any other layout by name.
 *
 * Both the library (the writer) and the tool (the reader) include this
 * header; the reader functions live in the library's convenience archive
 * so the tests can reach them too.
 *
 * Updates use a seqlock: the writer makes `seq` odd, stores the counters,
 * then makes it even again; a reader copies the counters between two
 * reads of `seq` and retries when they differ or are odd, so it never
 * sees a half-written snapshot and the writer never waits for a reader.
 */
#ifndef TMM_STATS_SHM_H
#define TMM_STATS_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TMM_SHM_MAGIC 0x314d48534d4d5454ull /* "TTMMSHM1", little end */
/* 2: host_pinned and the uvm counters, before published_ns; 3: the
 * clean evictions' bytes, before published_ns */
#define TMM_SHM_LAYOUT 3u

/* Name prefix: "/tensormm.<uid>.<pid>.<n>" (see stats_shm.c for why). */
#define TMM_SHM_PREFIX "tensormm."
#define TMM_SHM_NAME_MAX 64

/* The published counters: indices into tmm_shm_segment.v. */
enum tmm_shm_field {
	TMM_SHM_DEVICE_IN_USE,	   /* bytes */
	TMM_SHM_DEVICE_PEAK,	   /* bytes */
	TMM_SHM_BUDGET,		   /* bytes */
	TMM_SHM_HOST_IN_USE,	   /* bytes */
	TMM_SHM_SWAP_OUT_BYTES,
	TMM_SHM_SWAP_IN_BYTES,
	TMM_SHM_PREFETCHES,	   /* issued */
	TMM_SHM_PREFETCH_ON_TIME,
	TMM_SHM_PREFETCH_LATE,
	TMM_SHM_STALL_NS,
	TMM_SHM_PASSIVE_EVICTIONS,
	TMM_SHM_RECOMPUTATIONS,
	TMM_SHM_RECOMPUTE_NS,
	TMM_SHM_PLAN_STATE,	   /* enum tmm_plan_state */
	TMM_SHM_ITERATIONS,
	TMM_SHM_LAST_ITERATION_NS,
	TMM_SHM_OPS,
	TMM_SHM_HOST_PINNED,	   /* bytes, in use and cached */
	TMM_SHM_UVM_FAULT_BATCHES, /* the driver's, mode=uvm */
	TMM_SHM_UVM_FAULTS,
	TMM_SHM_UVM_FAULT_BYTES,
	TMM_SHM_UVM_PREFETCH_BYTES,
	TMM_SHM_UVM_EVICTIONS,
	TMM_SHM_UVM_EVICTION_BYTES,
	TMM_SHM_UVM_REMOTE_BYTES,
	TMM_SHM_UVM_DISCARD_BYTES,
	TMM_SHM_CLEAN_EVICTION_BYTES, /* not copied: swap mode */
	TMM_SHM_PUBLISHED_NS,	   /* host CLOCK_REALTIME of this snapshot */
	TMM_SHM_FIELD_COUNT
};

/* The segment, as it lies in shared memory. */
struct tmm_shm_segment {
	/* Written last at creation (release), so a reader that sees the
	 * magic sees the rest of the header. */
	_Atomic uint64_t magic;
	uint32_t layout;	/* TMM_SHM_LAYOUT */
	uint32_t size;		/* sizeof(struct tmm_shm_segment) */
	int32_t pid;
	uint32_t uid;
	uint32_t simulated;	/* 1: times are virtual (sim backend) */
	uint32_t n_fields;	/* TMM_SHM_FIELD_COUNT */
	char backend[16];
	char device[48];
	char mode[8];
	char policy[32];
	uint64_t device_capacity;
	uint64_t created_ns;	/* host CLOCK_REALTIME */

	_Atomic uint64_t seq;	/* odd while the writer is storing */
	_Atomic uint64_t v[TMM_SHM_FIELD_COUNT];
};

/* A field's name (for CSV and JSON keys) and unit (for headers). */
struct tmm_shm_field_info {
	const char *name;
	const char *unit;
};

/* The table of fields, in enum order; *n receives TMM_SHM_FIELD_COUNT. */
const struct tmm_shm_field_info *tmm_shm_fields(size_t *n);

/* ------------------------------------------------------------------------
 * Writer (the library)
 * ---------------------------------------------------------------------- */

struct tmm_ctx;

/* Creates ctx's segment when stats_shm is on, and publishes a first
 * snapshot.  Never fails the context: a segment that cannot be made is
 * warned about once per process. */
void tmm_stats_shm_create(struct tmm_ctx *ctx);

/* Unlinks and unmaps ctx's segment (none is fine). */
void tmm_stats_shm_destroy(struct tmm_ctx *ctx);

/* Publishes now (iteration boundaries). */
void tmm_stats_shm_publish(struct tmm_ctx *ctx);

/* Called once per op: publishes when ~1 ms of host time has passed since
 * the last publication, looking at the clock every 16 ops. */
void tmm_stats_shm_op(struct tmm_ctx *ctx);

/* The name of ctx's segment ("" when it has none). */
const char *tmm_stats_shm_name(const struct tmm_ctx *ctx);

/* Stores v[] under the seqlock (exposed for the seqlock test). */
void tmm_shm_write(struct tmm_shm_segment *seg,
		   const uint64_t v[TMM_SHM_FIELD_COUNT]);

/* ------------------------------------------------------------------------
 * Reader (tensormm-stat)
 * ---------------------------------------------------------------------- */

/* One segment found by tmm_shm_list. */
struct tmm_shm_entry {
	char name[TMM_SHM_NAME_MAX]; /* "/tensormm.<uid>.<pid>.<n>" */
	uid_t uid;
	pid_t pid;
	unsigned n;
};

/*
 * Lists the segments of every user, sorted by pid then n, removing those
 * whose process is gone (kill(pid, 0) says ESRCH) when it may.  Returns
 * the number of entries (>= 0) with *out from malloc (free it), and the
 * number removed in *cleaned (may be NULL), or a negative errno with a
 * message in err.
 */
int tmm_shm_list(struct tmm_shm_entry **out, unsigned *cleaned, char *err,
		 size_t errlen);

/*
 * Maps segment `name` read-only and checks its header.  Returns 0 and
 * sets *out (release with tmm_shm_close), or a negative errno with a
 * message: -ENOENT (gone), -EACCES (another user's),
 * -EPROTONOSUPPORT (a segment of another layout: a process that runs
 * another release of libtensormm), -EPROTO (not a segment: bad magic,
 * or a file whose owner is not the user it names).
 */
int tmm_shm_open(const char *name, const struct tmm_shm_segment **out,
		 char *err, size_t errlen);

void tmm_shm_close(const struct tmm_shm_segment *seg);

/*
 * Copies a consistent snapshot of the counters into v.  Returns 0, or
 * -EAGAIN when the writer stayed mid-update through every retry (a
 * process that died while writing).
 */
int tmm_shm_read(const struct tmm_shm_segment *seg,
		 uint64_t v[TMM_SHM_FIELD_COUNT]);

#endif /* TMM_STATS_SHM_H */
