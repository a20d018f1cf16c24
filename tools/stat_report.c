/* SPDX-License-Identifier: MIT */
/*
 * stat_report.c — `tensormm-stat report TRACE`: what happened in each
 * recorded iteration, which tensors cost the most, by bytes swapped and
 * by stall time, and where the last iteration's time went, op by op.
 *
 * Tensors are followed across iterations by key (trace.h), so a tensor
 * made afresh each step adds up as one.  Stall time is recorded per op;
 * it is charged to the tensors that were swapped in or recomputed for
 * that op (the events logged just before its accesses), in proportion to
 * their bytes, since it is their bytes the op waited for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stat.h"
#include "tensormm.h"
#include "lib/io/trace.h"
#include "lib/io/trace_read.h"

/* What one tensor cost over the whole file. */
struct cost {
	uint64_t key;
	uint64_t bytes;
	uint32_t kind;
	char name[48];
	uint64_t swap_outs, swap_ins, swapped_bytes;
	double stall_ns;
	bool used;
};

/* Open addressing by key; grows at half full. */
struct costs {
	struct cost *slot;
	size_t cap, len;
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int costs_grow(struct costs *c)
{
	size_t cap = c->cap ? 2 * c->cap : 256;
	struct cost *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!c->slot[i].used)
			continue;
		for (j = hash64(c->slot[i].key) & (cap - 1); slot[j].used;
		     j = (j + 1) & (cap - 1))
			;
		slot[j] = c->slot[i];
	}
	free(c->slot);
	c->slot = slot;
	c->cap = cap;
	return 0;
}

/* The entry of a trace tensor, made on first sight; NULL without memory. */
static struct cost *costs_get(struct costs *c, const struct tmm_trace *t,
			      uint32_t tensor)
{
	const struct tmm_trace_tensor *tt = &t->tensors[tensor];
	size_t j;

	if (2 * (c->len + 1) > c->cap && costs_grow(c) < 0)
		return NULL;
	for (j = hash64(tt->key) & (c->cap - 1); c->slot[j].used;
	     j = (j + 1) & (c->cap - 1))
		if (c->slot[j].key == tt->key)
			return &c->slot[j];
	c->slot[j].used = true;
	c->slot[j].key = tt->key;
	c->slot[j].bytes = tt->bytes;
	c->slot[j].kind = tt->kind;
	snprintf(c->slot[j].name, sizeof(c->slot[j].name), "%s",
		 tmm_trace_str(t, tt->name));
	c->len++;
	return &c->slot[j];
}

static double mib(double bytes)
{
	return bytes / (1024.0 * 1024.0);
}

/* The per-iteration table's columns (-o), in their default order. */
enum report_col {
	RC_ITER, RC_DURATION, RC_STALL, RC_OPS, RC_ACCESSES, RC_PEAK,
	RC_SWAP_OUT, RC_OUT, RC_SWAP_IN, RC_IN, RC_PASSIVE, RC_DROPS,
	RC_RECOMP, RC_DIVERGED, RC_COLL, RC_COLL_MS, RC_NET, RC_CLEAN, RC_DEAD,
	RC_COUNT
};

static const struct stat_column report_cols[RC_COUNT] = {
	[RC_ITER] = { "iter", "", 5, "iteration, 1 for the first", NULL, 0,
		      { NULL, NULL } },
	[RC_DURATION] = { "duration", "ms", 11, "how long it took", NULL, 0,
			  { NULL, NULL } },
	[RC_STALL] = { "stall", "ms", 9, "time spent waiting for copies",
		       NULL, 0, { NULL, NULL } },
	[RC_OPS] = { "ops", "", 6, "ops run", NULL, 0, { NULL, NULL } },
	[RC_ACCESSES] = { "accesses", "", 8, "tensor accesses", NULL, 0,
			  { NULL, NULL } },
	[RC_PEAK] = { "peak", "MiB", 9, "most device bytes in use", NULL, 0,
		      { NULL, NULL } },
	[RC_SWAP_OUT] = { "swap_out", "n", 8, "swap-outs started (copies)",
			  NULL, 0, { NULL, NULL } },
	[RC_OUT] = { "out", "MiB", 8, "their bytes", NULL, 0,
		     { NULL, NULL } },
	[RC_CLEAN] = { "clean", "n", 5, "swap-outs that copied nothing: "
		       "the host held the bytes (a clean copy)", NULL, 0,
		       { NULL, NULL } },
	[RC_SWAP_IN] = { "swap_in", "n", 8, "swap-ins started", NULL, 0,
			 { NULL, NULL } },
	[RC_IN] = { "in", "MiB", 8, "their bytes", NULL, 0, { NULL, NULL } },
	[RC_PASSIVE] = { "passive", "n", 7,
			 "evictions because an allocation did not fit", NULL,
			 0, { NULL, NULL } },
	[RC_DROPS] = { "drops", "n", 5, "tensors dropped for recomputation",
		       NULL, 0, { NULL, NULL } },
	[RC_DEAD] = { "dead", "n", 5, "tensors dropped with no copy, their "
		      "bytes dead (liveness=discard): not in drops", NULL, 0,
		      { NULL, NULL } },
	[RC_RECOMP] = { "recomp", "n", 6, "tensors recomputed", NULL, 0,
			{ NULL, NULL } },
	[RC_DIVERGED] = { "diverged", "", 8, "whether it left its plan",
			  NULL, 0, { NULL, NULL } },
	[RC_COLL] = { "coll", "n", 5, "collectives run (TMM_OP_COLLECTIVE)",
		      NULL, 0, { NULL, NULL } },
	[RC_COLL_MS] = { "coll_time", "ms", 9,
			 "time in collectives, which the compute stream "
			 "waits for", NULL, 0, { NULL, NULL } },
	[RC_NET] = { "net", "MiB", 8, "bytes the collectives sent on the "
		     "network", NULL, 0, { NULL, NULL } },
};

/* Columns added later come last, so the others keep their places. */
static const char report_defaults[] =
	"iter,duration,stall,ops,accesses,peak,swap_out,out,swap_in,in,"
	"passive,drops,recomp,diverged,coll,coll_time,clean,dead";

int stat_report_check_columns(const char *list)
{
	struct stat_selection sel;

	return stat_columns_select(report_cols, RC_COUNT, report_defaults,
				   list, "report -o", &sel);
}

void stat_report_columns_help(FILE *f)
{
	fprintf(f, "Columns of the report's per-iteration table (-o "
		"NAME,...; +NAME,... adds to the defaults).\n");
	stat_columns_help(f, report_cols, RC_COUNT);
	fprintf(f, "Defaults: %s\n", report_defaults);
}

/* Totals of one iteration as a row of the selected columns, and its
 * charges to tensors. */
static int add_iteration(const struct tmm_trace *t, struct costs *c,
			 const struct stat_selection *sel)
{
	char cell[RC_COUNT][32];
	uint64_t n_ev[TMM_EV_KIND_COUNT] = { 0 }, out_b = 0, in_b = 0, n_clean = 0;
	uint64_t n_dead = 0;
	uint64_t peak = 0, coll_ns = 0;
	uint32_t *op_at = NULL, n_coll = 0;
	double net_b = 0;
	int rc = 0;

	/* Collectives: the compute stream waits for each, so their time is
	 * part of the iteration's and is worth its own column. */
	for (uint32_t i = 0; i < t->n_ops; i++)
		if (t->ops[i].kind == TMM_OP_COLLECTIVE) {
			n_coll++;
			coll_ns += t->ops[i].end_ns - t->ops[i].begin_ns;
			net_b += t->ops[i].net_bytes;
		}

	/* op_at[a]: the op whose first access is access a. */
	if (t->n_accesses) {
		op_at = malloc(t->n_accesses * sizeof(*op_at));
		if (!op_at)
			return -ENOMEM;
		for (uint32_t a = 0; a < t->n_accesses; a++)
			op_at[a] = TMM_TRACE_NONE;
	}
	for (uint32_t a = 0; a < t->n_accesses; a++) {
		const struct tmm_trace_access *x = &t->accesses[a];

		if (x->device_in_use > peak)
			peak = x->device_in_use;
		if (x->op != TMM_TRACE_NONE &&
		    (a == 0 || t->accesses[a - 1].op != x->op))
			op_at[a] = x->op;
	}
	for (uint32_t e = 0; e < t->n_events; e++) {
		const struct tmm_trace_event *ev = &t->events[e];
		struct cost *k;

		n_ev[ev->kind]++;
		if (ev->kind == TMM_EV_SWAP_OUT && (ev->flags & TMM_EVF_CLEAN)) {
			/* It left, and nothing was copied. */
			n_ev[ev->kind]--;
			n_clean++;
		}
		if (ev->kind == TMM_EV_DROP && (ev->flags & TMM_EVF_DEAD)) {
			/* Dropped for good: nothing recomputes it. */
			n_ev[ev->kind]--;
			n_dead++;
		}
		if (ev->tensor == TMM_TRACE_NONE)
			continue;
		k = costs_get(c, t, ev->tensor);
		if (!k) {
			rc = -ENOMEM;
			goto out;
		}
		if (ev->kind == TMM_EV_SWAP_OUT && (ev->flags & TMM_EVF_CLEAN)) {
			k->swap_outs++;
		} else if (ev->kind == TMM_EV_SWAP_OUT) {
			k->swap_outs++;
			k->swapped_bytes += t->tensors[ev->tensor].bytes;
			out_b += t->tensors[ev->tensor].bytes;
		} else if (ev->kind == TMM_EV_SWAP_IN) {
			k->swap_ins++;
			k->swapped_bytes += t->tensors[ev->tensor].bytes;
			in_b += t->tensors[ev->tensor].bytes;
		}
	}
	/* Charge each op's stall to what arrived for it, by bytes. */
	for (uint32_t e = 0; e < t->n_events;) {
		uint32_t a = t->events[e].access, end = e, op;
		uint64_t bytes = 0;

		while (end < t->n_events && t->events[end].access == a)
			end++;
		op = a < t->n_accesses ? op_at[a] : TMM_TRACE_NONE;
		if (op != TMM_TRACE_NONE && t->ops[op].stall_ns) {
			for (uint32_t i = e; i < end; i++) {
				const struct tmm_trace_event *ev =
					&t->events[i];

				if (ev->tensor != TMM_TRACE_NONE &&
				    (ev->kind == TMM_EV_SWAP_IN ||
				     ev->kind == TMM_EV_RECOMPUTE))
					bytes += t->tensors[ev->tensor].bytes;
			}
			for (uint32_t i = e; i < end && bytes; i++) {
				const struct tmm_trace_event *ev =
					&t->events[i];
				struct cost *k;

				if (ev->tensor == TMM_TRACE_NONE ||
				    (ev->kind != TMM_EV_SWAP_IN &&
				     ev->kind != TMM_EV_RECOMPUTE))
					continue;
				k = costs_get(c, t, ev->tensor);
				if (k)
					k->stall_ns +=
						(double)t->ops[op].stall_ns *
						(double)t->tensors[ev->tensor]
							.bytes /
						(double)bytes;
			}
		}
		e = end;
	}
#define CELL(col, ...) snprintf(cell[col], sizeof(cell[col]), __VA_ARGS__)
	CELL(RC_ITER, "%" PRIu64, t->iteration);
	CELL(RC_DURATION, "%.3f", t->duration_ns / 1e6);
	CELL(RC_STALL, "%.3f", t->stall_ns / 1e6);
	CELL(RC_OPS, "%u", t->n_ops);
	CELL(RC_ACCESSES, "%u", t->n_accesses);
	CELL(RC_PEAK, "%.3f", mib((double)peak));
	CELL(RC_SWAP_OUT, "%" PRIu64, n_ev[TMM_EV_SWAP_OUT]);
	CELL(RC_CLEAN, "%" PRIu64, n_clean);
	CELL(RC_DEAD, "%" PRIu64, n_dead);
	CELL(RC_OUT, "%.3f", mib((double)out_b));
	CELL(RC_SWAP_IN, "%" PRIu64, n_ev[TMM_EV_SWAP_IN]);
	CELL(RC_IN, "%.3f", mib((double)in_b));
	CELL(RC_PASSIVE, "%" PRIu64, n_ev[TMM_EV_PASSIVE_EVICT]);
	CELL(RC_DROPS, "%" PRIu64, n_ev[TMM_EV_DROP]);
	CELL(RC_RECOMP, "%" PRIu64, n_ev[TMM_EV_RECOMPUTE]);
	CELL(RC_DIVERGED, "%s", n_ev[TMM_EV_DIVERGED] ? "yes" : "no");
	CELL(RC_COLL, "%u", n_coll);
	CELL(RC_COLL_MS, "%.3f", (double)coll_ns / 1e6);
	CELL(RC_NET, "%.3f", mib(net_b));
#undef CELL
	putchar(' ');
	for (size_t i = 0; i < sel->n; i++)
		stat_columns_cell(&report_cols[sel->col[i]],
				  cell[sel->col[i]]);
	putchar('\n');
out:
	free(op_at);
	return rc;
}

static int by_swapped(const void *a, const void *b)
{
	const struct cost *x = a, *y = b;

	if (x->swapped_bytes != y->swapped_bytes)
		return x->swapped_bytes > y->swapped_bytes ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int by_stall(const void *a, const void *b)
{
	const struct cost *x = a, *y = b;

	if (x->stall_ns != y->stall_ns)
		return x->stall_ns > y->stall_ns ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static void print_key(uint64_t key, char *buf, size_t len)
{
	if (key & TMM_KEY_IN_ITERATION)
		snprintf(buf, len, "iter#%" PRIu64,
			 (uint64_t)(key & ~TMM_KEY_IN_ITERATION));
	else
		snprintf(buf, len, "0x%" PRIx64, key);
}

static void print_top(struct cost *list, size_t n, unsigned top,
		      bool stall, bool simulated)
{
	size_t shown = 0;
	char key[32];

	qsort(list, n, sizeof(*list), stall ? by_stall : by_swapped);
	printf("\n# top tensors by %s\n", stall ?
	       (simulated ? "stall time (simulated)" : "stall time") :
	       "swapped bytes (out + in)");
	printf("# %-20s %-18s %-10s %10s %6s %6s %11s %10s\n", "tensor",
	       "key", "kind", "size_MiB", "outs", "ins", "swapped_MiB",
	       "stall_ms");
	for (size_t i = 0; i < n && shown < top; i++) {
		if (stall ? list[i].stall_ns <= 0 : !list[i].swapped_bytes)
			break;
		print_key(list[i].key, key, sizeof(key));
		printf("  %-20.20s %-18s %-10s %10.3f %6" PRIu64 " %6" PRIu64
		       " %11.3f %10.3f\n",
		       list[i].name[0] ? list[i].name : "(unnamed)", key,
		       stat_tensor_kind_name(list[i].kind),
		       mib((double)list[i].bytes),
		       list[i].swap_outs, list[i].swap_ins,
		       mib((double)list[i].swapped_bytes),
		       list[i].stall_ns / 1e6);
		shown++;
	}
	if (!shown)
		printf("  (none)\n");
}

/* The ops of one name in an iteration. */
struct op_time {
	const char *name; /* in the trace's strings */
	uint32_t kind;	  /* one of theirs: a name is one kind of op */
	uint64_t count, ns, stall_ns;
	double flops, bytes; /* their cost hints, summed */
};

static int by_op_name(const void *a, const void *b)
{
	return strcmp(((const struct op_time *)a)->name,
		      ((const struct op_time *)b)->name);
}

static int by_op_time(const void *a, const void *b)
{
	const struct op_time *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Where the last iteration's time went, op name by op name: how many ran,
 * their time in all (on CUDA what the device measured of each, on the
 * simulator its roofline) and its share of the iteration, the mean, the
 * stall before them, and the rates their cost hints say they reached.
 * On the simulator an op reaches its profile's roofline times the
 * efficiency; a GPU's trace beside a simulated one shows which ops the
 * roofline misjudges.  Collectives count their network part too.
 */
static int print_top_ops(const struct tmm_trace *t, unsigned top,
			 bool simulated)
{
	struct op_time *v = calloc(t->n_ops ? t->n_ops : 1, sizeof(*v));
	uint64_t sum = 0;
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	/* One entry an op, sorted by name, then each run of one name
	 * summed into one: n log n however many names a program gives. */
	for (uint32_t i = 0; i < t->n_ops; i++) {
		const struct tmm_trace_op *op = &t->ops[i];
		const char *name = tmm_trace_str(t, op->name);

		v[i] = (struct op_time){
			.name = *name ? name : "(unnamed)",
			.kind = op->kind,
			.count = 1,
			.ns = op->end_ns - op->begin_ns,
			.stall_ns = op->stall_ns,
			.flops = op->flops,
			.bytes = op->bytes,
		};
		sum += v[i].ns;
	}
	qsort(v, t->n_ops, sizeof(*v), by_op_name);
	for (uint32_t i = 0; i < t->n_ops; i++) {
		if (n && strcmp(v[n - 1].name, v[i].name) == 0) {
			v[n - 1].count++;
			v[n - 1].ns += v[i].ns;
			v[n - 1].stall_ns += v[i].stall_ns;
			v[n - 1].flops += v[i].flops;
			v[n - 1].bytes += v[i].bytes;
		} else {
			v[n++] = v[i];
		}
	}
	qsort(v, n, sizeof(*v), by_op_time);
	printf("\n# top ops by time, iteration %" PRIu64 "%s: %.3f ms in ops "
	       "of a %.3f ms iteration\n", t->iteration,
	       simulated ? " (simulated)" : "", (double)sum / 1e6,
	       (double)t->duration_ns / 1e6);
	printf("# %-20s %-11s %6s %10s %6s %10s %9s %8s %8s\n", "op", "kind",
	       "count", "total_ms", "share", "mean_us", "stall_ms", "TFLOP/s",
	       "GB/s");
	for (size_t i = 0; i < n && i < top; i++) {
		double s = (double)v[i].ns / 1e9;

		/* flop / s / 1e12, bytes / s / 1e9; none without a time */
		printf("  %-20.20s %-11s %6" PRIu64 " %10.3f %5.1f%% %10.3f "
		       "%9.3f %8.3f %8.1f\n", v[i].name,
		       stat_op_kind_name(v[i].kind), v[i].count,
		       (double)v[i].ns / 1e6,
		       t->duration_ns ? 100.0 * (double)v[i].ns /
						(double)t->duration_ns
				      : 0.0,
		       (double)v[i].ns / 1e3 / (double)v[i].count,
		       (double)v[i].stall_ns / 1e6,
		       s > 0 ? v[i].flops / s / 1e12 : 0.0,
		       s > 0 ? v[i].bytes / s / 1e9 : 0.0);
	}
	if (!n)
		printf("  (none)\n");
	free(v);
	return 0;
}

int stat_report(const char *path, unsigned top, const char *columns)
{
	struct stat_selection sel;
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace t, last;
	bool have_last = false;
	struct costs c = { 0 };
	struct cost *list = NULL;
	char err[1024];
	int rc, status = STAT_OK;
	unsigned long iterations = 0;
	size_t n = 0;

	status = stat_columns_select(report_cols, RC_COUNT, report_defaults,
				     columns, "report -o", &sel);
	if (status)
		return status;
	status = stat_trace_open(path, &r, &info);
	if (status)
		return status;
	printf("# trace %s: format %u, %s backend on %s%s, mode %s, policy "
	       "%s, budget %.3f MiB of %.3f MiB\n",
	       path, info.version, info.backend, info.device,
	       info.simulated ? " (SIMULATED times)" : "", info.mode,
	       info.policy, mib((double)info.budget),
	       mib((double)info.device_capacity));
	stat_columns_header(report_cols, &sel, STAT_TS_NONE);
	while ((rc = tmm_trace_reader_next(r, &t, err, sizeof(err))) == 1) {
		rc = add_iteration(&t, &c, &sel);
		/* The last one is kept for its op table. */
		if (have_last)
			tmm_trace_free(&last);
		last = t;
		have_last = true;
		if (rc < 0) {
			stat_error("out of memory reading %s", path);
			status = STAT_FAILED;
			goto out;
		}
		iterations++;
	}
	if (rc < 0) {
		status = stat_trace_fail(path, rc, err);
		goto out;
	}
	if (!iterations) {
		printf("  (no iteration recorded: did the run call "
		       "tmm_iteration_begin and tmm_iteration_end?)\n");
		goto out;
	}
	list = malloc((c.len ? c.len : 1) * sizeof(*list));
	if (!list) {
		stat_error("out of memory reading %s", path);
		status = STAT_FAILED;
		goto out;
	}
	for (size_t i = 0; i < c.cap; i++)
		if (c.slot[i].used)
			list[n++] = c.slot[i];
	print_top(list, n, top, false, info.simulated);
	print_top(list, n, top, true, info.simulated);
	if (print_top_ops(&last, top, info.simulated) < 0) {
		stat_error("out of memory reading %s", path);
		status = STAT_FAILED;
	}
out:
	if (have_last)
		tmm_trace_free(&last);
	free(list);
	free(c.slot);
	tmm_trace_reader_close(r);
	return status;
}
