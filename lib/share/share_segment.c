/* SPDX-License-Identifier: MIT */
/*
 * share_segment.c — the share segment as a file and a lock: making or
 * opening it, the liveness of its members, and the changes made under its
 * lock (the protocol is in gpu_share.h; how a context follows its part of
 * the segment is gpu_share.c).
 *
 * Making the segment races with other processes making it: the winner of
 * O_CREAT|O_EXCL sizes it, writes its pid, sets up the mutex, and stores
 * the magic last (release); a loser waits for the magic.
 *
 * A maker that dies before the magic leaves a *stale* segment, which used
 * to fail every later join with -EPROTO.  No member can hold it (joining
 * needs the magic), so once its maker is known dead, or after a bounded
 * wait when it died before writing its pid, a joiner unlinks it and makes
 * it again.  Two joiners may find it stale at once: each takes flock() on
 * the stale file and unlinks the name only while the name still refers to
 * that very file, so the second one finds the first one's fresh segment
 * (or the name free) and joins or makes that, instead of unlinking it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/fault.h"
#include "lib/mem/pool.h"
#include "share_segment.h"

#define SHARE_MAGIC 0x3145524148534d54ull /* "TMSHARE1", little end */
#define POLL_NS 1000000l
/* How long a joiner waits for the magic of a segment whose maker is not
 * known to be dead: making it takes microseconds. */
#define MADE_WAIT_NS 2000000000ull
/* How many stale segments in a row a joiner removes before it gives up:
 * more means something keeps leaving them, which needs a person. */
#define REAP_TRIES 8

uint64_t tmm_share_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Field 22 of /proc/<pid>/stat: tells a pid's process from a later one
 * with the same pid.  0 when it cannot be read. */
uint64_t tmm_share_start_time(pid_t pid)
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

/* Is process pid, started at `start` (0: unknown), still there?  A pid
 * reused by a later process is not. */
static bool process_alive(pid_t pid, uint64_t start)
{
	uint64_t now;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	now = tmm_share_start_time(pid);
	return !(start && now && now != start);
}

static bool slot_alive(const struct share_slot *s)
{
	return process_alive(s->pid, s->start);
}

/* Recomputes every member's target from the claims (under the lock). */
void tmm_share_resplit(struct share_segment *seg)
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

/* Frees the slots of processes that are gone; how many were. */
unsigned tmm_share_reclaim(struct share_segment *seg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid && !slot_alive(&seg->slot[i])) {
			memset(&seg->slot[i], 0, sizeof(seg->slot[i]));
			n++;
		}
	return n;
}

void tmm_share_lock(struct share_segment *seg)
{
	if (pthread_mutex_lock(&seg->lock) == EOWNERDEAD) {
		/* Its holder died mid-change: the slots are whole words, so
		 * the worst left is a stale slot, which reclaim removes. */
		pthread_mutex_consistent(&seg->lock);
		tmm_share_reclaim(seg);
		tmm_share_resplit(seg);
	}
}

void tmm_share_unlock(struct share_segment *seg)
{
	pthread_mutex_unlock(&seg->lock);
}

uint64_t tmm_share_reserved_sum(const struct share_segment *seg)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			sum += seg->slot[i].reservation;
	return sum;
}

/* Sets slot i's reservation (under the lock), keeping the record. */
void tmm_share_set_reservation(struct share_segment *seg, unsigned i,
			       uint64_t bytes)
{
	uint64_t sum;

	seg->slot[i].reservation = bytes;
	seg->changes++;
	sum = tmm_share_reserved_sum(seg);
	if (sum > seg->reserved_max)
		seg->reserved_max = sum;
}

/* Where shm_open keeps `name`: the file a person would remove. */
static void shm_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm%s", name);
}

/*
 * Is the file this user's own, mode 0600?  The name is predictable, so
 * another local user can make it first; its contents, lock included, are
 * then theirs to forge, and a join could hang or crash on them.  Returns
 * 0, or -EACCES with what to do in err.
 */
static int check_owner(const struct stat *st, const char *name, char *err,
		       size_t errlen)
{
	char path[PATH_MAX];

	shm_path(name, path, sizeof(path));
	if (st->st_uid != geteuid()) {
		snprintf(err, errlen,
			 "share: shared-memory segment %s belongs to uid %u, "
			 "not to this process's uid %u: another user made it "
			 "first, and a segment that is not ours cannot be "
			 "trusted; have it removed (by its owner or root), or "
			 "set TENSORMM_SHARE to a group name of your own",
			 path, (unsigned)st->st_uid, (unsigned)geteuid());
		return -EACCES;
	}
	if ((st->st_mode & 07777) != 0600) {
		snprintf(err, errlen,
			 "share: shared-memory segment %s has mode %04o, not "
			 "0600, so other users could read or change it; "
			 "remove it (rm %s) or set TENSORMM_SHARE to a group "
			 "name of your own", path,
			 (unsigned)(st->st_mode & 07777), path);
		return -EACCES;
	}
	return 0;
}

/* The message of an open that failed with errno `code`: a file we may
 * not open is most likely another user's, which check_owner says best. */
static int open_failed(const char *name, int code, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;

	shm_path(name, path, sizeof(path));
	if (code == EACCES && stat(path, &st) == 0 &&
	    check_owner(&st, name, err, errlen) < 0)
		return -EACCES;
	snprintf(err, errlen,
		 "share: cannot open shared-memory segment %s: %s (check "
		 "that /dev/shm is mounted and writable, or set "
		 "TENSORMM_SHARE=off)", path, strerror(code));
	return -code;
}

/* Makes the segment in fd, which O_EXCL gave us: 0 with *out mapped, or
 * a negative errno (and the name is unlinked again, but for an injected
 * fault). */
static int make_segment(int fd, const char *name, uint64_t capacity,
			struct share_segment **out, char *err, size_t errlen)
{
	struct share_segment *seg;
	pthread_mutexattr_t ma;
	int code;

	/* fchmod: the umask may have taken bits off the 0600. */
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, sizeof(*seg)) < 0)
		goto fail;
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (seg == MAP_FAILED)
		goto fail;
	/* First: a joiner that finds no magic tells a maker still at work
	 * from a dead one by this. */
	seg->maker_start = tmm_share_start_time(getpid());
	atomic_store_explicit(&seg->maker, (int32_t)getpid(),
			      memory_order_release);
	if (tmm_fault_hit("share.magic")) {
		/* For the tests: left as a maker killed right here leaves
		 * it, for the next joiner to find stale. */
		munmap(seg, sizeof(*seg));
		snprintf(err, errlen, "share: injected fault share.magic: "
			 "segment %s left without its magic", name);
		return -EIO;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&seg->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	seg->size = sizeof(*seg);
	seg->capacity = capacity;
	atomic_store_explicit(&seg->magic, SHARE_MAGIC, memory_order_release);
	*out = seg;
	return 0;
fail:
	code = errno;
	shm_unlink(name);
	snprintf(err, errlen, "share: cannot make shared-memory segment %s: "
		 "%s (check that /dev/shm has room, or set "
		 "TENSORMM_SHARE=off)", name, strerror(code));
	return -code;
}

bool tmm_share_seg_reap(int fd, const char *name)
{
	struct stat mine, named;
	uint64_t magic = 0;
	bool gone = false;
	int nfd;

	if (flock(fd, LOCK_EX) < 0)
		return false;
	nfd = shm_open(name, O_RDONLY | O_NOFOLLOW, 0);
	if (nfd >= 0) {
		if (fstat(fd, &mine) == 0 && fstat(nfd, &named) == 0 &&
		    mine.st_dev == named.st_dev &&
		    mine.st_ino == named.st_ino &&
		    (pread(fd, &magic, sizeof(magic), 0) !=
			     (ssize_t)sizeof(magic) ||
		     magic != SHARE_MAGIC))
			gone = shm_unlink(name) == 0;
		close(nfd);
	}
	flock(fd, LOCK_UN);
	return gone;
}

/* The maker a segment without its magic names (0: not written yet), from
 * the file: it may be too short to map. */
static int32_t maker_of(int fd, const struct stat *st, uint64_t *start)
{
	int32_t maker = 0;

	*start = 0;
	if ((uint64_t)st->st_size < sizeof(struct share_segment) ||
	    pread(fd, &maker, sizeof(maker),
		  offsetof(struct share_segment, maker)) !=
		    (ssize_t)sizeof(maker) ||
	    pread(fd, start, sizeof(*start),
		  offsetof(struct share_segment, maker_start)) !=
		    (ssize_t)sizeof(*start))
		return 0;
	return maker;
}

/*
 * Joins a segment another process made (fd: ours, 0600): waits for its
 * magic while its maker may still be at work.  Returns 0 with *out
 * mapped; -EAGAIN when it was stale and is gone (make it again); or
 * another negative errno with a message.  The file is read with pread
 * until the magic is there: its maker may not have sized it yet.
 */
static int join_made(int fd, const char *name, struct share_segment **out,
		     bool *reaped, char *err, size_t errlen)
{
	uint64_t deadline = tmm_share_now_ns() + MADE_WAIT_NS, magic, start;
	struct share_segment *seg;
	int32_t maker = 0;
	struct stat st;

	for (;;) {
		magic = 0;
		if (fstat(fd, &st) < 0 ||
		    pread(fd, &magic, sizeof(magic), 0) < 0)
			return open_failed(name, errno, err, errlen);
		if (magic == SHARE_MAGIC)
			break;
		maker = maker_of(fd, &st, &start);
		if (maker > 0 && !process_alive(maker, start))
			goto stale; /* its maker died making it */
		if (tmm_share_now_ns() > deadline) {
			if (maker > 0)
				goto stuck;
			goto stale; /* died before it wrote its pid */
		}
		nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
	}
	if ((uint64_t)st.st_size != sizeof(*seg))
		goto version;
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (seg == MAP_FAILED)
		return open_failed(name, errno, err, errlen);
	if (atomic_load_explicit(&seg->magic, memory_order_acquire) !=
		    SHARE_MAGIC ||
	    seg->size != sizeof(*seg)) {
		munmap(seg, sizeof(*seg));
		goto version;
	}
	*out = seg;
	return 0;
stale:
	*reaped |= tmm_share_seg_reap(fd, name);
	return -EAGAIN;
stuck:
	snprintf(err, errlen, "share: shared-memory segment %s is still being "
		 "made by pid %d after %.0f s; if that process is stuck, end "
		 "it, or set TENSORMM_SHARE to another group", name,
		 (int)maker, MADE_WAIT_NS / 1e9);
	return -EBUSY;
version:
	snprintf(err, errlen, "share: shared-memory segment %s has the layout "
		 "of another version of libtensormm (%lld bytes, this one's "
		 "is %zu); run the same version in every process that shares "
		 "the device, or set TENSORMM_SHARE to another group", name,
		 (long long)st.st_size, sizeof(*seg));
	return -EPROTO;
}

int tmm_share_seg_open(const char *name, uint64_t capacity,
		       struct share_segment **out, bool *reaped, char *err,
		       size_t errlen)
{
	struct stat st;
	int fd, rc;

	*reaped = false;
	for (unsigned tries = 0; tries < REAP_TRIES; tries++) {
		/* O_NOFOLLOW (glibc adds it too): a link planted at the
		 * name leads nowhere. */
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW,
			      0600);
		if (fd >= 0) {
			rc = make_segment(fd, name, capacity, out, err,
					  errlen);
			close(fd);
			return rc;
		}
		if (errno != EEXIST)
			return open_failed(name, errno, err, errlen);
		fd = shm_open(name, O_RDWR | O_NOFOLLOW, 0600);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* gone since: make it */
			return open_failed(name, errno, err, errlen);
		}
		rc = fstat(fd, &st) < 0
			     ? open_failed(name, errno, err, errlen)
			     : check_owner(&st, name, err, errlen);
		if (rc == 0)
			rc = join_made(fd, name, out, reaped, err, errlen);
		close(fd);
		if (rc != -EAGAIN)
			return rc;
	}
	snprintf(err, errlen, "share: shared-memory segment %s was found "
		 "half-made or gone %d times in a row; something keeps "
		 "leaving it so: find it, or set TENSORMM_SHARE to another "
		 "group", name, REAP_TRIES);
	return -EPROTO;
}

int tmm_share_seg_attach(const char *name, struct share_segment **out)
{
	struct share_segment *seg;
	struct stat st;
	char why[512];
	int fd = shm_open(name, O_RDWR | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || check_owner(&st, name, why, sizeof(why))) {
		close(fd);
		return -EACCES;
	}
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
	*out = seg;
	return 0;
}
