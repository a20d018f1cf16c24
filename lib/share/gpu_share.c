/*
 * gpu_share.c — the shared segment of the processes on one GPU, and how a
 * context follows its part of it (the protocol is in gpu_share.h).
 *
 * Making the segment races with other processes making it: the winner of
 * O_CREAT|O_EXCL sizes it, sets up the mutex, and stores the magic last
 * (release); a loser waits for the magic.  The last member to leave marks
 * the segment retired and unlinks it under the lock, so a process that
 * opened it just before sees the mark once it locks, and opens again
 * (making a fresh one): two live segments for one GPU would each believe
 * they own the whole capacity.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "gpu_share.h"
#include "lib/move/mover.h"
#include "lib/mem/pool.h"

#define SHARE_MAGIC 0x3145524148534d54ull /* "TMSHARE1", little end */

/* How long a joiner waits for the others to make room for its floor:
 * they shrink at their next op, so this is only reached when one of
 * them is stuck outside tmm_run. */
#define JOIN_WAIT_NS 10000000000ull
#define JOIN_POLL_NS 1000000l

struct share_slot {
	int32_t pid;		/* 0: free */
	uint32_t used;
	uint64_t start;		/* the pid's start time (/proc), 0 unknown */
	uint64_t demand, floor;
	double rate;
	uint64_t target;	/* what the split rule gives it */
	uint64_t reservation;	/* what its pool may hold now */
};

struct share_segment {
	_Atomic uint64_t magic;
	uint32_t size;		/* sizeof(struct share_segment) */
	uint32_t retired;	/* unlinked by the last member: open again */
	pthread_mutex_t lock;
	_Atomic uint64_t generation;
	uint64_t capacity;
	uint64_t reserved_max;	/* the most the reservations summed to */
	uint64_t changes;
	struct share_slot slot[TMM_SHARE_SLOTS];
};

struct tmm_share {
	struct share_segment *seg;
	unsigned me;		/* our slot */
	uint64_t seen;		/* the generation last followed */
	uint64_t reservation;	/* ours, as last set */
	bool replan_due;	/* the budget changed since the last plan */
	char name[TMM_SHARE_NAME_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tmm_share_name(const struct tmm_config *cfg, const char *backend,
		    const struct tmm_device_info *info, char *buf, size_t len)
{
	const char *group = cfg->share;

	buf[0] = '\0';
	if (strcmp(group, "off") == 0)
		return;
	if (strcmp(group, "auto") == 0) {
		/* Only a real device has a key that every process agrees
		 * on; simulated GPUs are private unless grouped.  The UUID,
		 * not the PCI bus id, which the MIG instances of one GPU
		 * share. */
		const char *key = info->uuid[0] ? info->uuid
						: info->pci_bus_id;

		if (strcmp(backend, "cuda") != 0 || !key[0])
			return;
		snprintf(buf, len, "/tensormm.share.%u.cuda.%s",
			 (unsigned)getuid(), key);
	} else {
		snprintf(buf, len, "/tensormm.share.%u.%s.%s.%s",
			 (unsigned)getuid(), backend, info->name, group);
	}
	for (char *p = buf + 1; *p; p++)
		if (*p == '/' || *p == ':' || *p == ' ')
			*p = '_';
}

/* Field 22 of /proc/<pid>/stat: tells a pid's process from a later one
 * with the same pid.  0 when it cannot be read. */
static uint64_t start_time_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* The command name may hold spaces: count fields after its ')'. */
	if (!p || !(p = strrchr(buf, ')')))
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

static bool slot_alive(const struct share_slot *s)
{
	uint64_t start;

	if (kill(s->pid, 0) < 0 && errno == ESRCH)
		return false;
	start = start_time_of(s->pid);
	return !(s->start && start && start != s->start);
}

/* Recomputes every member's target from the claims (under the lock). */
static void resplit(struct share_segment *seg)
{
	struct tmm_share_claim c[TMM_SHARE_SLOTS] = { { 0 } };
	uint64_t target[TMM_SHARE_SLOTS];
	unsigned idx[TMM_SHARE_SLOTS], n = 0;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			idx[n++] = i;
	for (unsigned k = 0; k < n; k++) {
		const struct share_slot *s = &seg->slot[idx[k]];
		uint64_t eighth = seg->capacity / n / 8;

		c[k].demand = s->demand;
		c[k].floor = s->floor > eighth ? s->floor : eighth;
		c[k].rate = s->rate;
	}
	tmm_share_split(c, n, seg->capacity, TMM_POOL_ALIGN, target);
	for (unsigned k = 0; k < n; k++)
		seg->slot[idx[k]].target = target[k];
	atomic_fetch_add(&seg->generation, 1);
}

/* Frees the slots of processes that are gone; true when any was. */
static bool reclaim(struct share_segment *seg)
{
	bool any = false;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid && !slot_alive(&seg->slot[i])) {
			memset(&seg->slot[i], 0, sizeof(seg->slot[i]));
			any = true;
		}
	return any;
}

static void lock(struct share_segment *seg)
{
	if (pthread_mutex_lock(&seg->lock) == EOWNERDEAD) {
		/* Its holder died mid-change: the slots are whole words, so
		 * the worst left is a stale slot, which reclaim removes. */
		pthread_mutex_consistent(&seg->lock);
		reclaim(seg);
		resplit(seg);
	}
}

static void unlock(struct share_segment *seg)
{
	pthread_mutex_unlock(&seg->lock);
}

static uint64_t reserved_sum(const struct share_segment *seg)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			sum += seg->slot[i].reservation;
	return sum;
}

/* Sets slot i's reservation (under the lock), keeping the record. */
static void set_reservation(struct share_segment *seg, unsigned i,
			    uint64_t bytes)
{
	uint64_t sum;

	seg->slot[i].reservation = bytes;
	seg->changes++;
	sum = reserved_sum(seg);
	if (sum > seg->reserved_max)
		seg->reserved_max = sum;
}

/* Opens or makes the segment; returns it mapped, or NULL with errno. */
static struct share_segment *open_segment(const char *name,
					  uint64_t capacity)
{
	struct share_segment *seg;
	pthread_mutexattr_t ma;
	uint64_t deadline = now_ns() + 2000000000ull;
	bool made = false;
	struct stat st;
	int fd;

	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd >= 0) {
		made = true;
		if (fchmod(fd, 0600) < 0 ||
		    ftruncate(fd, sizeof(*seg)) < 0) {
			int saved = errno;

			shm_unlink(name);
			close(fd);
			errno = saved;
			return NULL;
		}
	} else if (errno == EEXIST) {
		fd = shm_open(name, O_RDWR, 0600);
		if (fd < 0)
			return NULL;
		/* Its maker may not have sized it yet. */
		while (fstat(fd, &st) == 0 &&
		       (uint64_t)st.st_size < sizeof(*seg)) {
			if (now_ns() > deadline) {
				close(fd);
				errno = EPROTO;
				return NULL;
			}
			nanosleep(&(struct timespec){ 0, JOIN_POLL_NS }, NULL);
		}
	} else {
		return NULL;
	}
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (seg == MAP_FAILED)
		return NULL;
	if (made) {
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&seg->lock, &ma);
		pthread_mutexattr_destroy(&ma);
		seg->size = sizeof(*seg);
		seg->capacity = capacity;
		atomic_store_explicit(&seg->magic, SHARE_MAGIC,
				      memory_order_release);
		return seg;
	}
	while (atomic_load_explicit(&seg->magic, memory_order_acquire) !=
	       SHARE_MAGIC) {
		if (now_ns() > deadline) {
			munmap(seg, sizeof(*seg));
			errno = EPROTO;
			return NULL;
		}
		nanosleep(&(struct timespec){ 0, JOIN_POLL_NS }, NULL);
	}
	if (seg->size != sizeof(*seg)) {
		munmap(seg, sizeof(*seg));
		errno = EPROTO;
		return NULL;
	}
	return seg;
}

/*
 * Follows the target: raises the reservation into free room, or shrinks
 * the pool and then lowers it.  Returns true when the budget changed.
 */
static bool follow(struct tmm_ctx *ctx)
{
	struct tmm_share *sh = ctx->share;
	struct share_segment *seg = sh->seg;
	uint64_t gen = atomic_load_explicit(&seg->generation,
					    memory_order_acquire);
	uint64_t target, before = sh->reservation, room;
	char b1[32], b2[32];

	lock(seg);
	target = seg->slot[sh->me].target;
	/* More than the arena would be reserved for nothing. */
	if (target > ctx->arena_bytes && ctx->mode != TMM_MODE_UVM)
		target = ctx->arena_bytes & ~(uint64_t)(TMM_POOL_ALIGN - 1);
	if (target > sh->reservation) {
		room = seg->capacity - reserved_sum(seg) + sh->reservation;
		if (room > target)
			room = target;
		room &= ~(uint64_t)(TMM_POOL_ALIGN - 1);
		if (room > sh->reservation) {
			set_reservation(seg, sh->me, room);
			sh->reservation = room;
		}
		/* Not all of it yet: look again at the next op. */
		if (room >= target)
			sh->seen = gen;
		unlock(seg);
	} else if (target < sh->reservation) {
		unlock(seg);
		if (ctx->mode == TMM_MODE_UVM) {
			if (ctx->be.ops->managed_limit(&ctx->be, target) < 0)
				return false;
		} else {
			tmm_pool_set_limit(ctx->pool, target);
			if (tmm_mover_shrink_to(ctx, target) < 0)
				return false; /* pinned: at the next op */
		}
		lock(seg);
		set_reservation(seg, sh->me, target);
		sh->reservation = target;
		sh->seen = gen;
		unlock(seg);
	} else {
		sh->seen = gen;
		unlock(seg);
	}
	if (sh->reservation == before)
		return false;
	if (ctx->mode == TMM_MODE_UVM)
		(void)ctx->be.ops->managed_limit(&ctx->be, sh->reservation);
	else
		tmm_pool_set_limit(ctx->pool, sh->reservation);
	ctx->budget = sh->reservation;
	ctx->c.share_budget_changes++;
	sh->replan_due = true;
	tmm_log(ctx, TMM_LOG_INFO, "share %s: budget %s -> %s", sh->name,
		tmm_fmt_bytes(before, b1, sizeof(b1)),
		tmm_fmt_bytes(sh->reservation, b2, sizeof(b2)));
	return true;
}

int tmm_share_join(struct tmm_ctx *ctx, char *err, size_t errlen)
{
	struct tmm_share *sh;
	struct share_segment *seg;
	uint64_t deadline, floor;
	unsigned i;

	ctx->share = NULL;
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		snprintf(err, errlen, "share: out of memory");
		return -ENOMEM;
	}
	tmm_share_name(&ctx->cfg, ctx->be.ops->name, &ctx->be.info, sh->name,
		       sizeof(sh->name));
	if (!sh->name[0]) {
		free(sh);
		return 0;
	}
	for (;;) {
		seg = open_segment(sh->name, ctx->budget);
		if (!seg) {
			snprintf(err, errlen,
				 "share: cannot open shared-memory segment %s: "
				 "%s (check that /dev/shm is mounted and "
				 "writable and the segment is yours, or set "
				 "TENSORMM_SHARE=off)",
				 sh->name, strerror(errno));
			free(sh);
			return -errno;
		}
		lock(seg);
		if (!seg->retired)
			break;
		unlock(seg);
		munmap(seg, sizeof(*seg));
	}
	reclaim(seg);
	for (i = 0; i < TMM_SHARE_SLOTS && seg->slot[i].pid; i++)
		;
	if (i == TMM_SHARE_SLOTS) {
		unlock(seg);
		munmap(seg, sizeof(*seg));
		snprintf(err, errlen, "share: all %u slots of %s are taken "
			 "by live processes; set TENSORMM_SHARE=off or use "
			 "another group", TMM_SHARE_SLOTS, sh->name);
		free(sh);
		return -EBUSY;
	}
	/* The demand is unknown until an iteration is measured: ask for
	 * all, which shares the device evenly until then. */
	seg->slot[i] = (struct share_slot){
		.pid = (int32_t)getpid(), .used = 1,
		.start = start_time_of(getpid()),
		.demand = seg->capacity, .rate = ctx->cfg.max_swap_rate,
	};
	resplit(seg);
	unlock(seg);
	sh->seg = seg;
	sh->me = i;
	ctx->share = sh;
	tmm_log(ctx, TMM_LOG_INFO, "share %s: joined (slot %u, pid %d)",
		sh->name, i, (int)getpid());

	/* Wait for the others to make room for at least our floor. */
	floor = seg->capacity / TMM_SHARE_SLOTS;
	deadline = now_ns() + JOIN_WAIT_NS;
	for (;;) {
		follow(ctx);
		if (sh->reservation >= seg->slot[i].target ||
		    (sh->reservation >= floor && now_ns() > deadline))
			break;
		if (now_ns() > deadline) {
			snprintf(err, errlen, "share %s: the other processes "
				 "left no room on the device for %.0f s; set "
				 "TENSORMM_SHARE=off or a smaller budget",
				 sh->name, JOIN_WAIT_NS / 1e9);
			tmm_share_leave(ctx);
			return -EBUSY;
		}
		nanosleep(&(struct timespec){ 0, JOIN_POLL_NS }, NULL);
	}
	return 0;
}

void tmm_share_leave(struct tmm_ctx *ctx)
{
	struct tmm_share *sh = ctx->share;
	struct share_segment *seg;
	bool last = true;

	if (!sh)
		return;
	seg = sh->seg;
	lock(seg);
	memset(&seg->slot[sh->me], 0, sizeof(seg->slot[sh->me]));
	reclaim(seg);
	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			last = false;
	if (last) {
		seg->retired = 1;
		shm_unlink(sh->name);
	} else {
		resplit(seg);
	}
	unlock(seg);
	tmm_log(ctx, TMM_LOG_INFO, "share %s: left (pid %d)%s", sh->name,
		(int)getpid(), last ? ", the last member" : "");
	munmap(seg, sizeof(*seg));
	free(sh);
	ctx->share = NULL;
}

void tmm_share_op(struct tmm_ctx *ctx)
{
	struct tmm_share *sh = ctx->share;

	if (atomic_load_explicit(&sh->seg->generation,
				 memory_order_relaxed) != sh->seen)
		follow(ctx);
}

bool tmm_share_iteration_end(struct tmm_ctx *ctx, uint64_t demand)
{
	struct tmm_share *sh = ctx->share;
	struct share_slot *me;

	if (!sh)
		return false;
	me = &sh->seg->slot[sh->me];
	if (demand) {
		lock(sh->seg);
		if (demand != me->demand ||
		    ctx->largest_op_need != me->floor) {
			me->demand = demand;
			me->floor = ctx->largest_op_need;
			resplit(sh->seg);
		}
		unlock(sh->seg);
	}
	follow(ctx);
	if (!sh->replan_due)
		return false;
	sh->replan_due = false;
	return true;
}

int tmm_share_need(struct tmm_ctx *ctx, uint64_t bytes)
{
	struct tmm_share *sh = ctx->share;
	struct share_slot *me = &sh->seg->slot[sh->me];
	uint64_t deadline = now_ns() + JOIN_WAIT_NS;

	/* A floor is otherwise known only at the iteration's end, and a
	 * newcomer whose demand is not known yet may be cut down to 1/8 of
	 * an even share before its first large op. */
	lock(sh->seg);
	if (me->floor < bytes) {
		me->floor = bytes;
		resplit(sh->seg);
	}
	unlock(sh->seg);
	for (;;) {
		follow(ctx);
		if (sh->reservation >= bytes)
			return 0;
		if (now_ns() > deadline || me->target < bytes)
			return -ENOMEM; /* the floors do not all fit */
		nanosleep(&(struct timespec){ 0, JOIN_POLL_NS }, NULL);
	}
}

uint64_t tmm_share_reservation(const struct tmm_ctx *ctx)
{
	return ctx->share ? ctx->share->reservation : 0;
}

int tmm_share_peek(const char *name, struct tmm_share_view *v)
{
	struct share_segment *seg;
	int fd = shm_open(name, O_RDWR, 0600);

	if (fd < 0)
		return -errno;
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (seg == MAP_FAILED)
		return -errno;
	if (atomic_load(&seg->magic) != SHARE_MAGIC ||
	    seg->size != sizeof(*seg)) {
		munmap(seg, sizeof(*seg));
		return -EPROTO;
	}
	lock(seg);
	if (reclaim(seg))
		resplit(seg);
	*v = (struct tmm_share_view){
		.capacity = seg->capacity,
		.generation = atomic_load(&seg->generation),
		.reserved = reserved_sum(seg),
		.reserved_max = seg->reserved_max,
		.changes = seg->changes,
	};
	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			v->members++;
	unlock(seg);
	munmap(seg, sizeof(*seg));
	return 0;
}
