/* SPDX-License-Identifier: MIT */
/*
 * gpu_share.c — the shared segment of the processes on one GPU, and how a
 * context follows its part of it (the protocol is in gpu_share.h).
 *
 * The segment as a file and its lock are share_segment.c's (making it
 * races with other processes making it).  The last member to leave marks
 * the segment retired and unlinks it under the lock, so a process that
 * opened it just before sees the mark once it locks, and opens again
 * (making a fresh one): two live segments for one GPU would each believe
 * they own the whole capacity.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/context.h"
#include "gpu_share.h"
#include "lib/move/mover.h"
#include "lib/mem/pool.h"
#include "share_segment.h"
#include "lib/base/xalloc.h"

/* How long a joiner waits for the others to make room for its floor:
 * they shrink at their next op, so this is only reached when one of
 * them is stuck outside tmm_run. */
#define JOIN_WAIT_NS 10000000000ull
#define JOIN_POLL_NS 1000000l
#define RECLAIM_EVERY_NS (TMM_SHARE_RECLAIM_MS * 1000000ull)

struct tmm_share {
	struct share_segment *seg;
	unsigned me;		/* our slot */
	uint64_t seen;		/* the generation last followed */
	uint64_t reservation;	/* ours, as last set */
	bool replan_due;	/* the budget changed since the last plan */
	uint64_t next_reclaim;	/* tmm_share_now_ns() from which to look
				 * for dead members again */
	char name[TMM_SHARE_NAME_MAX];
};

/*
 * The device's key: ranks on one device share one budget, ranks on two
 * do not.  On CUDA the UUID, not the PCI bus id, which the MIG instances
 * of one GPU share, nor the index, which CUDA_VISIBLE_DEVICES makes
 * differ between processes; on the simulator the profile and the virtual
 * device's index (the `device` tunable), which every process that
 * simulates that device gives.  "" when the device has none.
 */
static void device_key(const char *backend,
		       const struct tmm_device_info *info, char *buf,
		       size_t len)
{
	if (strcmp(backend, "sim") == 0)
		snprintf(buf, len, "%s.%d", info->name, info->index);
	else
		snprintf(buf, len, "%s",
			 info->uuid[0] ? info->uuid : info->pci_bus_id);
}

void tmm_share_name(const struct tmm_config *cfg, const char *backend,
		    const struct tmm_device_info *info, char *buf, size_t len)
{
	const char *group = cfg->share;
	char key[96];

	buf[0] = '\0';
	if (strcmp(group, "off") == 0)
		return;
	device_key(backend, info, key, sizeof(key));
	if (!key[0])
		return;
	if (strcmp(group, "auto") == 0)
		snprintf(buf, len, "/tensormm.share.%u.%s.%s",
			 (unsigned)getuid(), backend, key);
	else
		snprintf(buf, len, "/tensormm.share.%u.%s.%s.%s",
			 (unsigned)getuid(), backend, key, group);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/' || *p == ':' || *p == ' ')
			*p = '_';
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

	tmm_share_lock(seg);
	target = seg->slot[sh->me].target;
	/* More than the arena would be reserved for nothing. */
	if (target > ctx->arena_bytes && ctx->mode != TMM_MODE_UVM)
		target = ctx->arena_bytes & ~(uint64_t)(TMM_POOL_ALIGN - 1);
	if (target > sh->reservation) {
		room = seg->capacity - tmm_share_reserved_sum(seg) +
		       sh->reservation;
		if (room > target)
			room = target;
		room &= ~(uint64_t)(TMM_POOL_ALIGN - 1);
		if (room > sh->reservation) {
			tmm_share_set_reservation(seg, sh->me, room);
			sh->reservation = room;
		}
		/* Not all of it yet: look again at the next op. */
		if (room >= target)
			sh->seen = gen;
		tmm_share_unlock(seg);
	} else if (target < sh->reservation) {
		tmm_share_unlock(seg);
		/* Pinned tensors over it (-EBUSY): at the next op. */
		if (tmm_mover_set_limit(ctx, target) < 0)
			return false;
		tmm_share_lock(seg);
		tmm_share_set_reservation(seg, sh->me, target);
		sh->reservation = target;
		sh->seen = gen;
		tmm_share_unlock(seg);
	} else {
		sh->seen = gen;
		tmm_share_unlock(seg);
	}
	if (sh->reservation == before)
		return false;
	(void)tmm_mover_set_limit(ctx, sh->reservation);
	ctx->budget = sh->reservation;
	ctx->c.share_budget_changes++;
	sh->replan_due = true;
	tmm_log(ctx, TMM_LOG_INFO, "share %s: budget %s -> %s", sh->name,
		tmm_fmt_bytes(before, b1, sizeof(b1)),
		tmm_fmt_bytes(sh->reservation, b2, sizeof(b2)));
	return true;
}

/*
 * Frees the slots of members that died between two locks (SIGKILL, say):
 * their reservations would otherwise stay taken for as long as the others
 * run, since only a locker that finds the lock's holder dead looks on its
 * own.  Called on the paths members take anyway (an iteration's end, and
 * waits for room), at most every TMM_SHARE_RECLAIM_MS: one kill(pid, 0) a
 * member, and a read of /proc for the live ones.
 */
static void reclaim_if_due(struct tmm_ctx *ctx)
{
	struct tmm_share *sh = ctx->share;
	uint64_t now = tmm_share_now_ns();
	unsigned gone;

	if (now < sh->next_reclaim)
		return;
	sh->next_reclaim = now + RECLAIM_EVERY_NS;
	tmm_share_lock(sh->seg);
	gone = tmm_share_reclaim(sh->seg);
	if (gone)
		tmm_share_resplit(sh->seg);
	tmm_share_unlock(sh->seg);
	if (gone)
		tmm_log(ctx, TMM_LOG_INFO, "share %s: %u member(s) died; "
			"their budget is split again", sh->name, gone);
}

int tmm_share_join(struct tmm_ctx *ctx, char *err, size_t errlen)
{
	struct tmm_share *sh;
	struct share_segment *seg;
	uint64_t deadline, floor;
	unsigned i;

	ctx->share = NULL;
	sh = tmm_calloc(1, sizeof(*sh));
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
		bool reaped;
		int rc = tmm_share_seg_open(sh->name, ctx->budget, &seg,
					    &reaped, err, errlen);

		if (reaped)
			tmm_log(ctx, TMM_LOG_WARN,
				"share %s: removed a segment that a process "
				"died making, and made it again", sh->name);
		if (rc < 0) {
			free(sh);
			return rc;
		}
		tmm_share_lock(seg);
		if (!seg->retired)
			break;
		tmm_share_unlock(seg);
		munmap(seg, sizeof(*seg));
	}
	tmm_share_reclaim(seg);
	for (i = 0; i < TMM_SHARE_SLOTS && seg->slot[i].pid; i++)
		;
	if (i == TMM_SHARE_SLOTS) {
		tmm_share_unlock(seg);
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
		.start = tmm_share_start_time(getpid()),
		.demand = seg->capacity, .rate = ctx->cfg.max_swap_rate,
	};
	tmm_share_resplit(seg);
	tmm_share_unlock(seg);
	sh->seg = seg;
	sh->me = i;
	ctx->share = sh;
	tmm_log(ctx, TMM_LOG_INFO, "share %s: joined (slot %u, pid %d)",
		sh->name, i, (int)getpid());

	/* Wait for the others to make room for at least our floor. */
	floor = seg->capacity / TMM_SHARE_SLOTS;
	deadline = tmm_share_now_ns() + JOIN_WAIT_NS;
	sh->next_reclaim = tmm_share_now_ns() + RECLAIM_EVERY_NS;
	for (;;) {
		reclaim_if_due(ctx); /* a member that died will not shrink */
		follow(ctx);
		if (sh->reservation >= seg->slot[i].target ||
		    (sh->reservation >= floor && tmm_share_now_ns() > deadline))
			break;
		if (tmm_share_now_ns() > deadline) {
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
	tmm_share_lock(seg);
	memset(&seg->slot[sh->me], 0, sizeof(seg->slot[sh->me]));
	tmm_share_reclaim(seg);
	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			last = false;
	if (last) {
		seg->retired = 1;
		shm_unlink(sh->name);
	} else {
		tmm_share_resplit(seg);
	}
	tmm_share_unlock(seg);
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
	reclaim_if_due(ctx);
	me = &sh->seg->slot[sh->me];
	if (demand) {
		tmm_share_lock(sh->seg);
		if (demand != me->demand ||
		    ctx->largest_op_need != me->floor) {
			me->demand = demand;
			me->floor = ctx->largest_op_need;
			tmm_share_resplit(sh->seg);
		}
		tmm_share_unlock(sh->seg);
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
	uint64_t deadline = tmm_share_now_ns() + JOIN_WAIT_NS;

	/* A floor is otherwise known only at the iteration's end, and a
	 * newcomer whose demand is not known yet may be cut down to 1/8 of
	 * an even share before its first large op. */
	tmm_share_lock(sh->seg);
	if (me->floor < bytes) {
		me->floor = bytes;
		tmm_share_resplit(sh->seg);
	}
	tmm_share_unlock(sh->seg);
	for (;;) {
		reclaim_if_due(ctx);
		follow(ctx);
		if (sh->reservation >= bytes)
			return 0;
		if (tmm_share_now_ns() > deadline || me->target < bytes)
			return -ENOMEM; /* the floors do not all fit */
		nanosleep(&(struct timespec){ 0, JOIN_POLL_NS }, NULL);
	}
}

void tmm_share_hold_lock(struct tmm_ctx *ctx)
{
	if (ctx->share)
		tmm_share_lock(ctx->share->seg);
}

uint64_t tmm_share_reservation(const struct tmm_ctx *ctx)
{
	return ctx->share ? ctx->share->reservation : 0;
}

int tmm_share_peek(const char *name, struct tmm_share_view *v)
{
	struct share_segment *seg;
	int rc = tmm_share_seg_attach(name, &seg);

	if (rc < 0)
		return rc;
	tmm_share_lock(seg);
	if (tmm_share_reclaim(seg))
		tmm_share_resplit(seg);
	*v = (struct tmm_share_view){
		.capacity = seg->capacity,
		.generation = atomic_load(&seg->generation),
		.reserved = tmm_share_reserved_sum(seg),
		.reserved_max = seg->reserved_max,
		.changes = seg->changes,
	};
	for (unsigned i = 0; i < TMM_SHARE_SLOTS; i++)
		if (seg->slot[i].pid)
			v->members++;
	tmm_share_unlock(seg);
	munmap(seg, sizeof(*seg));
	return 0;
}
