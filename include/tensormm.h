/* SPDX-License-Identifier: MIT */
/*
 * tensormm.h — the public API of libtensormm.
 *
 * libtensormm lets C training code train models whose tensors do not fit in
 * GPU memory.  Code creates tensors in a context, runs operations on them
 * through tmm_run(), and marks iteration boundaries; the library keeps the
 * tensors the running op needs on the device and swaps the others out to
 * pinned host memory (or, in UVM mode, migrates them), so that the math is
 * unchanged and the results are bit-identical to an unconstrained run.
 *
 * Conventions (as liburing): every function that can fail returns 0 or a
 * negative errno value (-ENOMEM, -EINVAL, ...) and writes its results
 * through out-parameters.  tmm_strerror() names a code; tmm_last_error()
 * gives the context's detailed message for the last failure (which tensor,
 * which op, how many bytes, which tunable).
 *
 * Thread safety: a context is not thread-safe; it is used by one thread at
 * a time, and different contexts are independent.  A call on a context
 * that another thread is in a call on right now is refused with -EBUSY
 * (nothing is done; retry, or serialise the calls with a lock of your
 * own); tmm_last_error(ctx) on the refused thread says so.  Every function
 * below that takes a context may return -EBUSY for this reason, or for the
 * next one.
 *
 * Callbacks: an op's run or run_slice function (also when it is re-run to
 * recompute a dropped tensor) runs in the middle of tmm_run, with the op's
 * tensors pinned and its device pointers handed out.  From inside it, on
 * the same context, only the calls that read are allowed:
 * tmm_tensor_read (of any tensor but the op's own outputs and a dropped
 * tensor), tmm_tensor_bytes, tmm_stats_get, tmm_stats_print,
 * tmm_last_error and tmm_strerror.  Every other call returns -EBUSY and
 * changes nothing, with the reason in tmm_last_error(ctx):
 * tmm_ctx_destroy (the context is left intact), tmm_tensor_destroy (of
 * the op's tensors or any other), a nested tmm_run, tmm_iteration_begin
 * and tmm_iteration_end, and tmm_tensor_create, tmm_tensor_write,
 * tmm_acquire, tmm_release, tmm_workspace, tmm_workspace_release and the
 * rehearsal markers.  A callback that returns such an error makes tmm_run
 * fail with it, and the message says what was refused inside.  Calls on
 * other contexts are not affected.  See tensormm(7), RELIABILITY.
 *
 * The tunables (TENSORMM_* environment variables and the keys of the
 * configuration string) are documented in tensormm(7).
 */
#ifndef TENSORMM_H
#define TENSORMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header, as configure.ac gives the package's
 * (tests/test_api.c holds the two together).  tmm_version() is the
 * library's, which a program linked against a newer one may see differ.
 */
#define TMM_VERSION_MAJOR 0
#define TMM_VERSION_MINOR 1
#define TMM_VERSION_PATCH 0
#define TMM_VERSION_STRING "0.1.0"
/* One number that grows with each release, for #if comparisons. */
#define TMM_VERSION \
	(TMM_VERSION_MAJOR * 10000 + TMM_VERSION_MINOR * 100 + \
	 TMM_VERSION_PATCH)

/* Public functions are exported; everything else in the library is hidden. */
#if defined(__GNUC__) && !defined(TMM_STATIC_BUILD)
#define TMM_EXPORT __attribute__((visibility("default")))
#else
#define TMM_EXPORT
#endif

#define TMM_VERSION_MAJOR 0
#define TMM_VERSION_MINOR 1
#define TMM_VERSION_PATCH 0

/* ------------------------------------------------------------------------
 * Handles
 * ---------------------------------------------------------------------- */

/* A context: one device, one budget, one set of tensors. */
typedef struct tmm_ctx tmm_ctx;

/*
 * A tensor handle.  It is a value, not a pointer: it encodes the owning
 * context, a slot and a generation, so a handle that is zero, destroyed or
 * from another context is refused with -EBADF instead of crashing.  The
 * handle of a destroyed tensor never names another one: a slot is retired
 * once its 2^24 generations are used, rather than wrap.
 */
typedef struct tmm_tensor {
	uint64_t id;
} tmm_tensor;

/* The handle that names no tensor (all bits zero). */
#define TMM_TENSOR_NULL ((tmm_tensor){ 0 })

/* ------------------------------------------------------------------------
 * Context
 * ---------------------------------------------------------------------- */

/*
 * Creates a context.  `config` is a comma-separated list of key=value
 * tunables ("policy=none,budget=6GiB"; NULL or "" for none).  Each value
 * comes from the matching TENSORMM_<KEY> environment variable if it is
 * set, else from the config string, else from its default: whoever runs
 * the program can change what it asks for without rebuilding it.
 *
 * Returns 0 and sets *out, or a negative errno: -EINVAL for an unknown key
 * or invalid value, -ENODEV when the requested backend or device
 * (TENSORMM_DEVICE) is not available,
 * -ENOMEM, or the error of creating the TENSORMM_TRACE file: among them
 * -ELOOP (a symbolic link), -ENXIO or -EINVAL (not a regular file) and
 * -EBUSY (another live context of this process writes that file; %n in
 * the path gives each context its own, tensormm(7)).  On failure *out is
 * NULL and the reason is available from tmm_last_error(NULL) (the calling
 * thread's last creation error).
 */
TMM_EXPORT
int tmm_ctx_create(tmm_ctx **out, const char *config);

/*
 * Destroys a context and every tensor still in it, waits for its pending
 * copies and returns its device and host memory.  Returns 0, -EBADF for
 * NULL or a context already destroyed, or -EBUSY, leaving the context
 * intact, when called from inside one of its op callbacks or while
 * another thread is in a call on it.  After 0 the pointer must not be used
 * again, by any thread.
 */
TMM_EXPORT
int tmm_ctx_destroy(tmm_ctx *ctx);

/*
 * The detailed message of the last failed call on `ctx` ("" if none), or,
 * with ctx NULL, of this thread's last failed tmm_ctx_create().  The string
 * stays valid until the next call on the same context.  A call refused
 * because another thread was in a call keeps its message in the refused
 * thread, which this returns there; while another thread is in a call,
 * the context's own message is not returned (that thread may be writing
 * it).  Allowed inside callbacks.
 */
TMM_EXPORT
const char *tmm_last_error(const tmm_ctx *ctx);

/* A short, static description of a (negative) errno return value. */
TMM_EXPORT
const char *tmm_strerror(int err);

/* ------------------------------------------------------------------------
 * Tensors
 * ---------------------------------------------------------------------- */

/* What a tensor is for; policies treat the kinds differently. */
enum tmm_kind {
	TMM_PERSISTENT = 0, /* weights, optimizer state: live across iterations */
	TMM_ACTIVATION = 1, /* feature maps: produced forward, used backward */
	TMM_GRADIENT = 2,   /* gradients */
	TMM_SCRATCH = 3,    /* workspaces and temporaries */
	TMM_KIND_COUNT
};

/*
 * Creates a tensor of `bytes` bytes (> 0) of the given kind.  `name` (may be
 * NULL) is copied and used in messages and traces.  The tensor holds no
 * memory until it is first written or produced by an op.
 * A tensor larger than the budget may be made, as the parent of views
 * (tmm_tensor_view) that are used one at a time; an op or an acquire
 * that needs it whole fails with -ENOMEM.
 * Returns 0 and sets *out, or -EINVAL / -ENOMEM (host memory) / -EBADF.
 */
TMM_EXPORT
int tmm_tensor_create(tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		      const char *name, tmm_tensor *out);

/*
 * Creates a view: a tensor naming the `bytes` bytes of `parent` that start
 * at `offset`, so that a program which keeps many tensors in one buffer
 * (every layer's activations, all the weights) can hand each to its ops.
 * The view has the parent's kind; `name` (may be NULL) is copied.  It is a
 * tensor like any other: an op's input or output, read, written, filled,
 * acquired and destroyed, and it is placed, moved, evicted and recomputed
 * on its own, not with its parent.  The parent, used whole (by an op, a
 * read, a write, a fill or an acquire), holds the bytes its views hold,
 * and what is written to it reaches them: the library copies between the
 * two on the device, as ops of its own, when one side is used after the
 * other was written.  Used whole, a parent holds device memory beside its
 * views': prefer ops on the views (tensormm(7), Views).
 *
 * Views of one parent may not overlap, a view of a view is refused (make
 * it a view of the parent), and one op may not list a parent and one of
 * its views.  Destroying a view hands its bytes back to the parent;
 * destroying a parent that has live views is refused.  Returns 0 and sets
 * *out, or -EBADF (a bad parent handle), -EINVAL (out NULL, an empty range
 * or one outside the parent, an overlap, a view of a view), -ENOMEM, or
 * -EBUSY (from a callback).
 */
TMM_EXPORT
int tmm_tensor_view(tmm_ctx *ctx, tmm_tensor parent, size_t offset,
		    size_t bytes, const char *name, tmm_tensor *out);

/*
 * Destroys a tensor and returns its memory.  When a dropped tensor still
 * needs this one's bytes to be recomputed, that tensor is regenerated
 * first.  Returns 0, -EBADF for a bad handle, -EBUSY if it is acquired, or
 * the error of that regeneration (-ENOMEM; the tensor then stays).
 * A view first hands its bytes to its parent (an op); a parent with live
 * views is refused with -EBUSY.
 */
TMM_EXPORT
int tmm_tensor_destroy(tmm_ctx *ctx, tmm_tensor t);

/*
 * Copies `bytes` bytes at `offset` of the tensor into `dst`, wherever the
 * tensor currently is (device, host, or recomputed).  Returns 0, -EBADF,
 * -EINVAL for a range outside the tensor, -ENODATA for a tensor never
 * written (or discarded by liveness=discard after its last access: a
 * read the measured iteration made there keeps the bytes, tensormm(7)),
 * -ENOTSUP on a phantom (sizes-only) simulated device.
 */
TMM_EXPORT
int tmm_tensor_read(tmm_ctx *ctx, tmm_tensor t, size_t offset, void *dst,
		    size_t bytes);

/*
 * Copies `bytes` bytes from `src` into the tensor at `offset`.  A tensor
 * that holds no memory yet is materialised (zero-filled) first.  Returns 0,
 * -EBADF, -EINVAL, -ENOMEM, -ENOTSUP (phantom device).
 */
TMM_EXPORT
int tmm_tensor_write(tmm_ctx *ctx, tmm_tensor t, size_t offset,
		     const void *src, size_t bytes);

/*
 * Sets every byte of the tensor to `byte` (0 to 255) on the device, with
 * no callback of the program's: zeroing a gradient before it is summed
 * into, say.  It runs as an op of its own, in order with the ops around
 * it, and is recorded and planned like one.  Returns 0, -EBADF, -EINVAL
 * (a byte outside 0..255), -ENOMEM (no room even for this tensor alone),
 * -EBUSY (from a callback), or a backend error.
 */
TMM_EXPORT
int tmm_tensor_fill(tmm_ctx *ctx, tmm_tensor t, int byte);

/* The size in bytes of a tensor, or 0 for a bad handle (or while another
 * thread is in a call on the context).  Allowed inside callbacks. */
TMM_EXPORT
size_t tmm_tensor_bytes(const tmm_ctx *ctx, tmm_tensor t);

/* ------------------------------------------------------------------------
 * Operations
 * ---------------------------------------------------------------------- */

/* What an op computes; layer-typed policies (vDNN, SuperNeurons) use it. */
enum tmm_op_kind {
	TMM_OP_OTHER = 0,
	TMM_OP_CONV,
	TMM_OP_MATMUL,
	TMM_OP_POOL,
	TMM_OP_ACT,
	TMM_OP_NORM,
	TMM_OP_ELEMENTWISE,
	TMM_OP_LOSS,
	TMM_OP_OPTIMIZER,
	/*
	 * A collective across ranks (an all-reduce of gradients, an
	 * all-gather of parameters): its callback talks to other processes,
	 * through MPI on host memory or NCCL on the compute stream.  Its
	 * inputs and outputs are tensors like any other, resident and never
	 * evicted while it runs.  cost.net_bytes is what it moves on the
	 * network link.  Never pure: its result depends on other ranks.
	 */
	TMM_OP_COLLECTIVE,
	TMM_OP_KIND_COUNT
};

/* tmm_op.flags */
#define TMM_OP_PURE 0x1u     /* outputs are a function of the inputs alone:
				they may be dropped and recomputed by calling
				run again */
#define TMM_OP_BACKWARD 0x2u /* part of the backward pass (a hint) */

/* The most inputs, and the most outputs, one op may list. */
#define TMM_OP_MAX_TENSORS 4096u

/*
 * Runs the op on device pointers.  in[i] and out[i] are the device
 * addresses of the op's inputs and outputs in descriptor order; `stream` is
 * the backend's compute stream (a cudaStream_t on the cuda backend, NULL on
 * the simulator, whose memory the host can touch directly in backed mode).
 * Returns 0 or a negative errno, which tmm_run returns.  It may call only
 * the reading calls on its context (see Callbacks, at the top).
 */
typedef int (*tmm_run_fn)(void *const *in, void *const *out, void *user,
			  void *stream);

/*
 * Runs the op on the slice [begin, end) of the outermost dimension of its
 * sliced tensors (TSPLIT §IV-B: a *micro-op*).  A tensor of the op is
 * sliced when its flag in tmm_op.sliced is set (all are when that is
 * NULL): its bytes are slice_extent rows of equal size, and in[i] or
 * out[i] points at its row 0 as usual; the callback touches rows
 * [begin, end) of it only.  Tensors not sliced (weights, say) are whole.
 * Calling it for [0, e), [e, e2), ... [ek, slice_extent) in order must
 * leave the same bytes as one call of run: the runtime splits an op that
 * its plan splits, and results stay bit-identical.  An output that is not
 * sliced (a weight gradient summed over the batch) is the callback's to
 * accumulate across calls: the runtime zeroes nothing.
 */
typedef int (*tmm_run_slice_fn)(void *const *in, void *const *out,
				size_t begin, size_t end, void *user,
				void *stream);

/* The cost hint of an op: the simulator's roofline and the planners use it. */
struct tmm_cost {
	double flops; /* floating-point operations */
	double bytes; /* bytes of device memory read + written */
	double net_bytes; /* bytes this rank sends on the network link (a
			   * TMM_OP_COLLECTIVE; 0 for any other op): a
			   * ring all-reduce of B bytes over N ranks sends
			   * 2(N-1)/N x B */
};

/*
 * An op descriptor.  A tensor may appear in both inputs and outputs (an
 * in-place update, such as an optimizer step); such an op is not pure.
 * Outputs that hold no memory are allocated on the device by tmm_run.
 * The callback writes only what the op lists as outputs: a tensor it
 * writes but lists only as an input may leave the device later without
 * its new bytes (an eviction copies nothing when the host holds the
 * tensor's bytes already, tmm_stats.clean_evictions).
 */
typedef struct tmm_op {
	const char *name;	  /* for messages and traces; may be NULL */
	enum tmm_op_kind kind;
	unsigned flags;		  /* TMM_OP_PURE, TMM_OP_BACKWARD */
	const tmm_tensor *inputs; /* n_inputs handles */
	unsigned n_inputs;
	const tmm_tensor *outputs; /* n_outputs handles */
	unsigned n_outputs;
	tmm_run_fn run;	   /* may be NULL on a phantom device: cost only */
	void *user;	   /* passed to run and run_slice */
	struct tmm_cost cost;
	/* TSPLIT: an op that may run as micro-ops.  run_slice NULL and
	 * slice_extent 0 for an op that cannot; on a phantom device (cost
	 * only) slice_extent alone makes an op splittable. */
	tmm_run_slice_fn run_slice;
	size_t slice_extent;	    /* rows of the outermost dimension */
	const unsigned char *sliced; /* n_inputs + n_outputs flags, inputs
				      * first: nonzero where the tensor is
				      * cut into rows; NULL: all are */
	/*
	 * n_outputs flags: nonzero where the callback reads the output's
	 * bytes before it writes them (out += ..., a gradient summed over
	 * steps).  NULL: none.  The rule without it: an output that is
	 * not also listed as an input is overwritten whole, so the library
	 * may hand the callback memory whose old bytes are gone (a swapped
	 * out tensor is not brought back for it).  An output listed as an
	 * input too needs no flag.  An op that accumulates is not pure.
	 * check=on (tensormm(7)) makes a forgotten flag show on every run.
	 */
	const unsigned char *accumulate;
} tmm_op;

/*
 * Runs an op: makes its inputs resident (waiting for an in-flight copy,
 * swapping in from the host, or recomputing as needed), allocates its
 * outputs (evicting other tensors when the budget is short), records the
 * accesses, calls op->run and fires any plan actions triggered here.
 *
 * Returns 0 or a negative errno: -EBADF (a bad handle), -EINVAL (a bad
 * descriptor: unknown kind or flags, more than TMM_OP_MAX_TENSORS inputs
 * or outputs), -ENODATA (an input never written, or discarded by
 * liveness=discard), -ENOMEM (the op's own
 * inputs and outputs exceed the budget, or nothing more can be evicted), or
 * what op->run returned.  On failure no tensor's bytes are lost.
 */
TMM_EXPORT
int tmm_run(tmm_ctx *ctx, const tmm_op *op);

/* ------------------------------------------------------------------------
 * Escape hatch: direct access
 * ---------------------------------------------------------------------- */

enum tmm_access {
	TMM_READ = 1,
	TMM_WRITE = 2,
	TMM_READ_WRITE = 3
};

/*
 * Makes a tensor resident and pins it until tmm_release(); *ptr receives
 * its device address.  Acquires nest (a count).  The access is recorded
 * like an op's; with TMM_WRITE the bytes count as written by the host (no
 * longer recomputable).  Returns 0, -EBADF, -EINVAL, -ENODATA (TMM_READ of
 * a tensor never written, or discarded by liveness=discard), -ENOMEM.
 */
TMM_EXPORT
int tmm_acquire(tmm_ctx *ctx, tmm_tensor t, enum tmm_access mode,
		void **ptr);

/* Unpins a tensor acquired by tmm_acquire().  Returns 0, -EBADF, -EINVAL
 * (not acquired). */
TMM_EXPORT
int tmm_release(tmm_ctx *ctx, tmm_tensor t);

/* ------------------------------------------------------------------------
 * Workspaces
 * ---------------------------------------------------------------------- */

/*
 * Gives the calling op scratch device memory of at least `min` and at most
 * `max` bytes: the largest size in that range that fits in the device
 * budget right now without evicting anything; only when not even `min`
 * fits are tensors evicted, and only as many as `min` needs (SuperNeurons
 * §3.5: a convolution takes a faster algorithm when more workspace is
 * free).  *ptr receives the device address and *got the size given, a
 * multiple of 256 bytes when less than max.  With min 0 and nothing free,
 * *ptr is NULL and *got 0.
 *
 * A context has one workspace at a time: it stays valid until
 * tmm_workspace_release(), the next tmm_workspace(), tmm_iteration_end()
 * or tmm_ctx_destroy(), so get it just before the tmm_run whose callback
 * uses it.  Kernels queued on the compute stream before its release may
 * still use it: later work that reuses the memory runs after them.
 *
 * Returns 0, -EBADF, -EINVAL (max 0, min > max, a NULL pointer), or
 * -ENOMEM when `min` bytes cannot be had even by evicting (more than the
 * budget, or the device is full of pinned tensors).
 */
TMM_EXPORT
int tmm_workspace(tmm_ctx *ctx, size_t min, size_t max, void **ptr,
		  size_t *got);

/* Gives back the context's workspace, if any.  Returns 0 or -EBADF. */
TMM_EXPORT
int tmm_workspace_release(tmm_ctx *ctx);

/* ------------------------------------------------------------------------
 * Iterations
 * ---------------------------------------------------------------------- */

/*
 * Mark the beginning and end of one training iteration.  Tensors created
 * between the two are keyed by creation order, so plans apply to the fresh
 * buffers of each step.  Every access between the two is recorded; the
 * first complete iteration is *measured* (passive swapping keeps it
 * alive), and at its end TENSORMM_POLICY's planner makes the plan that the
 * next iterations follow (*guided*).  An iteration whose accesses stop
 * matching the plan finishes in passive mode (counted in
 * tmm_stats.plan_divergences).  With TENSORMM_TRACE set, each iteration
 * is appended to the trace file at its end, until the next would take the
 * file past TENSORMM_TRACE_MAX bytes (then tracing stops, with one
 * warning, and the file stays whole).  Returns 0, -EBADF, -EINVAL
 * (unbalanced markers); tmm_iteration_begin may also return the error of
 * regenerating a tensor left dropped by the previous iteration.
 */
TMM_EXPORT
int tmm_iteration_begin(tmm_ctx *ctx);
TMM_EXPORT
int tmm_iteration_end(tmm_ctx *ctx);

/*
 * A rehearsal: the first plan from predicted op latencies instead of a
 * measured first iteration (TENSILE's cold start).  Between
 * tmm_rehearsal_begin and tmm_rehearsal_end the program runs one training
 * step exactly as it will run it for real, tmm_iteration_begin and
 * tmm_iteration_end included.  Nothing is computed or moved: op callbacks
 * are not called; tensors created inside hold no device memory and are
 * destroyed by tmm_rehearsal_end (their handles go stale); tmm_tensor_write
 * copies nothing; tmm_tensor_read fills the destination with zeros, so a
 * program must not act on values read in a rehearsal; tmm_acquire is
 * refused with -EBUSY; tensors that existed before keep their bytes
 * untouched.  Each op's time is predicted from its cost hint by the
 * backend's roofline (the simulated profile's; on CUDA an estimate from
 * the device's peak FLOP/s and memory bandwidth) and recorded in the
 * iteration's trace.  At the rehearsed iteration's end the planner makes
 * the plan from that trace, so the first real iteration is guided, not
 * measured: with a plan that fits it needs no passive eviction.
 * Re-planning on drift (TENSORMM_REPLAN_DRIFT) later retimes the rehearsed
 * trace with measured latencies.  The rehearsal is not counted in
 * tmm_stats (its planning time aside) nor written to the TENSORMM_TRACE
 * file.
 *
 * Compared with a plan file (TENSORMM_HINTS): a rehearsal needs no earlier
 * run, while a plan file carries the measured latencies of one.
 *
 * Both return 0, -EBADF, -ENOMEM, or -EINVAL: a rehearsal already on
 * (they do not nest), none on (tmm_rehearsal_end), an iteration open, an
 * iteration already run or a plan already installed (begin), or no
 * complete iteration rehearsed (end: the rehearsal is over all the same
 * and the first real iteration is measured).
 */
TMM_EXPORT
int tmm_rehearsal_begin(tmm_ctx *ctx);
TMM_EXPORT
int tmm_rehearsal_end(tmm_ctx *ctx);

/* ------------------------------------------------------------------------
 * Statistics
 * ---------------------------------------------------------------------- */

#define TMM_STATS_VERSION 15

/* tmm_stats.plan_state: where the context is in the plan's life. */
enum tmm_plan_state {
	TMM_PLAN_MEASURING = 0, /* no plan yet: passive mode, recording */
	TMM_PLAN_GUIDED = 1,	/* following a plan */
	TMM_PLAN_DIVERGED = 2,	/* left the plan this iteration */
};

/*
 * Counters of a context.  Set `version` to TMM_STATS_VERSION before
 * calling tmm_stats_get(); fields may be added at the end in later
 * versions, and a struct of an earlier version (1: up to compute_ns; 2: up
 * to prefetch_late; 3: up to uvm_discard_bytes; 4: up to
 * split_fallbacks; 5: up to device_mapped_peak; 6: up to
 * uvm_held_peak; 7: up to reserved7; 8: up to
 * clean_eviction_bytes; 9: up to dead_discard_bytes; 10: up to
 * uvm_kept_hits; 11: up to reserved11; 12: up to
 * uvm_prefetch_out_bytes) is still filled up to its last field.  Times are in
 * nanoseconds of the backend's clock: virtual nanoseconds on the
 * simulator.
 */
struct tmm_stats {
	uint32_t version;
	uint32_t simulated;	    /* 1 when the figures come from the sim */
	char backend[16];	    /* "sim" or "cuda" */
	char device[48];	    /* profile or device name */
	char mode[8];		    /* "swap" or "uvm" */

	uint64_t device_capacity;   /* bytes */
	uint64_t budget;	    /* bytes the runtime may use */
	uint64_t device_in_use;	    /* bytes held by tensors (mode=uvm:
				     * managed pages on the device; on
				     * CUDA, whose driver does not say,
				     * the library's count, uvm_held) */
	uint64_t device_peak;	    /* high-water mark of device_in_use */
	uint64_t pool_largest_free; /* largest free block in the device pool */
	double pool_fragmentation;  /* 1 - largest_free / total_free */
	uint64_t host_in_use;	    /* bytes of tensors held on the host,
				     * clean copies included (version 8) */
	uint64_t host_pinned;	    /* pinned host bytes held (in use+cached) */

	uint64_t swap_out_count, swap_out_bytes;
	uint64_t swap_in_count, swap_in_bytes;
	uint64_t passive_evictions; /* evictions forced by a full device */
	uint64_t passive_eviction_bytes;
	uint64_t on_demand_swap_ins;  /* back-accesses that found a tensor
				       * on the host: a stall */
	uint64_t swap_out_waits;      /* allocations that waited for the
				       * earliest pending swap-out */
	uint64_t stall_ns;	      /* compute time lost waiting for copies */

	uint64_t ops;		      /* tmm_run calls */
	uint64_t accesses;	      /* tensor accesses recorded */
	uint64_t iterations;	      /* completed iterations */
	uint64_t last_iteration_ns;   /* duration of the last iteration */
	uint64_t elapsed_ns;	      /* backend clock since creation */
	uint64_t compute_ns;	      /* time spent in ops */

	/* Version 2: plans and recomputation. */
	uint64_t drops;		      /* tensors whose device memory was
				       * freed, to be recomputed */
	uint64_t drop_bytes;
	uint64_t recomputations;      /* ops re-run to regenerate them */
	uint64_t recomputed_bytes;    /* bytes they regenerated */
	uint64_t recompute_ns;	      /* time spent re-running ops */
	uint64_t plan_actions;	      /* plan actions carried out */
	uint64_t plan_actions_skipped; /* actions that did not apply: the
					* tensor was not in a state they
					* act on, or there was no room */
	uint64_t guided_iterations;   /* iterations that followed a plan */
	uint64_t plan_divergences;    /* ... and left it part-way */
	uint64_t prefetch_late;	      /* back-accesses that reached a
				       * prefetched tensor still arriving
				       * (counted when the iteration
				       * ends, judged on the device) */

	/* Version 3: planning, prefetches, managed memory. */
	uint64_t plans_made;	      /* planner runs */
	uint64_t plan_ns;	      /* host wall-clock time of the last
				       * planner run: real ns, even on
				       * the sim */
	uint64_t prefetches;	      /* prefetch actions issued */
	uint64_t guided_passive_evictions; /* passive evictions inside
					    * guided iterations: a plan
					    * that did not fit */
	uint64_t compaction_moves;    /* tensors moved on the device to
				       * make a hole in the pool (mode=uvm:
				       * out of a large tensor's way over
				       * kept pages, uvm_compact) */
	uint64_t compaction_bytes;
	uint32_t plan_state;	      /* enum tmm_plan_state */
	uint32_t reserved;	      /* zero */
	/* mode=uvm: the driver's work (zero in swap mode). */
	uint64_t uvm_fault_batches;   /* fault batches serviced */
	uint64_t uvm_faults;	      /* page faults in them */
	uint64_t uvm_fault_bytes;     /* migrated to the device by faults */
	uint64_t uvm_prefetch_bytes;  /* migrated to the device by prefetch */
	uint64_t uvm_evictions;	      /* blocks the driver evicted */
	uint64_t uvm_eviction_bytes;  /* ... and wrote back to the host */
	uint64_t uvm_remote_bytes;    /* read or written over the bus in
				       * place, without migrating */
	uint64_t uvm_discard_bytes;   /* dropped with no write-back */
	/* Version 4: share (several processes on one GPU; zero when off). */
	uint64_t share_reservation;   /* bytes this process may hold now,
				       * its part of the shared device */
	uint64_t share_budget_changes; /* times that part moved */
	/* ... and TSPLIT. */
	uint64_t split_ops;	      /* ops run as micro-ops by a plan */
	uint64_t micro_ops;	      /* the micro-ops they ran as */
	uint64_t split_fallbacks;     /* split ops whose output could not
				       * be placed below the input it was
				       * to grow into, and was allocated
				       * whole (correct, no saving) */
	/* Version 5: pool=chunks (zero with pool=arena and in mode=uvm). */
	uint64_t device_mapped;	      /* device bytes mapped under the
				       * pool's virtual range: what it
				       * holds of the device */
	uint64_t device_mapped_peak;  /* high-water mark of device_mapped */
	/* Version 6: mode=uvm, the library's own count (zero in swap
	 * mode). */
	uint64_t uvm_held;	      /* bytes of the whole 64 KiB pages of
				       * the tensors in an on-device state
				       * and of the recomputation buffers
				       * and workspace: what uvm_cap=library
				       * keeps within the budget (on CUDA
				       * the driver's own use is not
				       * reported) */
	uint64_t uvm_held_peak;	      /* high-water mark of uvm_held */
	/* Version 7: which device (the `device` tunable). */
	int32_t device_index;	      /* CUDA's ordinal, or the simulator's
				       * virtual device (0 to 63) */
	uint32_t reserved7;	      /* zero */
	/* Version 8: clean evictions (swap mode, and mode=uvm by copy). */
	uint64_t clean_evictions;     /* swap-outs that copied nothing: the
				       * tensor had come back from the host
				       * and nothing had written it since,
				       * so the host still held its bytes
				       * (not in swap_out_count) */
	uint64_t clean_eviction_bytes; /* ... their bytes: what they did
					* not copy */
	/* Version 9: late prefetches, measured where the compute runs. */
	uint64_t prefetch_wait_ns;    /* compute time spent waiting for
				       * late prefetches (prefetch_late):
				       * on CUDA measured on the GPU, which
				       * stall_ns, the host's waits, does
				       * not see */
	/* ... and liveness=discard. */
	uint64_t dead_discards;	      /* evictions of tensors idle until
				       * destroyed whose bytes were dropped,
				       * not copied (not in swap_out_count
				       * nor in drops) */
	uint64_t dead_discard_bytes;  /* ... their bytes */
	/* Version 10: mode=uvm's kept blocks (TENSORMM_UVM_KEEP). */
	uint64_t uvm_kept;	      /* bytes of the managed blocks kept
				       * with their pages on the device for
				       * the next tensor of their size: on
				       * the device, and not in uvm_held */
	uint64_t uvm_kept_hits;	      /* allocations a kept block served,
				       * with no page made */
	/* Version 11: mode=uvm, the driver's fault path, and whether the
	 * driver's work is known at all. */
	uint64_t uvm_fault_ns;	      /* time the driver spent servicing
				       * device page faults: the simulated
				       * fault path; on CUDA, from the
				       * driver taking each fault group up
				       * to the replay it queued (CUPTI) */
	uint32_t uvm_driver_counted;  /* 1: uvm_fault_batches up to
				       * uvm_eviction_bytes and uvm_fault_ns
				       * count the driver's work (always on
				       * the simulator; on CUDA where CUPTI's
				       * unified-memory counters could be
				       * turned on, as of the last
				       * iteration's end); 0: not known, they
				       * read zero */
	uint32_t reserved11;	      /* zero */
	/* Version 12: the rates the planners price moves at, and which way
	 * mode=uvm's evictions went.  In MB/s (1e6 bytes a second): the
	 * profile's on the simulator; on CUDA measured when the context
	 * was made, or an estimate where they could not be (the log at
	 * level info says which at that time). */
	uint64_t link_h2d_mbps;	      /* a pinned copy to the device */
	uint64_t link_d2h_mbps;	      /* a pinned copy to the host */
	uint64_t uvm_prefetch_h2d_mbps; /* managed pages moved to the device
					 * by a prefetch */
	uint64_t uvm_prefetch_d2h_mbps; /* ... and to the host: on the
					 * H100 of docs/gpu-h100.md a sixth
					 * of a copy's rate */
	uint64_t uvm_prefetch_out_bytes; /* of swap_out_bytes, those that
					  * left by a prefetch to the host
					  * (mode=uvm's prefetch way), not
					  * by a pinned copy */
	/* Version 13: uvm_swap_path=mix. */
	uint64_t uvm_migrate_out_bytes; /* of uvm_prefetch_out_bytes, those
					 * a plan moved by migration beside
					 * the copy way (TENSORMM_UVM_SWAP_PATH
					 * =mix), on a stream of their own */
	uint64_t uvm_migrate_in_bytes;	/* ... and the bytes prefetched back
					 * on that stream */
	/* Version 14: uvm_copier=kernel. */
	uint64_t uvm_kernel_copy_bytes; /* bytes of the copies to or from
					 * managed memory that the library's
					 * copy kernel made, either way
					 * (TENSORMM_UVM_COPIER=kernel); 0
					 * where cudaMemcpyAsync made them */
	/* Version 15: the copy kernel's rates, which the planners price
	 * mode=uvm's copies at where it makes them.  In MB/s: measured
	 * on CUDA when the context was made (the pinned copies' where
	 * they could not be: the log at level info says which);
	 * TENSORMM_SIM_COPY_KERNEL_GBPS or the profile's on the
	 * simulator; 0 where cudaMemcpyAsync makes the copies. */
	uint64_t uvm_kernel_copy_h2d_mbps; /* into managed memory */
	uint64_t uvm_kernel_copy_d2h_mbps; /* out of it */
	uint64_t uvm_kernel_copy_blocks;   /* the most blocks one copy runs
					    * (TENSORMM_UVM_COPIER_BLOCKS, or
					    * chosen at open by rate); 0 on
					    * the simulator */
};

/* Fills *s.  Returns 0, -EBADF, or -EINVAL for an unknown s->version. */
TMM_EXPORT
int tmm_stats_get(tmm_ctx *ctx, struct tmm_stats *s);

/*
 * Gives back the memory the context keeps for reuse but holds nothing:
 * the cached pinned host buffers (up to TENSORMM_PINNED_POOL of them),
 * and in mode=uvm the pages of the blocks kept for the next tensor of
 * their size (TENSORMM_UVM_KEEP: discarded) and the managed arena's
 * segments that then hold no tensor, so that another program, or a phase
 * of this one that needs host memory, can have it.  The next swap-outs pin buffers afresh, which is slow.
 * Writes the bytes given back into *bytes when not NULL.  Returns 0,
 * -EBADF, or -EBUSY (from a callback, or while another thread is in the
 * context).
 */
TMM_EXPORT
int tmm_release_cached(tmm_ctx *ctx, uint64_t *bytes);

/* The library's version, "MAJOR.MINOR.PATCH" (TMM_VERSION_STRING of
 * the header it was built with).  Never fails. */
TMM_EXPORT
const char *tmm_version(void);

/*
 * Starts device_peak (and device_mapped_peak) again from the device bytes
 * in use (mapped) now, so that a program can measure the peak of one
 * phase (a step after warm-up, an evaluation pass).  In mode=uvm the driver is looked at between calls:
 * a peak under the one before the reset that comes and goes between two
 * of the library's looks is not seen.  Returns 0, -EBADF, or -EBUSY (in
 * an op's callback, or while another thread is in the context).
 */
TMM_EXPORT
int tmm_stats_reset_peak(tmm_ctx *ctx);

/* Writes `len` bytes of `text`; used by tmm_stats_print. */
typedef void (*tmm_write_fn)(void *arg, const char *text, size_t len);

#define TMM_STATS_JSON 0x1u /* tmm_stats_print: JSON instead of text */

/*
 * Prints the context's statistics through `write` (to stderr when NULL) as
 * human-readable text, or as one JSON object with TMM_STATS_JSON.  The
 * statistics are read first and `write` is called after the context is let
 * go, so `write` may call into it like any other code.  Returns 0, -EBADF.
 */
TMM_EXPORT
int tmm_stats_print(tmm_ctx *ctx, tmm_write_fn write, void *arg,
		    unsigned opts);

#ifdef __cplusplus
}
#endif

#endif /* TENSORMM_H */
