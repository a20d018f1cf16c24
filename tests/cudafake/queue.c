/* SPDX-License-Identifier: MIT */
/*
 * queue.c — the double's streams and events: queues of work run in a
 * seeded order within CUDA's rules, and the race detector.
 *
 * Ordering is kept as vector clocks, one count of queued operations per
 * stream.  An operation's clock says, for every stream, how many of its
 * operations come before it; it is made when the operation is queued:
 *  - its stream's earlier operations (CUDA Programming Guide, "Streams":
 *    operations in a stream run in issue order);
 *  - the records a cudaStreamWaitEvent waited for (Runtime API,
 *    cudaStreamWaitEvent: all future work in the stream waits for the
 *    event's most recent record);
 *  - everything the host had synchronised with when it queued it;
 *  - the legacy default stream's rule (Runtime API, "Stream
 *    synchronization behavior": work on it waits for all earlier work in
 *    blocking streams, and later work in blocking streams waits for it).
 * The same clock drives execution (an operation runs once every stream
 * has run as many operations as its clock names) and detection (two
 * accesses race when neither clock is below the other).
 *
 * Time is kept twice.  The serial clock (clock_ms) advances by each
 * operation run, one at a time; the host's clock and CUPTI's records
 * read it.  The device timeline gives each stream a time of its own, as
 * a GPU's streams run side by side: an operation starts when its stream
 * is free, the operations its clock names have ended, and the host has
 * queued it (host_ms: the host's time on that timeline, a launch's cost
 * per call, and what it waited for), and ends its cost later.  Events
 * are stamped with it, so cudaEventElapsedTime between streams tells
 * which engine waited for which, as it does on a GPU.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "lib/backend/backend_cuda.h"
#include "lib/backend/backend_cuda_managed.h"

#define MAX_RACES 64
#define MAX_LOG 65536
/* The host's cost of queuing one operation, on the device timeline: a
 * kernel launch's few microseconds. */
#define LAUNCH_MS 0.002

/* An access of a queued operation, kept until the host is ordered after
 * it (then everything queued later is too). */
struct logged {
	struct fake_access a;
	struct vclock vc;
	unsigned slot;
	const char *what;
	const void *site;
};

static struct {
	bool ready;
	uint64_t rng;
	struct CUstream_st streams[FAKE_STREAMS];
	uint32_t ran[FAKE_STREAMS];	/* operations run, per stream */
	struct vclock host;		/* what the host has waited for */
	uint32_t stream_ids[16];	/* CUPTI stream ids given, per device */
	double clock_ms;		/* serial: one operation at a time */
	/* The device timeline: per stream, when it is free and when each
	 * of its operations run so far ended (index: run count - 1). */
	double host_ms;
	double busy_ms[FAKE_STREAMS];
	double *ends[FAKE_STREAMS];
	uint32_t cap_ends[FAKE_STREAMS];
	struct logged *log;
	size_t n_log;
	char *races[MAX_RACES];
	unsigned n_races;
	unsigned long legacy_ops;
	unsigned long kernels_on[FAKE_DEVICES]; /* kernels queued, per device */
	bool abort_on_race;
} q;

static void vc_max(struct vclock *a, const struct vclock *b)
{
	for (unsigned i = 0; i < FAKE_STREAMS; i++)
		if (b->c[i] > a->c[i])
			a->c[i] = b->c[i];
}

static bool vc_le(const struct vclock *a, const struct vclock *b)
{
	for (unsigned i = 0; i < FAKE_STREAMS; i++)
		if (a->c[i] > b->c[i])
			return false;
	return true;
}

static uint64_t next_rand(void)
{
	q.rng ^= q.rng << 13;
	q.rng ^= q.rng >> 7;
	q.rng ^= q.rng << 17;
	return q.rng;
}

static void init(void)
{
	const char *races = getenv("CUDAFAKE_RACES");

	if (q.ready)
		return;
	q.ready = true;
	q.rng = 0x9e3779b97f4a7c15ull * (fake_env_seed() + 1);
	q.abort_on_race = races && strcmp(races, "abort") == 0;
	for (unsigned i = 0; i < FAKE_STREAMS; i++)
		q.streams[i].slot = i;
	q.streams[FAKE_LEGACY].live = q.streams[FAKE_LEGACY].blocking = true;
	q.streams[FAKE_LEGACY].device = q.streams[FAKE_PER_THREAD].device = -1;
	q.streams[FAKE_PER_THREAD].live = true;
	q.streams[FAKE_PER_THREAD].blocking = true;
	q.streams[FAKE_LEGACY].cupti_id = 1;
	q.streams[FAKE_PER_THREAD].cupti_id = 2;
}

uint32_t fake_stream_cupti_id(const struct CUstream_st *s)
{
	return s->cupti_id;
}

struct CUstream_st *fake_stream(cudaStream_t s)
{
	init();
	if (s == NULL || s == cudaStreamLegacy)
		return &q.streams[FAKE_LEGACY];
	if (s == cudaStreamPerThread)
		return &q.streams[FAKE_PER_THREAD];
	for (unsigned i = 2; i < FAKE_STREAMS; i++)
		if (s == &q.streams[i])
			return s->live ? s : NULL;
	return NULL;
}

struct CUstream_st *fake_stream_new(bool blocking, int device)
{
	init();
	for (unsigned i = 2; i < FAKE_STREAMS; i++) {
		struct CUstream_st *s = &q.streams[i];

		if (s->live)
			continue;
		s->live = true;
		s->blocking = blocking;
		s->priority = 0;
		s->device = device;
		s->head = s->tail = NULL;
		/* A new id for every new stream, so that a record of the
		 * slot's last owner is never taken for this one's. */
		s->cupti_id = device >= 0 && device < 16
				      ? 3 + q.stream_ids[device]++
				      : 0;
		/* A slot's count goes on from its last owner's, so clocks
		 * that name it stay true. */
		memset(&s->vc, 0, sizeof(s->vc));
		s->vc.c[i] = q.ran[i];
		return s;
	}
	return NULL;
}

void fake_stream_free(struct CUstream_st *s)
{
	/* cudaStreamDestroy: work already queued still completes. */
	fake_sync_stream(s);
	s->live = false;
}

static const char *const verb[] = {
	[USE_READ] = "reads", [USE_WRITE] = "writes",
	[USE_MIGRATE] = "migrates",
};

/*
 * Whether two uses of the same bytes conflict when unordered.  A write
 * conflicts with everything.  Two migrations race for where the bytes
 * end up.  A read beside a migration does not: managed memory stays
 * coherent for a reader while its pages move (Programming Guide,
 * "Unified Memory: coherency and concurrency"); only a discard, a
 * write here, makes a concurrent read undefined (Runtime API,
 * cudaMemDiscardBatchAsync).
 */
static bool conflict(enum fake_use a, enum fake_use b)
{
	if (a == USE_WRITE || b == USE_WRITE)
		return true;
	return a == USE_MIGRATE && b == USE_MIGRATE;
}

static void report(const struct logged *then, const char *what,
		   const void *site, const struct fake_access *a)
{
	char s1[160], s2[160], *text;
	uintptr_t lo = a->lo > then->a.lo ? a->lo : then->a.lo;
	uintptr_t hi = a->hi < then->a.hi ? a->hi : then->a.hi;

	fake_site_name(then->site, s1, sizeof(s1));
	fake_site_name(site, s2, sizeof(s2));
	if (asprintf(&text, "race on [%#lx, %#lx): %s %s (%s, stream %u) and "
		     "%s %s (%s), unordered", (unsigned long)lo,
		     (unsigned long)hi, then->what, verb[then->a.use], s1,
		     then->slot, what, verb[a->use], s2) < 0)
		return;
	if (q.abort_on_race) {
		fprintf(stderr, "cudafake: %s\n", text);
		abort();
	}
	if (q.n_races < MAX_RACES)
		q.races[q.n_races++] = text;
	else
		free(text);
}

/* Drops the accesses the host is ordered after: nothing queued from now
 * on can race with them. */
static void prune(void)
{
	size_t keep = 0;

	for (size_t i = 0; i < q.n_log; i++)
		if (!vc_le(&q.log[i].vc, &q.host))
			q.log[keep++] = q.log[i];
	q.n_log = keep;
}

static void check_and_log(const struct vclock *vc, unsigned slot,
			  const struct fake_access *a, unsigned n,
			  const char *what, const void *site)
{
	for (unsigned k = 0; k < n; k++) {
		for (size_t i = 0; i < q.n_log; i++) {
			const struct logged *l = &q.log[i];

			if (l->a.hi <= a[k].lo || a[k].hi <= l->a.lo ||
			    !conflict(l->a.use, a[k].use))
				continue;
			/* Queued later by the host, so never before l: a
			 * race unless l is ordered before it. */
			if (!vc_le(&l->vc, vc))
				report(l, what, site, &a[k]);
		}
	}
	for (unsigned k = 0; k < n; k++) {
		if (q.n_log == MAX_LOG) /* the oldest go first */
			memmove(q.log, q.log + 1,
				(MAX_LOG - 1) * sizeof(*q.log));
		else if (!(q.n_log & (q.n_log + 1)) || !q.log) {
			void *p = realloc(q.log, (2 * q.n_log + 1) *
						 sizeof(*q.log));

			if (!p)
				return;
			q.log = p;
		}
		q.log[q.n_log++] = (struct logged){ a[k], *vc, slot, what,
						    site };
	}
}

/* An operation's clock, allocated right behind it (fake_op_new). */
static struct vclock *op_clock(struct fake_op *op)
{
	return (struct vclock *)(op + 1);
}

struct fake_op *fake_op_new(enum fake_kind kind, cudaStream_t stream)
{
	struct CUstream_st *s = fake_stream(stream);
	struct fake_op *op;

	if (!s)
		return NULL;
	op = calloc(1, sizeof(*op) + sizeof(struct vclock));
	if (op) {
		op->kind = kind;
		op->s = s;
		op->device = s->device >= 0 ? s->device
					    : fake_current_device();
	}
	return op;
}

/* Time enough to tell events apart: a microsecond an operation and
 * 10 GB/s for its bytes (a kernel's: fake_kernel_cost's), but a
 * prefetch to the host at CUDAFAKE_HOST_PREFETCH_MBPS and one to a
 * device at CUDAFAKE_DEVICE_PREFETCH_MBPS where those are set (the H100
 * of docs/gpu-h100.md moved them out at a sixth of a copy's rate; the
 * H200 of docs/gpu-h200.md moved them in, and made fresh pages, at
 * about 0.57 of it). */
static double op_cost_ms(const struct fake_op *op)
{
	size_t mbps = 0;

	if (op->kind == OP_PREFETCH)
		mbps = fake_env_size(op->value ? "CUDAFAKE_DEVICE_PREFETCH_MBPS"
					       : "CUDAFAKE_HOST_PREFETCH_MBPS",
				     0);
	if (mbps > 0)
		return 0.001 + (double)op->bytes / (1e3 * (double)mbps);
	return 0.001 + (double)op->bytes / 1e7;
}

/* When op starts on the device timeline: its stream free, the host past
 * queuing it, and every operation its clock names ended. */
static double timeline_start(struct fake_op *op)
{
	const struct vclock *vc = op_clock(op);
	unsigned slot = op->s->slot;
	double t = op->enq_ms > q.busy_ms[slot] ? op->enq_ms
						 : q.busy_ms[slot];

	for (unsigned i = 0; i < FAKE_STREAMS; i++)
		if (i != slot && vc->c[i] > 0 && vc->c[i] <= q.ran[i] &&
		    q.ends[i][vc->c[i] - 1] > t)
			t = q.ends[i][vc->c[i] - 1];
	return t;
}

/* The operation run next on `slot` ended at `end_ms`. */
static void timeline_end(unsigned slot, double end_ms)
{
	uint32_t k = q.ran[slot];

	if (k >= q.cap_ends[slot]) {
		uint32_t cap = q.cap_ends[slot] ? 2 * q.cap_ends[slot] : 1024;
		double *p = realloc(q.ends[slot], cap * sizeof(*p));

		if (!p) {
			fprintf(stderr, "cudafake: out of memory for the "
				"device timeline\n");
			abort();
		}
		q.ends[slot] = p;
		q.cap_ends[slot] = cap;
	}
	q.ends[slot][k] = end_ms;
	q.busy_ms[slot] = end_ms;
}

/* Runs one operation whose turn has come; false when none can run. */
static bool step(void)
{
	struct CUstream_st *ready[FAKE_STREAMS];
	unsigned n = 0;

	for (unsigned i = 0; i < FAKE_STREAMS; i++) {
		struct fake_op *op = q.streams[i].head;
		bool ok = op != NULL;

		/* Its stream's earlier work has run (it is the head); every
		 * other stream must have run what its clock names. */
		for (unsigned t = 0; ok && t < FAKE_STREAMS; t++)
			ok = t == i || q.ran[t] >= op_clock(op)->c[t];
		if (ok)
			ready[n++] = &q.streams[i];
	}
	if (n == 0)
		return false;
	struct CUstream_st *s = ready[next_rand() % n];
	struct fake_op *op = s->head;
	double start_ms = q.clock_ms;
	double at_ms = timeline_start(op);

	s->head = op->next;
	if (!s->head)
		s->tail = NULL;
	switch (op->kind) {
	case OP_COPY:
		memmove(op->dst, op->src, op->bytes);
		break;
	case OP_SET:
		memset(op->dst, op->value, op->bytes);
		break;
	case OP_PREFETCH:
		break; /* residency only: the bytes are host memory */
	case OP_DISCARD:
		fake_discard(op->dst, op->bytes);
		break;
	case OP_KERNEL:
		op->fn(op->arg);
		break;
	case OP_RECORD:
		op->ev->reached = op->gen;
		op->ev->at_ms = at_ms;
		break;
	case OP_WAIT:
		break;
	}
	q.clock_ms += op_cost_ms(op);
#ifdef TMM_HAVE_CUPTI
	fake_cupti_ran(op, start_ms, q.clock_ms);
#else
	(void)start_ms;
#endif
	timeline_end(s->slot, at_ms + (op->kind == OP_RECORD ||
					       op->kind == OP_WAIT
				       ? 0
				       : op_cost_ms(op)));
	q.ran[s->slot]++;
	free(op);
	return true;
}

cudaError_t fake_enqueue(struct fake_op *op, const struct fake_access *a,
			 unsigned n, const char *what, const void *site)
{
	struct CUstream_st *s = op->s;
	struct vclock *vc;
	unsigned lag;

	init();
	q.host_ms += LAUNCH_MS;
	op->enq_ms = q.host_ms;
	vc_max(&s->vc, &q.host);
	if (s->slot == FAKE_LEGACY) {
		q.legacy_ops++;
		for (unsigned i = 1; i < FAKE_STREAMS; i++)
			if (q.streams[i].live && q.streams[i].blocking)
				vc_max(&s->vc, &q.streams[i].vc);
	} else if (s->blocking) {
		vc_max(&s->vc, &q.streams[FAKE_LEGACY].vc);
	}
	if (op->kind == OP_WAIT)
		vc_max(&s->vc, &op->ev->vc);
	s->vc.c[s->slot]++;
	vc = op_clock(op);
	*vc = s->vc;
	if (op->kind == OP_RECORD) {
		op->gen = ++op->ev->recorded;
		op->ev->vc = s->vc;
	}
	check_and_log(vc, s->slot, a, n, what, site);
	if (op->kind == OP_KERNEL && op->device >= 0 &&
	    op->device < FAKE_DEVICES)
		q.kernels_on[op->device]++;
#ifdef TMM_HAVE_CUPTI
	op->corr = fake_cupti_api(op);
#endif
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	/*
	 * Adversarial progress: some queued work may run right away.  With
	 * CUDAFAKE_LAG=N only one call in N (on average) lets any run, so
	 * the device falls behind the host by whole ops, as a real GPU does
	 * when each kernel takes milliseconds: copies and migrations are
	 * then still in flight when the host next looks at their events,
	 * and only a wait brings the device up to date.
	 */
	lag = fake_env_lag();
	if (lag > 1 && next_rand() % lag)
		return cudaSuccess;
	for (unsigned k = next_rand() % 3; k > 0 && step(); k--)
		;
	return cudaSuccess;
}

size_t fake_kernel_cost(const struct fake_access *a, unsigned n)
{
	const char *v = getenv("CUDAFAKE_KERNEL_COST");
	double factor = 0;
	size_t sum = 0;
	char *end;

	if (v && *v) {
		factor = strtod(v, &end);
		if (*end || !(factor > 0))
			factor = 0;
	}
	for (unsigned k = 0; k < n; k++)
		sum += a[k].hi - a[k].lo;
	return (size_t)(factor * (double)sum);
}

/* The host waited for the device up to `ms` on its timeline. */
static void host_waited(double ms)
{
	if (ms > q.host_ms)
		q.host_ms = ms;
}

void fake_sync_stream(struct CUstream_st *s)
{
	init();
	while (s->head && step())
		;
	host_waited(q.busy_ms[s->slot]);
	vc_max(&q.host, &s->vc);
	prune();
}

/* The event has been reached: the host is ordered after it, and on the
 * timeline no earlier than its time. */
static void event_seen(struct CUevent_st *e)
{
	host_waited(e->at_ms);
	vc_max(&q.host, &e->vc);
	prune();
}

bool fake_event_done(struct CUevent_st *e)
{
	init();
	/* On the timeline's clock a query answers as a GPU's would at the
	 * host's time: the work before the event is run (in the double's
	 * order, which only the timeline times), and the event is complete
	 * only where its time has come. */
	if (fake_env_timeline_clock()) {
		while (e->reached < e->recorded && step())
			;
		if (e->reached < e->recorded || e->at_ms > q.host_ms)
			return false;
	}
	if (e->reached < e->recorded)
		return false;
	event_seen(e);
	return true;
}

void fake_sync_event(struct CUevent_st *e)
{
	init();
	while (e->reached < e->recorded && step())
		;
	if (e->reached >= e->recorded)
		event_seen(e);
}

void fake_sync_all(void)
{
	init();
	while (step())
		;
	for (unsigned i = 0; i < FAKE_STREAMS; i++) {
		host_waited(q.busy_ms[i]);
		vc_max(&q.host, &q.streams[i].vc);
	}
	prune();
}

/*
 * The host touches [p, p + n): every queued operation that uses those
 * bytes in a way that conflicts with the host's (conflict()) must be
 * ordered before the host, which it is once the host has waited for it;
 * else a race.  With concurrent managed access the host may touch
 * managed memory while kernels run, but not bytes they write (Programming
 * Guide, "Unified Memory: coherency and concurrency"), nor bytes a
 * discard drops (Runtime API, cudaMemDiscardBatchAsync: reads and writes
 * at the same time as it are undefined).  The host's memcpy is invisible
 * to the double's queues, so without this a host access that races with
 * queued work shows only where the bytes come out wrong: rarely for a
 * discard, which a lagging device runs late, after the host has read.
 */
void fake_host_access(const void *p, size_t n, bool write, const void *site)
{
	struct fake_access a = { (uintptr_t)p, (uintptr_t)p + n,
				 write ? USE_WRITE : USE_READ };

	init();
	for (size_t i = 0; i < q.n_log && n; i++) {
		const struct logged *l = &q.log[i];

		if (l->a.hi <= a.lo || a.hi <= l->a.lo ||
		    !conflict(l->a.use, a.use) || vc_le(&l->vc, &q.host))
			continue;
		report(l, "the host", site, &a);
	}
}

void cudafake_host_access(const void *p, size_t n, bool write)
{
	fake_host_access(p, n, write, __builtin_return_address(0));
}

/* The cuda backend's word that the host is about to touch managed memory
 * (backend_cuda_managed.h), replacing its weak one, which does nothing. */
void tmm_cuda_host_touch(const void *ptr, size_t bytes, bool write)
{
	fake_host_access(ptr, bytes, write, __builtin_return_address(0));
}

bool fake_queued_on(const void *p, size_t n)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + n;

	init();
	for (size_t i = 0; i < q.n_log; i++)
		if (q.log[i].a.lo < hi && lo < q.log[i].a.hi &&
		    !vc_le(&q.log[i].vc, &q.host))
			return true;
	return false;
}

double fake_clock_ms(void)
{
	return q.clock_ms;
}

/* The cuda backend's host clock (backend_cuda.h), replacing its weak
 * one: the double's, which moves only as the double runs work, so that a
 * trace is the same on every machine.  Each reading moves it a
 * nanosecond, for a clock that never stands still between readings.  It
 * is the serial clock, or with CUDAFAKE_CLOCK=timeline the host's time
 * on the device timeline: queuing costs a launch, and a wait lasts until
 * what it waits for ends there, so that an iteration's wall time counts
 * copies under compute once, as a GPU's does. */
uint64_t tmm_cuda_host_ns(void)
{
	init();
	if (fake_env_timeline_clock()) {
		q.host_ms += 1e-6;
		return (uint64_t)(q.host_ms * 1e6);
	}
	q.clock_ms += 1e-6;
	return (uint64_t)(q.clock_ms * 1e6);
}

void cudafake_reset(unsigned seed)
{
	init();
	fake_sync_all();
	q.rng = 0x9e3779b97f4a7c15ull * (seed + 1ull);
	for (unsigned i = 0; i < q.n_races; i++)
		free(q.races[i]);
	q.n_races = 0;
	q.legacy_ops = 0;
	q.n_log = 0;
}

unsigned cudafake_races(void)
{
	return q.n_races;
}

const char *cudafake_race(unsigned i)
{
	return i < q.n_races ? q.races[i] : NULL;
}

unsigned long cudafake_legacy_ops(void)
{
	return q.legacy_ops;
}

unsigned long cudafake_kernels_on(int device)
{
	return device >= 0 && device < FAKE_DEVICES ? q.kernels_on[device]
						    : 0;
}

cudaError_t cudafake_launch(cudaStream_t stream, void (*fn)(void *),
			    void *arg, const struct cudafake_range *r,
			    unsigned n)
{
	struct fake_access a[16];

	if (!fn || n > 16)
		return cudaErrorInvalidValue;
	for (unsigned i = 0; i < n; i++) {
		a[i].lo = (uintptr_t)r[i].ptr;
		a[i].hi = a[i].lo + r[i].bytes;
	}
	return fake_launch_costed(stream, fn, arg, r, n,
				  fake_kernel_cost(a, n));
}

cudaError_t fake_launch_costed(cudaStream_t stream, void (*fn)(void *),
			       void *arg, const struct cudafake_range *r,
			       unsigned n, size_t cost)
{
	struct fake_access a[16];
	struct fake_op *op;

	if (!fn || n > 16)
		return cudaErrorInvalidValue;
	op = fake_op_new(OP_KERNEL, stream);
	if (!op)
		return cudaErrorInvalidResourceHandle;
	/* A kernel goes to a stream of the current device. */
	if (op->s->device >= 0 && op->s->device != fake_current_device()) {
		free(op);
		return cudaErrorInvalidResourceHandle;
	}
	op->fn = fn;
	op->arg = arg;
	for (unsigned i = 0; i < n; i++) {
		a[i].lo = (uintptr_t)r[i].ptr;
		a[i].hi = a[i].lo + r[i].bytes;
		a[i].use = r[i].write ? USE_WRITE : USE_READ;
	}
	op->bytes = cost;
	return fake_enqueue(op, a, n, "kernel", __builtin_return_address(0));
}
