/* SPDX-License-Identifier: MIT */
/*
 * cuda_timing.c — op durations on a real GPU (see cuda_timing.h).
 *
 * Both methods keep what they learn between two collects in arrays that
 * are emptied at collect.  A program that never ends an iteration never
 * collects, so each array is capped (MAX_KEPT) and stops growing there:
 * the ops beyond it have no time, which is what an op outside an
 * iteration needs anyway.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#ifdef TMM_HAVE_CUPTI
#include <cupti.h>

#include "cupti_lib.h"
#endif

#include "cuda_timing.h"
#include "lib/base/xalloc.h"

/* Results (or CUPTI records) kept between two collects at most. */
#define MAX_KEPT (1u << 20)

struct op_time {
	uint64_t id, ns;
};

/* One op's cudaEvent pair, recorded and not yet known to be complete. */
struct event_pair {
	uint64_t id;
	cudaEvent_t begin, end;
};

struct tmm_cuda_timing {
	cudaStream_t stream;
	bool cupti;		/* this instance owns CUPTI */
	bool um;		/* ... and counts managed memory (cuda_um.h) */
	uint64_t last_id;	/* the op begun last */

	/* events: pairs in flight fly[head .. n_fly), oldest first */
	struct event_pair *fly;
	uint32_t head, n_fly, cap_fly;
	cudaEvent_t *spare;	/* completed events, for reuse */
	uint32_t n_spare, cap_spare;
	struct op_time *done;	/* durations of completed pairs */
	uint32_t n_done, cap_done;
};

/* Grows *arr (of `size`-byte elements) to hold need; false: no memory. */
static bool reserve(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t c = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	p = tmm_realloc(*arr, (size_t)c * size);
	if (!p)
		return false;
	*arr = p;
	*cap = c;
	return true;
}

/* "<call>: <CUDA's description> (<name>)" into err; the errno for e. */
static int cuda_err(cudaError_t e, const char *call, char *err,
		    size_t errlen)
{
	(void)cudaGetLastError();
	snprintf(err, errlen, "%s: %s (%s)", call, cudaGetErrorString(e),
		 cudaGetErrorName(e));
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

/*
 * The op that bracket `id` belongs to: i where after[i] < id <= last[i]
 * (the ranges ascending and apart, tmm_cuda_timing_collect), or -1.
 */
static long find_op(const uint64_t *after, const uint64_t *last, uint32_t n,
		    uint64_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (last[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && after[lo] < id ? (long)lo : -1;
}

/* ------------------------------------------------------------------------
 * CUPTI
 * ---------------------------------------------------------------------- */

#ifdef TMM_HAVE_CUPTI

/*
 * The records this CUPTI writes (the newest of their versions).  The
 * copies and fills an op queues count as its time too (a cudaMemsetAsync
 * of a gradient is work like a kernel); their record layouts are known
 * here only for CUDA 13's CUPTI, so older ones time kernels alone.
 */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#define TIME_COPIES 1
#else
typedef CUpti_ActivityKernel9 kernel_record;
#define TIME_COPIES 0
#endif

#define CUPTI_BUFFER_BYTES (4u << 20)

/*
 * The external correlation record comes with the API call that launched
 * a kernel, so API records (runtime and driver: cuBLAS and cuDNN launch
 * through either) must be on for it to be written at all.  Their records
 * are read past.
 */
static const CUpti_ActivityKind cupti_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
#if TIME_COPIES
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET,
#endif
	CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_DRIVER,
};
#define N_KINDS (sizeof(cupti_kinds) / sizeof(cupti_kinds[0]))

struct corr {
	uint32_t corr; /* CUDA's correlation id of the launch */
	uint64_t ext;  /* our op id */
};

struct kern {
	uint32_t corr;
	uint64_t ns;
};

/*
 * CUPTI's callbacks belong to the process, and CUPTI may call them from
 * its own thread: what they fill is global and under the lock.
 */
static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
/* CUPTI's entry points, once an owner has loaded them (never unset: the
 * library stays loaded for the process). */
static const struct tmm_cupti *cu;
static struct tmm_cuda_timing *cupti_owner;
static bool cupti_registered;
/* The owner's compute stream as CUPTI names it: its device (the runtime
 * works in each device's primary context, so the device names the
 * context) and its id there. */
static uint32_t own_device, own_stream;
static struct corr *corrs;
static uint32_t n_corrs, cap_corrs;
static struct kern *kerns;
static uint32_t n_kerns, cap_kerns;

static const char *cupti_string(CUptiResult r)
{
	const char *s = NULL;

	if (cu->cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	return s;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	/* CUPTI asks for 8-byte alignment. */
	*buffer = tmm_aligned_alloc(8, CUPTI_BUFFER_BYTES);
	*size = *buffer ? CUPTI_BUFFER_BYTES : 0;
	*max_records = 0;
}

/*
 * Keeps one piece of device work: a kernel, a copy or a fill, when it ran
 * on the owner's compute stream.  Records are the process's: work an op's
 * callback queued elsewhere (another stream, another device) runs beside
 * the op rather than in it, and the event pairs, which time the compute
 * stream, leave it out too.
 */
static void keep_work(uint32_t corr, uint32_t device, uint32_t stream,
		      uint64_t start, uint64_t end)
{
	if (device != own_device || stream != own_stream)
		return;
	if (end <= start || n_kerns >= MAX_KEPT ||
	    !reserve((void **)&kerns, &cap_kerns, n_kerns + 1, sizeof(*kerns)))
		return;
	kerns[n_kerns++] = (struct kern){ corr, end - start };
}

static void keep_record(const CUpti_Activity *rec)
{
	if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
	    rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
		const kernel_record *k = (const kernel_record *)rec;

		keep_work(k->correlationId, k->deviceId, k->streamId,
			  k->start, k->end);
#if TIME_COPIES
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		const CUpti_ActivityMemcpy6 *m =
			(const CUpti_ActivityMemcpy6 *)rec;

		keep_work(m->correlationId, m->deviceId, m->streamId,
			  m->start, m->end);
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
		const CUpti_ActivityMemset4 *m =
			(const CUpti_ActivityMemset4 *)rec;

		keep_work(m->correlationId, m->deviceId, m->streamId,
			  m->start, m->end);
#endif
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
		const CUpti_ActivityExternalCorrelation *x =
			(const CUpti_ActivityExternalCorrelation *)rec;

		if (x->externalKind !=
			    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
		    n_corrs >= MAX_KEPT ||
		    !reserve((void **)&corrs, &cap_corrs, n_corrs + 1,
			     sizeof(*corrs)))
			return;
		corrs[n_corrs++] = (struct corr){ x->correlationId,
						  x->externalId };
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
		tmm_cuda_um_note(rec);
	}
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id,
				      uint8_t *buffer, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL;

	(void)context;
	(void)stream_id;
	(void)size;
	pthread_mutex_lock(&cupti_lock);
	while (cu->cuptiActivityGetNextRecord(buffer, valid, &rec) ==
	       CUPTI_SUCCESS)
		keep_record(rec);
	pthread_mutex_unlock(&cupti_lock);
	free(buffer);
}

static int cmp_corr(const void *a, const void *b)
{
	uint32_t x = ((const struct corr *)a)->corr;
	uint32_t y = ((const struct corr *)b)->corr;

	return (x > y) - (x < y);
}

/* Takes CUPTI for t, loading it from dl_path's directories the first
 * time; false with the reason in why when it cannot. */
static bool cupti_start(struct tmm_cuda_timing *t, const char *dl_path,
			char *why, size_t whylen)
{
	uint32_t version = 0;
	CUptiResult r = CUPTI_SUCCESS;
	size_t on = 0;
	bool ok = false;

	pthread_mutex_lock(&cupti_lock);
	if (cupti_owner) {
		snprintf(why, whylen, "CUPTI is taken by another context");
		goto out;
	}
	if (!cu) {
		cu = tmm_cupti_load(dl_path, why, whylen);
		if (!cu)
			goto out;
	}
	/* The activity records' layout is the one of the headers this was
	 * built with: an older CUPTI loaded at run time would be misread
	 * (cupti_version.h: compare cuptiGetVersion with
	 * CUPTI_API_VERSION). */
	if (cu->cuptiGetVersion(&version) != CUPTI_SUCCESS ||
	    version < CUPTI_API_VERSION) {
		snprintf(why, whylen, "CUPTI API version %u is older than the "
			 "%u this libtensormm was built with",
			 (unsigned)version, (unsigned)CUPTI_API_VERSION);
		goto out;
	}
	/* Called on the context's device (backend_cuda.c opens the timing
	 * there): a NULL context is the current one. */
	r = cu->cuptiGetDeviceId(NULL, &own_device);
	if (r == CUPTI_SUCCESS)
		r = cu->cuptiGetStreamIdEx(NULL, (CUstream)t->stream, 0,
					   &own_stream);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, whylen, "cuptiGetStreamIdEx(compute stream): %s",
			 cupti_string(r));
		goto out;
	}
	if (!cupti_registered) {
		r = cu->cuptiActivityRegisterCallbacks(buffer_requested,
						   buffer_completed);
		if (r != CUPTI_SUCCESS) {
			snprintf(why, whylen,
				 "cuptiActivityRegisterCallbacks: %s",
				 cupti_string(r));
			goto out;
		}
		cupti_registered = true;
	}
	for (; on < N_KINDS; on++) {
		r = cu->cuptiActivityEnable(cupti_kinds[on]);
		if (r != CUPTI_SUCCESS)
			break;
	}
	if (on < N_KINDS) {
		/* Often CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: profiling is
		 * restricted to admin users by the driver. */
		snprintf(why, whylen, "cuptiActivityEnable(kind %d): %s",
			 (int)cupti_kinds[on], cupti_string(r));
		while (on-- > 0)
			cu->cuptiActivityDisable(cupti_kinds[on]);
		goto out;
	}
	cupti_owner = t;
	n_corrs = n_kerns = 0;
	ok = true;
out:
	pthread_mutex_unlock(&cupti_lock);
	return ok;
}

static void cupti_stop(struct tmm_cuda_timing *t)
{
	/* Not under the lock: a flush calls buffer_completed here. */
	cu->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	for (size_t i = 0; i < N_KINDS; i++)
		cu->cuptiActivityDisable(cupti_kinds[i]);
	if (t->um)
		cu->cuptiActivityDisable(
			CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
	pthread_mutex_lock(&cupti_lock);
	if (cupti_owner == t)
		cupti_owner = NULL;
	free(corrs);
	free(kerns);
	corrs = NULL;
	kerns = NULL;
	n_corrs = cap_corrs = n_kerns = cap_kerns = 0;
	pthread_mutex_unlock(&cupti_lock);
}

static int cupti_collect(struct tmm_cuda_timing *t, const uint64_t *after,
			 const uint64_t *last, uint64_t *ns, uint32_t n,
			 char *err, size_t errlen)
{
	CUptiResult r;
	cudaError_t e;

	e = cudaStreamSynchronize(t->stream);
	if (e != cudaSuccess)
		return cuda_err(e, "cudaStreamSynchronize(compute) before "
				"reading CUPTI's kernel records", err, errlen);
	r = cu->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS) {
		snprintf(err, errlen, "cuptiActivityFlushAll: %s",
			 cupti_string(r));
		return -EIO;
	}
	pthread_mutex_lock(&cupti_lock);
	/* An iteration whose ops queued no work has no records, and no
	 * array to sort or search (qsort and bsearch want one). */
	if (n_corrs)
		qsort(corrs, n_corrs, sizeof(*corrs), cmp_corr);
	for (uint32_t i = 0; n_corrs && i < n_kerns; i++) {
		struct corr key = { .corr = kerns[i].corr };
		struct corr *c = bsearch(&key, corrs, n_corrs, sizeof(*corrs),
					 cmp_corr);
		long at = c ? find_op(after, last, n, c->ext) : -1;

		if (at >= 0)
			ns[at] += kerns[i].ns;
	}
	n_corrs = n_kerns = 0;
	pthread_mutex_unlock(&cupti_lock);
	return 0;
}

#endif /* TMM_HAVE_CUPTI */

/* ------------------------------------------------------------------------
 * Event pairs
 * ---------------------------------------------------------------------- */

static int take_event(struct tmm_cuda_timing *t, cudaEvent_t *ev, char *err,
		      size_t errlen)
{
	cudaError_t e;

	if (t->n_spare) {
		*ev = t->spare[--t->n_spare];
		return 0;
	}
	/* Timing on: these events measure. */
	e = cudaEventCreateWithFlags(ev, cudaEventDefault);
	if (e != cudaSuccess)
		return cuda_err(e, "cudaEventCreateWithFlags(timing)", err,
				errlen);
	return 0;
}

static void give_event(struct tmm_cuda_timing *t, cudaEvent_t ev)
{
	if (reserve((void **)&t->spare, &t->cap_spare, t->n_spare + 1,
		    sizeof(*t->spare)))
		t->spare[t->n_spare++] = ev;
	else
		cudaEventDestroy(ev);
}

/* ------------------------------------------------------------------------
 * Waits measured on the device
 * ---------------------------------------------------------------------- */

int tmm_cuda_timing_wait(struct tmm_cuda_timing *t, void *stream,
			 void *event, void **before, void **after, char *err,
			 size_t errlen)
{
	cudaEvent_t b = NULL, a = NULL;
	const char *call = "cudaEventRecord(before a wait)";
	cudaError_t e = cudaSuccess;
	int rc = take_event(t, &b, err, errlen);

	if (rc == 0)
		rc = take_event(t, &a, err, errlen);
	if (rc == 0) {
		e = cudaEventRecord(b, (cudaStream_t)stream);
		if (e == cudaSuccess) {
			call = "cudaStreamWaitEvent(timed)";
			e = cudaStreamWaitEvent((cudaStream_t)stream,
						(cudaEvent_t)event, 0);
		}
		if (e == cudaSuccess) {
			call = "cudaEventRecord(after a wait)";
			e = cudaEventRecord(a, (cudaStream_t)stream);
		}
		if (e != cudaSuccess)
			rc = cuda_err(e, call, err, errlen);
	}
	if (rc < 0) {
		if (b)
			give_event(t, b);
		if (a)
			give_event(t, a);
		return rc;
	}
	*before = b;
	*after = a;
	return 0;
}

int tmm_cuda_timing_waited(struct tmm_cuda_timing *t, void *before,
			   void *after, uint64_t *ns, char *err,
			   size_t errlen)
{
	float ms = 0;
	const char *call = "cudaEventSynchronize(after a wait)";
	cudaError_t e = cudaEventSynchronize((cudaEvent_t)after);

	if (e == cudaSuccess) {
		call = "cudaEventElapsedTime(a wait)";
		e = cudaEventElapsedTime(&ms, (cudaEvent_t)before,
					 (cudaEvent_t)after);
	}
	give_event(t, (cudaEvent_t)before);
	give_event(t, (cudaEvent_t)after);
	if (e != cudaSuccess)
		return cuda_err(e, call, err, errlen);
	*ns = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
	return 0;
}

/*
 * Turns the oldest pairs into durations while they are complete (or all
 * of them, waiting, when `wait`), so few events are ever in flight.
 */
static int retire_pairs(struct tmm_cuda_timing *t, bool wait, char *err,
			size_t errlen)
{
	while (t->head < t->n_fly) {
		struct event_pair *p = &t->fly[t->head];
		float ms = 0;
		cudaError_t e;

		e = wait ? cudaEventSynchronize(p->end)
			 : cudaEventQuery(p->end);
		if (e == cudaErrorNotReady)
			break;
		if (e != cudaSuccess)
			return cuda_err(e, wait ? "cudaEventSynchronize(op end)"
						: "cudaEventQuery(op end)",
					err, errlen);
		e = cudaEventElapsedTime(&ms, p->begin, p->end);
		if (e != cudaSuccess)
			return cuda_err(e, "cudaEventElapsedTime(op)", err,
					errlen);
		if (t->n_done < MAX_KEPT &&
		    reserve((void **)&t->done, &t->cap_done, t->n_done + 1,
			    sizeof(*t->done)))
			t->done[t->n_done++] = (struct op_time){
				p->id, (uint64_t)((double)ms * 1e6)
			};
		give_event(t, p->begin);
		give_event(t, p->end);
		t->head++;
	}
	if (t->head == t->n_fly)
		t->head = t->n_fly = 0;
	return 0;
}

static int events_begin(struct tmm_cuda_timing *t, char *err, size_t errlen)
{
	struct event_pair p = { .id = t->last_id };
	cudaError_t e;
	int rc;

	rc = retire_pairs(t, false, err, errlen);
	if (rc < 0)
		return rc;
	if (t->n_fly == t->cap_fly && t->head > 0) {
		memmove(t->fly, t->fly + t->head,
			(t->n_fly - t->head) * sizeof(*t->fly));
		t->n_fly -= t->head;
		t->head = 0;
	}
	if (!reserve((void **)&t->fly, &t->cap_fly, t->n_fly + 1,
		     sizeof(*t->fly))) {
		snprintf(err, errlen, "op timing: out of memory");
		return -ENOMEM;
	}
	rc = take_event(t, &p.begin, err, errlen);
	if (rc == 0) {
		rc = take_event(t, &p.end, err, errlen);
		if (rc < 0)
			give_event(t, p.begin);
	}
	if (rc < 0)
		return rc;
	e = cudaEventRecord(p.begin, t->stream);
	if (e != cudaSuccess) {
		give_event(t, p.begin);
		give_event(t, p.end);
		return cuda_err(e, "cudaEventRecord(op begin)", err, errlen);
	}
	t->fly[t->n_fly++] = p;
	return 0;
}

static int events_end(struct tmm_cuda_timing *t, char *err, size_t errlen)
{
	struct event_pair *p;
	cudaError_t e;

	if (t->n_fly == t->head || t->fly[t->n_fly - 1].id != t->last_id) {
		snprintf(err, errlen, "op timing: an end without a begin");
		return -EINVAL;
	}
	p = &t->fly[t->n_fly - 1];
	e = cudaEventRecord(p->end, t->stream);
	if (e != cudaSuccess) {
		/* The pair can never complete: take it back. */
		give_event(t, p->begin);
		give_event(t, p->end);
		t->n_fly--;
		return cuda_err(e, "cudaEventRecord(op end)", err, errlen);
	}
	return 0;
}

static int events_collect(struct tmm_cuda_timing *t, const uint64_t *after,
			  const uint64_t *last, uint64_t *ns, uint32_t n,
			  char *err, size_t errlen)
{
	int rc = retire_pairs(t, true, err, errlen);

	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < t->n_done; i++) {
		long at = find_op(after, last, n, t->done[i].id);

		/* A split op's pieces each have a pair: the op's time is
		 * their sum. */
		if (at >= 0)
			ns[at] += t->done[i].ns;
	}
	t->n_done = 0;
	return 0;
}

/* ------------------------------------------------------------------------
 * The interface
 * ---------------------------------------------------------------------- */

int tmm_cuda_timing_open(struct tmm_cuda_timing **out, void *stream,
			 bool want_cupti, const char *dl_path, char *why,
			 size_t whylen)
{
	struct tmm_cuda_timing *t = tmm_calloc(1, sizeof(*t));

	*out = NULL;
	if (whylen)
		why[0] = '\0';
	if (!t)
		return -ENOMEM;
	t->stream = (cudaStream_t)stream;
#ifdef TMM_HAVE_CUPTI
	if (want_cupti)
		t->cupti = cupti_start(t, dl_path, why, whylen);
#else
	(void)dl_path;
	if (want_cupti)
		snprintf(why, whylen, "this build has no CUPTI (configure did "
			 "not find cupti.h and libcupti)");
#endif
	*out = t;
	return 0;
}

void tmm_cuda_timing_close(struct tmm_cuda_timing *t)
{
	if (!t)
		return;
#ifdef TMM_HAVE_CUPTI
	if (t->cupti)
		cupti_stop(t);
#endif
	for (uint32_t i = t->head; i < t->n_fly; i++) {
		cudaEventDestroy(t->fly[i].begin);
		cudaEventDestroy(t->fly[i].end);
	}
	for (uint32_t i = 0; i < t->n_spare; i++)
		cudaEventDestroy(t->spare[i]);
	(void)cudaGetLastError();
	free(t->fly);
	free(t->spare);
	free(t->done);
	free(t);
}

bool tmm_cuda_timing_count_managed(struct tmm_cuda_timing *t, char *why,
				   size_t whylen)
{
#ifdef TMM_HAVE_CUPTI
	const CUpti_ActivityUnifiedMemoryCounterConfig *config;
	CUpti_ActivityUnifiedMemoryCounterConfig copy[4];
	uint32_t n;
	CUptiResult r;

	if (!t->cupti) {
		snprintf(why, whylen, "CUPTI is not in use for this context "
			 "(see the op timing's reason)");
		return false;
	}
	if (t->um)
		return true;
	config = tmm_cuda_um_config(&n);
	memcpy(copy, config, n * sizeof(*copy));
	for (uint32_t i = 0; i < n; i++)
		copy[i].deviceId = own_device;
	/* Often CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED(_WITH_MPS, _ON_DEVICE):
	 * a driver or setup that does not count. */
	r = cu->cuptiActivityConfigureUnifiedMemoryCounter(copy, n);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, whylen,
			 "cuptiActivityConfigureUnifiedMemoryCounter: %s",
			 cupti_string(r));
		return false;
	}
	r = cu->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, whylen,
			 "cuptiActivityEnable(unified memory counters): %s",
			 cupti_string(r));
		return false;
	}
	tmm_cuda_um_reset(own_device);
	t->um = true;
	return true;
#else
	(void)t;
	snprintf(why, whylen, "this build has no CUPTI");
	return false;
#endif
}

void tmm_cuda_timing_managed(const struct tmm_cuda_timing *t,
			     struct tmm_cuda_um_sums *out)
{
	memset(out, 0, sizeof(*out));
#ifdef TMM_HAVE_CUPTI
	if (t->um)
		tmm_cuda_um_read(out);
#else
	(void)t;
#endif
}

const char *tmm_cuda_timing_method(const struct tmm_cuda_timing *t)
{
	return t->cupti ? "cupti" : "events";
}

int tmm_cuda_timing_begin(struct tmm_cuda_timing *t, char *err,
			  size_t errlen)
{
	t->last_id++;
#ifdef TMM_HAVE_CUPTI
	if (t->cupti) {
		CUptiResult r = cu->cuptiActivityPushExternalCorrelationId(
			CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, t->last_id);

		if (r != CUPTI_SUCCESS) {
			snprintf(err, errlen,
				 "cuptiActivityPushExternalCorrelationId(op "
				 "%llu): %s",
				 (unsigned long long)t->last_id,
				 cupti_string(r));
			return -EIO;
		}
		return 0;
	}
#endif
	return events_begin(t, err, errlen);
}

int tmm_cuda_timing_end(struct tmm_cuda_timing *t, char *err, size_t errlen)
{
#ifdef TMM_HAVE_CUPTI
	if (t->cupti) {
		uint64_t id = 0;
		CUptiResult r = cu->cuptiActivityPopExternalCorrelationId(
			CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);

		if (r != CUPTI_SUCCESS) {
			snprintf(err, errlen,
				 "cuptiActivityPopExternalCorrelationId(op "
				 "%llu): %s",
				 (unsigned long long)t->last_id,
				 cupti_string(r));
			return -EIO;
		}
		return 0;
	}
#endif
	return events_end(t, err, errlen);
}

uint64_t tmm_cuda_timing_last(const struct tmm_cuda_timing *t)
{
	return t->last_id;
}

int tmm_cuda_timing_collect(struct tmm_cuda_timing *t, const uint64_t *after,
			    const uint64_t *last, uint64_t *ns, uint32_t n,
			    char *err, size_t errlen)
{
	for (uint32_t i = 0; i < n; i++)
		ns[i] = 0;
#ifdef TMM_HAVE_CUPTI
	if (t->cupti)
		return cupti_collect(t, after, last, ns, n, err, errlen);
#endif
	return events_collect(t, after, last, ns, n, err, errlen);
}
