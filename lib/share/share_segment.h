/* SPDX-License-Identifier: MIT */
/*
 * share_segment.h — the share segment's layout, and what is done to it as
 * a file and under its lock (share_segment.c).  Private to lib/share/:
 * gpu_share.h is the protocol and the interface of the layer.
 */
#ifndef TMM_SHARE_SEGMENT_H
#define TMM_SHARE_SEGMENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "share_split.h"

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
	/* Its maker, written before anything else: a segment without the
	 * magic whose maker is gone is stale.  0: not written yet. */
	_Atomic int32_t maker;
	uint32_t pad;
	uint64_t maker_start;	/* the maker's start time, 0 unknown */
	pthread_mutex_t lock;
	_Atomic uint64_t generation;
	uint64_t capacity;
	uint64_t reserved_max;	/* the most the reservations summed to */
	uint64_t changes;
	struct share_slot slot[TMM_SHARE_SLOTS];
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tmm_share_now_ns(void);

/* The start time of process pid (field 22 of /proc/<pid>/stat): tells a
 * pid's process from a later one with the same pid.  0 when unknown. */
uint64_t tmm_share_start_time(pid_t pid);

/*
 * Opens the segment `name`, or makes it with `capacity` bytes to split: 0
 * with *out mapped, or a negative errno with a message in err.  A file at
 * the name that is not this user's, mode 0600, is refused with -EACCES:
 * the name is predictable, and another user may have made it first.  A
 * stale segment (no magic, its maker dead) is removed and made again;
 * *reaped says whether this call removed one.  One whose maker is alive
 * but not done after a bounded wait gives -EBUSY.
 */
int tmm_share_seg_open(const char *name, uint64_t capacity,
		       struct share_segment **out, bool *reaped, char *err,
		       size_t errlen);

/*
 * Unlinks `name` if it still refers to the stale segment open in fd and
 * that still has no magic: under flock on fd, so that of two joiners that
 * found it stale only the first unlinks it, and the second, seeing the
 * name on another file (the first one's fresh segment) or on none, leaves
 * it alone.  True when it went.
 */
bool tmm_share_seg_reap(int fd, const char *name);

/* Maps the existing segment `name`: 0, -ENOENT, -EACCES (not this user's,
 * mode 0600), -EPROTO (not a segment of this layout), or another negative
 * errno. */
int tmm_share_seg_attach(const char *name, struct share_segment **out);

/* The segment's lock: a process-shared robust mutex.  Taking it from a
 * holder that died reclaims the dead members' slots and splits again. */
void tmm_share_lock(struct share_segment *seg);
void tmm_share_unlock(struct share_segment *seg);

/* Under the lock: every member's target recomputed from the claims. */
void tmm_share_resplit(struct share_segment *seg);

/* Under the lock: the slots of processes that are gone freed; how many
 * were. */
unsigned tmm_share_reclaim(struct share_segment *seg);

/* Under the lock: the sum of the members' reservations. */
uint64_t tmm_share_reserved_sum(const struct share_segment *seg);

/* Under the lock: slot i's reservation set, keeping the record. */
void tmm_share_set_reservation(struct share_segment *seg, unsigned i,
			       uint64_t bytes);

#endif /* TMM_SHARE_SEGMENT_H */
