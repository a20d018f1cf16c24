/* SPDX-License-Identifier: MIT */
/*
 * stats_shm.c — publishing a context's counters in shared memory, and
 * reading them back (tensormm-stat).
 *
 * Segment names are "/tensormm.<uid>.<pid>.<n>".  The names alone let a
 * reader list every context on the machine with one readdir of /dev/shm,
 * tell its own segments from other users' without opening them (they are
 * mode 0600), and see whether the owner is still alive with kill(pid, 0)
 * so that a segment left by a process that crashed can be removed by the
 * next reader; <n> tells apart the contexts of one process.  There is no
 * daemon and no registry file to go stale.
 *
 * Cost on the hot path: tmm_run calls tmm_stats_shm_op once per op, which
 * counts, reads CLOCK_MONOTONIC_COARSE every CHECK_EVERY_OPS ops, and
 * publishes only when a millisecond has passed.  A publication is one
 * tmm_stats_get and a seqlock write of TMM_SHM_FIELD_COUNT words (about
 * 0.7 µs), spread over every op of that millisecond.  bench_stats_shm
 * measures it: about 3.5 ns per op in all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/context.h"
#include "stats.h"
#include "stats_shm.h"
#include "lib/base/xalloc.h"

/* Where glibc's shm_open keeps its objects, for listing. */
#define SHM_DIR "/dev/shm"

/*
 * Inside an iteration, publish when PUBLISH_EVERY_NS of host time has
 * passed, looking at the clock once every CHECK_EVERY_OPS ops: the clock
 * read (~20 ns here) would otherwise be most of the hook's cost.  Ops of
 * a few hundred ns keep the 1 ms; ops slower than 60 µs publish every 16
 * ops, which is still more often than every millisecond's worth.
 */
#define PUBLISH_EVERY_NS 1000000ull
#define CHECK_EVERY_OPS 16u

/* A reader gives up when the writer stays mid-update this long. */
#define STUCK_NS 200000000ull

struct tmm_shm_writer {
	struct tmm_shm_segment *seg;
	uint64_t last_ns;	/* coarse monotonic time of the last publish */
	unsigned ops;		/* ops since the clock was last read */
	char name[TMM_SHM_NAME_MAX];
};

static const struct tmm_shm_field_info fields[TMM_SHM_FIELD_COUNT] = {
	[TMM_SHM_DEVICE_IN_USE] = { "device_in_use", "bytes" },
	[TMM_SHM_DEVICE_PEAK] = { "device_peak", "bytes" },
	[TMM_SHM_BUDGET] = { "budget", "bytes" },
	[TMM_SHM_HOST_IN_USE] = { "host_in_use", "bytes" },
	[TMM_SHM_SWAP_OUT_BYTES] = { "swap_out_bytes", "bytes" },
	[TMM_SHM_SWAP_IN_BYTES] = { "swap_in_bytes", "bytes" },
	[TMM_SHM_PREFETCHES] = { "prefetches", "count" },
	[TMM_SHM_PREFETCH_ON_TIME] = { "prefetch_on_time", "count" },
	[TMM_SHM_PREFETCH_LATE] = { "prefetch_late", "count" },
	[TMM_SHM_STALL_NS] = { "stall_ns", "ns" },
	[TMM_SHM_PASSIVE_EVICTIONS] = { "passive_evictions", "count" },
	[TMM_SHM_RECOMPUTATIONS] = { "recomputations", "count" },
	[TMM_SHM_RECOMPUTE_NS] = { "recompute_ns", "ns" },
	[TMM_SHM_PLAN_STATE] = { "plan_state", "state" },
	[TMM_SHM_ITERATIONS] = { "iterations", "count" },
	[TMM_SHM_LAST_ITERATION_NS] = { "last_iteration_ns", "ns" },
	[TMM_SHM_OPS] = { "ops", "count" },
	[TMM_SHM_HOST_PINNED] = { "host_pinned", "bytes" },
	[TMM_SHM_UVM_FAULT_BATCHES] = { "uvm_fault_batches", "count" },
	[TMM_SHM_UVM_FAULTS] = { "uvm_faults", "count" },
	[TMM_SHM_UVM_FAULT_BYTES] = { "uvm_fault_bytes", "bytes" },
	[TMM_SHM_UVM_PREFETCH_BYTES] = { "uvm_prefetch_bytes", "bytes" },
	[TMM_SHM_UVM_EVICTIONS] = { "uvm_evictions", "count" },
	[TMM_SHM_UVM_EVICTION_BYTES] = { "uvm_eviction_bytes", "bytes" },
	[TMM_SHM_UVM_REMOTE_BYTES] = { "uvm_remote_bytes", "bytes" },
	[TMM_SHM_UVM_DISCARD_BYTES] = { "uvm_discard_bytes", "bytes" },
	[TMM_SHM_CLEAN_EVICTION_BYTES] = { "clean_eviction_bytes", "bytes" },
	[TMM_SHM_PUBLISHED_NS] = { "published_ns", "ns since epoch" },
};

const struct tmm_shm_field_info *tmm_shm_fields(size_t *n)
{
	if (n)
		*n = TMM_SHM_FIELD_COUNT;
	return fields;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Writer
 * ---------------------------------------------------------------------- */

/*
 * The writer is the only one to store, so plain increments of seq are
 * enough; the fences order the counter stores between the two seq stores
 * for readers on other CPUs (the C11 form of the Linux seqcount).
 */
void tmm_shm_write(struct tmm_shm_segment *seg,
		   const uint64_t v[TMM_SHM_FIELD_COUNT])
{
	uint64_t seq = atomic_load_explicit(&seg->seq, memory_order_relaxed);

	atomic_store_explicit(&seg->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (int i = 0; i < TMM_SHM_FIELD_COUNT; i++)
		atomic_store_explicit(&seg->v[i], v[i], memory_order_relaxed);
	atomic_store_explicit(&seg->seq, seq + 2, memory_order_release);
}

/* Warn once per process: a machine without /dev/shm would otherwise say
 * so for every context. */
static atomic_flag warned = ATOMIC_FLAG_INIT;

void tmm_stats_shm_create(struct tmm_ctx *ctx)
{
	static atomic_uint next_n;
	struct tmm_shm_writer *w;
	struct tmm_shm_segment *seg;
	const char *step;
	int fd = -1, saved;

	ctx->shm = NULL;
	if (!ctx->cfg.stats_shm)
		return;
	w = tmm_calloc(1, sizeof(*w));
	if (!w) {
		step = "allocate its writer";
		errno = ENOMEM;
		goto err;
	}
	snprintf(w->name, sizeof(w->name), "/" TMM_SHM_PREFIX "%u.%d.%u",
		 (unsigned)getuid(), (int)getpid(),
		 atomic_fetch_add(&next_n, 1) + 1);
	step = "create it with shm_open";
	fd = shm_open(w->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		goto err;
	/* The umask may have narrowed 0600, never widened it; set it
	 * exactly so the reader's check holds. */
	step = "set its size";
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, sizeof(*seg)) < 0)
		goto err_unlink;
	step = "map it";
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (seg == MAP_FAILED)
		goto err_unlink;
	close(fd);
	seg->layout = TMM_SHM_LAYOUT;
	seg->size = sizeof(*seg);
	seg->pid = (int32_t)getpid();
	seg->uid = (uint32_t)getuid();
	seg->simulated = ctx->be.info.simulated;
	seg->n_fields = TMM_SHM_FIELD_COUNT;
	snprintf(seg->backend, sizeof(seg->backend), "%s", ctx->be.ops->name);
	snprintf(seg->device, sizeof(seg->device), "%s", ctx->be.info.name);
	snprintf(seg->mode, sizeof(seg->mode), "%s",
		 ctx->mode == TMM_MODE_UVM ? "uvm" : "swap");
	snprintf(seg->policy, sizeof(seg->policy), "%s", ctx->cfg.policy);
	seg->device_capacity = ctx->be.info.capacity;
	seg->created_ns = clock_ns(CLOCK_REALTIME);
	atomic_store_explicit(&seg->magic, TMM_SHM_MAGIC,
			      memory_order_release);
	w->seg = seg;
	ctx->shm = w;
	tmm_stats_shm_publish(ctx);
	return;

err_unlink:
	saved = errno;
	shm_unlink(w->name);
	errno = saved;
err:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (!atomic_flag_test_and_set(&warned))
		tmm_log(ctx, TMM_LOG_WARN,
			"stats_shm: cannot %s for segment %s: %s; live "
			"statistics (tensormm-stat) are off for this process "
			"(check that /dev/shm is mounted and writable, or set "
			"TENSORMM_STATS_SHM=off)",
			step, w ? w->name : "(none)", strerror(saved));
	free(w);
}

void tmm_stats_shm_destroy(struct tmm_ctx *ctx)
{
	struct tmm_shm_writer *w = ctx->shm;

	if (!w)
		return;
	shm_unlink(w->name);
	munmap(w->seg, sizeof(*w->seg));
	free(w);
	ctx->shm = NULL;
}

void tmm_stats_shm_publish(struct tmm_ctx *ctx)
{
	struct tmm_stats s = { .version = TMM_STATS_VERSION };
	uint64_t v[TMM_SHM_FIELD_COUNT];

	if (!ctx->shm || tmm_stats_fill(ctx, &s) < 0)
		return;
	v[TMM_SHM_DEVICE_IN_USE] = s.device_in_use;
	v[TMM_SHM_DEVICE_PEAK] = s.device_peak;
	v[TMM_SHM_BUDGET] = s.budget;
	v[TMM_SHM_HOST_IN_USE] = s.host_in_use;
	v[TMM_SHM_SWAP_OUT_BYTES] = s.swap_out_bytes;
	v[TMM_SHM_SWAP_IN_BYTES] = s.swap_in_bytes;
	v[TMM_SHM_PREFETCHES] = s.prefetches;
	v[TMM_SHM_PREFETCH_LATE] = s.prefetch_late;
	/* A prefetch is on time unless its back-access found it arriving. */
	v[TMM_SHM_PREFETCH_ON_TIME] = s.prefetches > s.prefetch_late ?
					      s.prefetches - s.prefetch_late :
					      0;
	v[TMM_SHM_STALL_NS] = s.stall_ns;
	v[TMM_SHM_PASSIVE_EVICTIONS] = s.passive_evictions;
	v[TMM_SHM_RECOMPUTATIONS] = s.recomputations;
	v[TMM_SHM_RECOMPUTE_NS] = s.recompute_ns;
	v[TMM_SHM_PLAN_STATE] = s.plan_state;
	v[TMM_SHM_ITERATIONS] = s.iterations;
	v[TMM_SHM_LAST_ITERATION_NS] = s.last_iteration_ns;
	v[TMM_SHM_OPS] = s.ops;
	v[TMM_SHM_HOST_PINNED] = s.host_pinned;
	v[TMM_SHM_UVM_FAULT_BATCHES] = s.uvm_fault_batches;
	v[TMM_SHM_UVM_FAULTS] = s.uvm_faults;
	v[TMM_SHM_UVM_FAULT_BYTES] = s.uvm_fault_bytes;
	v[TMM_SHM_UVM_PREFETCH_BYTES] = s.uvm_prefetch_bytes;
	v[TMM_SHM_UVM_EVICTIONS] = s.uvm_evictions;
	v[TMM_SHM_UVM_EVICTION_BYTES] = s.uvm_eviction_bytes;
	v[TMM_SHM_UVM_REMOTE_BYTES] = s.uvm_remote_bytes;
	v[TMM_SHM_UVM_DISCARD_BYTES] = s.uvm_discard_bytes;
	v[TMM_SHM_CLEAN_EVICTION_BYTES] = s.clean_eviction_bytes;
	v[TMM_SHM_PUBLISHED_NS] = clock_ns(CLOCK_REALTIME);
	tmm_shm_write(ctx->shm->seg, v);
	ctx->shm->last_ns = clock_ns(CLOCK_MONOTONIC_COARSE);
}

void tmm_stats_shm_op(struct tmm_ctx *ctx)
{
	struct tmm_shm_writer *w = ctx->shm;

	if (!w || ++w->ops < CHECK_EVERY_OPS)
		return;
	w->ops = 0;
	if (clock_ns(CLOCK_MONOTONIC_COARSE) - w->last_ns >= PUBLISH_EVERY_NS)
		tmm_stats_shm_publish(ctx);
}

const char *tmm_stats_shm_name(const struct tmm_ctx *ctx)
{
	return ctx->shm ? ctx->shm->name : "";
}

/* ------------------------------------------------------------------------
 * Reader
 * ---------------------------------------------------------------------- */

static int parse_name(const char *file, struct tmm_shm_entry *e)
{
	unsigned uid, n;
	int pid, used = 0;

	if (strncmp(file, TMM_SHM_PREFIX, strlen(TMM_SHM_PREFIX)) ||
	    sscanf(file + strlen(TMM_SHM_PREFIX), "%u.%d.%u%n", &uid, &pid,
		   &n, &used) != 3 ||
	    file[strlen(TMM_SHM_PREFIX) + (size_t)used] != '\0' || pid <= 0 ||
	    strlen(file) + 2 > sizeof(e->name))
		return -EINVAL;
	e->name[0] = '/';
	memcpy(e->name + 1, file, strlen(file) + 1); /* length checked */
	e->uid = (uid_t)uid;
	e->pid = (pid_t)pid;
	e->n = n;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	const struct tmm_shm_entry *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

int tmm_shm_list(struct tmm_shm_entry **out, unsigned *cleaned, char *err,
		 size_t errlen)
{
	struct tmm_shm_entry *list = NULL, e;
	size_t len = 0, cap = 0;
	unsigned removed = 0;
	struct dirent *d;
	DIR *dir;

	*out = NULL;
	dir = opendir(SHM_DIR);
	if (!dir) {
		int rc = -errno;

		snprintf(err, errlen, "cannot list %s: %s; is the POSIX "
			 "shared-memory file system mounted?", SHM_DIR,
			 strerror(errno));
		return rc;
	}
	while ((d = readdir(dir))) {
		if (parse_name(d->d_name, &e) < 0)
			continue;
		if (kill(e.pid, 0) < 0 && errno == ESRCH) {
			/* Its process is gone: nobody will unlink it. */
			if (shm_unlink(e.name) == 0)
				removed++;
			continue;
		}
		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			void *p = tmm_realloc(list, ncap * sizeof(*list));

			if (!p) {
				free(list);
				closedir(dir);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			list = p;
			cap = ncap;
		}
		list[len++] = e;
	}
	closedir(dir);
	if (len)
		qsort(list, len, sizeof(*list), by_pid);
	*out = list;
	if (cleaned)
		*cleaned = removed;
	return (int)len;
}

int tmm_shm_open(const char *name, const struct tmm_shm_segment **out,
		 char *err, size_t errlen)
{
	struct tmm_shm_segment *seg;
	struct stat st;
	int fd, rc;

	*out = NULL;
	fd = shm_open(name, O_RDONLY, 0);
	if (fd < 0) {
		rc = -errno;
		if (rc == -EACCES)
			snprintf(err, errlen, "segment %s belongs to another "
				 "user (mode 0600): run tensormm-stat as that "
				 "user or as root", name);
		else
			snprintf(err, errlen, "cannot open segment %s: %s",
				 name, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < 16) {
		close(fd);
		snprintf(err, errlen, "segment %s is %lld bytes, too short for "
			 "any libtensormm layout; remove it with rm "
			 SHM_DIR "%s", name, (long long)st.st_size, name);
		return -EPROTO;
	}
	seg = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (seg == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "cannot map segment %s: %s", name,
			 strerror(-rc));
		return rc;
	}
	if (atomic_load_explicit(&seg->magic, memory_order_acquire) !=
		    TMM_SHM_MAGIC ||
	    seg->layout != TMM_SHM_LAYOUT || seg->size != sizeof(*seg) ||
	    (size_t)st.st_size != sizeof(*seg) ||
	    seg->n_fields != TMM_SHM_FIELD_COUNT) {
		bool ours = (size_t)st.st_size >= 16 &&
			    atomic_load(&seg->magic) == TMM_SHM_MAGIC;

		if (ours)
			snprintf(err, errlen, "segment %s has layout %u (%u "
				 "bytes); this tensormm-stat reads layout %u "
				 "(%zu bytes): use the tensormm-stat of the "
				 "libtensormm that process runs", name,
				 seg->layout, seg->size, TMM_SHM_LAYOUT,
				 sizeof(*seg));
		else
			snprintf(err, errlen, "segment %s is not a libtensormm "
				 "statistics segment (bad magic), or is still "
				 "being created; try again", name);
		munmap(seg, (size_t)st.st_size);
		return ours ? -EPROTONOSUPPORT : -EPROTO;
	}
	/* /dev/shm is writable by all: a segment must be its owner's. */
	if (st.st_uid != seg->uid) {
		snprintf(err, errlen, "segment %s belongs to uid %u but says it "
			 "was written for uid %u: it was not made by "
			 "libtensormm; remove it with rm " SHM_DIR "%s", name,
			 (unsigned)st.st_uid, seg->uid, name);
		munmap(seg, sizeof(*seg));
		return -EPROTO;
	}
	*out = seg;
	return 0;
}

void tmm_shm_close(const struct tmm_shm_segment *seg)
{
	if (seg)
		munmap((void *)seg, sizeof(*seg));
}

int tmm_shm_read(const struct tmm_shm_segment *seg,
		 uint64_t v[TMM_SHM_FIELD_COUNT])
{
	/* The segment is mapped read-only, and atomic loads of 64-bit
	 * words are plain loads here; the cast only drops the const. */
	struct tmm_shm_segment *s = (struct tmm_shm_segment *)seg;
	uint64_t stuck = 1, since = 0;

	for (uint64_t tries = 0;; tries++) {
		uint64_t before = atomic_load_explicit(&s->seq,
						       memory_order_acquire);

		if (before & 1) {
			/*
			 * A writer preempted mid-update resumes; one that
			 * died never does.  Give up only when the same odd
			 * value has stood for STUCK_NS (checked every 1024
			 * tries, to keep the clock off the fast path).
			 */
			if (before != stuck) {
				stuck = before;
				since = 0;
			}
			if (tries % 1024 == 0) {
				uint64_t now = clock_ns(CLOCK_MONOTONIC);

				if (!since)
					since = now;
				else if (now - since > STUCK_NS)
					return -EAGAIN;
			}
			continue;
		}
		for (int i = 0; i < TMM_SHM_FIELD_COUNT; i++)
			v[i] = atomic_load_explicit(&s->v[i],
						    memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) ==
		    before)
			return 0;
	}
}
