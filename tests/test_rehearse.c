/* SPDX-License-Identifier: MIT */
/*
 * test_rehearse.c — the first plan from a rehearsed step
 * (tmm_rehearsal_begin/end, lib/exec/rehearse.c).
 *
 * The MLP and the GPT of examples/ train at 50% of their unconstrained
 * peak under capuchin in mode=swap, once measuring their first step (the
 * passive mode a rehearsal is there to avoid) and once rehearsing it.
 * The rehearsed run's first real step must be guided, must leave its plan
 * nowhere, and, with a plan that fits, must need no passive eviction,
 * where the measured run's first step needs some; both runs must give
 * losses and weights bit-identical to the unconstrained run.
 *
 * Small toy steps check the rest of the contract: nothing is computed or
 * moved (no callback runs, bytes made before stay as they were, reads give
 * zeros, tmm_acquire is refused), op times are the backend's predictions,
 * re-planning on drift retimes the rehearsed trace when they miss, what
 * the rehearsal made is gone at its end, and every misuse is refused with
 * -EINVAL.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/core/context.h"
#include "gpt_model.h"
#include "lib/exec/guide.h"
#include "mlp_model.h"
#include "tensormm.h"
#include "toy_ops.h"
#include "lib/io/trace_read.h"
#include "lib/record/tracker.h"

#define STEPS 4

/* ---- the models ------------------------------------------------------- */

struct run {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	struct tmm_stats st;	/* at the end */
	struct tmm_stats first; /* after the first real step */
	bool plan_fits;		/* the plan followed from step 2 on fits */
};

/* after_step hook: what the first real step did. */
static int note_first_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct run *r = arg;
	const struct tmm_plan *plan = tmm_guide_plan(ctx);

	if (step != 1)
		return 0;
	r->first.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->first), 0);
	r->plan_fits = plan && plan->fits;
	return 0;
}

static void train(int model, const char *config, bool rehearse,
		  struct run *r)
{
	struct mlp_config mc;
	struct gpt_config gc;
	tmm_ctx *ctx;
	int rc;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	if (model == 0) {
		mlp_config_default(&mc);
		/* Activations outweigh the weights, so that capuchin's
		 * plan fits half the peak (with wider layers and a smaller
		 * batch one op's weights alone leave it short). */
		mc.steps = STEPS;
		mc.layers = 8;
		mc.width = 128;
		mc.batch = 128;
		mc.rehearse = rehearse;
		mc.after_step = note_first_step;
		mc.after_step_arg = r;
		rc = mlp_train(ctx, &mc, r->losses, &r->weights, &r->len, NULL);
	} else {
		gpt_config_default(&gc);
		gc.steps = STEPS;
		gc.batch = 4;
		gc.rehearse = rehearse;
		gc.after_step = note_first_step;
		gc.after_step_arg = r;
		rc = gpt_train(ctx, &gc, r->losses, &r->weights, &r->len, NULL);
	}
	ck_assert_msg(rc == 0, "training under '%s'%s failed: %s", config,
		      rehearse ? " with a rehearsal" : "",
		      tmm_last_error(ctx));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static void same_bytes(const struct run *a, const struct run *b)
{
	ck_assert_uint_eq(a->len, b->len);
	ck_assert_msg(memcmp(a->weights, b->weights, a->len) == 0,
		      "weights differ from the unconstrained run");
	ck_assert_msg(memcmp(a->losses, b->losses, sizeof(a->losses)) == 0,
		      "losses differ from the unconstrained run");
}

static void check_model(int model)
{
	struct run free_run = { 0 }, measured = { 0 }, rehearsed = { 0 };
	char config[160];

	train(model, "backend=sim,sim_memory=backed,mode=swap", false,
	      &free_run);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,policy=capuchin,"
		 "budget=%lluB",
		 (unsigned long long)free_run.st.device_peak / 2);
	train(model, config, false, &measured);
	train(model, config, true, &rehearsed);

	/* The measured run's first step had no plan and paid for it. */
	ck_assert_uint_eq(measured.first.guided_iterations, 0);
	ck_assert_uint_gt(measured.first.passive_evictions, 0);

	/* The rehearsed run's first step followed the plan to the end. */
	ck_assert_uint_eq(rehearsed.first.iterations, 1);
	ck_assert_uint_eq(rehearsed.first.guided_iterations, 1);
	ck_assert_uint_eq(rehearsed.first.plan_divergences, 0);
	ck_assert_uint_eq(rehearsed.first.plan_state, TMM_PLAN_GUIDED);
	ck_assert_uint_eq(rehearsed.first.plans_made, 1);
	ck_assert_msg(rehearsed.plan_fits,
		      "capuchin's plan at 50%% does not fit: the test needs "
		      "one that does");
	ck_assert_uint_eq(rehearsed.first.passive_evictions, 0);
	ck_assert_uint_lt(rehearsed.first.passive_evictions,
			  measured.first.passive_evictions);
	/* ... and really swapped to stay within the budget. */
	ck_assert_uint_gt(rehearsed.first.swap_out_count, 0);
	ck_assert_uint_le(rehearsed.st.device_peak,
			  free_run.st.device_peak / 2);
	/* The rehearsal is not counted as an iteration. */
	ck_assert_uint_eq(rehearsed.st.iterations, STEPS);

	same_bytes(&measured, &free_run);
	same_bytes(&rehearsed, &free_run);
	free(free_run.weights);
	free(measured.weights);
	free(rehearsed.weights);
}

START_TEST(mlp_rehearsed_at_50_percent) { check_model(0); }
END_TEST

START_TEST(gpt_rehearsed_at_50_percent) { check_model(1); }
END_TEST

/* ---- toy steps -------------------------------------------------------- */

static unsigned callbacks; /* calls of counted_fill */

static int counted_fill(void *const *in, void *const *out, void *user,
			void *stream)
{
	callbacks++;
	return toy_fill(in, out, user, stream);
}

static tmm_ctx *toy_ctx(void)
{
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					   "mode=swap,budget=1MiB") == 0,
		      "%s", tmm_last_error(NULL));
	return ctx;
}

/* One step: a = fill(w), b = mix(a, w), w += 1 (in place); `saw`
 * receives what reading b gave. */
static void toy_step(tmm_ctx *ctx, tmm_tensor w, uint32_t *saw)
{
	tmm_tensor a, b;

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "b",
					   &b), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, counted_fill, &w, 1, &a, 1);
	toy_run(ctx, "mix", TMM_OP_PURE, toy_mix, (tmm_tensor[]){ a, w }, 2,
		&b, 1);
	toy_run(ctx, "bump", 0, toy_bump, &w, 1, &w, 1);
	ck_assert_int_eq(tmm_tensor_read(ctx, b, 0, saw, BYTES), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, b), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

START_TEST(nothing_is_computed_or_moved)
{
	static uint32_t before[ELEMS], after[ELEMS], saw[ELEMS];
	tmm_ctx *ctx = toy_ctx();
	tmm_tensor w = toy_weight(ctx, 7);
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	void *ptr = NULL;
	bool all_zero = true;

	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, before, BYTES), 0);
	callbacks = 0;
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	memset(saw, 0xff, sizeof(saw));
	toy_step(ctx, w, saw);
	/* tmm_acquire cannot hand out bytes that are not there. */
	ck_assert_int_eq(tmm_acquire(ctx, w, TMM_READ, &ptr), -EBUSY);
	ck_assert_ptr_null(ptr);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "rehearsal"));
	/* A write copies nothing: w keeps its bytes. */
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, saw, BYTES), 0);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);

	for (unsigned k = 0; k < ELEMS; k++)
		all_zero &= saw[k] == 0;
	ck_assert_msg(all_zero, "a read in a rehearsal gave bytes");
	ck_assert_uint_eq(callbacks, 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, after, BYTES), 0);
	ck_assert_msg(memcmp(before, after, BYTES) == 0,
		      "the rehearsal changed a tensor made before it");
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.ops, 0);
	ck_assert_uint_eq(st.iterations, 0);
	ck_assert_uint_eq(st.swap_out_count, 0);
	ck_assert_uint_eq(st.plan_state, TMM_PLAN_GUIDED);

	/* The real step computes: the callback runs, w is bumped. */
	toy_step(ctx, w, saw);
	ck_assert_uint_eq(callbacks, 1);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, after, BYTES), 0);
	ck_assert_uint_eq(after[0], before[0] + 1);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.guided_iterations, 1);
	ck_assert_uint_eq(st.plan_divergences, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(op_times_are_predictions)
{
	static uint32_t saw[ELEMS];
	tmm_ctx *ctx;
	const struct tmm_trace *tr;
	struct tmm_cost cost = { .flops = 4.0 * ELEMS, .bytes = 12.0 * ELEMS };
	uint64_t predicted;

	/* With jitter, measured times miss the roofline; predicted ones
	 * are the roofline itself. */
	ck_assert_msg(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					   "mode=swap,budget=1MiB,"
					   "sim_jitter=0.3") == 0,
		      "%s", tmm_last_error(NULL));
	predicted = ctx->be.ops->op_estimate_ns(&ctx->be, &cost);
	ck_assert_uint_gt(predicted, 0);
	tmm_tensor w = toy_weight(ctx, 3);

	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	toy_step(ctx, w, saw);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);
	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	ck_assert_uint_eq(tr->n_ops, 3);
	for (uint32_t i = 0; i < tr->n_ops; i++) {
		ck_assert_uint_eq(tr->ops[i].end_ns - tr->ops[i].begin_ns,
				  predicted);
		/* One after the other, on the predicted clock. */
		ck_assert_uint_eq(tr->ops[i].begin_ns, i * predicted);
	}
	ck_assert_uint_eq(tr->duration_ns, 3 * predicted);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* One step of two ops whose cost hints are `flops` each: big enough that
 * compute, not the launch, sets their time. */
static void costed_step(tmm_ctx *ctx, tmm_tensor w, double flops)
{
	tmm_tensor a, b;
	tmm_op op = { .name = "fill", .kind = TMM_OP_ELEMENTWISE,
		      .flags = TMM_OP_PURE, .n_inputs = 1, .n_outputs = 1,
		      .run = toy_fill, .cost = { flops, 12.0 * ELEMS } };

	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "b",
					   &b), 0);
	op.inputs = &w, op.outputs = &a;
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	op.inputs = &a, op.outputs = &b;
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, b), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
}

/*
 * Predictions that miss: the rehearsal's cost hints say a tenth of what
 * the ops cost.  The guided iterations measure the truth, and re-planning
 * on drift retimes the rehearsed trace with it.
 */
START_TEST(drift_replans_from_the_rehearsed_trace)
{
	tmm_ctx *ctx;
	tmm_tensor w;
	const struct tmm_trace *tr;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	struct tmm_cost small = { .flops = 1e8, .bytes = 12.0 * ELEMS };
	uint64_t predicted;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					   "mode=swap,budget=1MiB,"
					   "policy=none,replan_drift=0.2") == 0,
		      "%s", tmm_last_error(NULL));
	w = toy_weight(ctx, 5);
	predicted = ctx->be.ops->op_estimate_ns(&ctx->be, &small);
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	costed_step(ctx, w, small.flops);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);
	tr = tmm_tracker_first(ctx);
	ck_assert_ptr_nonnull(tr);
	ck_assert_uint_eq(tr->ops[0].end_ns - tr->ops[0].begin_ns, predicted);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.plans_made, 1);

	for (int i = 0; i < 4; i++)
		costed_step(ctx, w, 10 * small.flops);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.guided_iterations, 4);
	ck_assert_uint_eq(st.plan_divergences, 0);
	ck_assert_uint_ge(st.plans_made, 2);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A plan loaded from a plan file already guides the first iteration. */
START_TEST(a_plan_file_needs_no_rehearsal)
{
	static uint32_t saw[ELEMS];
	char path[64], config[192];
	tmm_ctx *ctx;
	tmm_tensor w;
	int fd;

	snprintf(path, sizeof(path), "/tmp/tmm-rehearse-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path); /* the first run writes it */
	snprintf(config, sizeof(config), "backend=sim,sim_memory=backed,"
		 "mode=swap,budget=1MiB,hints=%s", path);
	for (int run = 0; run < 2; run++) {
		ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
			      tmm_last_error(NULL));
		w = toy_weight(ctx, 2);
		if (run == 1) {
			ck_assert_int_eq(tmm_rehearsal_begin(ctx), -EINVAL);
			ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx),
						     "already installed"));
		}
		toy_step(ctx, w, saw);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unlink(path);
}
END_TEST

/* The trace file holds iterations that ran: the real one, not the
 * rehearsal before it. */
START_TEST(the_trace_file_holds_real_iterations_only)
{
	static uint32_t saw[ELEMS];
	char path[64], config[192], err[256];
	struct tmm_trace_reader *r = NULL;
	struct tmm_trace_file_info info;
	struct tmm_trace t;
	unsigned records = 0;
	tmm_ctx *ctx;
	tmm_tensor w;
	int fd, rc;

	snprintf(path, sizeof(path), "/tmp/tmm-rehearse-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(config, sizeof(config), "backend=sim,sim_memory=backed,"
		 "mode=swap,budget=1MiB,trace=%s", path);
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	w = toy_weight(ctx, 9);
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	toy_step(ctx, w, saw);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);
	toy_step(ctx, w, saw);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	ck_assert_int_eq(tmm_trace_reader_open(path, &r, &info, err,
					       sizeof(err)), 0);
	while ((rc = tmm_trace_reader_next(r, &t, err, sizeof(err))) == 1) {
		records++;
		ck_assert_uint_eq(t.n_ops, 3);
		ck_assert_uint_eq(t.iteration, 1);
		tmm_trace_free(&t);
	}
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(records, 1);
	tmm_trace_reader_close(r);
	unlink(path);
}
END_TEST

START_TEST(what_the_rehearsal_made_is_gone)
{
	tmm_ctx *ctx = toy_ctx();
	tmm_tensor kept, outside;

	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "k",
					   &kept), 0);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, kept), BYTES);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "o",
					   &outside), 0);
	toy_run(ctx, "fill", TMM_OP_PURE, toy_fill, &kept, 1, &outside, 1);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, kept), 0);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, outside), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, kept), -EBADF);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(misuse_is_refused)
{
	static uint32_t saw[ELEMS];
	tmm_ctx *ctx = toy_ctx();
	tmm_tensor w = toy_weight(ctx, 1);

	/* Unbalanced. */
	ck_assert_int_eq(tmm_rehearsal_end(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "no rehearsal"));
	/* Inside an iteration. */
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "is open"));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	/* After the first iteration. */
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx),
				     "an iteration has run"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	ctx = toy_ctx();
	w = toy_weight(ctx, 1);
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	/* Nested. */
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "do not nest"));
	/* Ended with its iteration open. */
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "still open"));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), 0);
	/* After the rehearsed step: its plan is made. */
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx),
				     "a step was rehearsed"));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);

	/* Ended with no iteration rehearsed: refused, and the first real
	 * iteration is measured as if there had been no rehearsal. */
	ctx = toy_ctx();
	w = toy_weight(ctx, 1);
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	ck_assert_int_eq(tmm_rehearsal_end(ctx), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx),
				     "no complete iteration"));
	toy_step(ctx, w, saw);
	{
		struct tmm_stats st = { .version = TMM_STATS_VERSION };

		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.guided_iterations, 0);
		ck_assert_uint_eq(st.iterations, 1);
	}
	/* A context destroyed mid-rehearsal frees what it made. */
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ctx = toy_ctx();
	ck_assert_int_eq(tmm_rehearsal_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "x",
					   &w), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *rehearse_suite(void)
{
	Suite *s = suite_create("rehearse");
	TCase *models = tcase_create("models");
	TCase *toy = tcase_create("toy");

	tcase_set_timeout(models, 120);
	tcase_add_test(models, mlp_rehearsed_at_50_percent);
	tcase_add_test(models, gpt_rehearsed_at_50_percent);
	tcase_add_test(toy, nothing_is_computed_or_moved);
	tcase_add_test(toy, op_times_are_predictions);
	tcase_add_test(toy, drift_replans_from_the_rehearsed_trace);
	tcase_add_test(toy, a_plan_file_needs_no_rehearsal);
	tcase_add_test(toy, the_trace_file_holds_real_iterations_only);
	tcase_add_test(toy, what_the_rehearsal_made_is_gone);
	tcase_add_test(toy, misuse_is_refused);
	suite_add_tcase(s, models);
	suite_add_tcase(s, toy);
	return s;
}

int main(void)
{
	return check_main(rehearse_suite);
}
