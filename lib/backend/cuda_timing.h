/* SPDX-License-Identifier: MIT */
/*
 * cuda_timing.h — how long each op's kernels ran on a real GPU.
 *
 * An op's kernels are queued by its run callback and run long after
 * kernel_end returns, so their time is known only later.  This module
 * gives each op bracketed by begin/end an id, and at collect (once an
 * iteration) waits for the GPU and answers each id's duration:
 *
 *   cupti   the op's device work is tagged with the id as a CUPTI
 *           external correlation id; CUPTI's activity records give each
 *           kernel's (and, with CUDA 13's CUPTI, each copy's and fill's)
 *           start and end, and an op's time is the sum of those times
 *           (launch gaps and host work excluded) on the compute stream
 *           (records of other streams and devices are left out).
 *   events  a pair of cudaEvents brackets the op on the compute stream;
 *           the time between them (gaps included).
 *
 * CUPTI is used when the library was built with it (TMM_HAVE_CUPTI), the
 * caller asks for it (cupti=on), it can be loaded (cupti_lib.h: the first
 * open that asks loads it, for the process) and the driver lets this
 * process profile; otherwise events.  CUPTI's activity callbacks are
 * process-wide, so only the first context to open takes CUPTI; the
 * others use events.
 *
 * Functions returning int return 0 or a negative errno and write a
 * message naming the failed call and CUDA's or CUPTI's description into
 * err.  Built only with CUDA.
 */
#ifndef TMM_CUDA_TIMING_H
#define TMM_CUDA_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_um.h"

struct tmm_cuda_timing;

/*
 * Opens timing of ops queued on `stream` (a cudaStream_t), with CUPTI
 * when want_cupti, loaded from dl_path's directories (the tunable; NULL:
 * the dynamic linker's search) if this is the first open to want it.
 * *why receives, when CUPTI was asked for but not used, the reason (""
 * else).  Returns 0 or -ENOMEM.
 */
int tmm_cuda_timing_open(struct tmm_cuda_timing **out, void *stream,
			 bool want_cupti, const char *dl_path, char *why,
			 size_t whylen);

/* Stops CUPTI (when this instance owns it) and frees everything. */
void tmm_cuda_timing_close(struct tmm_cuda_timing *t);

/* "cupti" or "events": how this instance measures. */
const char *tmm_cuda_timing_method(const struct tmm_cuda_timing *t);

/*
 * Where this instance owns CUPTI, turns on its unified-memory counters
 * (cuda_um.h): what the driver migrates each way and the device page
 * faults it services, for a context in mode=uvm.  True when they are
 * on; false with the reason in why (no CUPTI here, or the driver does
 * not count: CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED and its kin).
 */
bool tmm_cuda_timing_count_managed(struct tmm_cuda_timing *t, char *why,
				   size_t whylen);

/* What the counters summed since they were turned on (all zero when
 * they are not), as of the last collect. */
void tmm_cuda_timing_managed(const struct tmm_cuda_timing *t,
			     struct tmm_cuda_um_sums *out);

/* Marks the start of an op; returns 0 or a negative errno. */
int tmm_cuda_timing_begin(struct tmm_cuda_timing *t, char *err,
			  size_t errlen);

/* Marks the end of the op begun last; returns 0 or a negative errno. */
int tmm_cuda_timing_end(struct tmm_cuda_timing *t, char *err,
			size_t errlen);

/* The id of the op begun last (ids start at 1; 0: none yet). */
uint64_t tmm_cuda_timing_last(const struct tmm_cuda_timing *t);

/*
 * Waits for the compute stream, then writes into ns[i] the duration of
 * op i: the sum over the ops begun with ids in (after[i], last[i]], so
 * that an op run as several pieces (a split op, each piece begun and
 * ended) is timed over all of them; 0 for an op it has no time for.  The
 * ranges ascend and do not overlap.  Forgets every op begun so far: call
 * it once per iteration.  Returns 0 or a negative errno.
 */
int tmm_cuda_timing_collect(struct tmm_cuda_timing *t, const uint64_t *after,
			    const uint64_t *last, uint64_t *ns, uint32_t n,
			    char *err, size_t errlen);

/*
 * `stream` (a cudaStream_t) waits for `event` (a cudaEvent_t) between two
 * timed events of this instance's, written to *before and *after, so that
 * tmm_cuda_timing_waited can say how long the stream stood still.
 * Returns 0, or a negative errno with no event held (the stream may not
 * wait then).
 */
int tmm_cuda_timing_wait(struct tmm_cuda_timing *t, void *stream,
			 void *event, void **before, void **after, char *err,
			 size_t errlen);

/*
 * The time from `before` to `after` (tmm_cuda_timing_wait's), in ns,
 * once the host has waited for `after`; both go back to the instance,
 * on failure too.  Returns 0 or a negative errno.
 */
int tmm_cuda_timing_waited(struct tmm_cuda_timing *t, void *before,
			   void *after, uint64_t *ns, char *err,
			   size_t errlen);

#endif /* TMM_CUDA_TIMING_H */
