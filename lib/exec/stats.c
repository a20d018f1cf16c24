/* SPDX-License-Identifier: MIT */
/*
 * stats.c — a context's counters, as a struct and as text or JSON.
 *
 * Printing goes through a write callback (as jemalloc's
 * malloc_stats_print) so the caller chooses where it lands.  Figures from
 * the simulator are labelled simulated in both forms: they are virtual
 * times on a profile, not measurements.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/context.h"
#include "lib/core/guard.h"
#include "lib/share/gpu_share.h"
#include "guide.h"
#include "lib/mem/hostmem.h"
#include "lib/mem/pool.h"
#include "lib/mem/uvm_arena.h"
#include "lib/move/device_mem.h"
#include "stats.h"

/* The size of struct tmm_stats in each earlier version. */
static const size_t version_size[] = {
	[1] = offsetof(struct tmm_stats, compute_ns) + sizeof(uint64_t),
	[2] = offsetof(struct tmm_stats, prefetch_late) + sizeof(uint64_t),
	[3] = offsetof(struct tmm_stats, uvm_discard_bytes) + sizeof(uint64_t),
	[4] = offsetof(struct tmm_stats, split_fallbacks) + sizeof(uint64_t),
	[5] = offsetof(struct tmm_stats, device_mapped_peak) + sizeof(uint64_t),
	[6] = offsetof(struct tmm_stats, uvm_held_peak) + sizeof(uint64_t),
	[7] = offsetof(struct tmm_stats, reserved7) + sizeof(uint32_t),
	[8] = offsetof(struct tmm_stats, clean_eviction_bytes) +
	      sizeof(uint64_t),
	[9] = offsetof(struct tmm_stats, dead_discard_bytes) +
	      sizeof(uint64_t),
	[10] = offsetof(struct tmm_stats, uvm_kept_hits) + sizeof(uint64_t),
	[11] = offsetof(struct tmm_stats, reserved11) + sizeof(uint32_t),
	[12] = offsetof(struct tmm_stats, uvm_prefetch_out_bytes) +
	       sizeof(uint64_t),
};

/* A rate in GB/s as whole MB/s; 0 for none. */
static uint64_t mbps(double gbps)
{
	return gbps > 0 ? (uint64_t)(gbps * 1e3 + 0.5) : 0;
}

int tmm_stats_fill(struct tmm_ctx *ctx, struct tmm_stats *s)
{
	struct tmm_pool_stats ps;
	struct tmm_hostmem_stats hs;
	const struct tmm_counters *c;

	if (!s || s->version < 1 || s->version > TMM_STATS_VERSION)
		return tmm_fail(ctx, -EINVAL,
				"tmm_stats_get: set s->version to "
				"TMM_STATS_VERSION (%d)", TMM_STATS_VERSION);
	if (s->version < TMM_STATS_VERSION) {
		/* A caller built against an earlier version has a shorter
		 * struct: fill a whole one, hand back its prefix. */
		struct tmm_stats full = { .version = TMM_STATS_VERSION };
		uint32_t version = s->version;
		int rc = tmm_stats_fill(ctx, &full);

		if (rc == 0) {
			memcpy(s, &full, version_size[version]);
			s->version = version;
		}
		return rc;
	}
	/* The driver's books as of now: CUDA's come with each iteration's
	 * end (cuda_um.h), after the last move synced them. */
	if (ctx->mode == TMM_MODE_UVM)
		tmm_uvm_sync_counters(ctx);
	c = &ctx->c;
	tmm_pool_get_stats(ctx->pool, &ps);
	tmm_hostmem_get_stats(ctx->hostmem, &hs);
	memset(s, 0, sizeof(*s));
	s->version = TMM_STATS_VERSION;
	s->simulated = ctx->be.info.simulated;
	snprintf(s->backend, sizeof(s->backend), "%s", ctx->be.ops->name);
	snprintf(s->device, sizeof(s->device), "%s", ctx->be.info.name);
	s->device_index = ctx->be.info.index;
	snprintf(s->mode, sizeof(s->mode), "%s",
		 ctx->mode == TMM_MODE_UVM ? "uvm" : "swap");
	s->device_capacity = ctx->be.info.capacity;
	s->budget = ctx->budget;
	s->device_in_use = ps.in_use;
	s->device_peak = ps.peak;
	/* mode=uvm has no pool: the driver's resident pages are the use. */
	if (ctx->mode == TMM_MODE_UVM) {
		s->device_in_use = ctx->c.uvm_resident;
		s->device_peak = ctx->c.uvm_resident_peak;
	}
	s->pool_largest_free = ps.largest_free;
	s->pool_fragmentation = ps.fragmentation;
	s->host_in_use = c->host_in_use;
	s->host_pinned = hs.in_use + hs.cached;
	s->swap_out_count = c->swap_out_count;
	s->swap_out_bytes = c->swap_out_bytes;
	s->clean_evictions = c->clean_evictions;
	s->clean_eviction_bytes = c->clean_eviction_bytes;
	s->swap_in_count = c->swap_in_count;
	s->swap_in_bytes = c->swap_in_bytes;
	s->passive_evictions = c->passive_evictions;
	s->passive_eviction_bytes = c->passive_eviction_bytes;
	s->on_demand_swap_ins = c->on_demand_swap_ins;
	s->swap_out_waits = c->swap_out_waits;
	s->stall_ns = c->stall_ns;
	s->ops = c->ops;
	s->accesses = c->accesses;
	s->iterations = c->iterations;
	s->last_iteration_ns = c->last_iteration_ns;
	s->elapsed_ns = ctx->be.ops->now_ns(&ctx->be) - ctx->created_ns;
	s->compute_ns = c->compute_ns;
	s->drops = c->drops;
	s->drop_bytes = c->drop_bytes;
	s->recomputations = c->recomputations;
	s->recomputed_bytes = c->recomputed_bytes;
	s->recompute_ns = c->recompute_ns;
	s->plan_actions = c->plan_actions;
	s->plan_actions_skipped = c->plan_actions_skipped;
	s->guided_iterations = c->guided_iterations;
	s->plan_divergences = c->plan_divergences;
	s->prefetch_late = c->prefetch_late;
	s->prefetch_wait_ns = c->prefetch_wait_ns;
	s->dead_discards = c->dead_discards;
	s->dead_discard_bytes = c->dead_discard_bytes;
	s->plans_made = c->plans_made;
	s->plan_ns = c->plan_ns;
	s->prefetches = c->prefetches;
	s->guided_passive_evictions = c->guided_passive_evictions;
	s->compaction_moves = c->compaction_moves;
	s->compaction_bytes = c->compaction_bytes;
	s->plan_state = tmm_guide_state(ctx);
	s->uvm_fault_batches = c->uvm_fault_batches;
	s->uvm_faults = c->uvm_faults;
	s->uvm_fault_bytes = c->uvm_fault_bytes;
	s->uvm_prefetch_bytes = c->uvm_prefetch_bytes;
	s->uvm_evictions = c->uvm_evictions;
	s->uvm_eviction_bytes = c->uvm_eviction_bytes;
	s->uvm_remote_bytes = c->uvm_remote_bytes;
	s->uvm_discard_bytes = c->uvm_discard_bytes;
	s->uvm_fault_ns = c->uvm_fault_ns;
	s->uvm_driver_counted = ctx->mode == TMM_MODE_UVM &&
				ctx->be.info.managed_counted;
	s->link_h2d_mbps = mbps(ctx->be.info.h2d_gbps);
	s->link_d2h_mbps = mbps(ctx->be.info.d2h_gbps);
	s->uvm_prefetch_h2d_mbps = mbps(ctx->be.info.uvm_prefetch_h2d_gbps);
	s->uvm_prefetch_d2h_mbps = mbps(ctx->be.info.uvm_prefetch_d2h_gbps);
	s->uvm_prefetch_out_bytes = c->uvm_prefetch_out_bytes;
	s->uvm_migrate_out_bytes = c->uvm_migrate_out_bytes;
	s->uvm_migrate_in_bytes = c->uvm_migrate_in_bytes;
	s->uvm_kernel_copy_bytes = c->uvm_kernel_copy_bytes;
	s->uvm_kernel_copy_h2d_mbps = mbps(ctx->be.info.kernel_copy_h2d_gbps);
	s->uvm_kernel_copy_d2h_mbps = mbps(ctx->be.info.kernel_copy_d2h_gbps);
	s->uvm_kernel_copy_blocks = ctx->be.info.kernel_copy_blocks;
	s->share_reservation = tmm_share_reservation(ctx);
	s->share_budget_changes = c->share_budget_changes;
	s->split_ops = c->split_ops;
	s->micro_ops = c->micro_ops;
	s->split_fallbacks = c->split_fallbacks;
	s->device_mapped = ps.mapped;
	s->device_mapped_peak = ps.mapped_peak;
	s->uvm_held = ctx->uvm_held;
	s->uvm_held_peak = ctx->uvm_held_peak;
	if (ctx->uvm_arena) {
		struct tmm_uvm_arena_stats as;

		tmm_uvm_arena_get_stats(ctx->uvm_arena, &as);
		s->uvm_kept = as.kept;
		s->uvm_kept_hits = as.kept_hits;
	}
	return 0;
}

struct printer {
	tmm_write_fn write;
	void *arg;
};

static void emit(struct printer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void emit(struct printer *p, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	p->write(p->arg, line, (size_t)n);
}

static void write_stderr(void *arg, const char *text, size_t len)
{
	(void)arg;
	fwrite(text, 1, len, stderr);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

const char *tmm_plan_state_name(uint32_t state)
{
	switch (state) {
	case TMM_PLAN_MEASURING:
		return "measuring";
	case TMM_PLAN_GUIDED:
		return "guided";
	case TMM_PLAN_DIVERGED:
		return "diverged";
	}
	return "unknown";
}

static void print_text(struct printer *p, const struct tmm_stats *s)
{
	char a[32], b[32], c[32], d[32], e[32];
	const char *time_kind = s->simulated ? "simulated" : "measured";

	emit(p, "tensormm statistics — %s backend, %s device %d%s, mode "
		"%s\n",
	     s->backend, s->device, (int)s->device_index,
	     s->simulated ? " (SIMULATED: virtual times on this profile)" : "",
	     s->mode);
	emit(p, "  device    capacity %s, budget %s, in use %s, peak %s\n",
	     tmm_fmt_bytes(s->device_capacity, a, sizeof(a)),
	     tmm_fmt_bytes(s->budget, b, sizeof(b)),
	     tmm_fmt_bytes(s->device_in_use, c, sizeof(c)),
	     tmm_fmt_bytes(s->device_peak, d, sizeof(d)));
	/* In uvm mode the device pool stands idle: each tensor is
	 * managed memory, and the uvm line below says where its pages
	 * are.  Pinned buffers hold the tensors evicted by copy
	 * (uvm_swap_path). */
	if (strcmp(s->mode, "uvm") != 0)
		emit(p, "  pool      largest free block %s, fragmentation "
			"%.1f%%; %llu tensors moved (%s) to make holes\n",
		     tmm_fmt_bytes(s->pool_largest_free, a, sizeof(a)),
		     100.0 * s->pool_fragmentation,
		     (unsigned long long)s->compaction_moves,
		     tmm_fmt_bytes(s->compaction_bytes, b, sizeof(b)));
	if (s->device_mapped_peak)
		emit(p, "  chunks    mapped %s, peak %s (pool=chunks)\n",
		     tmm_fmt_bytes(s->device_mapped, a, sizeof(a)),
		     tmm_fmt_bytes(s->device_mapped_peak, b, sizeof(b)));
	emit(p, "  host      tensors in pinned buffers %s, pinned held %s%s\n",
	     tmm_fmt_bytes(s->host_in_use, a, sizeof(a)),
	     tmm_fmt_bytes(s->host_pinned, b, sizeof(b)),
	     strcmp(s->mode, "uvm") == 0 ? " (managed pages on the host: "
					   "the uvm line)" : "");
	emit(p, "  swap out  %llu (%s), of which passive %llu (%s); "
		"waits on pending swap-outs %llu\n",
	     (unsigned long long)s->swap_out_count,
	     tmm_fmt_bytes(s->swap_out_bytes, a, sizeof(a)),
	     (unsigned long long)s->passive_evictions,
	     tmm_fmt_bytes(s->passive_eviction_bytes, b, sizeof(b)),
	     (unsigned long long)s->swap_out_waits);
	/* What the planners price a move at, beside which way the moves
	 * of mode=uvm went: a prefetch to the host may be far slower than
	 * a copy (docs/gpu-h100.md). */
	emit(p, "  link      copies %.1f GB/s in, %.1f out; prefetches "
		"%.1f in, %.1f out%s\n",
	     s->link_h2d_mbps / 1e3, s->link_d2h_mbps / 1e3,
	     s->uvm_prefetch_h2d_mbps / 1e3, s->uvm_prefetch_d2h_mbps / 1e3,
	     s->simulated ? " (the profile's)"
			  : " (measured at open where they could be)");
	if (strcmp(s->mode, "uvm") == 0)
		emit(p, "  way out   %s of the swap-outs by prefetch to the "
			"host, the rest by pinned copy (uvm_swap_path)\n",
		     tmm_fmt_bytes(s->uvm_prefetch_out_bytes, a, sizeof(a)));
	if (s->uvm_migrate_out_bytes || s->uvm_migrate_in_bytes)
		emit(p, "  migrate   %s out and %s back by prefetch on the "
			"migrate stream, beside the copies (uvm_swap_path="
			"mix)\n",
		     tmm_fmt_bytes(s->uvm_migrate_out_bytes, a, sizeof(a)),
		     tmm_fmt_bytes(s->uvm_migrate_in_bytes, b, sizeof(b)));
	if (s->uvm_kernel_copy_bytes)
		emit(p, "  copier    %s copied to and from managed memory by "
			"the library's copy kernel (uvm_copier=kernel), at "
			"%.1f GB/s in, %.1f out%s\n",
		     tmm_fmt_bytes(s->uvm_kernel_copy_bytes, a, sizeof(a)),
		     s->uvm_kernel_copy_h2d_mbps / 1e3,
		     s->uvm_kernel_copy_d2h_mbps / 1e3,
		     s->simulated ? " (sim_copy_kernel_gbps, or the "
				    "profile's)"
				  : " (measured at open where it could be)");
	if (s->uvm_kernel_copy_blocks)
		emit(p, "            at most %llu blocks a copy "
			"(uvm_copier_blocks)\n",
		     (unsigned long long)s->uvm_kernel_copy_blocks);
	if (s->clean_evictions)
		emit(p, "  clean     %llu evictions (%s) copied nothing: the "
			"host held their bytes\n",
		     (unsigned long long)s->clean_evictions,
		     tmm_fmt_bytes(s->clean_eviction_bytes, a, sizeof(a)));
	if (s->dead_discards)
		emit(p, "  dead      %llu evictions (%s) dropped bytes no one "
			"reads again (liveness=discard)\n",
		     (unsigned long long)s->dead_discards,
		     tmm_fmt_bytes(s->dead_discard_bytes, a, sizeof(a)));
	emit(p, "  swap in   %llu (%s), of which on demand %llu\n",
	     (unsigned long long)s->swap_in_count,
	     tmm_fmt_bytes(s->swap_in_bytes, a, sizeof(a)),
	     (unsigned long long)s->on_demand_swap_ins);
	emit(p, "  recompute %llu drops (%s), %llu ops re-run regenerating "
		"%s\n",
	     (unsigned long long)s->drops,
	     tmm_fmt_bytes(s->drop_bytes, a, sizeof(a)),
	     (unsigned long long)s->recomputations,
	     tmm_fmt_bytes(s->recomputed_bytes, b, sizeof(b)));
	emit(p, "  plan      %llu of %llu iterations guided, %llu left their "
		"plan; actions %llu carried out, %llu skipped; %llu "
		"prefetches late, compute waited %.3f ms for them\n",
	     (unsigned long long)s->guided_iterations,
	     (unsigned long long)s->iterations,
	     (unsigned long long)s->plan_divergences,
	     (unsigned long long)s->plan_actions,
	     (unsigned long long)s->plan_actions_skipped,
	     (unsigned long long)s->prefetch_late, ms(s->prefetch_wait_ns));
	emit(p, "  planner   state %s, %llu plans made, the last in %.3f ms "
		"(host time); %llu prefetches issued; %llu passive "
		"evictions in guided iterations\n",
	     tmm_plan_state_name(s->plan_state), (unsigned long long)s->plans_made,
	     ms(s->plan_ns), (unsigned long long)s->prefetches,
	     (unsigned long long)s->guided_passive_evictions);
	if (strcmp(s->mode, "uvm") == 0)
		emit(p, "  held      the library counts %s of pages on the "
			"device, peak %s; %s kept for the next tensor of "
			"their size, %llu allocations served so\n",
		     tmm_fmt_bytes(s->uvm_held, a, sizeof(a)),
		     tmm_fmt_bytes(s->uvm_held_peak, b, sizeof(b)),
		     tmm_fmt_bytes(s->uvm_kept, c, sizeof(c)),
		     (unsigned long long)s->uvm_kept_hits);
	if (strcmp(s->mode, "uvm") == 0)
		emit(p, "  uvm       %llu fault batches, %llu faults "
			"migrating %s; prefetched %s; %llu evictions "
			"writing back %s; remote %s; discarded %s\n",
		     (unsigned long long)s->uvm_fault_batches,
		     (unsigned long long)s->uvm_faults,
		     tmm_fmt_bytes(s->uvm_fault_bytes, a, sizeof(a)),
		     tmm_fmt_bytes(s->uvm_prefetch_bytes, b, sizeof(b)),
		     (unsigned long long)s->uvm_evictions,
		     tmm_fmt_bytes(s->uvm_eviction_bytes, c, sizeof(c)),
		     tmm_fmt_bytes(s->uvm_remote_bytes, d, sizeof(d)),
		     tmm_fmt_bytes(s->uvm_discard_bytes, e, sizeof(e)));
	if (strcmp(s->mode, "uvm") == 0 && s->uvm_driver_counted)
		emit(p, "  faults    the driver spent %.3f ms servicing "
			"device page faults%s\n",
		     ms(s->uvm_fault_ns),
		     s->simulated ? "" : " (CUPTI's unified-memory counters, "
					 "as of the last iteration's end)");
	else if (strcmp(s->mode, "uvm") == 0)
		emit(p, "  faults    the driver's own migrations and faults "
			"are not known here (see the log at open): the uvm "
			"line's fault, prefetch and eviction figures read "
			"0\n");
	if (s->share_reservation)
		emit(p, "  share     reservation %s of the shared device, "
			"moved %llu times\n",
		     tmm_fmt_bytes(s->share_reservation, a, sizeof(a)),
		     (unsigned long long)s->share_budget_changes);
	emit(p, "  ops       %llu ops, %llu tensor accesses, %llu "
		"iterations; %llu split into %llu micro-ops, %llu "
		"fallbacks\n",
	     (unsigned long long)s->ops, (unsigned long long)s->accesses,
	     (unsigned long long)s->iterations,
	     (unsigned long long)s->split_ops,
	     (unsigned long long)s->micro_ops,
	     (unsigned long long)s->split_fallbacks);
	emit(p, "  time      (%s) elapsed %.3f ms, compute %.3f ms, "
		"recompute %.3f ms, stall %.3f ms, last iteration %.3f ms\n",
	     time_kind, ms(s->elapsed_ns), ms(s->compute_ns),
	     ms(s->recompute_ns), ms(s->stall_ns), ms(s->last_iteration_ns));
}

/* The integer fields of struct tmm_stats, in JSON order: one table, so a
 * field added to the struct is added here once. */
#define U64_FIELD(f) { #f, offsetof(struct tmm_stats, f) }
static const struct {
	const char *name;
	size_t offset;
} json_u64_fields[] = {
	U64_FIELD(device_capacity),   U64_FIELD(budget),
	U64_FIELD(device_in_use),     U64_FIELD(device_peak),
	U64_FIELD(pool_largest_free), U64_FIELD(host_in_use),
	U64_FIELD(host_pinned),	      U64_FIELD(swap_out_count),
	U64_FIELD(swap_out_bytes),    U64_FIELD(swap_in_count),
	U64_FIELD(swap_in_bytes),     U64_FIELD(passive_evictions),
	U64_FIELD(passive_eviction_bytes), U64_FIELD(on_demand_swap_ins),
	U64_FIELD(swap_out_waits),    U64_FIELD(stall_ns),
	U64_FIELD(ops),		      U64_FIELD(accesses),
	U64_FIELD(iterations),	      U64_FIELD(last_iteration_ns),
	U64_FIELD(elapsed_ns),	      U64_FIELD(compute_ns),
	U64_FIELD(drops),	      U64_FIELD(drop_bytes),
	U64_FIELD(recomputations),    U64_FIELD(recomputed_bytes),
	U64_FIELD(recompute_ns),      U64_FIELD(plan_actions),
	U64_FIELD(plan_actions_skipped), U64_FIELD(guided_iterations),
	U64_FIELD(plan_divergences),  U64_FIELD(prefetch_late),
	U64_FIELD(plans_made),	      U64_FIELD(plan_ns),
	U64_FIELD(prefetches),	      U64_FIELD(guided_passive_evictions),
	U64_FIELD(compaction_moves),  U64_FIELD(compaction_bytes),
	U64_FIELD(uvm_fault_batches), U64_FIELD(uvm_faults),
	U64_FIELD(uvm_fault_bytes),   U64_FIELD(uvm_prefetch_bytes),
	U64_FIELD(uvm_evictions),     U64_FIELD(uvm_eviction_bytes),
	U64_FIELD(uvm_remote_bytes),  U64_FIELD(uvm_discard_bytes),
	U64_FIELD(share_reservation), U64_FIELD(share_budget_changes),
	U64_FIELD(split_ops),	      U64_FIELD(micro_ops),
	U64_FIELD(split_fallbacks),   U64_FIELD(device_mapped),
	U64_FIELD(device_mapped_peak), U64_FIELD(uvm_held),
	U64_FIELD(uvm_held_peak),     U64_FIELD(clean_evictions),
	U64_FIELD(clean_eviction_bytes), U64_FIELD(prefetch_wait_ns),
	U64_FIELD(dead_discards),     U64_FIELD(dead_discard_bytes),
	U64_FIELD(uvm_kept),	      U64_FIELD(uvm_kept_hits),
	U64_FIELD(uvm_fault_ns),      U64_FIELD(link_h2d_mbps),
	U64_FIELD(link_d2h_mbps),     U64_FIELD(uvm_prefetch_h2d_mbps),
	U64_FIELD(uvm_prefetch_d2h_mbps), U64_FIELD(uvm_prefetch_out_bytes),
	U64_FIELD(uvm_migrate_out_bytes), U64_FIELD(uvm_migrate_in_bytes),
	U64_FIELD(uvm_kernel_copy_bytes), U64_FIELD(uvm_kernel_copy_h2d_mbps),
	U64_FIELD(uvm_kernel_copy_d2h_mbps), U64_FIELD(uvm_kernel_copy_blocks),
};

static void print_json(struct printer *p, const struct tmm_stats *s)
{
	/* Names and values come from the library, never from users, and
	 * hold no characters that JSON would need escaped. */
	emit(p, "{\"version\":%u,\"simulated\":%s,\"backend\":\"%s\","
		"\"device\":\"%s\",\"device_index\":%d,\"mode\":\"%s\","
		"\"plan_state\":\"%s\",\"pool_fragmentation\":%.6f",
	     s->version, s->simulated ? "true" : "false", s->backend,
	     s->device, (int)s->device_index, s->mode,
	     tmm_plan_state_name(s->plan_state),
	     s->pool_fragmentation);
	for (size_t i = 0; i < sizeof(json_u64_fields) /
				       sizeof(json_u64_fields[0]);
	     i++) {
		const uint64_t *v = (const uint64_t *)((const char *)s +
						       json_u64_fields[i].offset);

		emit(p, ",\"%s\":%llu", json_u64_fields[i].name,
		     (unsigned long long)*v);
	}
	emit(p, ",\"uvm_driver_counted\":%s}\n",
	     s->uvm_driver_counted ? "true" : "false");
}

int tmm_stats_get(tmm_ctx *ctx, struct tmm_stats *s)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_STATS_GET);
	int rc;

	if (entered < 0)
		return entered;
	rc = tmm_stats_fill(ctx, s);
	tmm_guard_leave(ctx, entered);
	return rc;
}

int tmm_stats_reset_peak(tmm_ctx *ctx)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_STATS_RESET_PEAK);
	struct tmm_managed_stats st;

	if (entered < 0)
		return entered;
	tmm_pool_reset_peak(ctx->pool);
	if (ctx->mode == TMM_MODE_UVM &&
	    ctx->be.ops->managed_stats(&ctx->be, &st) == 0) {
		ctx->uvm_peak_mark = st.resident_peak;
		ctx->c.uvm_resident = st.resident;
		ctx->c.uvm_resident_peak = st.resident;
	}
	ctx->uvm_held_peak = ctx->uvm_held;
	/* Where the driver does not count pages, the library's count stands
	 * in (device_mem.c): from the mark just set. */
	if (ctx->mode == TMM_MODE_UVM)
		tmm_uvm_sync_counters(ctx);
	tmm_guard_leave(ctx, entered);
	return 0;
}

int tmm_stats_print(tmm_ctx *ctx, tmm_write_fn write, void *arg,
		    unsigned opts)
{
	struct printer p = { write ? write : write_stderr, arg };
	struct tmm_stats s = { .version = TMM_STATS_VERSION };
	int entered = tmm_guard_enter(ctx, TMM_CALL_STATS_PRINT);
	int rc;

	if (entered < 0)
		return entered;
	rc = tmm_stats_fill(ctx, &s);
	/* The context is let go before `write` runs: it prints a copy, and
	 * the caller's function may call into the context like any other
	 * code. */
	tmm_guard_leave(ctx, entered);
	if (rc < 0)
		return rc;
	if (opts & TMM_STATS_JSON)
		print_json(&p, &s);
	else
		print_text(&p, &s);
	return 0;
}
