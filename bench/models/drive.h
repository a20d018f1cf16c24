/* SPDX-License-Identifier: MIT */
/*
 * drive.h — running a zoo graph through the real runtime.
 *
 * The driver does what a framework does with libtensormm: it creates the
 * context from a config string, creates the weights and optimizer state
 * once (outside iterations) and gives them their first bytes, then for
 * each iteration creates every activation and gradient just before the op
 * that produces it, runs the ops with tmm_run in order, and destroys each
 * tensor right after its last use.
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
};

struct drive_iteration {
	uint64_t ns;		     /* simulated duration */
	uint64_t peak;		     /* most device bytes in use after an op */
	double peak_fragmentation;   /* the pool's, after that op (swap
				      * mode): 1 - largest free block /
				      * free bytes */
	uint64_t passive_evictions;  /* during this iteration */
	uint64_t swap_out_bytes, swap_in_bytes, recomputations;
	uint64_t accesses;	     /* tensor accesses recorded */
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
