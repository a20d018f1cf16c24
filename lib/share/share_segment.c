/*
 * share_segment.c — the share segment as a file and a lock: making or
 * opening it, the liveness of its members, and the changes made under its
 * lock (the protocol is in gpu_share.h; how a context follows its part of
 * the segment is gpu_share.c).
 *
 * Making the segment races with other processes making it: the winner of
 * O_CREAT|O_EXCL sizes it, sets up the mutex, and stores the magic last
 * (release); a loser waits for the magic.
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

#include "lib/mem/pool.h"
#include "share_segment.h"

#define SHARE_MAGIC 0x3145524148534d54ull /* "TMSHARE1", little end */
#define POLL_NS 1000000l

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

static bool slot_alive(const struct share_slot *s)
{
	uint64_t start;

	if (kill(s->pid, 0) < 0 && errno == ESRCH)
		return false;
	start = tmm_share_start_time(s->pid);
	return !(s->start && start && start != s->start);
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

/* Frees the slots of processes that are gone; true when any was. */
bool tmm_share_reclaim(struct share_segment *seg)
{
	bool any = false;

	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid && !slot_alive(&seg->slot[i])) {
			memset(&seg->slot[i], 0, sizeof(seg->slot[i]));
			any = true;
		}
	return any;
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

/* Opens or makes the segment; returns it mapped, or NULL with errno. */
struct share_segment *tmm_share_seg_open(const char *name, uint64_t capacity)
{
	struct share_segment *seg;
	pthread_mutexattr_t ma;
	uint64_t deadline = tmm_share_now_ns() + 2000000000ull;
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
			if (tmm_share_now_ns() > deadline) {
				close(fd);
				errno = EPROTO;
				return NULL;
			}
			nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
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
		if (tmm_share_now_ns() > deadline) {
			munmap(seg, sizeof(*seg));
			errno = EPROTO;
			return NULL;
		}
		nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
	}
	if (seg->size != sizeof(*seg)) {
		munmap(seg, sizeof(*seg));
		errno = EPROTO;
		return NULL;
	}
	return seg;
}

int tmm_share_seg_attach(const char *name, struct share_segment **out)
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
	*out = seg;
	return 0;
}
