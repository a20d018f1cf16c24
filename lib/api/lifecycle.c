/* SPDX-License-Identifier: MIT */
/*
 * lifecycle.c — creating and destroying a context.
 *
 * Creation resolves the configuration (TENSORMM_* environment > config
 * string > defaults), opens the backend, resolves the mode, and in
 * mode=swap takes the whole budget as one device arena for the pool (one
 * allocation up front: SuperNeurons §3.2.1) and sets up the pinned host
 * pool on the right NUMA node.  In mode=uvm tensors are blocks of a
 * managed arena (lib/mem/uvm_arena.h): a few large managed segments,
 * made as the tensors need them and kept until the context is destroyed,
 * so a program that makes and frees tensors every step makes no managed
 * allocation after its first steps.  The budget bounds the device memory
 * their pages fill, not the arena: with uvm_cap=driver it is the
 * driver's limit (managed_limit; on the simulator a small budget
 * oversubscribes exactly like a small device would, CUDA's driver takes
 * no limit), and with uvm_cap=library the mover's own count of pages,
 * the driver keeping the whole device as CUDA's does.
 *
 * With pool=chunks, swap mode reserves a virtual range instead of the
 * arena, twice the budget rounded up to a chunk plus one, and the pool
 * maps physical chunks under it as tensors come (lib/mem/pool_map.c);
 * ctx->arena is the range's base, so every address the runtime forms
 * (arena + offset) stays right.  A backend without virtual memory falls
 * back to the arena, with a warning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/exec/guide.h"
#include "lib/mem/hostmem.h"
#include "lib/move/mover.h"
#include "lib/exec/guide_input.h"
#include "lib/exec/recompute.h"
#include "lib/exec/rehearse.h"
#include "lib/record/tracker.h"
#include "lib/backend/backend_open.h"
#include "lib/backend/numa_place.h"
#include "lib/mem/pool.h"
#include "lib/mem/uvm_arena.h"
#include "lib/exec/stats_shm.h"
#include "lib/share/gpu_share.h"
#include "lib/base/xalloc.h"

extern _Thread_local char tmm_create_error[512];

/*
 * The live contexts, so that destroying a context twice is refused instead
 * of freeing twice.  Only create and destroy take the lock.  A context is
 * added as the last step of its creation that can fail, since the
 * teardown of a half-built context does not look here: an entry left for
 * a context freed by a failed creation would hold the array forever and
 * let a later context at the same address be destroyed twice.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tmm_ctx **registry;
static size_t registry_len, registry_cap;
static atomic_uint next_serial = 0;

static int registry_add(struct tmm_ctx *ctx)
{
	int rc = 0;

	pthread_mutex_lock(&registry_lock);
	if (registry_len == registry_cap) {
		size_t cap = registry_cap ? 2 * registry_cap : 8;
		void *p = tmm_realloc(registry, cap * sizeof(*registry));

		if (!p) {
			rc = -ENOMEM;
			goto out;
		}
		registry = p;
		registry_cap = cap;
	}
	registry[registry_len++] = ctx;
out:
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

size_t tmm_ctx_registered(void)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = registry_len;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

/*
 * Takes ctx out of the registry for its destruction: 0; -EBADF when it is
 * not registered (never made, or destroyed already); or -EBUSY when the
 * guard refuses (another thread is in a call on it, or this is a callback
 * of its own), and then it stays.  The guard is taken under the lock, so
 * that two destroys cannot both take the context, nor one take it while
 * the other frees it.
 */
static int registry_remove(struct tmm_ctx *ctx)
{
	int rc = -EBADF;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_len; i++) {
		if (registry[i] != ctx)
			continue;
		rc = tmm_guard_enter(ctx, TMM_CALL_CTX_DESTROY);
		if (rc < 0)
			break;
		registry[i] = registry[--registry_len];
		rc = 0;
		break;
	}
	if (registry_len == 0) {
		free(registry);
		registry = NULL;
		registry_cap = 0;
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

static int create_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int create_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmm_create_error, sizeof(tmm_create_error), fmt, ap);
	va_end(ap);
	return code;
}

/* Releases whatever a (possibly half-built) context holds. */
static void teardown(struct tmm_ctx *ctx)
{
	tmm_stats_shm_destroy(ctx);
	if (ctx->be.ops && ctx->tracker && ctx->lineage && ctx->guide) {
		tmm_rehearsal_discard(ctx);
		tmm_workspace_drop(ctx);
		tmm_tensor_table_clear(ctx);
		tmm_mover_drain(ctx);
	}
	tmm_guide_destroy(ctx);
	tmm_lineage_destroy(ctx);
	tmm_tracker_destroy(ctx);
	if (ctx->hostmem)
		tmm_hostmem_destroy(ctx->hostmem);
	if (ctx->pool)
		tmm_pool_destroy(ctx->pool);
	/* After the tensors: their blocks go with the segments. */
	tmm_uvm_arena_destroy(ctx->uvm_arena);
	if (ctx->arena && ctx->va_bytes)
		ctx->be.ops->va_release(&ctx->be, ctx->arena, ctx->va_bytes);
	else if (ctx->arena)
		ctx->be.ops->dev_free(&ctx->be, ctx->arena, ctx->arena_bytes);
	/* Only once the arena is gone may another process take its room. */
	tmm_share_leave(ctx);
	if (ctx->be.ops)
		tmm_backend_close(&ctx->be);
	for (uint32_t i = 0; i < ctx->n_chunks; i++)
		free(ctx->chunks[i]);
	free(ctx->chunks);
	free(ctx->free_slots);
	free(ctx->deferred);
	free(ctx->ptr_scratch);
	free(ctx->uvm_ranges);
	free(ctx->uvm_batch.tensors);
	free(ctx->uvm_batch.ranges);
	free(ctx->uvm_leaving.tensors);
	ctx->magic = 0;
	free(ctx);
}

/* Whether the budget asks for less than the device had free: a size or a
 * share below it, or a share of the program's peak. */
static bool budget_presses(const struct tmm_ctx *ctx)
{
	uint64_t free_b = ctx->be.info.free_at_open;

	return ctx->cfg.budget.of_peak ||
	       tmm_config_budget(&ctx->cfg, free_b) < free_b;
}

/* mode=auto, once the backend is open: the choice is policy
 * (tmm_auto_mode_choose, hints/uvm_way.h); where it takes swap for
 * mode=uvm's moves, the log says why. */
static enum tmm_mode_choice auto_mode(struct tmm_ctx *ctx)
{
	const struct tmm_device_info *info = &ctx->be.info;
	struct tmm_auto_mode_facts f = {
		.rates = tmm_guide_uvm_rates(info),
		.asked = ctx->cfg.uvm_swap_path,
		.concurrent_managed = info->concurrent_managed,
		.budget_presses = budget_presses(ctx),
		.copies_block_host = info->managed_copies_block_host,
	};
	struct tmm_auto_mode_choice c = tmm_planner_auto_mode(&f);

	if (c.why == TMM_AUTO_WHY_HELD_COPIES)
		tmm_log(ctx, TMM_LOG_INFO, "mode=auto: swap, since under the "
			"budget mode=uvm would move tensors by copy, and a copy "
			"of managed memory holds the host until it has run, so "
			"that no kernel runs beside it; swap mode's copies hide "
			"under compute; mode=uvm keeps tensors in managed "
			"memory all the same");
	else if (c.why == TMM_AUTO_WHY_SLOW_MOVES && c.copy)
		tmm_log(ctx, TMM_LOG_INFO, "mode=auto: swap, since under the "
			"budget mode=uvm would move tensors by copy with fresh "
			"pages made on the way back (%.1f GB/s), %.1fx the "
			"time of swap mode's pinned copies (%.1f out, %.1f in); "
			"mode=uvm keeps tensors in managed memory all the same",
			info->uvm_fresh_gbps, c.ratio, info->d2h_gbps,
			info->h2d_gbps);
	else if (c.why == TMM_AUTO_WHY_SLOW_MOVES)
		tmm_log(ctx, TMM_LOG_INFO, "mode=auto: swap, since under the "
			"budget mode=uvm would move tensors by prefetch (%.1f "
			"GB/s out, %.1f in), %.1fx the time of swap mode's "
			"pinned copies (%.1f out, %.1f in); mode=uvm keeps "
			"tensors in managed memory all the same",
			info->uvm_prefetch_d2h_gbps,
			info->uvm_prefetch_h2d_gbps, c.ratio, info->d2h_gbps,
			info->h2d_gbps);
	return c.mode;
}

static int resolve_mode(struct tmm_ctx *ctx)
{
	switch (ctx->cfg.mode) {
	case TMM_MODE_SWAP:
		ctx->mode = TMM_MODE_SWAP;
		return 0;
	case TMM_MODE_UVM:
		/* Without concurrent managed access the host may not touch
		 * managed memory while any kernel runs, and the driver
		 * refuses discards: the mode cannot keep its promises. */
		if (!ctx->be.info.concurrent_managed)
			return create_fail(-ENOTSUP,
					   "mode=uvm: %s has no concurrent "
					   "managed access, so managed memory "
					   "cannot be shared with running "
					   "kernels; use mode=swap (or "
					   "mode=auto, which picks it here)",
					   ctx->be.info.name);
		ctx->mode = TMM_MODE_UVM;
		return 0;
	case TMM_MODE_AUTO:
		ctx->mode = auto_mode(ctx);
		return 0;
	default:
		return create_fail(-EINVAL, "mode %d is not auto, swap or uvm",
				   (int)ctx->cfg.mode);
	}
}

/* The pool's mapper with pool=chunks: chunks of the range at ctx->arena. */
static int map_chunk(void *arg, uint64_t offset, uint64_t bytes)
{
	struct tmm_ctx *ctx = arg;

	return ctx->be.ops->va_map(&ctx->be, (char *)ctx->arena + offset,
				   bytes);
}

static void unmap_chunk(void *arg, uint64_t offset, uint64_t bytes)
{
	struct tmm_ctx *ctx = arg;

	ctx->be.ops->va_unmap(&ctx->be, (char *)ctx->arena + offset, bytes);
}

/*
 * pool=chunks in swap mode: reserves the virtual range and makes the pool
 * over it.  Returns 0, 1 when the backend cannot (then the caller takes
 * an arena; the warning is given here), or a negative errno with the
 * message set.
 */
static int make_chunk_pool(struct tmm_ctx *ctx)
{
	const struct tmm_backend_ops *ops = ctx->be.ops;
	struct tmm_pool_mapper mapper = { map_chunk, unmap_chunk, ctx };
	uint64_t cap = (ctx->budget + TMM_POOL_CHUNK - 1) / TMM_POOL_CHUNK *
			       TMM_POOL_CHUNK + TMM_POOL_CHUNK;
	char b1[32];
	int rc;

	if (!ops->va_reserve || !ops->va_map || !ops->va_unmap ||
	    !ops->va_release) {
		tmm_log(ctx, TMM_LOG_WARN, "pool=chunks: the %s backend cannot "
			"map memory into a reserved range; the pool is one "
			"arena (pool=arena)", ops->name);
		return 1;
	}
	/* Twice the cap: holes in the range never refuse what fits. */
	ctx->va_bytes = 2 * cap;
	rc = ops->va_reserve(&ctx->be, ctx->va_bytes, TMM_POOL_CHUNK,
			     &ctx->arena);
	if (rc == -ENOTSUP) {
		ctx->va_bytes = 0;
		ctx->arena = NULL;
		tmm_log(ctx, TMM_LOG_WARN, "pool=chunks: %s; the pool is one "
			"arena (pool=arena)", ctx->be.error);
		return 1;
	}
	if (rc < 0) {
		ctx->va_bytes = 0;
		ctx->arena = NULL;
		return create_fail(rc, "pool=chunks: cannot reserve %s of "
				   "address space on %s: %s; set "
				   "TENSORMM_POOL=arena",
				   tmm_fmt_bytes(2 * cap, b1, sizeof(b1)),
				   ctx->be.info.name, ctx->be.error);
	}
	ctx->arena_bytes = ctx->budget;
	rc = tmm_pool_create_mapped(&ctx->pool, ctx->va_bytes, &mapper);
	if (rc < 0)
		return create_fail(rc, "cannot create the device pool");
	tmm_pool_set_limit(ctx->pool, ctx->budget);
	return 0;
}

int tmm_ctx_assemble(tmm_ctx **out, const char *config,
		     const struct tmm_twin_ops *twin_ops)
{
	struct tmm_ctx *ctx;
	char err[512], b1[32], b2[32];
	int node, rc;

	tmm_create_error[0] = '\0';
	if (!out)
		return create_fail(-EINVAL, "tmm_ctx_create: out is NULL");
	*out = NULL;
	ctx = tmm_calloc(1, sizeof(*ctx));
	if (!ctx)
		return create_fail(-ENOMEM, "tmm_ctx_create: out of host "
				   "memory for the context");
	tmm_list_init(&ctx->device_lru);
	tmm_list_init(&ctx->swapping_out);
	tmm_list_init(&ctx->swapping_in);
	tmm_list_init(&ctx->dropped);
	tmm_list_init(&ctx->ghosts);
	ctx->twin_ops = twin_ops;

	/* A twin (no twin_ops) is the library's own: the user's
	 * environment is for the user's contexts. */
	rc = tmm_config_load_from(&ctx->cfg, config, twin_ops != NULL, err,
				  sizeof(err));
	if (rc < 0) {
		create_fail(rc, "%s", err);
		goto fail;
	}
	/* Before the backend opens: its calls may be among the faults.  A
	 * twin (no twin_ops) is part of the run that plans with it, so it
	 * keeps that run's faults and their counts rather than setting its
	 * own: otherwise the first plan `auto` tried would end a fault
	 * sweep's faults. */
	if (twin_ops)
		(void)tmm_fault_set(ctx->cfg.fault); /* validated by the load */
	rc = tmm_backend_open(&ctx->be, &ctx->cfg, err, sizeof(err));
	if (rc < 0) {
		ctx->be.ops = NULL;
		create_fail(rc, "%s", err);
		goto fail;
	}
	rc = resolve_mode(ctx);
	if (rc < 0)
		goto fail;
	ctx->uvm_copy_out = false;
	if (ctx->mode == TMM_MODE_UVM) {
		struct tmm_uvm_rates rates = tmm_guide_uvm_rates(&ctx->be.info);

		ctx->uvm_copy_out = tmm_planner_uvm_way_copy(
			&rates, ctx->cfg.uvm_swap_path);
	}

	ctx->budget = tmm_config_budget(&ctx->cfg, ctx->be.info.free_at_open);
	ctx->budget -= ctx->budget % TMM_POOL_ALIGN;
	if (ctx->budget == 0) {
		rc = create_fail(-EINVAL,
				 "budget is 0 bytes on a device with %s free; "
				 "set TENSORMM_BUDGET to a size or percentage",
				 tmm_fmt_bytes(ctx->be.info.free_at_open, b1,
					       sizeof(b1)));
		goto fail;
	}
	rc = 1;
	if (ctx->mode == TMM_MODE_SWAP && ctx->cfg.pool == TMM_POOL_CHUNKS) {
		rc = make_chunk_pool(ctx);
		if (rc < 0)
			goto fail;
	}
	if (rc == 0)
		; /* the pool maps its chunks */
	else if (ctx->mode == TMM_MODE_UVM)
		rc = tmm_mover_set_limit(ctx, ctx->budget);
	else
		rc = ctx->be.ops->dev_alloc(&ctx->be, ctx->budget,
					    &ctx->arena);
	if (rc < 0) {
		ctx->arena = NULL;
		create_fail(rc, "cannot take the %s budget on %s: %s",
			    tmm_fmt_bytes(ctx->budget, b1, sizeof(b1)),
			    ctx->be.info.name, ctx->be.error);
		goto fail;
	}
	ctx->arena_bytes = ctx->budget;
	rc = ctx->pool ? 0 : tmm_pool_create(&ctx->pool, ctx->budget);
	if (rc < 0) {
		create_fail(rc, "cannot create the device pool");
		goto fail;
	}
	/* Its segments come with the first tensors, not now. */
	if (ctx->mode == TMM_MODE_UVM &&
	    tmm_uvm_arena_create(&ctx->uvm_arena, &ctx->be, ctx->budget) < 0) {
		rc = create_fail(-ENOMEM, "tmm_ctx_create: out of host memory "
				 "for the managed arena");
		goto fail;
	}
	node = ctx->cfg.host_numa_node >= 0 ? ctx->cfg.host_numa_node
					    : ctx->be.info.numa_node;
	/* A node that does not exist would fail every swap-out later. */
	if (ctx->cfg.host_numa_node >= tmm_numa_node_count()) {
		rc = create_fail(-EINVAL,
				 "host_numa_node=%d: this machine has %d NUMA "
				 "node(s), 0 to %d (or -1 for the GPU's node)",
				 ctx->cfg.host_numa_node,
				 tmm_numa_node_count(),
				 tmm_numa_node_count() - 1);
		goto fail;
	}
	rc = tmm_hostmem_create(&ctx->hostmem, &ctx->be, node,
				ctx->cfg.pinned_pool);
	if (rc < 0) {
		create_fail(rc, "cannot create the pinned host pool");
		goto fail;
	}
	if (tmm_lineage_create(ctx) < 0 || tmm_guide_create(ctx) < 0) {
		rc = create_fail(-ENOMEM, "tmm_ctx_create: out of host memory "
				 "for the lineage or the guide");
		goto fail;
	}
	rc = tmm_tracker_create(ctx, err, sizeof(err));
	if (rc < 0) {
		create_fail(rc, "%s", err);
		goto fail;
	}
	/* A budget of the program's own peak is its own business: auto
	 * leaves the device unshared, and an asked-for group is refused. */
	if (ctx->cfg.budget.of_peak && strcmp(ctx->cfg.share, "off") != 0) {
		if (strcmp(ctx->cfg.share, "auto") != 0) {
			rc = create_fail(-EINVAL,
					 "budget=%g%%peak with share=%s: a "
					 "shared device's budget moves with "
					 "the other processes; give the "
					 "budget as a size or a percentage of "
					 "the device, or set share=off",
					 ctx->cfg.budget.percent,
					 ctx->cfg.share);
			goto fail;
		}
		snprintf(ctx->cfg.share, sizeof(ctx->cfg.share), "off");
	}
	/* After the pool: joining may shrink it to this process's share. */
	rc = tmm_share_join(ctx, err, sizeof(err));
	if (rc < 0) {
		create_fail(rc, "%s", err);
		goto fail;
	}
	/* 1 .. 0x7fff: a zero serial would allow a zero handle, and bit 15
	 * would land on bit 63 of a handle, the tracker's mark of a key
	 * made inside an iteration. */
	ctx->serial = (uint16_t)(1 + atomic_fetch_add(&next_serial, 1) %
					     0x7fffu);
	rc = tmm_guide_load_hints(ctx);
	if (rc < 0) {
		create_fail(rc, "tmm_ctx_create: out of host memory reading "
			    "the plan file %s; free memory, or set "
			    "TENSORMM_HINTS to nothing to measure instead",
			    ctx->cfg.hints);
		goto fail;
	}
	/* The last step that can fail: teardown() does not unregister. */
	rc = registry_add(ctx);
	if (rc < 0) {
		create_fail(rc, "tmm_ctx_create: out of host memory growing "
			    "the registry of live contexts");
		goto fail;
	}
	ctx->split_access = UINT32_MAX; /* no op split yet (split.c) */
	ctx->split_evicted_access = UINT32_MAX;
	ctx->magic = TMM_CTX_MAGIC;
	ctx->created_ns = ctx->be.ops->now_ns(&ctx->be);
	tmm_stats_shm_create(ctx);
	tmm_log(ctx, TMM_LOG_INFO,
		"context on %s (%s%s), mode %s%s, budget %s of %s",
		ctx->be.info.name, ctx->be.ops->name,
		ctx->be.info.simulated ? ", simulated" : "",
		ctx->mode == TMM_MODE_UVM ? "uvm" : "swap",
		ctx->va_bytes ? " (pool=chunks)" : "",
		tmm_fmt_bytes(ctx->budget, b1, sizeof(b1)),
		tmm_fmt_bytes(ctx->be.info.capacity, b2, sizeof(b2)));
	if (ctx->be.info.timing[0])
		tmm_log(ctx, TMM_LOG_INFO, "op times measured by %s",
			ctx->be.info.timing);
	if (ctx->be.info.link[0])
		tmm_log(ctx, TMM_LOG_INFO, "host link: %s",
			ctx->be.info.link);
	if (ctx->mode == TMM_MODE_UVM)
		tmm_log(ctx, TMM_LOG_INFO, "evictions go by %s (managed paths: "
			"%s)", ctx->uvm_copy_out ? "pinned copy" : "prefetch",
			ctx->be.info.uvm_paths[0] ? ctx->be.info.uvm_paths
						  : "the profile's");
	/* What makes the copies of managed memory; a warning where
	 * uvm_copier=kernel was asked for and not had (only time is lost,
	 * but the user asked for it). */
	if (ctx->mode == TMM_MODE_UVM && ctx->uvm_copy_out &&
	    ctx->be.info.managed_copier[0])
		tmm_log(ctx, ctx->cfg.uvm_copier == TMM_UVM_COPIER_KERNEL &&
				     ctx->be.info.managed_copies_block_host
			     ? TMM_LOG_WARN
			     : TMM_LOG_INFO,
			"copies of managed memory by %s",
			ctx->be.info.managed_copier);
	/* Not a warning: training is right without, only the statistics
	 * of the driver's own work are missing. */
	if (ctx->mode == TMM_MODE_UVM && !ctx->be.info.managed_counted)
		tmm_log(ctx, TMM_LOG_INFO, "the driver's own migrations and "
			"page faults are not counted: %s",
			ctx->be.info.managed_counts[0]
				? ctx->be.info.managed_counts
				: "this backend does not report them");
	*out = ctx;
	return 0;
fail:
	teardown(ctx);
	return rc;
}

int tmm_ctx_destroy(tmm_ctx *ctx)
{
	int rc = ctx ? registry_remove(ctx) : -EBADF;

	if (rc < 0)
		return rc;
	/* The guard is never let go: the context is gone. */
	teardown(ctx);
	return 0;
}
