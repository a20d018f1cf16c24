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
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "hostmem.h"
#include "pool.h"

int tmm_stats_get(tmm_ctx *ctx, struct tmm_stats *s)
{
	struct tmm_pool_stats ps;
	struct tmm_hostmem_stats hs;
	const struct tmm_counters *c;

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	if (!s || s->version != TMM_STATS_VERSION)
		return tmm_fail(ctx, -EINVAL,
				"tmm_stats_get: set s->version to "
				"TMM_STATS_VERSION (%d)", TMM_STATS_VERSION);
	c = &ctx->c;
	tmm_pool_get_stats(ctx->pool, &ps);
	tmm_hostmem_get_stats(ctx->hostmem, &hs);
	memset(s, 0, sizeof(*s));
	s->version = TMM_STATS_VERSION;
	s->simulated = ctx->be.info.simulated;
	snprintf(s->backend, sizeof(s->backend), "%s", ctx->be.ops->name);
	snprintf(s->device, sizeof(s->device), "%s", ctx->be.info.name);
	snprintf(s->mode, sizeof(s->mode), "%s",
		 ctx->mode == TMM_MODE_UVM ? "uvm" : "swap");
	s->device_capacity = ctx->be.info.capacity;
	s->budget = ctx->budget;
	s->device_in_use = ps.in_use;
	s->device_peak = ps.peak;
	s->pool_largest_free = ps.largest_free;
	s->pool_fragmentation = ps.fragmentation;
	s->host_in_use = c->host_in_use;
	s->host_pinned = hs.in_use + hs.cached;
	s->swap_out_count = c->swap_out_count;
	s->swap_out_bytes = c->swap_out_bytes;
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

static void print_text(struct printer *p, const struct tmm_stats *s)
{
	char a[32], b[32], c[32], d[32];
	const char *time_kind = s->simulated ? "simulated" : "measured";

	emit(p, "tensormm statistics — %s backend, %s%s, mode %s\n",
	     s->backend, s->device,
	     s->simulated ? " (SIMULATED: virtual times on this profile)" : "",
	     s->mode);
	emit(p, "  device    capacity %s, budget %s, in use %s, peak %s\n",
	     tmm_fmt_bytes(s->device_capacity, a, sizeof(a)),
	     tmm_fmt_bytes(s->budget, b, sizeof(b)),
	     tmm_fmt_bytes(s->device_in_use, c, sizeof(c)),
	     tmm_fmt_bytes(s->device_peak, d, sizeof(d)));
	emit(p, "  pool      largest free block %s, fragmentation %.1f%%\n",
	     tmm_fmt_bytes(s->pool_largest_free, a, sizeof(a)),
	     100.0 * s->pool_fragmentation);
	emit(p, "  host      tensors %s, pinned held %s\n",
	     tmm_fmt_bytes(s->host_in_use, a, sizeof(a)),
	     tmm_fmt_bytes(s->host_pinned, b, sizeof(b)));
	emit(p, "  swap out  %llu (%s), of which passive %llu (%s); "
		"waits on pending swap-outs %llu\n",
	     (unsigned long long)s->swap_out_count,
	     tmm_fmt_bytes(s->swap_out_bytes, a, sizeof(a)),
	     (unsigned long long)s->passive_evictions,
	     tmm_fmt_bytes(s->passive_eviction_bytes, b, sizeof(b)),
	     (unsigned long long)s->swap_out_waits);
	emit(p, "  swap in   %llu (%s), of which on demand %llu\n",
	     (unsigned long long)s->swap_in_count,
	     tmm_fmt_bytes(s->swap_in_bytes, a, sizeof(a)),
	     (unsigned long long)s->on_demand_swap_ins);
	emit(p, "  ops       %llu ops, %llu tensor accesses, %llu "
		"iterations\n",
	     (unsigned long long)s->ops, (unsigned long long)s->accesses,
	     (unsigned long long)s->iterations);
	emit(p, "  time      (%s) elapsed %.3f ms, compute %.3f ms, "
		"stall %.3f ms, last iteration %.3f ms\n",
	     time_kind, ms(s->elapsed_ns), ms(s->compute_ns), ms(s->stall_ns),
	     ms(s->last_iteration_ns));
}

static void print_json(struct printer *p, const struct tmm_stats *s)
{
	/* Names and values come from the library, never from users, and
	 * hold no characters that JSON would need escaped. */
	emit(p, "{\"version\":%u,\"simulated\":%s,\"backend\":\"%s\","
		"\"device\":\"%s\",\"mode\":\"%s\",",
	     s->version, s->simulated ? "true" : "false", s->backend,
	     s->device, s->mode);
	emit(p, "\"device_capacity\":%llu,\"budget\":%llu,"
		"\"device_in_use\":%llu,\"device_peak\":%llu,"
		"\"pool_largest_free\":%llu,\"pool_fragmentation\":%.6f,",
	     (unsigned long long)s->device_capacity,
	     (unsigned long long)s->budget,
	     (unsigned long long)s->device_in_use,
	     (unsigned long long)s->device_peak,
	     (unsigned long long)s->pool_largest_free, s->pool_fragmentation);
	emit(p, "\"host_in_use\":%llu,\"host_pinned\":%llu,"
		"\"swap_out_count\":%llu,\"swap_out_bytes\":%llu,"
		"\"swap_in_count\":%llu,\"swap_in_bytes\":%llu,",
	     (unsigned long long)s->host_in_use,
	     (unsigned long long)s->host_pinned,
	     (unsigned long long)s->swap_out_count,
	     (unsigned long long)s->swap_out_bytes,
	     (unsigned long long)s->swap_in_count,
	     (unsigned long long)s->swap_in_bytes);
	emit(p, "\"passive_evictions\":%llu,\"passive_eviction_bytes\":%llu,"
		"\"on_demand_swap_ins\":%llu,\"swap_out_waits\":%llu,"
		"\"stall_ns\":%llu,",
	     (unsigned long long)s->passive_evictions,
	     (unsigned long long)s->passive_eviction_bytes,
	     (unsigned long long)s->on_demand_swap_ins,
	     (unsigned long long)s->swap_out_waits,
	     (unsigned long long)s->stall_ns);
	emit(p, "\"ops\":%llu,\"accesses\":%llu,\"iterations\":%llu,"
		"\"last_iteration_ns\":%llu,\"elapsed_ns\":%llu,"
		"\"compute_ns\":%llu}\n",
	     (unsigned long long)s->ops, (unsigned long long)s->accesses,
	     (unsigned long long)s->iterations,
	     (unsigned long long)s->last_iteration_ns,
	     (unsigned long long)s->elapsed_ns,
	     (unsigned long long)s->compute_ns);
}

int tmm_stats_print(tmm_ctx *ctx, tmm_write_fn write, void *arg,
		    unsigned opts)
{
	struct printer p = { write ? write : write_stderr, arg };
	struct tmm_stats s = { .version = TMM_STATS_VERSION };
	int rc = tmm_stats_get(ctx, &s);

	if (rc < 0)
		return rc;
	if (opts & TMM_STATS_JSON)
		print_json(&p, &s);
	else
		print_text(&p, &s);
	return 0;
}
