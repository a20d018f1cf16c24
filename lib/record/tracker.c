/* SPDX-License-Identifier: MIT */
/*
 * tracker.c — recording one iteration (see tracker.h).
 *
 * Each array of the trace being recorded keeps its capacity from one
 * iteration to the next; the counts are reset at tmm_iteration_begin.  A
 * tensor record remembers its index in the current trace (trace_index,
 * valid while trace_epoch is the iteration being recorded), so recording
 * an access is an array append and a few stores: no search, no hashing.
 *
 * When the host runs out of memory while recording, the iteration's trace
 * is marked incomplete and neither planned from nor written; training
 * itself goes on untouched.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/path_pattern.h"
#include "lib/core/split_op.h"
#include "tracker.h"
#include "lib/base/grow.h"
#include "lib/mem/pool.h"
#include "lib/io/trace_write.h"
#include "lib/base/xalloc.h"

struct tmm_tracker {
	struct tmm_trace cur;	/* the iteration being recorded */
	uint32_t cap_tensors, cap_ops, cap_op_tensors, cap_accesses;
	uint32_t cap_events, cap_strings;
	uint64_t epoch;		/* iteration being recorded; 0: none */
	uint64_t begin_ns;	/* backend clock when it began */
	uint64_t stall_begin;	/* ctx->c.stall_ns when it began */
	bool incomplete;	/* ran out of memory while recording */
	bool times_settled;	/* this iteration's op times are read */
	uint64_t grows;		/* array reallocations, ever */

	tmm_tensor *made;	/* tensors made in the iteration, by order */
	uint32_t n_made, cap_made;

	struct tmm_trace first;	/* the first complete iteration */
	bool have_first;

	struct tmm_trace_writer *file; /* TENSORMM_TRACE, or NULL */

	/* Backends that time ops later (kernel_times): each recorded op's
	 * brackets, ids in (kernel_after, kernel_ids], and room for the
	 * answers; kernel_from is the backend's id when the op about to be
	 * recorded began its kernels (tmm_tracker_op_kernels), or
	 * NO_KERNEL_FROM. */
	uint64_t *kernel_ids, *kernel_after, *kernel_ns;
	uint32_t cap_kernel;
	uint64_t kernel_from;
};

/* The iteration's clock: the backend's, or during a rehearsal the
 * predicted time of the ops rehearsed so far (rehearse.h). */
static uint64_t clock_ns(struct tmm_ctx *ctx)
{
	return ctx->rehearsal ? tmm_rehearsal_clock(ctx)
			      : ctx->be.ops->now_ns(&ctx->be);
}

/* tmm_tracker_op_kernels was not called for the op being recorded. */
#define NO_KERNEL_FROM UINT64_MAX

/* Makes room for `need` elements of a trace array, counting growths. */
#define RESERVE(tr, field, cap, need) \
	((need) <= (tr)->cap || \
	 ((tr)->grows++, tmm_grow((void **)&(tr)->cur.field, &(tr)->cap, \
				  (need), sizeof(*(tr)->cur.field))))

static void give_up(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;

	if (!tr->incomplete)
		tmm_log(ctx, TMM_LOG_WARN,
			"out of host memory while recording iteration %llu: "
			"its trace is incomplete and will not be planned "
			"from or written",
			(unsigned long long)tr->epoch);
	tr->incomplete = true;
}

/* Copies a name into the string table; TMM_TRACE_NONE for none. */
static uint32_t intern(struct tmm_ctx *ctx, const char *name)
{
	struct tmm_tracker *tr = ctx->tracker;
	size_t len;
	uint32_t off;

	if (!name)
		return TMM_TRACE_NONE;
	len = strlen(name) + 1;
	off = tr->cur.strings_len;
	if (!RESERVE(tr, strings, cap_strings, (uint64_t)off + len)) {
		give_up(ctx);
		return TMM_TRACE_NONE;
	}
	memcpy(tr->cur.strings + off, name, len);
	tr->cur.strings_len += (uint32_t)len;
	return off;
}

/* ---- life cycle ------------------------------------------------------- */

/* The contexts of this process that opened a trace, for "%n" in the
 * trace's path: the first is 0.  Twins never trace, so they are not
 * counted, and a program's contexts get the same numbers run after run. */
static atomic_uint traces_opened;

int tmm_tracker_create(struct tmm_ctx *ctx, char *err, size_t errlen)
{
	struct tmm_tracker *tr = tmm_calloc(1, sizeof(*tr));
	struct tmm_trace_file_info info = { 0 };
	char path[sizeof(ctx->cfg.trace) + 64], why[256];
	int rc;

	if (tr)
		tr->kernel_from = NO_KERNEL_FROM;
	if (!tr) {
		snprintf(err, errlen, "tmm_ctx_create: out of host memory "
			 "for the tracker");
		return -ENOMEM;
	}
	ctx->tracker = tr;
	if (!ctx->cfg.trace[0])
		return 0;
	info.simulated = ctx->be.info.simulated;
	snprintf(info.backend, sizeof(info.backend), "%s", ctx->be.ops->name);
	snprintf(info.device, sizeof(info.device), "%s", ctx->be.info.name);
	snprintf(info.mode, sizeof(info.mode), "%s",
		 ctx->mode == TMM_MODE_UVM ? "uvm" : "swap");
	snprintf(info.policy, sizeof(info.policy), "%s", ctx->cfg.policy);
	info.device_capacity = ctx->be.info.capacity;
	info.budget = ctx->budget;
	rc = tmm_path_expand(ctx->cfg.trace, (long)getpid(),
			     atomic_fetch_add(&traces_opened, 1), path,
			     sizeof(path), why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "trace=%s: %s; set TENSORMM_TRACE to a "
			 "shorter path", ctx->cfg.trace, why);
		return rc;
	}
	rc = tmm_trace_writer_open(path, &info, ctx->cfg.trace_max,
				   &tr->file, err, errlen);
	if (rc < 0)
		return rc;
	tmm_log(ctx, TMM_LOG_INFO, "tracing to %s", path);
	return 0;
}

void tmm_tracker_destroy(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;
	char err[256];

	if (!tr)
		return;
	if (tr->file && tmm_trace_writer_close(tr->file, err, sizeof(err)))
		tmm_log(ctx, TMM_LOG_WARN, "trace file: %s", err);
	tmm_trace_free(&tr->cur);
	tmm_trace_free(&tr->first);
	free(tr->made);
	free(tr->kernel_ids);
	free(tr->kernel_after);
	free(tr->kernel_ns);
	free(tr);
	ctx->tracker = NULL;
}

bool tmm_tracker_recording(const struct tmm_ctx *ctx)
{
	return ctx->tracker->epoch != 0;
}

void tmm_tracker_iteration_begin(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *t = &tr->cur;

	tr->epoch = ctx->c.iterations + 1;
	tr->begin_ns = clock_ns(ctx);
	tr->stall_begin = ctx->c.stall_ns;
	tr->incomplete = false;
	tr->times_settled = false;
	tr->n_made = 0;
	t->iteration = tr->epoch;
	t->duration_ns = t->stall_ns = 0;
	t->n_tensors = t->n_ops = t->n_op_tensors = 0;
	t->n_accesses = t->n_events = t->strings_len = 0;
}

/*
 * The backend measured the ops' kernels after kernel_end returned (CUDA):
 * their durations replace the zeros the trace holds, in the ops and in
 * their accesses.  Start times stay the host's; only lengths change.
 */
static void patch_op_times(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *t = &tr->cur;
	struct tmm_backend *be = &ctx->be;

	if (!be->ops->kernel_times || !t->n_ops)
		return;
	if (be->ops->kernel_times(be, tr->kernel_after, tr->kernel_ids,
				  tr->kernel_ns,
				  t->n_ops) < 0) {
		tmm_log(ctx, TMM_LOG_WARN, "%s; iteration %llu keeps no op "
			"times", be->error, (unsigned long long)tr->epoch);
		return;
	}
	for (uint32_t i = 0; i < t->n_ops; i++) {
		t->ops[i].end_ns = t->ops[i].begin_ns + tr->kernel_ns[i];
		ctx->c.compute_ns += tr->kernel_ns[i];
	}
	for (uint32_t i = 0; i < t->n_accesses; i++) {
		struct tmm_trace_access *a = &t->accesses[i];

		if (a->op != TMM_TRACE_NONE)
			a->end_ns = a->begin_ns + tr->kernel_ns[a->op];
	}
}

/*
 * The ops as the device ran them.  The clock the runtime records by is the
 * host's, and a host that queues kernels and goes on (CUDA's; the sim's
 * with sim_host=ahead) records when each op was issued: a whole step of
 * 2 ms GEMMs may be issued in a few hundred microseconds, and a plan made
 * from those times would think no copy could hide under any op, and that
 * a tensor destroyed at the step's end died with its last use.  The
 * compute stream runs its ops in order, each once the one before has ended
 * and the host has issued it, so an op begins at the later of the two.  A
 * host event (an access outside any op, a tensor made or destroyed) takes
 * effect after the ops issued before it, so it moves to the end of the
 * last of them where that is later.  Where the host waited for each op
 * (the sim in lockstep, a rehearsal's clock) that is the time recorded
 * already, and nothing moves.  Out of memory for the issue times, the
 * trace keeps the host's: a worse plan, not a wrong one.
 */

/* Host time x on the device: after the ops issued before it. */
static uint64_t after_issued(const struct tmm_trace *t, const uint64_t *issued,
			     uint64_t x)
{
	uint32_t lo = 0, hi = t->n_ops;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (issued[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && t->ops[lo - 1].end_ns > x ? t->ops[lo - 1].end_ns : x;
}

static void queue_on_device(struct tmm_ctx *ctx, struct tmm_trace *t)
{
	uint64_t *issued, free_at = 0;

	if (!t->n_ops)
		return;
	issued = tmm_malloc(sizeof(*issued) * t->n_ops);
	if (!issued) {
		tmm_log(ctx, TMM_LOG_WARN, "out of host memory placing the "
			"iteration's ops on the device's timeline: its trace "
			"keeps the host's issue times");
		return;
	}
	for (uint32_t i = 0; i < t->n_ops; i++) {
		struct tmm_trace_op *o = &t->ops[i];
		uint64_t ns = o->end_ns - o->begin_ns;

		issued[i] = o->begin_ns;
		if (o->begin_ns < free_at)
			o->begin_ns = free_at;
		o->end_ns = o->begin_ns + ns;
		free_at = o->end_ns;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		struct tmm_trace_access *a = &t->accesses[k];

		if (a->op < t->n_ops) {
			a->begin_ns = t->ops[a->op].begin_ns;
			a->end_ns = t->ops[a->op].end_ns;
		} else {
			a->begin_ns = after_issued(t, issued, a->begin_ns);
			a->end_ns = after_issued(t, issued, a->end_ns);
		}
	}
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		struct tmm_trace_tensor *tt = &t->tensors[i];

		if (tt->alloc_ns)
			tt->alloc_ns = after_issued(t, issued, tt->alloc_ns);
		if (tt->free_ns)
			tt->free_ns = after_issued(t, issued, tt->free_ns);
	}
	free(issued);
}

void tmm_tracker_settle_op_times(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;

	/* A rehearsal's times are predictions: no kernel ran to time.
	 * Once only: the backend's records are emptied when read. */
	if (!tr->incomplete && !ctx->rehearsal && !tr->times_settled) {
		patch_op_times(ctx);
		queue_on_device(ctx, &tr->cur);
	}
	tr->times_settled = true;
}

void tmm_tracker_iteration_end(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *t = &tr->cur;
	char err[768];

	tmm_tracker_settle_op_times(ctx);
	t->duration_ns = clock_ns(ctx) - tr->begin_ns;
	/* Never shorter than its ops, where the clock says less. */
	if (t->n_ops && t->ops[t->n_ops - 1].end_ns > t->duration_ns)
		t->duration_ns = t->ops[t->n_ops - 1].end_ns;
	t->stall_ns = ctx->c.stall_ns - tr->stall_begin;
	tr->epoch = 0;
	if (tr->incomplete)
		return;
	if (!tr->have_first) {
		if (tmm_trace_copy(&tr->first, t) == 0)
			tr->have_first = true;
		else
			tmm_log(ctx, TMM_LOG_WARN,
				"out of host memory keeping the first "
				"iteration's trace: no plan will be made");
	}
	/* The file's records are iterations that ran, and nothing in one
	 * would tell a reader that its times are only predicted. */
	if (tr->file && !ctx->rehearsal &&
	    tmm_trace_writer_append(tr->file, t, err, sizeof(err)) < 0) {
		/* Losing the trace must not stop the training.  One warning:
		 * the writer is closed, so later iterations say nothing (a
		 * file at trace_max included). */
		tmm_log(ctx, TMM_LOG_WARN,
			"trace file: %s; tracing stops here", err);
		tmm_trace_writer_close(tr->file, err, sizeof(err));
		tr->file = NULL;
	}
}

/* ---- tensors ---------------------------------------------------------- */

uint64_t tmm_tracker_key(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t)
{
	if (t->made_epoch && t->made_epoch == ctx->tracker->epoch)
		return tmm_key_of_ordinal(t->ordinal);
	return tmm_tensor_handle(ctx, t).id;
}

/* Ideal time: the backend clock since the iteration began, less the
 * stall so far (trace.h). */
static uint64_t ideal_ns(const struct tmm_ctx *ctx, uint64_t at)
{
	const struct tmm_tracker *tr = ctx->tracker;
	uint64_t since = at - tr->begin_ns;
	uint64_t stall = ctx->c.stall_ns - tr->stall_begin;

	return since > stall ? since - stall : 0;
}

/* Lists t in the current trace if it is not yet; false when out of
 * memory. */
static bool enlist(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace_tensor *tt;

	if (t->trace_epoch == tr->epoch)
		return true;
	if (!RESERVE(tr, tensors, cap_tensors, tr->cur.n_tensors + 1ull)) {
		give_up(ctx);
		return false;
	}
	tt = &tr->cur.tensors[tr->cur.n_tensors];
	*tt = (struct tmm_trace_tensor){
		.key = tmm_tracker_key(ctx, t),
		.bytes = t->bytes,
		.kind = (uint32_t)t->kind,
		.producer = TMM_TRACE_NONE,
		.flags = t->first_bytes_by_op ? TMM_TT_FIRST_BYTES_BY_OP : 0,
		.name = intern(ctx, t->name),
	};
	t->trace_index = tr->cur.n_tensors++;
	t->trace_epoch = tr->epoch;
	return true;
}

void tmm_tracker_tensor_made(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_tracker *tr = ctx->tracker;

	t->trace_epoch = 0;
	t->made_epoch = tr->epoch;
	t->ordinal = 0;
	if (!tr->epoch)
		return;
	if (tr->n_made == tr->cap_made &&
	    (tr->grows++, !tmm_grow((void **)&tr->made, &tr->cap_made,
				    tr->n_made + 1ull, sizeof(*tr->made)))) {
		give_up(ctx);
		t->made_epoch = 0;
		return;
	}
	t->ordinal = tr->n_made;
	tr->made[tr->n_made++] = tmm_tensor_handle(ctx, t);
	if (enlist(ctx, t)) {
		struct tmm_trace_tensor *tt = &tr->cur.tensors[t->trace_index];

		tt->flags |= TMM_TT_MADE_INSIDE;
		tt->alloc_ns = ideal_ns(ctx, clock_ns(ctx));
	}
}

void tmm_tracker_tensor_gone(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_tracker *tr = ctx->tracker;

	if (!tr->epoch)
		return;
	if (t->made_epoch == tr->epoch && t->ordinal < tr->n_made)
		tr->made[t->ordinal] = TMM_TENSOR_NULL;
	if (t->trace_epoch == tr->epoch) {
		struct tmm_trace_tensor *tt = &tr->cur.tensors[t->trace_index];

		tt->flags |= TMM_TT_FREED_INSIDE;
		tt->free_ns = ideal_ns(ctx, clock_ns(ctx));
		/* Several tensors freed between two ops share a free_ns;
		 * the order says which hole a later allocation finds, and
		 * a twin replaying the iteration (trial.c) keeps it. */
		tmm_tracker_event(ctx, TMM_EV_FREED, t);
	}
}

struct tmm_tensor_rec *tmm_tracker_tensor_of_key(struct tmm_ctx *ctx,
						 uint64_t key)
{
	struct tmm_tracker *tr = ctx->tracker;

	if (key & TMM_KEY_IN_ITERATION) {
		uint64_t ordinal = key & ~TMM_KEY_IN_ITERATION;

		if (ordinal >= tr->n_made || !tr->made[ordinal].id)
			return NULL;
		return tmm_tensor_find(ctx, tr->made[ordinal]);
	}
	return tmm_tensor_find(ctx, (tmm_tensor){ key });
}

/* ---- accesses --------------------------------------------------------- */

/* Room for `need` ops' backend ids, when the backend times ops later. */
static bool reserve_kernel(struct tmm_ctx *ctx, uint64_t need)
{
	struct tmm_tracker *tr = ctx->tracker;
	uint32_t cap = tr->cap_kernel;

	if (!ctx->be.ops->kernel_times || need <= tr->cap_kernel)
		return true;
	tr->grows++;
	if (!tmm_grow((void **)&tr->kernel_ids, &cap, need,
		      sizeof(*tr->kernel_ids)))
		return false;
	cap = tr->cap_kernel;
	if (!tmm_grow((void **)&tr->kernel_after, &cap, need,
		      sizeof(*tr->kernel_after)))
		return false;
	cap = tr->cap_kernel;
	if (!tmm_grow((void **)&tr->kernel_ns, &cap, need,
		      sizeof(*tr->kernel_ns)))
		return false;
	tr->cap_kernel = cap;
	return true;
}

/* The trace's slices of the op's i-th tensor: the rows a planner may
 * split it into, where splitting means something (2 rows or more). */
static uint32_t sliced_rows(const tmm_op *op, unsigned i)
{
	if (op->slice_extent < 2 || !tmm_split_sliced(op, i))
		return 0;
	return op->slice_extent > UINT32_MAX ? UINT32_MAX
					     : (uint32_t)op->slice_extent;
}

void tmm_tracker_op_was_split(struct tmm_ctx *ctx)
{
	struct tmm_trace *t = &ctx->tracker->cur;

	if (ctx->tracker->epoch && !ctx->tracker->incomplete && t->n_ops)
		t->ops[t->n_ops - 1].flags |= TMM_TRACE_OP_SPLIT;
}

void tmm_tracker_op_kernels(struct tmm_ctx *ctx)
{
	struct tmm_tracker *tr = ctx->tracker;

	if (tr && ctx->be.ops->kernel_id)
		tr->kernel_from = ctx->be.ops->kernel_id(&ctx->be);
}

void tmm_tracker_op(struct tmm_ctx *ctx, const tmm_op *op,
		    struct tmm_tensor_rec *const *recs, const uint8_t *flags,
		    unsigned n, uint64_t start_ns, uint64_t duration_ns,
		    uint64_t stall_ns, uint32_t *first_access,
		    uint32_t *n_accesses)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *t = &tr->cur;
	struct tmm_trace_op *o;
	uint64_t begin, in_use;
	uint32_t first, op_index;

	*first_access = t->n_accesses;
	*n_accesses = 0;
	if (!tr->epoch || tr->incomplete)
		return;
	if (!reserve_kernel(ctx, t->n_ops + 1ull) ||
	    !RESERVE(tr, ops, cap_ops, t->n_ops + 1ull) ||
	    !RESERVE(tr, op_tensors, cap_op_tensors,
		     (uint64_t)t->n_op_tensors + n) ||
	    !RESERVE(tr, accesses, cap_accesses, (uint64_t)t->n_accesses + n)) {
		give_up(ctx);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (!enlist(ctx, recs[i]))
			return;
	begin = ideal_ns(ctx, start_ns);
	in_use = ctx->mode == TMM_MODE_UVM ? ctx->c.uvm_resident
					   : tmm_pool_in_use(ctx->pool);
	op_index = t->n_ops++;
	if (ctx->be.ops->kernel_id) {
		uint64_t last = ctx->be.ops->kernel_id(&ctx->be);

		tr->kernel_ids[op_index] = last;
		/* Unannounced, the op is its last bracket alone. */
		tr->kernel_after[op_index] =
			tr->kernel_from != NO_KERNEL_FROM ? tr->kernel_from
			: last ? last - 1 : 0;
	}
	tr->kernel_from = NO_KERNEL_FROM;
	o = &t->ops[op_index];
	*o = (struct tmm_trace_op){
		.name = intern(ctx, op->name),
		.kind = (uint16_t)op->kind,
		.flags = (uint16_t)op->flags,
		.first = t->n_op_tensors,
		.n_inputs = (uint16_t)op->n_inputs,
		.n_outputs = (uint16_t)op->n_outputs,
		.begin_ns = begin,
		.end_ns = begin + duration_ns,
		.stall_ns = stall_ns,
		.flops = op->cost.flops,
		.bytes = op->cost.bytes,
		.net_bytes = op->cost.net_bytes,
	};
	first = t->n_accesses;
	for (unsigned i = 0; i < n; i++) {
		uint32_t ti = recs[i]->trace_index;
		uint32_t flag = i < op->n_inputs ? TMM_TA_READ : TMM_TA_WRITE;

		if (flags[i] & TMM_TRACK_ACCUMULATE)
			flag |= TMM_TA_READ;

		t->op_tensors[t->n_op_tensors++] = ti;
		/* A host read before this access was not after the last. */
		t->tensors[ti].flags &= ~TMM_TT_READ_AFTER_LAST;
		if (flag == TMM_TA_WRITE)
			t->tensors[ti].producer = op_index;
		if (flags[i] & TMM_TRACK_REPEAT) {
			/* Listed twice (an output that is also an input):
			 * one access, read and written. */
			for (uint32_t k = first; k < t->n_accesses; k++)
				if (t->accesses[k].tensor == ti) {
					t->accesses[k].flags |= flag;
					if (sliced_rows(op, i))
						t->accesses[k].slices =
							sliced_rows(op, i);
				}
			continue;
		}
		t->accesses[t->n_accesses++] = (struct tmm_trace_access){
			.tensor = ti,
			.op = op_index,
			.begin_ns = begin,
			.end_ns = begin + duration_ns,
			.device_in_use = in_use,
			.flags = flag,
			.slices = sliced_rows(op, i),
		};
	}
	*first_access = first;
	*n_accesses = t->n_accesses - first;
}

void tmm_tracker_direct(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			bool read, bool write, uint32_t *first_access,
			uint32_t *n_accesses)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *tc = &tr->cur;
	uint64_t now;

	*first_access = tc->n_accesses;
	*n_accesses = 0;
	if (!tr->epoch || tr->incomplete)
		return;
	if (!RESERVE(tr, accesses, cap_accesses, tc->n_accesses + 1ull)) {
		give_up(ctx);
		return;
	}
	if (!enlist(ctx, t))
		return;
	now = ideal_ns(ctx, clock_ns(ctx));
	tc->accesses[tc->n_accesses++] = (struct tmm_trace_access){
		.tensor = t->trace_index,
		.op = TMM_TRACE_NONE,
		.begin_ns = now,
		.end_ns = now,
		.device_in_use = tmm_pool_in_use(ctx->pool),
		.flags = (read ? TMM_TA_READ : 0) | (write ? TMM_TA_WRITE : 0),
	};
	tc->tensors[t->trace_index].flags &= ~TMM_TT_READ_AFTER_LAST;
	if (write)
		tc->tensors[t->trace_index].producer = TMM_TRACE_NONE;
	*n_accesses = 1;
}

/* Marks one tensor read by the host, if the trace lists it. */
static void mark_read(struct tmm_tracker *tr, const struct tmm_tensor_rec *t)
{
	if (t->trace_epoch == tr->epoch)
		tr->cur.tensors[t->trace_index].flags |=
			TMM_TT_READ_AFTER_LAST;
}

void tmm_tracker_host_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_tracker *tr = ctx->tracker;

	if (!tr->epoch)
		return;
	mark_read(tr, t);
	/* A view's bytes are its parent's: a discarded parent loses them. */
	if (t->view_parent)
		mark_read(tr, t->view_parent);
}

static void record_event(struct tmm_ctx *ctx, enum tmm_trace_event_kind kind,
			 uint32_t flags, struct tmm_tensor_rec *t)
{
	struct tmm_tracker *tr = ctx->tracker;
	struct tmm_trace *tc = &tr->cur;

	if (!tr->epoch || tr->incomplete)
		return;
	/* A tensor evicted before its first access of the iteration is
	 * listed all the same, so a timeline can say which it was. */
	if (t && !enlist(ctx, t))
		return;
	if (!RESERVE(tr, events, cap_events, tc->n_events + 1ull)) {
		give_up(ctx);
		return;
	}
	tc->events[tc->n_events++] = (struct tmm_trace_event){
		.kind = (uint32_t)kind,
		.tensor = t ? t->trace_index : TMM_TRACE_NONE,
		.access = tc->n_accesses,
		.flags = flags,
		.at_ns = clock_ns(ctx) - tr->begin_ns,
	};
}

void tmm_tracker_event(struct tmm_ctx *ctx, enum tmm_trace_event_kind kind,
		       struct tmm_tensor_rec *t)
{
	record_event(ctx, kind, 0, t);
}

void tmm_tracker_event_clean(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	record_event(ctx, TMM_EV_SWAP_OUT, TMM_EVF_CLEAN, t);
}

void tmm_tracker_event_dead(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	record_event(ctx, TMM_EV_DROP, TMM_EVF_DEAD, t);
}

/* Does the trace show a write of its tensor ti? */
static bool written_in(const struct tmm_trace *tr, uint32_t ti)
{
	for (uint32_t i = 0; i < tr->n_accesses; i++)
		if (tr->accesses[i].tensor == ti &&
		    (tr->accesses[i].flags & TMM_TA_WRITE))
			return true;
	return false;
}

bool tmm_tracker_written(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t)
{
	const struct tmm_tracker *tr = ctx->tracker;
	uint64_t key;

	if (tr->epoch && t->trace_epoch == tr->epoch &&
	    written_in(&tr->cur, t->trace_index))
		return true;
	if (!tr->have_first)
		return false;
	key = tmm_tracker_key(ctx, t);
	for (uint32_t i = 0; i < tr->first.n_tensors; i++)
		if (tr->first.tensors[i].key == key)
			return written_in(&tr->first, i);
	return false;
}

uint64_t tmm_tracker_grows(const struct tmm_ctx *ctx)
{
	return ctx->tracker->grows;
}

const struct tmm_trace *tmm_tracker_current(const struct tmm_ctx *ctx)
{
	return &ctx->tracker->cur;
}

const struct tmm_trace *tmm_tracker_first(const struct tmm_ctx *ctx)
{
	return ctx->tracker->have_first ? &ctx->tracker->first : NULL;
}
