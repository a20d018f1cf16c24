/* SPDX-License-Identifier: MIT */
/*
 * fault_sweep.h — failing the N-th call of a fault site (lib/base/fault.h)
 * while an example trains, for every N of a sample or of the whole run.
 *
 * A case is a model (the MLP of examples/mlp_model.c, or a small model
 * of the zoo, bench/models/), a mode (swap or uvm, on the simulator with
 * real bytes) and a policy.  Its reference run is the model trained with
 * the whole device and no fault; it gives the final parameter bytes.
 * The same training at a budget under the peak, with a site (one of
 * sweep_sites) failing once at call N (or from N on), runs in a forked
 * child,
 * and must end one of two ways: finished with the reference's bytes, or
 * failed with an error whose message says what failed, and the context
 * destroyed without error.  Anything else is counted against it: a
 * signal, a sanitizer's or valgrind's report (their exit codes), other
 * bytes, an error with no message, a context that would not go.
 *
 * Used by tests/test_fault_sweep.c (a sample of N, in `make check`) and
 * tests/fault_sweep_main.c (scripts/fault-sweep: every N, optionally
 * under valgrind).
 */
#ifndef FAULT_SWEEP_H
#define FAULT_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sweep_model { SWEEP_MLP, SWEEP_ZOO };

struct sweep_case {
	enum sweep_model model;
	const char *mode;   /* "swap" or "uvm" */
	const char *policy; /* the `policy` tunable */
};

/* The library's fault sites (fault.h), in the order of sweep_ref.calls. */
#define SWEEP_SITES 5
extern const char *const sweep_sites[SWEEP_SITES];

/* The index of `site` in sweep_sites, or -1. */
int sweep_site_index(const char *site);

/* "mlp" or "zoo". */
const char *sweep_model_name(enum sweep_model m);

/* What one run came to; the first two are the acceptable ones. */
enum sweep_outcome {
	SWEEP_IDENTICAL,   /* finished, bytes as the reference's */
	SWEEP_ERROR,	   /* failed with a message, context destroyed */
	SWEEP_DIFFERENT,   /* finished with other bytes: silent corruption */
	SWEEP_MUTE,	   /* failed with no message, or a bare "out of
			    * memory" */
	SWEEP_UNDESTROYED, /* tmm_ctx_destroy failed */
	SWEEP_LEAK,	   /* LeakSanitizer's or valgrind's exit code */
	SWEEP_CRASH,	   /* a signal, or another exit code (a sanitizer) */
	SWEEP_HANG,	   /* still running after the time limit */
	SWEEP_OUTCOMES
};

/* The outcome's name, for reports: "identical", "error", ... */
const char *sweep_outcome_name(enum sweep_outcome o);

/* A case's reference: the bytes to reproduce and the sites' calls. */
struct sweep_ref {
	struct sweep_case c;
	uint8_t *weights;
	size_t len;
	uint64_t budget; /* the constrained runs' budget, bytes */
	/* calls of each of sweep_sites in a constrained run */
	unsigned long calls[SWEEP_SITES];
	char dir[96];	 /* the runs' plan and trace files are here */
};

/*
 * Makes c's reference: trains without a fault, with the whole device and
 * then at the constrained budget (whose bytes must already match, and
 * whose calls of each site are counted).  Returns 0, or -1 with why in
 * err.  Free it with sweep_ref_free.
 */
int sweep_ref_make(const struct sweep_case *c, struct sweep_ref *ref,
		   char *err, size_t errlen);
void sweep_ref_free(struct sweep_ref *ref);

/*
 * Runs the constrained training with call n of `site` failing (from n on
 * with `onward`) in a forked child, which must end within timeout_s.
 * msg receives the error message of a failed run, or what went wrong.
 */
enum sweep_outcome sweep_run(const struct sweep_ref *ref, const char *site,
			     unsigned long n, bool onward, unsigned timeout_s,
			     char *msg, size_t msglen);

/* The config of a case's runs: its mode, policy, budget and files. */
void sweep_config(const struct sweep_ref *ref, const char *fault, char *buf,
		  size_t len);

#endif /* FAULT_SWEEP_H */
