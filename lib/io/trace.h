/* SPDX-License-Identifier: MIT */
/*
 * trace.h — one recorded training iteration, as planners and tools see it.
 *
 * The tracker (tracker.c) fills a struct tmm_trace while an iteration runs;
 * planners (hints/) read it to make a plan; the trace file (trace_write.c
 * and trace_read.c, format in docs/trace-format.md) stores a sequence of
 * them for tensormm-stat.  The structure is plain data: arrays indexed by
 * small integers, no pointers between records, so it is written and read
 * back as it is and every index can be checked against its array's
 * length.
 *
 * Times are nanoseconds of the backend clock (virtual on the sim) since
 * the iteration began.  Access and op times are *ideal*: the stall the
 * runtime spent bringing tensors back during the iteration so far is
 * subtracted, so they describe the iteration as it would run on a device
 * with room for everything (Capuchin §5.2).  Each op's own stall is kept
 * in its record, so the measured times can be rebuilt.
 */
#ifndef TMM_TRACE_H
#define TMM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TMM_TRACE_NONE UINT32_MAX /* "no op" / "no tensor" index */

/*
 * The most elements any one array of a trace may hold (and the longest
 * string table).  A damaged count is refused before anything is
 * allocated, and tmm_trace_validate() refuses larger traces, so the writer
 * never writes what the reader would refuse.
 */
#define TMM_TRACE_MAX_ELEMS (1u << 28)

/*
 * A tensor key names the same tensor in every iteration: a tensor made
 * outside iterations keys by its handle; one made inside an iteration by
 * the order of its creation in that iteration (frameworks make fresh
 * buffers every step).
 */
#define TMM_KEY_IN_ITERATION (1ull << 63)
static inline uint64_t tmm_key_of_ordinal(uint32_t ordinal)
{
	return TMM_KEY_IN_ITERATION | ordinal;
}

/* trace tensor flags */
#define TMM_TT_MADE_INSIDE 0x1u /* created during the iteration */
#define TMM_TT_FREED_INSIDE 0x2u /* destroyed during the iteration */
/* The host read it (tmm_tensor_read, any part of it, or of a view of it)
 * after its last access in the trace, an op's or tmm_acquire's: its bytes
 * are still wanted when a plan's eviction there takes place, so
 * liveness=discard copies it (lib/move/dead.h).  A read before a later
 * access does not set it: that access wants the bytes anyway. */
#define TMM_TT_READ_AFTER_LAST 0x4u
/* Made before the iteration, its first bytes came from an op run outside
 * iterations (an init kernel), not from the host (tmm_tensor_write): the
 * op placed it on the device, evicting what it had to, where a host
 * write leaves it on the host when the device is full.  So the device
 * the iteration starts on depends on it, and a twin replaying the
 * iteration (lib/twin/trial.c) gives the tensor its bytes the same way.
 * Format version 3. */
#define TMM_TT_FIRST_BYTES_BY_OP 0x8u

struct tmm_trace_tensor {
	uint64_t key;
	uint64_t bytes;
	uint32_t kind;	   /* enum tmm_kind */
	uint32_t producer; /* the op that last wrote it in the iteration,
			    * or TMM_TRACE_NONE */
	uint32_t flags;	   /* TMM_TT_* */
	uint32_t name;	   /* offset in strings, or TMM_TRACE_NONE */
	uint64_t alloc_ns; /* creation (0 when made outside) */
	uint64_t free_ns;  /* destruction (0 unless FREED_INSIDE) */
};

struct tmm_trace_op {
	uint32_t name;	   /* offset in strings, or TMM_TRACE_NONE */
	uint16_t kind;	   /* enum tmm_op_kind */
	uint16_t flags;	   /* TMM_OP_PURE, TMM_OP_BACKWARD */
	uint32_t first;	   /* its tensors: op_tensors[first ...] */
	uint16_t n_inputs; /* inputs first, then outputs */
	uint16_t n_outputs;
	uint64_t begin_ns, end_ns; /* ideal; end - begin = its duration */
	uint64_t stall_ns; /* waiting for copies before it could start */
	double flops, bytes; /* its cost hint */
	double net_bytes;    /* ... and its network bytes, a collective's
			      * (format version 1 reads 0) */
};

/* trace op flags: TMM_OP_PURE and TMM_OP_BACKWARD as the op gave them,
 * and what the runtime did: */
#define TMM_TRACE_OP_SPLIT 0x8000u /* ran as micro-ops (a plan's SPLIT) */

/* trace access flags */
#define TMM_TA_READ 0x1u
#define TMM_TA_WRITE 0x2u

struct tmm_trace_access {
	uint32_t tensor; /* index in tensors */
	uint32_t op;	 /* index in ops, or TMM_TRACE_NONE (tmm_acquire) */
	uint64_t begin_ns, end_ns;
	uint64_t device_in_use; /* bytes held on the device after it */
	uint32_t flags;		/* TMM_TA_* */
	uint32_t slices;	/* TSPLIT: the op's slice_extent when the op
				 * cuts this tensor into rows, else 0
				 * (format version 1 reads 0) */
};

/* What the runtime did to a tensor, for timelines and diagnosis, and
 * when the program destroyed one. */
enum tmm_trace_event_kind {
	TMM_EV_SWAP_OUT,     /* a swap-out started */
	TMM_EV_SWAP_IN,	     /* a swap-in started (planned or on demand) */
	TMM_EV_PASSIVE_EVICT, /* evicted because an allocation did not fit */
	TMM_EV_DROP,	     /* device memory freed, to be recomputed */
	TMM_EV_RECOMPUTE,    /* regenerated by re-running its producer */
	TMM_EV_DIVERGED,     /* the access sequence left the plan */
	TMM_EV_FREED,	     /* the program destroyed the tensor: in memory
			      * only, for the order of destructions (a
			      * trace file keeps free_ns, not these) */
	TMM_EV_KIND_COUNT
};

/* tmm_trace_event.flags */
#define TMM_EVF_CLEAN 1u /* SWAP_OUT: no copy, the host held its bytes
			  * already (a clean copy, lib/move/clean_copy.h) */
#define TMM_EVF_DEAD 2u	 /* DROP: not to be recomputed, its bytes were
			  * dead (liveness=discard, lib/move/dead.h) */

struct tmm_trace_event {
	uint32_t kind;	 /* enum tmm_trace_event_kind */
	uint32_t tensor; /* index in tensors, or TMM_TRACE_NONE */
	uint32_t access; /* accesses recorded before it */
	uint32_t flags;	 /* TMM_EVF_* */
	uint64_t at_ns;	 /* measured (not ideal) time */
};

struct tmm_trace {
	uint64_t iteration;   /* 1 for the first */
	uint64_t duration_ns; /* measured */
	uint64_t stall_ns;    /* total stall in the iteration */

	struct tmm_trace_tensor *tensors;
	uint32_t n_tensors;
	struct tmm_trace_op *ops;
	uint32_t n_ops;
	uint32_t *op_tensors; /* per op: inputs then outputs */
	uint32_t n_op_tensors;
	struct tmm_trace_access *accesses;
	uint32_t n_accesses;
	struct tmm_trace_event *events;
	uint32_t n_events;
	char *strings; /* NUL-terminated names, back to back */
	uint32_t strings_len;
};

/* The name at offset `off` of t->strings, or "" for TMM_TRACE_NONE. */
static inline const char *tmm_trace_str(const struct tmm_trace *t,
					uint32_t off)
{
	return off == TMM_TRACE_NONE || off >= t->strings_len ? ""
							       : t->strings + off;
}

/* Made and destroyed in the iteration, and not read by the host after
 * its last access: no one wants its bytes after that access, so under
 * liveness=discard an eviction there drops them (lib/move/dead.c, and
 * the planners' view of it, hints/analysis.h tmm_leaves_free). */
static inline bool tmm_trace_dead_after_last(const struct tmm_trace_tensor *x)
{
	const uint32_t both = TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE;

	return (x->flags & (both | TMM_TT_READ_AFTER_LAST)) == both;
}

/* The rows that the op whose first access is `first` can be split into
 * (TSPLIT), or 0: the slices of its first access through a sliced tensor.
 * An op's accesses follow each other. */
static inline uint32_t tmm_trace_op_slices(const struct tmm_trace *t,
					   uint32_t first)
{
	uint32_t op = t->accesses[first].op;

	for (uint32_t k = first; k < t->n_accesses && op != TMM_TRACE_NONE &&
				 t->accesses[k].op == op; k++)
		if (t->accesses[k].slices)
			return t->accesses[k].slices;
	return 0;
}

/* Frees the arrays of a trace and zeroes it (the struct itself stays). */
void tmm_trace_free(struct tmm_trace *t);

/* A deep copy of src into *dst (zeroed first).  Returns 0 or -ENOMEM. */
int tmm_trace_copy(struct tmm_trace *dst, const struct tmm_trace *src);

/*
 * Checks every cross-reference of a trace against the length of the array
 * it points into, every kind and flag against its defined values, and
 * every array against TMM_TRACE_MAX_ELEMS (above); the full list is
 * in docs/trace-format.md.  Returns 0, or -EINVAL with a message in err
 * naming the first bad element.  err may be NULL.
 */
int tmm_trace_validate(const struct tmm_trace *t, char *err, size_t errlen);

#endif /* TMM_TRACE_H */
