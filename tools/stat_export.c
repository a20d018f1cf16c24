/* SPDX-License-Identifier: MIT */
/*
 * stat_export.c — `tensormm-stat export TRACE`: a trace file as the
 * Chrome/Perfetto JSON trace format ("Trace Event Format"), so that a
 * run can be looked at in ui.perfetto.dev or chrome://tracing next to
 * other tools' traces.
 *
 * One process holds the whole run, iterations laid end to end: each
 * starts where the one before ended (its measured duration), so the
 * time axis reads as the run's own, and Perfetto's search and selection
 * work across iterations.  Its tracks (threads):
 *
 *   iterations  each iteration as a complete event
 *   compute     each op as a complete event, at its measured start
 *   H2D, D2H    swap-ins and swap-outs, as instants: the trace records
 *               when a copy started, not when it ended, so a duration
 *               would be made up
 *   runtime     passive evictions, drops, recomputations, a divergence
 *               from the plan, clean swap-outs (no copy: the host held
 *               the bytes)
 *   network     each collective (TMM_OP_COLLECTIVE) as a complete event,
 *               with the bytes it sent: it holds the network link, and a
 *               track of its own shows what overlaps it; the compute
 *               stream waits for it all the same (docs/sim-network.md)
 *
 * and two counters: the runtime's device bytes in use after each access,
 * and the budget.  Times are microseconds, as the format wants.
 *
 * The trace's op and access times are ideal (stalls removed); events'
 * are measured.  So that both sit on one axis, an op's measured start is
 * rebuilt as docs/trace-format.md says: its ideal start plus the stall
 * of every op up to and including it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stat.h"
#include "tensormm.h"
#include "lib/io/trace.h"
#include "lib/io/trace_read.h"

/* Track ids (the format's tid), in the order they are shown. */
enum track {
	TR_ITERATIONS = 1,
	TR_COMPUTE,
	TR_H2D,
	TR_D2H,
	TR_RUNTIME,
	TR_NETWORK, /* last, so that the older tracks keep their ids */
};

static const char *const track_names[] = {
	[TR_ITERATIONS] = "iterations", [TR_COMPUTE] = "compute",
	[TR_H2D] = "H2D",		[TR_D2H] = "D2H",
	[TR_RUNTIME] = "runtime",	[TR_NETWORK] = "network",
};

static const char *const event_names[TMM_EV_KIND_COUNT] = {
	[TMM_EV_SWAP_OUT] = "swap-out",
	[TMM_EV_SWAP_IN] = "swap-in",
	[TMM_EV_PASSIVE_EVICT] = "passive eviction",
	[TMM_EV_DROP] = "drop",
	[TMM_EV_RECOMPUTE] = "recompute",
	[TMM_EV_DIVERGED] = "left the plan",
	[TMM_EV_FREED] = "freed",
};

/* The output: a stream, and whether an event was written (commas). */
struct out {
	FILE *f;
	bool first;
};

/* Starts an event: the comma, and the fields every event has. */
static void begin_event(struct out *o, const char *ph, int tid, double us)
{
	fprintf(o->f, "%s\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":%.3f",
		o->first ? "" : ",", ph, tid, us);
	o->first = false;
}

static void metadata(struct out *o, const char *what, int tid,
		     const char *key, const char *value, long number)
{
	fprintf(o->f, "%s\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"%s\","
		"\"args\":{\"%s\":", o->first ? "" : ",", tid, what, key);
	o->first = false;
	if (value)
		stat_json_string(o->f, value, SIZE_MAX);
	else
		fprintf(o->f, "%ld", number);
	fputs("}}", o->f);
}

static void header(struct out *o, const char *path,
		   const struct tmm_trace_file_info *info)
{
	char name[256];

	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"trace\":", o->f);
	stat_json_string(o->f, path, SIZE_MAX);
	fprintf(o->f, ",\"format\":%u,\"backend\":", info->version);
	stat_json_string(o->f, info->backend, sizeof(info->backend));
	fputs(",\"device\":", o->f);
	stat_json_string(o->f, info->device, sizeof(info->device));
	fputs(",\"mode\":", o->f);
	stat_json_string(o->f, info->mode, sizeof(info->mode));
	fputs(",\"policy\":", o->f);
	stat_json_string(o->f, info->policy, sizeof(info->policy));
	fprintf(o->f, ",\"simulated\":%s,\"budget\":%" PRIu64
		",\"device_capacity\":%" PRIu64 "},\"traceEvents\":[",
		info->simulated ? "true" : "false", info->budget,
		info->device_capacity);
	snprintf(name, sizeof(name), "libtensormm %.16s on %.48s, mode %.8s, "
		 "policy %.32s%s", info->backend, info->device, info->mode,
		 info->policy, info->simulated ? " (SIMULATED times)" : "");
	metadata(o, "process_name", 0, "name", name, 0);
	for (int t = TR_ITERATIONS; t <= TR_NETWORK; t++) {
		metadata(o, "thread_name", t, "name", track_names[t], 0);
		metadata(o, "thread_sort_index", t, "sort_index", NULL, t);
	}
}

static double us(double base_us, uint64_t ns)
{
	return base_us + (double)ns / 1e3;
}

static void counter(struct out *o, const char *name, double at_us,
		    uint64_t bytes)
{
	begin_event(o, "C", 0, at_us);
	fprintf(o->f, ",\"name\":\"%s\",\"args\":{\"bytes\":%" PRIu64 "}}",
		name, bytes);
}

static void op_event(struct out *o, const struct tmm_trace *t, uint32_t i,
		     double start_us)
{
	const struct tmm_trace_op *op = &t->ops[i];
	bool net = op->kind == TMM_OP_COLLECTIVE;

	begin_event(o, "X", net ? TR_NETWORK : TR_COMPUTE, start_us);
	fprintf(o->f, ",\"dur\":%.3f,\"cat\":\"%s\",\"name\":",
		(double)(op->end_ns - op->begin_ns) / 1e3,
		net ? "collective" : "op");
	stat_json_string(o->f, tmm_trace_str(t, op->name), SIZE_MAX);
	fprintf(o->f, ",\"args\":{\"op\":%" PRIu32 ",\"kind\":\"%s\","
		"\"stall_us\":%.3f,\"backward\":%s,\"recomputable\":%s,"
		"\"split\":%s,\"inputs\":%u,\"outputs\":%u,\"flops\":%.17g,"
		"\"bytes\":%.17g,\"net_bytes\":%.17g}}", i,
		stat_op_kind_name(op->kind),
		(double)op->stall_ns / 1e3,
		op->flags & TMM_OP_BACKWARD ? "true" : "false",
		op->flags & TMM_OP_PURE ? "true" : "false",
		op->flags & TMM_TRACE_OP_SPLIT ? "true" : "false",
		op->n_inputs, op->n_outputs, op->flops, op->bytes,
		op->net_bytes);
}

static void runtime_event(struct out *o, const struct tmm_trace *t,
			  const struct tmm_trace_event *ev, double base_us)
{
	bool clean = ev->kind == TMM_EV_SWAP_OUT && (ev->flags & TMM_EVF_CLEAN);
	bool dead = ev->kind == TMM_EV_DROP && (ev->flags & TMM_EVF_DEAD);
	/* A clean swap-out copies nothing: not on the copy engine's track. */
	int tid = ev->kind == TMM_EV_SWAP_IN		  ? TR_H2D
		  : ev->kind == TMM_EV_SWAP_OUT && !clean ? TR_D2H
							  : TR_RUNTIME;
	const struct tmm_trace_tensor *tt =
		ev->tensor != TMM_TRACE_NONE ? &t->tensors[ev->tensor] : NULL;
	const char *tname = tt ? tmm_trace_str(t, tt->name) : "";
	char name[128];

	snprintf(name, sizeof(name), "%s%s%.96s",
		 clean  ? "clean swap-out"
		 : dead ? "dead discard"
			: event_names[ev->kind],
		 *tname ? " " : "", tname);
	begin_event(o, "i", tid, us(base_us, ev->at_ns));
	fputs(",\"s\":\"t\",\"cat\":\"", o->f);
	fputs(tid == TR_RUNTIME ? "runtime\"" : "copy\"", o->f);
	fputs(",\"name\":", o->f);
	stat_json_string(o->f, name, SIZE_MAX);
	fputs(",\"args\":{", o->f);
	if (tt) {
		fputs("\"tensor\":", o->f);
		stat_json_string(o->f, tname, SIZE_MAX);
		fprintf(o->f, ",\"bytes\":%" PRIu64 ",\"kind\":\"%s\","
			"\"key\":\"0x%" PRIx64 "\"", tt->bytes,
			stat_tensor_kind_name(tt->kind),
			tt->key);
	}
	fputs("}}", o->f);
}

/*
 * One iteration, starting at base_us.  Returns 0 or -ENOMEM.
 */
static int iteration(struct out *o, const struct tmm_trace *t,
		     const struct tmm_trace_file_info *info, double base_us)
{
	uint64_t *cum = NULL, stall = 0, last_in_use = UINT64_MAX;

	begin_event(o, "X", TR_ITERATIONS, base_us);
	fprintf(o->f, ",\"dur\":%.3f,\"cat\":\"iteration\",\"name\":"
		"\"iteration %" PRIu64 "\",\"args\":{\"iteration\":%" PRIu64
		",\"stall_us\":%.3f,\"ops\":%u,\"accesses\":%u}}",
		(double)t->duration_ns / 1e3, t->iteration, t->iteration,
		(double)t->stall_ns / 1e3, t->n_ops, t->n_accesses);
	counter(o, "budget", base_us, info->budget);

	/* cum[i]: the stall built up by the time op i started. */
	if (t->n_ops) {
		cum = malloc(t->n_ops * sizeof(*cum));
		if (!cum)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->n_ops; i++) {
		stall += t->ops[i].stall_ns;
		cum[i] = stall;
		op_event(o, t, i, us(base_us, t->ops[i].begin_ns + cum[i]));
	}
	/* Device bytes in use, where they change; an access of
	 * tmm_acquire (no op) takes the stall of the op before it. */
	stall = 0;
	for (uint32_t a = 0; a < t->n_accesses; a++) {
		const struct tmm_trace_access *x = &t->accesses[a];

		if (x->op != TMM_TRACE_NONE)
			stall = cum[x->op];
		if (x->device_in_use == last_in_use)
			continue;
		last_in_use = x->device_in_use;
		counter(o, "device bytes in use",
			us(base_us, x->end_ns + stall), x->device_in_use);
	}
	for (uint32_t e = 0; e < t->n_events; e++)
		if (t->events[e].kind != TMM_EV_FREED)
			runtime_event(o, t, &t->events[e], base_us);
	free(cum);
	return 0;
}

/* Fails an export: the message, and no half-written file left behind
 * (a JSON file cut short loads nowhere). */
static int fail(struct out *o, const char *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct out *o, const char *out, const char *fmt, ...)
{
	va_list ap;
	char msg[1200];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	stat_error("%s", msg);
	if (o->f && o->f != stdout) {
		fclose(o->f);
		unlink(out);
	}
	o->f = NULL;
	return STAT_FAILED;
}

int stat_export(const char *path, const char *out, unsigned long only)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace t;
	struct out o = { NULL, true };
	double base_us = 0;
	unsigned long written = 0;
	char err[1024];
	int rc, status;

	status = stat_trace_open(path, &r, &info);
	if (status)
		return status;
	o.f = strcmp(out, "-") ? fopen(out, "w") : stdout;
	if (!o.f) {
		stat_error("cannot write %s: %s", out, strerror(errno));
		tmm_trace_reader_close(r);
		return STAT_FAILED;
	}
	header(&o, path, &info);
	while ((rc = tmm_trace_reader_next(r, &t, err, sizeof(err))) == 1) {
		if (only && t.iteration != only) {
			tmm_trace_free(&t);
			continue;
		}
		rc = iteration(&o, &t, &info, base_us);
		base_us += (double)t.duration_ns / 1e3;
		tmm_trace_free(&t);
		written++;
		if (rc < 0 || only)
			break;
	}
	tmm_trace_reader_close(r);
	if (rc < 0 && rc != -ENOMEM) {
		stat_trace_fail(path, rc, err);
		return fail(&o, out, "%s: nothing exported",
			    strcmp(out, "-") ? out : "stdout");
	}
	if (rc == -ENOMEM)
		return fail(&o, out, "out of memory exporting %s", path);
	if (only && !written)
		return fail(&o, out, "%s has no iteration %lu; `tensormm-stat "
			    "report %s` lists the iterations it holds", path,
			    only, path);
	fputs("\n]}\n", o.f);
	/* A write that failed on the way leaves the stream's error set. */
	if (ferror(o.f) | (o.f == stdout ? fflush(o.f) : fclose(o.f))) {
		stat_error("cannot write %s: %s", out, strerror(errno));
		if (o.f != stdout)
			unlink(out);
		return STAT_FAILED;
	}
	return STAT_OK;
}
