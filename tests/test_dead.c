/* SPDX-License-Identifier: MIT */
/*
 * test_dead.c — liveness=discard (lib/move/dead.h): a tensor made in the
 * iteration and destroyed in it, which a plan evicts after its last
 * access, leaves the device without a copy; reading it then fails with
 * -ENODATA and a message naming the tunable, and writing it makes it
 * whole again; that is the default.  With liveness=keep the eviction
 * copies and the bytes read back.  A tensor made before the iteration, or kept past
 * its end in the measured iteration, is copied whatever the tunable.
 * A tensor a drop still to come recomputes from is not dead, and neither
 * is one the measured iteration read from the host after its last access
 * (TMM_TT_READ_AFTER_LAST): a trainer that reads its loss after the
 * step's ops, planned by policy none, reads the bytes of a run with room
 * for everything, and the mark is kept in the trace file.  The results
 * the program computes are the same bytes either way, in swap mode and
 * in mode=uvm.  On backed simulated memory.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/core/context.h"
#include "lib/exec/guide.h"
#include "lib/io/plan.h"
#include "lib/io/trace_read.h"
#include "lib/record/tracker.h"
#include "lib/twin/trial.h"
#include "tensormm.h"

#define N 4096

/* One step: d = f(x) made in the step, y = d + 1, d idle until the step
 * ends, then z written, and d destroyed (unless `keep_d`). */
struct step {
	tmm_ctx *ctx;
	tmm_tensor x, y, z, d;
	bool keep_d;	  /* d outlives the step (destroyed after it) */
	bool read_d;	  /* the program reads d after its last access */
	int read_rc;	  /* what that read returned */
	bool dead_event;  /* the step's trace shows a DROP flagged dead */
	uint8_t d_seen[N]; /* ... and the bytes */
};

static int make_d(void *const *in, void *const *out, void *user,
		  void *stream)
{
	const uint8_t *x = in[0];
	uint8_t *d = out[0];

	(void)user;
	(void)stream;
	for (unsigned k = 0; k < N; k++)
		d[k] = (uint8_t)(x[k] * 3 + 1);
	return 0;
}

static int plus_one(void *const *in, void *const *out, void *user,
		    void *stream)
{
	const uint8_t *a = in[0];
	uint8_t *b = out[0];

	(void)user;
	(void)stream;
	for (unsigned k = 0; k < N; k++)
		b[k] = (uint8_t)(a[k] + 1);
	return 0;
}

/* liveness NULL: the default's. */
static void open_step(struct step *s, const char *mode, const char *liveness)
{
	uint8_t x[N];
	char config[160];

	snprintf(config, sizeof(config),
		 "backend=sim,mode=%s,sim_memory=backed,budget=1MiB,"
		 "policy=passive,replan_drift=0,stats_shm=off%s%s",
		 mode, liveness ? ",liveness=" : "", liveness ? liveness : "");
	ck_assert_msg(tmm_ctx_create(&s->ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (unsigned k = 0; k < N; k++)
		x[k] = (uint8_t)(k * 7 + 3);
	ck_assert_int_eq(tmm_tensor_create(s->ctx, N, TMM_PERSISTENT, "x",
					   &s->x), 0);
	ck_assert_int_eq(tmm_tensor_write(s->ctx, s->x, 0, x, N), 0);
	ck_assert_int_eq(tmm_tensor_create(s->ctx, N, TMM_PERSISTENT, "y",
					   &s->y), 0);
	ck_assert_int_eq(tmm_tensor_create(s->ctx, N, TMM_PERSISTENT, "z",
					   &s->z), 0);
	s->d = TMM_TENSOR_NULL;
}

static void run_step(struct step *s)
{
	tmm_op make = { .name = "make_d", .flags = TMM_OP_PURE,
			.inputs = &s->x, .n_inputs = 1, .outputs = &s->d,
			.n_outputs = 1, .run = make_d };
	tmm_op use = { .name = "use_d", .flags = TMM_OP_PURE,
		       .inputs = &s->d, .n_inputs = 1, .outputs = &s->y,
		       .n_outputs = 1, .run = plus_one };
	tmm_op other = { .name = "other", .inputs = &s->x, .n_inputs = 1,
			 .outputs = &s->z, .n_outputs = 1, .run = plus_one };

	ck_assert_int_eq(tmm_iteration_begin(s->ctx), 0);
	if (!s->d.id)
		ck_assert_int_eq(tmm_tensor_create(s->ctx, N, TMM_ACTIVATION,
						   "d", &s->d), 0);
	make.outputs = use.inputs = &s->d;
	ck_assert_msg(tmm_run(s->ctx, &make) == 0, "%s",
		      tmm_last_error(s->ctx));
	ck_assert_msg(tmm_run(s->ctx, &use) == 0, "%s",
		      tmm_last_error(s->ctx));
	ck_assert_msg(tmm_run(s->ctx, &other) == 0, "%s",
		      tmm_last_error(s->ctx));
	if (s->read_d)
		s->read_rc = tmm_tensor_read(s->ctx, s->d, 0, s->d_seen, N);
	s->dead_event = false;
	for (uint32_t e = 0; e < tmm_tracker_current(s->ctx)->n_events; e++) {
		const struct tmm_trace_event *ev =
			&tmm_tracker_current(s->ctx)->events[e];

		if (ev->kind == TMM_EV_DROP && (ev->flags & TMM_EVF_DEAD))
			s->dead_event = true;
	}
	if (!s->keep_d) {
		ck_assert_int_eq(tmm_tensor_destroy(s->ctx, s->d), 0);
		s->d = TMM_TENSOR_NULL;
	}
	ck_assert_int_eq(tmm_iteration_end(s->ctx), 0);
}

/* The first access of trace tensor `ti` by op `op`. */
static uint32_t access_of(const struct tmm_trace *tr, uint32_t op,
			  uint32_t ti)
{
	for (uint32_t k = 0; k < tr->n_accesses; k++)
		if (tr->accesses[k].op == op && tr->accesses[k].tensor == ti)
			return k;
	ck_abort_msg("op %u does not access tensor %u", op, ti);
	return 0;
}

/* The trace tensor named `name`. */
static uint32_t tensor_named(const struct tmm_trace *tr, const char *name)
{
	for (uint32_t i = 0; i < tr->n_tensors; i++)
		if (tr->tensors[i].name != TMM_TRACE_NONE &&
		    !strcmp(tmm_trace_str(tr, tr->tensors[i].name), name))
			return i;
	ck_abort_msg("no tensor %s in the trace", name);
	return 0;
}

/* Measures a step, then installs a plan that evicts `victim` after its
 * last access (use_d's for d, other's for x) with no back-access. */
static void plan_eviction(struct step *s, const char *victim)
{
	const struct tmm_trace *tr;
	struct tmm_plan plan;
	uint32_t ti;

	run_step(s);
	tr = tmm_tracker_first(s->ctx);
	ck_assert_ptr_nonnull(tr);
	ti = tensor_named(tr, victim);
	ck_assert_int_eq(tmm_plan_init(&plan, tr, "dead"), 0);
	ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP,
				      access_of(tr, !strcmp(victim, "d") ? 1
									 : 2,
						ti),
				      tr->tensors[ti].key, TMM_PLAN_NONE, 0),
			 0);
	tmm_plan_sort(&plan);
	ck_assert_msg(tmm_guide_install(s->ctx, &plan) == 0, "%s",
		      tmm_last_error(s->ctx));
	tmm_plan_free(&plan);
}

static void y_is_right(struct step *s)
{
	uint8_t y[N];

	ck_assert_int_eq(tmm_tensor_read(s->ctx, s->y, 0, y, N), 0);
	for (unsigned k = 0; k < N; k++)
		ck_assert_uint_eq(y[k], (uint8_t)((k * 7 + 3) * 3 + 2));
}

static void close_step(struct step *s)
{
	ck_assert_int_eq(tmm_ctx_destroy(s->ctx), 0);
}

/* The measured step reads nothing after d's last access; the next one
 * does (a loss printed every 100th step): the read the recorded
 * iteration did not make is the one liveness=discard cannot see.
 * liveness NULL: the default, which is discard. */
static void dead_tensor_is_dropped(const char *mode, const char *liveness)
{
	struct step s = { .read_d = false };
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct tmm_trial_device dev;
	uint64_t outs;

	open_step(&s, mode, liveness);
	/* auto's twin runs with the same promise as the run. */
	ck_assert_int_eq(tmm_trial_device_of(s.ctx, &dev), 0);
	ck_assert(dev.liveness_discard);
	plan_eviction(&s, "d");
	s.read_d = true;
	outs = s.ctx->c.swap_out_count;
	run_step(&s);
	ck_assert_int_eq(tmm_stats_get(s.ctx, &st), 0);
	ck_assert_uint_eq(st.dead_discards, 1);
	ck_assert_uint_eq(st.dead_discard_bytes, N);
	ck_assert_uint_eq(s.ctx->c.swap_out_count, outs);
	/* The program broke its word: the read fails and says why. */
	ck_assert_int_eq(s.read_rc, -ENODATA);
	ck_assert_msg(strstr(tmm_last_error(s.ctx), "liveness=discard") &&
			      strstr(tmm_last_error(s.ctx), "liveness=keep") &&
			      strstr(tmm_last_error(s.ctx), "every step"),
		      "%s", tmm_last_error(s.ctx));
	y_is_right(&s);
	close_step(&s);
}

START_TEST(a_dead_tensor_leaves_without_a_copy)
{
	dead_tensor_is_dropped("swap", NULL);
}
END_TEST

START_TEST(a_dead_tensor_leaves_without_a_copy_in_uvm)
{
	dead_tensor_is_dropped("uvm", "discard");
}
END_TEST

START_TEST(keep_copies_it_and_the_bytes_read_back)
{
	struct step s = { .read_d = true };
	uint64_t outs;

	open_step(&s, "swap", "keep");
	plan_eviction(&s, "d");
	outs = s.ctx->c.swap_out_count;
	run_step(&s);
	ck_assert_uint_eq(s.ctx->c.dead_discards, 0);
	ck_assert_uint_eq(s.ctx->c.swap_out_count, outs + 1);
	ck_assert_int_eq(s.read_rc, 0);
	for (unsigned k = 0; k < N; k++)
		ck_assert_uint_eq(s.d_seen[k], (uint8_t)((k * 7 + 3) * 3 + 1));
	y_is_right(&s);
	close_step(&s);
}
END_TEST

/* The measured step read d after its last access (TMM_TT_READ_AFTER_LAST):
 * under liveness=discard the eviction copies it, and the reads of the
 * next steps return its bytes. */
static void read_after_last_is_copied(const char *mode)
{
	struct step s = { .read_d = true };
	const struct tmm_trace *tr;
	uint64_t outs;
	bool swap = !strcmp(mode, "swap");

	open_step(&s, mode, "discard");
	plan_eviction(&s, "d");
	tr = tmm_tracker_first(s.ctx);
	ck_assert(tr->tensors[tensor_named(tr, "d")].flags &
		  TMM_TT_READ_AFTER_LAST);
	ck_assert(!(tr->tensors[tensor_named(tr, "y")].flags &
		    TMM_TT_READ_AFTER_LAST));
	for (int step = 0; step < 2; step++) {
		outs = s.ctx->c.swap_out_count;
		memset(s.d_seen, 0, N);
		run_step(&s);
		ck_assert_int_eq(s.read_rc, 0);
		ck_assert(!s.dead_event);
		/* mode=uvm evicts by writing pages back, not swap-outs. */
		if (swap)
			ck_assert_uint_eq(s.ctx->c.swap_out_count, outs + 1);
		for (unsigned k = 0; k < N; k++)
			ck_assert_uint_eq(s.d_seen[k],
					  (uint8_t)((k * 7 + 3) * 3 + 1));
	}
	ck_assert_uint_eq(s.ctx->c.dead_discards, 0);
	y_is_right(&s);
	close_step(&s);
}

START_TEST(a_tensor_read_after_its_last_access_is_copied)
{
	read_after_last_is_copied("swap");
}
END_TEST

START_TEST(a_tensor_read_after_its_last_access_is_copied_in_uvm)
{
	read_after_last_is_copied("uvm");
}
END_TEST

/* A view's bytes are its parent's: reading the view after the parent's
 * last access marks both, so that neither is discarded. */
START_TEST(a_read_of_a_view_marks_its_parent)
{
	struct step s = { 0 };
	tmm_tensor p, v;
	uint8_t half[N / 2];
	const struct tmm_trace *cur;
	tmm_op make = { .name = "make_p", .inputs = &s.x, .n_inputs = 1,
			.outputs = &p, .n_outputs = 1, .run = make_d };

	open_step(&s, "swap", "discard");
	ck_assert_int_eq(tmm_iteration_begin(s.ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(s.ctx, N, TMM_ACTIVATION, "p", &p),
			 0);
	ck_assert_int_eq(tmm_run(s.ctx, &make), 0);
	ck_assert_int_eq(tmm_tensor_view(s.ctx, p, N / 2, N / 2, "v", &v), 0);
	ck_assert_int_eq(tmm_tensor_read(s.ctx, v, 0, half, N / 2), 0);
	for (unsigned k = 0; k < N / 2; k++)
		ck_assert_uint_eq(half[k], (uint8_t)((k + N / 2) * 21 + 10));
	cur = tmm_tracker_current(s.ctx);
	ck_assert(cur->tensors[tensor_named(cur, "p")].flags &
		  TMM_TT_READ_AFTER_LAST);
	ck_assert(cur->tensors[tensor_named(cur, "v")].flags &
		  TMM_TT_READ_AFTER_LAST);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, v), 0);
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, p), 0);
	ck_assert_int_eq(tmm_iteration_end(s.ctx), 0);
	close_step(&s);
}
END_TEST

/* d kept past the step's end (the measured step did not destroy it):
 * the program may read it later, so it is copied. */
START_TEST(a_tensor_kept_past_the_step_is_copied)
{
	struct step s = { .keep_d = true };
	uint8_t d[N];

	open_step(&s, "swap", "discard");
	plan_eviction(&s, "d");
	ck_assert_int_eq(tmm_tensor_destroy(s.ctx, s.d), 0);
	s.d = TMM_TENSOR_NULL;
	run_step(&s);
	ck_assert_uint_eq(s.ctx->c.dead_discards, 0);
	ck_assert_int_eq(tmm_tensor_read(s.ctx, s.d, 0, d, N), 0);
	for (unsigned k = 0; k < N; k++)
		ck_assert_uint_eq(d[k], (uint8_t)((k * 7 + 3) * 3 + 1));
	close_step(&s);
}
END_TEST

/* x, made before the step, is never discarded. */
START_TEST(a_tensor_made_before_the_step_is_copied)
{
	struct step s = { 0 };
	uint8_t x[N];
	uint64_t outs;

	open_step(&s, "swap", "discard");
	plan_eviction(&s, "x");
	outs = s.ctx->c.swap_out_count;
	run_step(&s);
	ck_assert_uint_eq(s.ctx->c.dead_discards, 0);
	ck_assert_uint_eq(s.ctx->c.swap_out_count, outs + 1);
	ck_assert_int_eq(tmm_tensor_read(s.ctx, s.x, 0, x, N), 0);
	for (unsigned k = 0; k < N; k++)
		ck_assert_uint_eq(x[k], (uint8_t)(k * 7 + 3));
	close_step(&s);
}
END_TEST

struct text {
	char buf[8192];
	size_t len;
};

static void to_text(void *arg, const char *p, size_t len)
{
	struct text *t = arg;

	if (t->len + len < sizeof(t->buf)) {
		memcpy(t->buf + t->len, p, len);
		t->len += len;
		t->buf[t->len] = '\0';
	}
}

/* Written again, a discarded tensor is whole; the trace shows the
 * discard as a DROP flagged dead, and the statistics print it. */
START_TEST(a_discarded_tensor_written_again_is_whole)
{
	struct step s = { .keep_d = true };
	uint8_t w[N], r[N];
	struct tmm_tensor_rec *d;
	struct text text = { .len = 0 };

	open_step(&s, "swap", "discard");
	s.keep_d = false;
	plan_eviction(&s, "d");
	/* Kept this time, to be read and written after the discard. */
	s.keep_d = true;
	run_step(&s);
	d = tmm_tensor_find(s.ctx, s.d);
	ck_assert_int_eq(d->state, TMM_TS_EMPTY);
	ck_assert(d->dead);
	ck_assert(s.dead_event);
	for (unsigned k = 0; k < N; k++)
		w[k] = (uint8_t)(k ^ 0x5a);
	ck_assert_int_eq(tmm_tensor_write(s.ctx, s.d, 0, w, N), 0);
	ck_assert(!d->dead);
	ck_assert_int_eq(tmm_tensor_read(s.ctx, s.d, 0, r, N), 0);
	ck_assert_mem_eq(r, w, N);
	ck_assert_int_eq(tmm_stats_print(s.ctx, to_text, &text, 0), 0);
	ck_assert_msg(strstr(text.buf, "dead      1 evictions"), "%s",
		      text.buf);
	close_step(&s);
}
END_TEST

/*
 * d is dead to the program after e = d + 1, but a plan that drops e
 * recomputes it from d at its back-access: d is then copied out, not
 * discarded, and brought back for the recomputation.  (Discarded, the
 * recomputation found it empty: bench_scaling's MLP under tensile.)
 */
START_TEST(a_recomputation_source_is_not_dead)
{
	uint8_t xs[N], ys[N];
	char config[200];
	tmm_ctx *ctx;
	tmm_tensor x, y, d, e;
	struct tmm_plan plan;
	const struct tmm_trace *tr;
	uint32_t di, ei;

	snprintf(config, sizeof(config),
		 "backend=sim,mode=swap,sim_memory=backed,budget=1MiB,"
		 "policy=passive,replan_drift=0,stats_shm=off,"
		 "liveness=discard");
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (unsigned k = 0; k < N; k++)
		xs[k] = (uint8_t)(k * 5 + 1);
	ck_assert_int_eq(tmm_tensor_create(ctx, N, TMM_PERSISTENT, "x", &x),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, x, 0, xs, N), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, N, TMM_PERSISTENT, "y", &y),
			 0);
	for (int step = 0; step < 2; step++) {
		tmm_op make = { .name = "make_d", .flags = TMM_OP_PURE,
				.inputs = &x, .n_inputs = 1, .outputs = &d,
				.n_outputs = 1, .run = make_d };
		tmm_op use = { .name = "make_e", .flags = TMM_OP_PURE,
			       .inputs = &d, .n_inputs = 1, .outputs = &e,
			       .n_outputs = 1, .run = plus_one };
		tmm_op last = { .name = "use_e", .inputs = &e, .n_inputs = 1,
				.outputs = &y, .n_outputs = 1,
				.run = plus_one };

		ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, N, TMM_ACTIVATION,
						   "d", &d), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, N, TMM_ACTIVATION,
						   "e", &e), 0);
		ck_assert_msg(tmm_run(ctx, &make) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_msg(tmm_run(ctx, &use) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_msg(tmm_run(ctx, &last) == 0, "%s",
			      tmm_last_error(ctx));
		ck_assert_int_eq(tmm_tensor_destroy(ctx, e), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, d), 0);
		ck_assert_int_eq(tmm_iteration_end(ctx), 0);
		if (step)
			break;
		/* d out with no back-access after make_e; e dropped there
		 * and recomputed for use_e. */
		tr = tmm_tracker_first(ctx);
		di = tensor_named(tr, "d");
		ei = tensor_named(tr, "e");
		ck_assert_int_eq(tmm_plan_init(&plan, tr, "source"), 0);
		ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_SWAP,
					      access_of(tr, 1, di),
					      tr->tensors[di].key,
					      TMM_PLAN_NONE, 0), 0);
		ck_assert_int_eq(tmm_plan_add(&plan, TMM_ACT_EVICT_DROP,
					      access_of(tr, 1, ei),
					      tr->tensors[ei].key,
					      access_of(tr, 2, ei), 0), 0);
		tmm_plan_sort(&plan);
		ck_assert_msg(tmm_guide_install(ctx, &plan) == 0, "%s",
			      tmm_last_error(ctx));
		tmm_plan_free(&plan);
	}
	ck_assert_uint_eq(ctx->c.dead_discards, 0);
	ck_assert_uint_eq(ctx->c.recomputations, 1);
	ck_assert_int_eq(tmm_tensor_read(ctx, y, 0, ys, N), 0);
	for (unsigned k = 0; k < N; k++)
		ck_assert_uint_eq(ys[k], (uint8_t)((k * 5 + 1) * 3 + 3));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A trainer, planned by a real planner: LAYERS layers forward, their
 * gradients backward, each weight updated after its gradient; every
 * activation and gradient made in the step and destroyed at its end.
 * The host reads act1 after the forward pass (before the backward pass
 * reads it) and the loss, the last activation, once all ops are done.
 */
#define LAYERS 6
#define E 4096 /* floats: 16 KiB a tensor */

struct trainer {
	tmm_ctx *ctx;
	tmm_tensor w[LAYERS], in;
	float loss[E];	/* the loss each step read */
	float act1[E];	/* act1 as read before its last access */
};

static int t_fwd(void *const *in, void *const *out, void *user, void *stream)
{
	const float *x = in[0], *w = in[1];
	float *y = out[0];

	(void)user;
	(void)stream;
	for (int i = 0; i < E; i++)
		y[i] = x[i] * 0.5f + w[i];
	return 0;
}

static int t_bwd(void *const *in, void *const *out, void *user, void *stream)
{
	const float *g = in[0], *x = in[1];
	float *gx = out[0];

	(void)user;
	(void)stream;
	for (int i = 0; i < E; i++)
		gx[i] = g[i] * 0.5f + x[i] * 0.001f;
	return 0;
}

static int t_sgd(void *const *in, void *const *out, void *user, void *stream)
{
	const float *g = in[1];
	float *w = out[0];

	(void)user;
	(void)stream;
	for (int i = 0; i < E; i++)
		w[i] -= 0.01f * g[i];
	return 0;
}

static void t_run(struct trainer *t, const char *name, unsigned flags,
		  tmm_run_fn fn, tmm_tensor a, tmm_tensor b, tmm_tensor out)
{
	tmm_tensor in[2] = { a, b };
	/* Long enough (simulated) that an idle activation is worth a copy
	 * to the planner's liveness. */
	tmm_op op = { .name = name, .kind = TMM_OP_MATMUL, .flags = flags,
		      .inputs = in, .n_inputs = 2, .outputs = &out,
		      .n_outputs = 1, .run = fn,
		      .cost = { .flops = 1e9, .bytes = 3.0 * E * 4 } };

	ck_assert_msg(tmm_run(t->ctx, &op) == 0, "%s: %s", name,
		      tmm_last_error(t->ctx));
}

static void trainer_open(struct trainer *t, const char *config)
{
	static float init[E];

	ck_assert_msg(tmm_ctx_create(&t->ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	for (int i = 0; i < E; i++)
		init[i] = (float)(i % 97) / 97.0f;
	ck_assert_int_eq(tmm_tensor_create(t->ctx, E * 4, TMM_PERSISTENT,
					   "input", &t->in), 0);
	ck_assert_int_eq(tmm_tensor_write(t->ctx, t->in, 0, init, E * 4), 0);
	for (int l = 0; l < LAYERS; l++) {
		for (int i = 0; i < E; i++)
			init[i] = (float)((i + l) % 13) / 130.0f;
		ck_assert_int_eq(tmm_tensor_create(t->ctx, E * 4,
						   TMM_PERSISTENT, "w",
						   &t->w[l]), 0);
		ck_assert_int_eq(tmm_tensor_write(t->ctx, t->w[l], 0, init,
						  E * 4), 0);
	}
}

/* One step; returns the events flagged dead on the loss. */
static unsigned trainer_step(struct trainer *t)
{
	tmm_tensor x[LAYERS + 1], g[LAYERS + 1];
	const struct tmm_trace *cur;
	char name[16];
	unsigned dead_loss = 0;

	ck_assert_int_eq(tmm_iteration_begin(t->ctx), 0);
	x[0] = t->in;
	for (int l = 0; l < LAYERS; l++) {
		snprintf(name, sizeof(name), l + 1 < LAYERS ? "act%d" : "loss",
			 l + 1);
		ck_assert_int_eq(tmm_tensor_create(t->ctx, E * 4,
						   TMM_ACTIVATION, name,
						   &x[l + 1]), 0);
		t_run(t, "fwd", TMM_OP_PURE, t_fwd, x[l], t->w[l], x[l + 1]);
	}
	/* Before its last access (bwd1 reads it): marks nothing. */
	ck_assert_int_eq(tmm_tensor_read(t->ctx, x[1], 0, t->act1, E * 4), 0);
	g[LAYERS] = x[LAYERS];
	for (int l = LAYERS - 1; l >= 0; l--) {
		ck_assert_int_eq(tmm_tensor_create(t->ctx, E * 4, TMM_GRADIENT,
						   "grad", &g[l]), 0);
		t_run(t, "bwd", TMM_OP_BACKWARD, t_bwd, g[l + 1], x[l], g[l]);
		t_run(t, "sgd", 0, t_sgd, t->w[l], g[l], t->w[l]);
	}
	/* After its last access (bwd5, long past). */
	ck_assert_msg(tmm_tensor_read(t->ctx, x[LAYERS], 0, t->loss,
				      E * 4) == 0, "%s",
		      tmm_last_error(t->ctx));
	cur = tmm_tracker_current(t->ctx);
	for (uint32_t e = 0; e < cur->n_events; e++)
		dead_loss += cur->events[e].kind == TMM_EV_DROP &&
			     (cur->events[e].flags & TMM_EVF_DEAD) &&
			     cur->events[e].tensor != TMM_TRACE_NONE &&
			     !strcmp(tmm_trace_str(cur, cur->tensors[
					     cur->events[e].tensor].name),
				     "loss");
	for (int l = 1; l <= LAYERS; l++)
		ck_assert_int_eq(tmm_tensor_destroy(t->ctx, x[l]), 0);
	for (int l = 0; l < LAYERS; l++)
		ck_assert_int_eq(tmm_tensor_destroy(t->ctx, g[l]), 0);
	ck_assert_int_eq(tmm_iteration_end(t->ctx), 0);
	return dead_loss;
}

/* Does the installed plan evict the loss after its last access, with no
 * back-access (where liveness=discard would drop it)? */
static bool plan_evicts_loss_dead(struct trainer *t)
{
	const struct tmm_trace *tr = tmm_tracker_first(t->ctx);
	const struct tmm_plan *p = &t->ctx->guide->plan;
	uint64_t key = tr->tensors[tensor_named(tr, "loss")].key;

	for (uint32_t k = 0; k < p->n_actions; k++)
		if (p->actions[k].type == TMM_ACT_EVICT_SWAP &&
		    p->actions[k].key == key &&
		    p->actions[k].back_access == TMM_PLAN_NONE)
			return true;
	return false;
}

#define STEPS 4

/*
 * Under liveness=discard and a budget that makes policy none evict the
 * loss after its last access, the trainer reads every step's loss and
 * act1 with the bytes of a run with room for everything, and ends with
 * the same weights; the other activations and gradients, which the host
 * does not read after their last access, are still discarded.
 */
START_TEST(a_trainer_reading_its_loss_trains_as_unconstrained)
{
	struct trainer free_run, tight;
	static float loss[STEPS][E], act1[STEPS][E];
	float wa[E], wb[E];
	const struct tmm_trace *tr;

	trainer_open(&free_run, "backend=sim,mode=swap,sim_memory=backed,"
		     "policy=none,stats_shm=off,liveness=keep");
	for (int k = 0; k < STEPS; k++) {
		trainer_step(&free_run);
		memcpy(loss[k], free_run.loss, sizeof(loss[k]));
		memcpy(act1[k], free_run.act1, sizeof(act1[k]));
	}
	trainer_open(&tight, "backend=sim,mode=swap,sim_memory=backed,"
		     "budget=160KiB,policy=none,replan_drift=0,"
		     "stats_shm=off,liveness=discard");
	for (int k = 0; k < STEPS; k++) {
		ck_assert_uint_eq(trainer_step(&tight), 0);
		ck_assert_mem_eq(tight.loss, loss[k], sizeof(loss[k]));
		ck_assert_mem_eq(tight.act1, act1[k], sizeof(act1[k]));
		if (k == 0)
			ck_assert_msg(plan_evicts_loss_dead(&tight),
				      "the budget no longer makes the plan "
				      "evict the loss at its last access");
	}
	tr = tmm_tracker_first(tight.ctx);
	ck_assert(tr->tensors[tensor_named(tr, "loss")].flags &
		  TMM_TT_READ_AFTER_LAST);
	ck_assert(!(tr->tensors[tensor_named(tr, "act1")].flags &
		    TMM_TT_READ_AFTER_LAST));
	ck_assert_uint_gt(tight.ctx->c.dead_discards, 0);
	for (int l = 0; l < LAYERS; l++) {
		ck_assert_int_eq(tmm_tensor_read(free_run.ctx, free_run.w[l],
						 0, wa, sizeof(wa)), 0);
		ck_assert_int_eq(tmm_tensor_read(tight.ctx, tight.w[l], 0, wb,
						 sizeof(wb)), 0);
		ck_assert_mem_eq(wa, wb, sizeof(wa));
	}
	ck_assert_int_eq(tmm_ctx_destroy(free_run.ctx), 0);
	ck_assert_int_eq(tmm_ctx_destroy(tight.ctx), 0);
}
END_TEST

/* The trace file keeps the mark: each step's record of the trainer shows
 * the loss, and not act1, read after its last access. */
START_TEST(the_mark_round_trips_through_a_trace_file)
{
	char path[] = "/tmp/test_dead_XXXXXX", config[200], err[256];
	struct tmm_trace_reader *r;
	struct trainer t;
	struct tmm_trace rec;
	int fd = mkstemp(path), records = 0;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(config, sizeof(config),
		 "backend=sim,mode=swap,sim_memory=backed,budget=160KiB,"
		 "policy=none,stats_shm=off,liveness=discard,trace=%s", path);
	trainer_open(&t, config);
	trainer_step(&t);
	trainer_step(&t);
	ck_assert_int_eq(tmm_ctx_destroy(t.ctx), 0);
	ck_assert_msg(tmm_trace_reader_open(path, &r, NULL, err,
					    sizeof(err)) == 0, "%s", err);
	while (tmm_trace_reader_next(r, &rec, err, sizeof(err)) == 1) {
		ck_assert(rec.tensors[tensor_named(&rec, "loss")].flags &
			  TMM_TT_READ_AFTER_LAST);
		ck_assert(!(rec.tensors[tensor_named(&rec, "act1")].flags &
			    TMM_TT_READ_AFTER_LAST));
		tmm_trace_free(&rec);
		records++;
	}
	ck_assert_int_eq(records, 2);
	tmm_trace_reader_close(r);
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dead");
	TCase *tc = tcase_create("liveness");

	tcase_add_test(tc, a_dead_tensor_leaves_without_a_copy);
	tcase_add_test(tc, a_dead_tensor_leaves_without_a_copy_in_uvm);
	tcase_add_test(tc, keep_copies_it_and_the_bytes_read_back);
	tcase_add_test(tc, a_tensor_read_after_its_last_access_is_copied);
	tcase_add_test(tc, a_tensor_read_after_its_last_access_is_copied_in_uvm);
	tcase_add_test(tc, a_read_of_a_view_marks_its_parent);
	tcase_add_test(tc, a_tensor_kept_past_the_step_is_copied);
	tcase_add_test(tc, a_tensor_made_before_the_step_is_copied);
	tcase_add_test(tc, a_discarded_tensor_written_again_is_whole);
	tcase_add_test(tc, a_recomputation_source_is_not_dead);
	tcase_add_test(tc, a_trainer_reading_its_loss_trains_as_unconstrained);
	tcase_add_test(tc, the_mark_round_trips_through_a_trace_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
