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
 * A process-shared robust mutex guards every change.  A process that dies
 * holding it leaves it to the next locker as EOWNERDEAD, and the slots of
 * processes that are gone (kill(pid, 0) says ESRCH, or the pid now has
 * another start time) are reclaimed by whoever locks next.  `generation`
 * is bumped on every join, leave and change of a demand or target, so a
 * member notices a change with one atomic read at each op.
 *
 * The split rule (tmm_share_split), our reading of TENSILE's Equation 3
 * and max swapping rate (MSR, Algorithm 2):
 *   - if the demands fit in the capacity, each member gets its demand,
 *     and what is left over is shared evenly;
 *   - otherwise the deficit (sum of demands - capacity) is taken from the
 *     members in proportion to their max swapping rates: a member whose
 *     rate is 0 gives up nothing while others can, and when every rate is
 *     0 all give up evenly;
 *   - no member is taken below its floor (the largest op it has run, and
 *     at least 1/8 of an even share) while others can still give up; if
 *     the floors alone do not fit, everything is scaled down so that the
 *     capacity still holds.
 * The sum of targets never exceeds the capacity.
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

#define TMM_SHARE_SLOTS 64u
#define TMM_SHARE_NAME_MAX 128

struct tmm_ctx;
struct tmm_config;
struct tmm_device_info;

/* One member's claim, the split rule's input. */
struct tmm_share_claim {
	uint64_t demand;  /* bytes it would like */
	uint64_t floor;	  /* bytes below which it cannot run */
	double rate;	  /* max swapping rate, 0..1 */
};

/*
 * The split rule above (a pure function): fills target[0..n) so that
 * their sum is at most `capacity`; each a multiple of `align` (a power of
 * two, or 1).
 */
void tmm_share_split(const struct tmm_share_claim *claims, unsigned n,
		     uint64_t capacity, uint64_t align, uint64_t *target);

/*
 * The segment name for this configuration and device into buf; "" when
 * share is off (or auto on a backend that has no device key).
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
 * Called at each iteration's end: follows the target, publishes the
 * demand (the first trace's unconstrained peak, or the plan's predicted
 * peak when that plan was made with room for it) and the floor, and
 * re-plans on the new budget when it changed.
 */
void tmm_share_iteration_end(struct tmm_ctx *ctx);

/*
 * An op needs `bytes` at once and the reservation is smaller: publishes
 * it as ctx's floor and waits (a few seconds at most) for the others to
 * make room.  Returns 0 once the reservation holds it, or -ENOMEM (no
 * message) when the split cannot give it.
 */
int tmm_share_need(struct tmm_ctx *ctx, uint64_t bytes);

/* ctx's current reservation (0 when it does not share). */
uint64_t tmm_share_reservation(const struct tmm_ctx *ctx);

/* What a test or tool sees of a segment, read under its lock. */
struct tmm_share_view {
	uint64_t capacity;
	uint64_t generation;
	unsigned members;
	uint64_t reserved;	/* the sum of reservations now */
	uint64_t reserved_max;	/* the most it has ever been */
	uint64_t changes;	/* reservation changes ever made */
};

/* Reads segment `name` (from tmm_share_name).  Returns 0, -ENOENT, or
 * another negative errno. */
int tmm_share_peek(const char *name, struct tmm_share_view *view);

#endif /* TMM_GPU_SHARE_H */
