/* SPDX-License-Identifier: MIT */
/*
 * drive.h — running a zoo graph through the real runtime.
 *
 * The driver does what a framework does with libtensormm: it creates the
 * context from a config string, creates the weights and optimizer state
 * once (outside iterations) and gives them their first bytes, then for
 * each iteration creates every activation and gradient just before the op
 * that produces it, runs the ops with tmm_run in order, and destroys each
 * tensor right after its last use (drive_opts.keep_all: when the
 * iteration ends).  A convolution's workspace is a tensor it creates
 * just before the op, at the size of the algorithm the framework it
 * plays picks (enum drive_ws), and destroys right after it.
 */
#ifndef ZOO_DRIVE_H
#define ZOO_DRIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "tensormm.h"

#define DRIVE_MAX_ITERATIONS 8

/* When to give up early, for searches that only ask "does it fit?". */
enum drive_stop {
	DRIVE_RUN_ALL = 0,	       /* run every iteration to the end */
	DRIVE_STOP_ON_EVICTION,	       /* at the first passive eviction */
	DRIVE_STOP_ON_GUIDED_EVICTION, /* ... inside a guided iteration */
};

/*
 * How the framework the driver plays picks a convolution's algorithm, and
 * so its workspace (graph.h: zg_algo; a zoo convolution op carries the
 * list).  "Free" is what the budget has left before the op's outputs are
 * placed: taking it evicts nothing.
 */
enum drive_ws {
	/* DRIVE_WS_DYNAMIC under policy superneurons (TENSORMM_POLICY,
	 * else the config string's policy=, as the library takes it),
	 * DRIVE_WS_FALLBACK under any other: each paper's framework. */
	DRIVE_WS_BY_POLICY = 0,
	/* TensorFlow 1.x: the fastest algorithm within its workspace
	 * limit when its workspace can be had, else the fastest that
	 * needs none (conv_ops.cc's algorithm_no_scratch: its scratch
	 * allocator fails without retrying, and the op falls back).  So
	 * the workspace costs time, never a batch; Capuchin §6.3.2 saw
	 * VGG-16's convolutions "fall back to slower convolution
	 * algorithms due to memory limit at a larger batch size".  Asked
	 * at every launch, as TensorFlow does.  "Can be had" here also
	 * means the op fits the budget whole with it, its inputs brought
	 * back: tmm_run refuses an op past the budget, where TensorFlow's
	 * allocator would have failed the workspace alone. */
	DRIVE_WS_FALLBACK,
	/* SuperNeurons §3.5: the fastest algorithm whose workspace fits
	 * in what is free at that step (and leaves the op the budget, as
	 * above). */
	DRIVE_WS_DYNAMIC,
	/* Always the fastest's workspace, evicting for it if need be (a
	 * framework that reserves it, for tests and comparisons). */
	DRIVE_WS_FASTEST,
	/* Never a workspace: the slowest algorithms (the zoo before
	 * workspaces were modelled, vDNN's memory-optimal setting). */
	DRIVE_WS_NONE,
};

struct drive_opts {
	const char *config;	 /* tmm_ctx_create's config string */
	unsigned iterations;	 /* 1 to DRIVE_MAX_ITERATIONS */
	/* Called after every op of iteration `sample_iteration` (1-based;
	 * 0: never) with the device bytes in use then. */
	void (*sample)(void *arg, uint32_t op, uint64_t in_use);
	void *sample_arg;
	unsigned sample_iteration;
	enum drive_stop stop;	 /* a stop returns -ENOSPC */
	/* Rehearse one step (tmm_rehearsal_begin/end) before the first
	 * iteration, so that the policy plans from predicted op times and
	 * iteration 1 is already guided, instead of being measured in
	 * passive mode (which a batch too large for passive mode fails). */
	bool rehearse;
	bool no_peak;		 /* skip the per-op statistics (for timing
				  * the runtime alone; no peak, no stops) */
	/* Called after iteration n (1-based) ends, with the context, for a
	 * test to look inside it; a negative return stops the run with
	 * that error.  NULL: not called. */
	int (*after_iteration)(void *arg, tmm_ctx *ctx, unsigned n);
	void *after_arg;
	/* For a device whose bytes are real (sim_memory=backed): each
	 * persistent tensor gets seeded bytes (tmm_tensor_write) instead of
	 * the init op, and after the last iteration they are all read back
	 * into r->weights, so a run can be checked byte for byte.  The ops
	 * are cost-only, so the bytes must come back as written. */
	bool weight_bytes;
	enum drive_ws ws;	 /* the convolutions' workspaces */
	/* Keep every tensor of an iteration until it ends, as a framework
	 * that "store[s] all the feature maps and parameters during the
	 * training process" (TSPLIT §VI-A, its baseline Base): nothing is
	 * destroyed after its last use; the workspaces still are, after
	 * their op (a framework frees its scratch). */
	bool keep_all;
};

struct drive_iteration {
	uint64_t ns;		     /* simulated duration */
	uint64_t peak;		     /* most device bytes in use after an op */
	double peak_fragmentation;   /* the pool's, after that op (swap
				      * mode): 1 - largest free block /
				      * free bytes */
	uint64_t passive_evictions;  /* during this iteration */
	uint64_t swap_out_bytes, swap_in_bytes, recomputations;
	uint64_t uvm_prefetch_out_bytes; /* of swap_out_bytes, those that
					  * left by prefetch (mode=uvm) */
	uint64_t accesses;	     /* tensor accesses recorded */
	/* Convolution workspaces: bytes taken (the sum over the ops), what
	 * the fastest algorithms would have taken, the largest one taken,
	 * and the ops that ran a slower algorithm for want of room. */
	uint64_t ws_bytes, ws_fastest_bytes, ws_largest, ws_slower_ops;
	uint64_t host_ns;	     /* real wall time on this machine */
};

struct drive_result {
	int rc;			 /* 0, or the first failure (negative errno) */
	char error[320];	 /* what failed, when rc < 0 */
	unsigned done;		 /* iterations completed */
	struct drive_iteration it[DRIVE_MAX_ITERATIONS];
	struct tmm_stats st;	 /* at the end */
	uint64_t persistent_bytes;
	double host_s;		 /* real wall time of the iterations */
	/* With o->weight_bytes and every iteration done: the persistent
	 * tensors' bytes, in tensor order (malloc'd: free it). */
	uint8_t *weights;
	size_t weights_len;
	int destroy_rc;		 /* what tmm_ctx_destroy returned */
};

/*
 * Runs `o->iterations` iterations of the finished graph g.  Returns 0 when
 * all completed, -ENOSPC when o->stop stopped it, or the negative errno of
 * the first failure (also in r->rc, with r->error saying which op and
 * why); r is filled either way.
 */
int zoo_drive(const struct zgraph *g, const struct drive_opts *o,
	      struct drive_result *r);

#endif /* ZOO_DRIVE_H */
