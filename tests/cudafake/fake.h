/* SPDX-License-Identifier: MIT */
/*
 * fake.h — the inside of the CUDA test double, shared by its files:
 * queue.c (streams, events, the seeded scheduler, the race detector),
 * device.c (the devices) and runtime.c (the CUDA runtime's other entry
 * points).
 */
#ifndef CUDAFAKE_FAKE_H
#define CUDAFAKE_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudafake.h"

/* Streams the double keeps: the legacy default stream is slot 0, the
 * per-thread default stream slot 1, created streams the rest. */
#define FAKE_STREAMS 64
#define FAKE_LEGACY 0
#define FAKE_PER_THREAD 1
/* The most devices CUDAFAKE_DEVICES may give. */
#define FAKE_DEVICES 16

/* A vector clock: one count of queued operations per stream. */
struct vclock {
	uint32_t c[FAKE_STREAMS];
};

struct CUstream_st {
	unsigned slot;
	int device;		/* made on; -1: a default stream, any */
	bool blocking;		/* synchronises with the legacy stream */
	bool live;
	int priority;		/* as created: lower runs first; the
				 * double only keeps it */
	struct vclock vc;	/* everything ordered before its next op */
	struct fake_op *head, *tail; /* queued, not yet run */
	uint32_t cupti_id;	/* CUPTI's id for it, unique in its context */
};

struct CUevent_st {
	bool live;
	int device;		/* made on */
	bool timing;
	uint64_t recorded;	/* records queued so far */
	uint64_t reached;	/* the last record that ran */
	struct vclock vc;	/* what the last record queued follows */
	double at_ms;		/* when its stream reached it, on the
				 * device timeline (queue.c) */
};

enum fake_kind {
	OP_COPY,
	OP_SET,
	OP_PREFETCH,
	OP_DISCARD,
	OP_KERNEL,
	OP_RECORD,
	OP_WAIT,
};

struct fake_op {
	enum fake_kind kind;
	struct CUstream_st *s;
	struct fake_op *next;
	void *dst;
	const void *src;
	size_t bytes;
	int value;
	struct CUevent_st *ev;
	uint64_t gen;		/* OP_RECORD: the record; OP_WAIT: awaited */
	void (*fn)(void *);
	void *arg;
	int device;		/* its stream's, or the caller's current one */
	double enq_ms;		/* the host's time on the device timeline
				 * when it was queued: it starts no sooner */
	uint32_t corr;		/* CUPTI's correlation id; 0: none */
};

/* How an operation touches its bytes. */
enum fake_use {
	USE_READ,
	USE_WRITE,	/* a kernel's or a copy's write, a memset, a discard */
	USE_MIGRATE,	/* a prefetch: the bytes move, their values stay */
};

/* One access of a queued operation, for the race detector. */
struct fake_access {
	uintptr_t lo, hi;	/* [lo, hi) */
	enum fake_use use;
};

/* The double's state (queue.c). */
struct CUstream_st *fake_stream(cudaStream_t s);
/* A new operation of `kind` for `stream` (zeroed), or NULL: no such
 * stream, or no memory. */
struct fake_op *fake_op_new(enum fake_kind kind, cudaStream_t stream);
/* Queues op (from fake_op_new, taken) on its stream, after checking
 * accesses a[0 .. n) against everything unordered with them; `what` and
 * `site` name it in reports. */
cudaError_t fake_enqueue(struct fake_op *op, const struct fake_access *a,
			 unsigned n, const char *what, const void *site);
/* Runs queued work until the stream, the event or everything is done,
 * and orders the host after it. */
void fake_sync_stream(struct CUstream_st *s);
void fake_sync_event(struct CUevent_st *e);
void fake_sync_all(void);
/* Whether the event's last record has run (orders the host after it
 * when it has). */
bool fake_event_done(struct CUevent_st *e);
/* A new stream on `device`, or NULL when all slots are taken. */
struct CUstream_st *fake_stream_new(bool blocking, int device);

/* The calling thread's current device, and how many there are
 * (CUDAFAKE_DEVICES) (device.c). */
int fake_current_device(void);
int fake_devices(void);
void fake_stream_free(struct CUstream_st *s);

/* Managed memory (runtime.c): poisons the whole pages of [p, p + n)
 * within its allocation; nothing outside managed memory. */
void fake_discard(void *p, size_t n);

/* The function holding `site`, as "name+offset", into buf (site.c). */
void fake_site_name(const void *site, char *buf, size_t len);

/* CUPTI's id of the stream (queue.c): the default streams 1 and 2, the
 * streams made on a device 3, 4, ... in their order of making there, so
 * that streams of two devices (two contexts) can share an id, as CUPTI
 * allows (cuptiGetStreamIdEx: unique within a context). */
uint32_t fake_stream_cupti_id(const struct CUstream_st *s);

/* CUPTI's activity records (cupti.c, built with CUPTI): the correlation
 * id of the call queuing op, with its API records, or 0 when CUPTI is not
 * recording; and the record of op's device work, which ran from start_ms
 * to end_ms on the double's clock. */
uint32_t fake_cupti_api(const struct fake_op *op);
void fake_cupti_ran(const struct fake_op *op, double start_ms,
		    double end_ms);

/* Whether work touching [p, p + n) is queued that the host has not
 * waited for (queue.c): memory under it may not go yet. */
bool fake_queued_on(const void *p, size_t n);

/* The host touches [p, p + n) (a write when `write`): a race with each
 * queued operation on those bytes that it has not waited for and that
 * conflicts with it (queue.c); `site` names the host's side. */
void fake_host_access(const void *p, size_t n, bool write, const void *site);

/* A failed call (runtime.c): what cudaGetLastError reports next. */
cudaError_t fake_fail(cudaError_t e);
/* The runtime's state read from the environment, once (runtime.c). */
void fake_init(void);
/* Whether [p, p + n) lies in one managed allocation (runtime.c). */
bool fake_managed(const void *p, size_t n);
/* The whole pages of managed memory that [p, p + n) touches, within its
 * allocation, into [*lo, *hi); false outside managed memory (runtime.c). */
bool fake_managed_pages(const void *p, size_t n, uintptr_t *lo,
			uintptr_t *hi);
/* The counters of cudafake.h the entry points add to (runtime.c). */
struct cudafake_calls *fake_calls_count(void);
struct cudafake_moves_out *fake_moves_out_count(void);
/* Each device's bytes (CUDAFAKE_MEMORY) (runtime.c). */
size_t fake_memory(void);

/* Device memory (runtime.c): takes `bytes` of `device`'s memory, false
 * when it has not that many free; and gives them back. */
bool fake_device_take(int device, size_t bytes);
void fake_device_give(int device, size_t bytes);

/* Whether an injected fault fails this call of `call`, asked by its own
 * name and by the library's site of the same kind (runtime.c). */
bool injected_fault(const char *call, const char *site);

/* The double's clock, in ms: what events time. */
double fake_clock_ms(void);

/* The environment, read once. */
unsigned fake_env_seed(void);
/* CUDAFAKE_LAG, read at every call: 1 in this many calls that queue
 * work lets queued work run at once (queue.c); 1, the default, is every
 * call. */
unsigned fake_env_lag(void);
/* CUDAFAKE_CLOCK=timeline, read at every call: the host's clock is its
 * time on the device timeline (queue.c), and event queries answer by
 * it. */
bool fake_env_timeline_clock(void);
/* A decimal environment variable, or dflt when unset or not a number;
 * read at every call. */
size_t fake_env_size(const char *name, size_t dflt);
/* A kernel's time, as the bytes a copy of that time moves: with
 * CUDAFAKE_KERNEL_COST=N (a decimal: 0.6), N times the bytes of its n
 * accesses (0, the default, or not a positive number: a kernel takes only
 * the microsecond every operation takes). */
size_t fake_kernel_cost(const struct fake_access *a, unsigned n);
/* cudafake_launch with the kernel's cost in a copy's bytes (10 GB/s)
 * given, rather than fake_kernel_cost's. */
cudaError_t fake_launch_costed(cudaStream_t stream, void (*fn)(void *),
			       void *arg, const struct cudafake_range *r,
			       unsigned n, size_t cost);

#endif /* CUDAFAKE_FAKE_H */
