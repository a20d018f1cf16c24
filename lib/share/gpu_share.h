/* SPDX-License-Identifier: MIT */
/*
 * gpu_share.h — several processes on one GPU (TENSILE §III–IV).
 *
 * Every context with share on joins one POSIX shared-memory segment per
 * GPU and user (no daemon): "/tensormm.share.<uid>.<key>", mode 0600,
 * where <key> is "cuda.<PCI bus id>" (share=auto) or
 * "<backend>.<device>.<group>" (share=<group>; the sim's device is its
 * profile, so the tests pick a group of their own).  The segment holds a
 * fixed table of slots, one per context: its pid and the start time of
 * that pid (a reused pid is not the same process), its demand, its floor,
 * its max swapping rate, the target the split rule gives it, and its
 * reservation: the limit its device pool enforces right now.
 *
 * The name is predictable, so another local user could make it first and
 * forge its contents (a lock held forever, slots that make a joiner wait
 * or crash).  A joiner makes it with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600,
 * or opens it and checks with fstat that it is this user's and mode 0600;
 * otherwise the join is refused with -EACCES, naming the file, its owner
 * or mode, and what to do (remove it, or choose another group).  A
 * segment that its maker died making (no magic) is removed and made
 * again by the next joiner.  The segment as a file is share_segment.c's.
 *
 * A process-shared robust mutex guards every change.  A process that dies
 * holding it leaves it to the next locker as EOWNERDEAD, which reclaims
 * the slots of processes that are gone (kill(pid, 0) says ESRCH, or the
 * pid now has another start time).  One that dies between two locks is
 * found by the members themselves: at an iteration's end, and while
 * waiting for room, each looks at the slots at most every
 * TMM_SHARE_RECLAIM_MS, so the survivors get its budget back at their
 * next iteration.  Joining and leaving look too.  `generation`
 * is bumped on every join, leave and change of a demand or target, so a
 * member notices a change with one atomic read at each op.
 *
 * How the device is split among the members is share_split.h's rule.
 *
 * Invariant under the lock: the sum of reservations never exceeds the
 * capacity.  A member lowers its reservation only after its pool has
 * shrunk to the new limit, and raises it only into room no other member
 * reserves; so a member whose target went up may wait for the others to
 * shrink first.  The pool limit is set below the reservation before a
 * shrink and raised after a raise, so the pool never holds more than the
 * reservation.
 *
 * The capacity split is the budget of the member that made the segment
 * (TENSORMM_BUDGET, by default the whole device).  The arena of each
 * member stays its full budget: the limit is a count of bytes in the pool
 * (tmm_pool_set_limit), which on the sim is exact; on cuda every member
 * would map its own full arena, so there share needs budgets that fit
 * side by side (a follow-up: release the arena's tail instead).
 */
#ifndef TMM_GPU_SHARE_H
#define TMM_GPU_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "share_split.h"

#define TMM_SHARE_NAME_MAX 128

/* How often at most a member looks for members that died without the
 * lock: a look is a kill(2) and a /proc read a member, under the lock. */
#define TMM_SHARE_RECLAIM_MS 100

struct tmm_ctx;
struct tmm_config;
struct tmm_device_info;

/*
 * The segment name for this configuration and device into buf, keyed by
 * the device (a CUDA device's UUID; the simulator's profile and virtual
 * device index) and the group; "" when share is off, or the device has
 * no key (a CUDA device that reports neither UUID nor PCI bus id).
 */
void tmm_share_name(const struct tmm_config *cfg, const char *backend,
		    const struct tmm_device_info *info, char *buf,
		    size_t len);

/*
 * Joins ctx to its segment when share is on (else does nothing), sets the
 * pool's limit and ctx->budget to the reservation it gets, waiting up to
 * a few seconds for the others to make room for its floor.  Returns 0, or
 * a negative errno with a message in err.
 */
int tmm_share_join(struct tmm_ctx *ctx, char *err, size_t errlen);

/* Gives ctx's slot back (none is fine); the last member removes the
 * segment. */
void tmm_share_leave(struct tmm_ctx *ctx);

/*
 * Called before each op: one atomic read, and when the generation moved,
 * the reservation follows the new target (evicting to shrink).  A re-plan
 * is left for the iteration's end.
 */
void tmm_share_op(struct tmm_ctx *ctx);

/*
 * Called at each iteration's end with this process's demand (the guide's:
 * the first trace's unconstrained peak, or the plan's predicted peak when
 * that plan was made with room for it; 0: none known yet): publishes it
 * and the floor, and follows the target.  Returns true when the budget
 * changed since the last re-plan, so the caller re-plans on it.
 */
bool tmm_share_iteration_end(struct tmm_ctx *ctx, uint64_t demand);

/*
 * An op needs `bytes` at once and the reservation is smaller: publishes
 * it as ctx's floor and waits (a few seconds at most) for the others to
 * make room.  Returns 0 once the reservation holds it, or -ENOMEM (no
 * message) when the split cannot give it.
 */
int tmm_share_need(struct tmm_ctx *ctx, uint64_t bytes);

/* ctx's current reservation (0 when it does not share). */
uint64_t tmm_share_reservation(const struct tmm_ctx *ctx);

/* For tests: takes ctx's segment lock and never gives it back, so that
 * a test can kill a process that holds it. */
void tmm_share_hold_lock(struct tmm_ctx *ctx);

/* What a test or tool sees of a segment, read under its lock. */
struct tmm_share_view {
	uint64_t capacity;
	uint64_t generation;
	unsigned members;
	uint64_t reserved;	/* the sum of reservations now */
	uint64_t reserved_max;	/* the most it has ever been */
	uint64_t changes;	/* reservation changes ever made */
};

/* Reads segment `name` (from tmm_share_name).  Returns 0, -ENOENT,
 * -EACCES (not this user's, mode 0600), or another negative errno. */
int tmm_share_peek(const char *name, struct tmm_share_view *view);

#endif /* TMM_GPU_SHARE_H */
