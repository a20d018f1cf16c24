/* SPDX-License-Identifier: MIT */
/*
 * test_tracker.c — what the access tracker records.
 *
 * A small iteration of pure ops, an in-place update and a direct access
 * runs several times: the keys must be stable across iterations (handle
 * for tensors made outside, creation order for tensors made inside), each
 * access must carry its op, direction and time, the lineage must be in the
 * trace, the arrays must stop growing after the first iteration, and the
 * ideal times of a run under memory pressure must equal those of the
 * unconstrained run (the stall is taken out).  The trace file must read
 * back what was recorded.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/core/context.h"
#include "toy_ops.h"
#include "lib/io/trace_read.h"
#include "lib/record/tracker.h"

/*
 * One iteration: a = fill(w); b = mix(a, w); b += 1 (in place);
 * direct write of c; destroy a, b, c.
 */
static void small_iteration(tmm_ctx *ctx, tmm_tensor w)
{
	tmm_tensor a, b, c, in2[2];
	void *p;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4, TMM_ACTIVATION,
					   "a", &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4, TMM_ACTIVATION,
					   "b", &b), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4, TMM_SCRATCH, "c",
					   &c), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &a, 1);
	in2[0] = a;
	in2[1] = w;
	toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in2, 2, &b, 1);
	toy_run(ctx, "bump", 0, toy_bump, &b, 1, &b, 1);
	ck_assert_int_eq(tmm_acquire(ctx, c, TMM_WRITE, &p), 0);
	memset(p, 7, ELEMS * 4);
	ck_assert_int_eq(tmm_release(ctx, c), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, b), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, c), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

static uint32_t find_tensor(const struct tmm_trace *t, const char *name)
{
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (!strcmp(tmm_trace_str(t, t->tensors[i].name), name))
			return i;
	ck_abort_msg("tensor %s is not in the trace", name);
	return TMM_TRACE_NONE;
}

START_TEST(records_accesses_ops_and_lineage)
{
	tmm_ctx *ctx;
	tmm_tensor w;
	const struct tmm_trace *t;
	const struct tmm_trace_access *ac;
	uint32_t iw, ia, ib, ic;
	char err[256];

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap"), 0);
	w = toy_weight(ctx, 0);
	ck_assert_ptr_null(tmm_tracker_first(ctx));
	small_iteration(ctx, w);
	t = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(tmm_trace_validate(t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t->iteration, 1);
	ck_assert_uint_eq(t->n_ops, 3);
	/* fill: w, a; add: a, w, b; bump: b (read and written once);
	 * the direct write of c. */
	ck_assert_uint_eq(t->n_accesses, 2 + 3 + 1 + 1);
	iw = find_tensor(t, "w");
	ia = find_tensor(t, "a");
	ib = find_tensor(t, "b");
	ic = find_tensor(t, "c");

	/* Keys: the handle for w, made outside; creation order inside. */
	ck_assert_uint_eq(t->tensors[iw].key, w.id);
	ck_assert_uint_eq(t->tensors[ia].key, tmm_key_of_ordinal(0));
	ck_assert_uint_eq(t->tensors[ib].key, tmm_key_of_ordinal(1));
	ck_assert_uint_eq(t->tensors[ic].key, tmm_key_of_ordinal(2));
	ck_assert_uint_eq(t->tensors[iw].flags, 0);
	ck_assert_uint_eq(t->tensors[ia].flags,
			  TMM_TT_MADE_INSIDE | TMM_TT_FREED_INSIDE);
	ck_assert_uint_le(t->tensors[ia].alloc_ns, t->tensors[ia].free_ns);
	ck_assert_uint_eq(t->tensors[ia].bytes, ELEMS * 4);
	ck_assert_uint_eq(t->tensors[ic].kind, TMM_SCRATCH);

	/* Accesses in order, with op and direction. */
	ac = t->accesses;
	ck_assert_uint_eq(ac[0].tensor, iw);
	ck_assert_uint_eq(ac[0].flags, TMM_TA_READ);
	ck_assert_uint_eq(ac[1].tensor, ia);
	ck_assert_uint_eq(ac[1].flags, TMM_TA_WRITE);
	ck_assert_uint_eq(ac[0].op, 0);
	ck_assert_uint_eq(ac[2].op, 1);
	ck_assert_uint_eq(ac[4].tensor, ib);
	ck_assert_uint_eq(ac[5].tensor, ib);
	ck_assert_uint_eq(ac[5].op, 2);
	ck_assert_uint_eq(ac[5].flags, TMM_TA_READ | TMM_TA_WRITE);
	ck_assert_uint_eq(ac[6].tensor, ic);
	ck_assert_uint_eq(ac[6].op, TMM_TRACE_NONE);
	ck_assert_uint_eq(ac[6].flags, TMM_TA_WRITE);
	for (uint32_t k = 0; k < t->n_accesses; k++) {
		ck_assert_uint_le(ac[k].begin_ns, ac[k].end_ns);
		if (k)
			ck_assert_uint_le(ac[k - 1].begin_ns, ac[k].begin_ns);
	}
	ck_assert_uint_gt(ac[1].device_in_use, 0);

	/* Ops: names, flags, durations, inputs then outputs. */
	ck_assert_str_eq(tmm_trace_str(t, t->ops[1].name), "mix");
	ck_assert_uint_eq(t->ops[1].flags, TMM_OP_PURE);
	ck_assert_uint_eq(t->ops[2].flags, 0);
	ck_assert_uint_gt(t->ops[1].end_ns, t->ops[1].begin_ns);
	ck_assert_uint_eq(t->ops[1].n_inputs, 2);
	ck_assert_uint_eq(t->ops[1].n_outputs, 1);
	ck_assert_uint_eq(t->op_tensors[t->ops[1].first + 0], ia);
	ck_assert_uint_eq(t->op_tensors[t->ops[1].first + 1], iw);
	ck_assert_uint_eq(t->op_tensors[t->ops[1].first + 2], ib);

	/* Lineage: who made each tensor last. */
	ck_assert_uint_eq(t->tensors[ia].producer, 0);
	ck_assert_uint_eq(t->tensors[ib].producer, 2);
	ck_assert_uint_eq(t->tensors[iw].producer, TMM_TRACE_NONE);
	ck_assert_uint_eq(t->tensors[ic].producer, TMM_TRACE_NONE);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A collective is recorded with its kind and network bytes, and on the
 * simulator its time is its roofline on the compute stream: a 5 us launch
 * (the op has no flops or bytes).  Its network part (on the P100's EDR
 * through PCIe 3.0, 11.69 GB/s and 20 us: 64 MiB take 20000 + 2^26 /
 * 11.69 = 20000 + 5740706.93 ns) runs beside later ops
 * (test_net_overlap.c).
 */
START_TEST(collectives_carry_net_bytes)
{
	tmm_ctx *ctx;
	tmm_tensor w, g;
	const struct tmm_trace *t;
	tmm_op op;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					"sim_profile=p100-pcie3-16g"), 0);
	w = toy_weight(ctx, 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_GRADIENT, "g",
					   &g), 0);
	toy_run(ctx, "grad", TMM_OP_PURE, toy_fill, &w, 1, &g, 1);
	op = (tmm_op){ .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
		       .inputs = &g, .n_inputs = 1, .outputs = &g,
		       .n_outputs = 1, .run = toy_bump,
		       .cost = { .net_bytes = 64.0 * 1024 * 1024 } };
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_tensor_destroy(ctx, g), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	t = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->n_ops, 2);
	ck_assert_uint_eq(t->ops[1].kind, TMM_OP_COLLECTIVE);
	ck_assert(t->ops[1].net_bytes == 64.0 * 1024 * 1024);
	ck_assert(t->ops[0].net_bytes == 0);
	ck_assert_uint_eq(t->ops[1].end_ns - t->ops[1].begin_ns, 5000);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* The sequence of keys of a trace's accesses. */
static uint64_t *access_keys(const struct tmm_trace *t)
{
	uint64_t *k = malloc(sizeof(uint64_t) * (t->n_accesses + 1));

	ck_assert_ptr_nonnull(k);
	for (uint32_t i = 0; i < t->n_accesses; i++)
		k[i] = t->tensors[t->accesses[i].tensor].key;
	return k;
}

START_TEST(keys_are_stable_and_arrays_stop_growing)
{
	tmm_ctx *ctx;
	tmm_tensor w;
	uint64_t *first, grows;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap"), 0);
	w = toy_weight(ctx, 0);
	small_iteration(ctx, w);
	first = access_keys(tmm_tracker_first(ctx));
	small_iteration(ctx, w);
	grows = tmm_tracker_grows(ctx);
	for (int i = 0; i < 5; i++) {
		const struct tmm_trace *cur;
		uint64_t *keys;

		small_iteration(ctx, w);
		cur = tmm_tracker_current(ctx);
		ck_assert_uint_eq(cur->iteration, 3 + (unsigned)i);
		ck_assert_uint_eq(cur->n_accesses,
				  tmm_tracker_first(ctx)->n_accesses);
		keys = access_keys(cur);
		ck_assert_mem_eq(keys, first,
				 sizeof(uint64_t) * cur->n_accesses);
		free(keys);
	}
	/* The hot path allocates nothing once the first iterations have
	 * sized the arrays. */
	ck_assert_uint_eq(tmm_tracker_grows(ctx), grows);
	ck_assert_uint_gt(grows, 0);
	free(first);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(nothing_is_recorded_outside_iterations)
{
	tmm_ctx *ctx;
	tmm_tensor w, a;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap"), 0);
	w = toy_weight(ctx, 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4, TMM_ACTIVATION,
					   "a", &a), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &a, 1);
	ck_assert(!tmm_tracker_recording(ctx));
	ck_assert_ptr_null(tmm_tracker_first(ctx));
	ck_assert_uint_eq(tmm_tracker_current(ctx)->n_accesses, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * How a tensor made before the iteration got its first bytes: by an op
 * (an init kernel, which places it on the device and evicts for it) or
 * from the host (which does not).  The device the iteration starts on
 * depends on it, so the trace says which, for a twin replaying the
 * iteration (lib/twin/trial.c) to do the same.
 */
START_TEST(the_trace_says_which_weights_an_op_wrote_first)
{
	const struct tmm_trace *t;
	tmm_ctx *ctx;
	tmm_tensor w, v, u, in2[2];
	uint32_t flags_w, flags_v, flags_u;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap"), 0);
	w = toy_weight(ctx, 0); /* from the host */
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "v",
					   &v), 0);
	toy_run(ctx, "init", TMM_OP_PURE, toy_fill, &w, 1, &v, 1);
	/* Written from the host first, by an op after: the host's write
	 * decided where it was. */
	u = toy_weight(ctx, 1);
	toy_run(ctx, "init", TMM_OP_PURE, toy_fill, &w, 1, &u, 1);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	in2[0] = w;
	in2[1] = v;
	toy_run(ctx, "mix", 0, toy_mix, in2, 2, &u, 1);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	t = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(t);
	flags_w = t->tensors[find_tensor(t, "w")].flags;
	flags_v = t->tensors[find_tensor(t, "v")].flags;
	/* toy_weight names both of its tensors "w": u is the last one. */
	flags_u = t->tensors[t->n_tensors - 1].flags;
	ck_assert_uint_eq(flags_w & TMM_TT_FIRST_BYTES_BY_OP, 0);
	ck_assert_uint_eq(flags_v & TMM_TT_FIRST_BYTES_BY_OP,
			  TMM_TT_FIRST_BYTES_BY_OP);
	ck_assert_uint_eq(flags_u & TMM_TT_FIRST_BYTES_BY_OP, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A chain where op i reads t[i-1] and t[i/2], so that under a small
 * budget old tensors are swapped out and brought back on demand.
 */
#define CHAIN 24

static void chain_iteration(tmm_ctx *ctx, tmm_tensor w)
{
	tmm_tensor t[CHAIN];

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < CHAIN; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[0], 1);
	for (int i = 1; i < CHAIN; i++) {
		tmm_tensor in[2] = { t[i - 1], t[i / 2] };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[i], 1);
	}
	for (int i = CHAIN - 1; i >= 0; i--) {
		tmm_tensor in[2] = { t[i], t[CHAIN - 1 - i] };

		toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, in, 2, &t[i], 1);
	}
	for (int i = 0; i < CHAIN; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

static struct tmm_trace chain_trace(const char *config, uint64_t *stall)
{
	struct tmm_trace copy;
	tmm_ctx *ctx;
	tmm_tensor w;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(ctx, 0);
	chain_iteration(ctx, w);
	ck_assert_int_eq(tmm_trace_copy(&copy, tmm_tracker_first(ctx)), 0);
	*stall = copy.stall_ns;
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return copy;
}

START_TEST(ideal_times_take_the_stall_out)
{
	uint64_t stall_free, stall_tight;
	struct tmm_trace free_run = chain_trace("backend=sim,mode=swap",
						&stall_free);
	struct tmm_trace tight = chain_trace("backend=sim,mode=swap,"
					     "budget=96KiB", &stall_tight);
	uint64_t op_stall = 0;
	uint32_t evictions = 0;

	ck_assert_uint_eq(stall_free, 0);
	ck_assert_uint_gt(stall_tight, 0);
	ck_assert_uint_eq(tight.n_ops, free_run.n_ops);
	ck_assert_uint_eq(tight.n_accesses, free_run.n_accesses);
	for (uint32_t i = 0; i < tight.n_ops; i++) {
		/* The same op at the same ideal time, whatever it waited. */
		ck_assert_uint_eq(tight.ops[i].begin_ns,
				  free_run.ops[i].begin_ns);
		ck_assert_uint_eq(tight.ops[i].end_ns, free_run.ops[i].end_ns);
		op_stall += tight.ops[i].stall_ns;
	}
	ck_assert_uint_gt(op_stall, 0);
	ck_assert_uint_le(op_stall, stall_tight);
	/* What the runtime did is in the trace too. */
	for (uint32_t i = 0; i < tight.n_events; i++) {
		evictions += tight.events[i].kind == TMM_EV_PASSIVE_EVICT;
		/* Every eviction names its tensor, even one not yet
		 * accessed in the iteration. */
		ck_assert_uint_lt(tight.events[i].tensor, tight.n_tensors);
	}
	ck_assert_uint_gt(evictions, 0);
	/* Nothing moved without pressure: the only events are the
	 * destructions. */
	for (uint32_t i = 0; i < free_run.n_events; i++)
		ck_assert_uint_eq(free_run.events[i].kind, TMM_EV_FREED);
	tmm_trace_free(&free_run);
	tmm_trace_free(&tight);
}
END_TEST

/*
 * Tensors destroyed between the same two ops share their free_ns; the
 * trace keeps the order they went in as events, which a twin replaying
 * the iteration follows (trial.c).
 */
START_TEST(destructions_keep_their_order)
{
	static const uint32_t order[] = { 2, 0, 3, 1 };
	const struct tmm_trace *tr;
	tmm_tensor w, t[4];
	tmm_ctx *ctx;
	uint32_t n = 0;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim"), 0);
	w = toy_weight(ctx, 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
		toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &t[i], 1);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[order[i]]), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	for (uint32_t e = 0; e < tr->n_events; e++) {
		const struct tmm_trace_event *ev = &tr->events[e];
		const struct tmm_trace_tensor *tt;

		if (ev->kind != TMM_EV_FREED)
			continue;
		ck_assert_uint_lt(n, 4);
		ck_assert_uint_lt(ev->tensor, tr->n_tensors);
		tt = &tr->tensors[ev->tensor];
		/* Made inside: keyed by creation ordinal. */
		ck_assert_uint_eq(tt->key, tmm_key_of_ordinal(order[n]));
		ck_assert(tt->flags & TMM_TT_FREED_INSIDE);
		/* After the last access, with the others. */
		ck_assert_uint_eq(ev->access, tr->n_accesses);
		n++;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(trace_file_reads_back_every_iteration)
{
	char path[] = "/tmp/test_tracker_XXXXXX", config[128], err[512];
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace got, first;
	tmm_ctx *ctx;
	tmm_tensor w;
	int fd = mkstemp(path), n = 0, rc;
	uint32_t freed = 0;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(config, sizeof(config), "backend=sim,mode=swap,budget=96KiB,"
		 "trace=%s", path);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(ctx, 0);
	for (int i = 0; i < 3; i++)
		chain_iteration(ctx, w);
	ck_assert_int_eq(tmm_trace_copy(&first, tmm_tracker_first(ctx)), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	for (uint32_t e = 0; e < first.n_events; e++)
		freed += first.events[e].kind == TMM_EV_FREED;

	ck_assert_msg(tmm_trace_reader_open(path, &r, &info, err,
					    sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(info.backend, "sim");
	ck_assert_uint_eq(info.simulated, 1);
	ck_assert_uint_eq(info.budget, 96 * 1024);
	while ((rc = tmm_trace_reader_next(r, &got, err, sizeof(err))) == 1) {
		n++;
		ck_assert_uint_eq(got.iteration, (unsigned)n);
		ck_assert_uint_eq(got.n_accesses, first.n_accesses);
		ck_assert_uint_eq(got.n_ops, first.n_ops);
		if (n == 1) {
			ck_assert_mem_eq(got.accesses, first.accesses,
					 sizeof(*got.accesses) *
						 got.n_accesses);
			ck_assert_mem_eq(got.ops, first.ops,
					 sizeof(*got.ops) * got.n_ops);
			/* Destructions stay in memory: the file has
			 * free_ns. */
			ck_assert_uint_gt(freed, 0);
			ck_assert_uint_eq(got.n_events,
					  first.n_events - freed);
			for (uint32_t e = 0; e < got.n_events; e++)
				ck_assert_uint_ne(got.events[e].kind,
						  TMM_EV_FREED);
		}
		tmm_trace_free(&got);
	}
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(n, 3);
	tmm_trace_reader_close(r);
	tmm_trace_free(&first);
	unlink(path);
}
END_TEST

/*
 * A backend that times ops later (CUDA): kernel_end reports 0, and at the
 * iteration's end kernel_times answers each op by the id kernel_id gave
 * it.  Here the sim stands in, and op k (ids from 1) lasts k µs.
 */
static struct tmm_backend_ops late_ops;
static uint64_t late_id;

static int late_begin(struct tmm_backend *be, const struct tmm_cost *cost)
{
	late_id++;
	return tmm_backend_sim_ops.kernel_begin(be, cost);
}

static int late_end(struct tmm_backend *be, const struct tmm_cost *cost,
		    uint64_t *ns)
{
	int rc = tmm_backend_sim_ops.kernel_end(be, cost, ns);

	*ns = 0;
	return rc;
}

static uint64_t late_kernel_id(struct tmm_backend *be)
{
	(void)be;
	return late_id;
}

static int late_times(struct tmm_backend *be, const uint64_t *after,
		      const uint64_t *last, uint64_t *ns, uint32_t n)
{
	(void)be;
	for (uint32_t i = 0; i < n; i++) {
		/* One bracket per op here: the range is that one id. */
		ck_assert_uint_eq(after[i] + 1, last[i]);
		ns[i] = last[i] * 1000;
	}
	return 0;
}

START_TEST(late_op_times_are_patched_in)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	const struct tmm_trace *tr;
	tmm_ctx *ctx;
	tmm_tensor w, a0;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap"), 0);
	late_ops = tmm_backend_sim_ops;
	late_ops.kernel_begin = late_begin;
	late_ops.kernel_end = late_end;
	late_ops.kernel_id = late_kernel_id;
	late_ops.kernel_times = late_times;
	ctx->be.ops = &late_ops;
	late_id = 0;
	w = toy_weight(ctx, 0);
	/* An op outside the iteration takes id 1, and is not asked. */
	ck_assert_int_eq(tmm_tensor_create(ctx, ELEMS * 4, TMM_ACTIVATION,
					   "a0", &a0), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &w, 1, &a0, 1);
	small_iteration(ctx, w);
	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	ck_assert_uint_eq(tr->n_ops, 3);
	for (uint32_t i = 0; i < tr->n_ops; i++)
		ck_assert_uint_eq(tr->ops[i].end_ns - tr->ops[i].begin_ns,
				  (i + 2) * 1000);
	for (uint32_t i = 0; i < tr->n_accesses; i++) {
		const struct tmm_trace_access *a = &tr->accesses[i];

		if (a->op != TMM_TRACE_NONE)
			ck_assert_uint_eq(a->end_ns - a->begin_ns,
					  (a->op + 2) * 1000);
	}
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.compute_ns, 2000 + 3000 + 4000);
	ctx->be.ops = &tmm_backend_sim_ops;
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(unwritable_trace_file_fails_creation)
{
	tmm_ctx *ctx;

	ck_assert_int_lt(tmm_ctx_create(&ctx, "backend=sim,trace=/nonexistent"
					      "/dir/trace.tmm"), 0);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(NULL), "/nonexistent"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tracker");
	TCase *tc = tcase_create("tracker");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, records_accesses_ops_and_lineage);
	tcase_add_test(tc, collectives_carry_net_bytes);
	tcase_add_test(tc, keys_are_stable_and_arrays_stop_growing);
	tcase_add_test(tc, nothing_is_recorded_outside_iterations);
	tcase_add_test(tc, the_trace_says_which_weights_an_op_wrote_first);
	tcase_add_test(tc, ideal_times_take_the_stall_out);
	tcase_add_test(tc, destructions_keep_their_order);
	tcase_add_test(tc, trace_file_reads_back_every_iteration);
	tcase_add_test(tc, unwritable_trace_file_fails_creation);
	tcase_add_test(tc, late_op_times_are_patched_in);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
