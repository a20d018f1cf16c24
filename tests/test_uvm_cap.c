/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_cap.c — mode=uvm with uvm_cap=library on the simulator: the
 * library, not the driver, keeps the pages of its tensors on the device
 * within the budget.
 *
 * With uvm_cap=library the simulated driver keeps the whole device as
 * its limit, as CUDA's driver does, so whatever stays within the budget
 * does so because the library swapped tensors out first.  The MLP and
 * the GPT of examples/ train at 50% and 30% of the pages an unconstrained
 * run of theirs holds: the losses and weights must be bit-identical to
 * that run's, the library's count of pages (uvm_held_peak) and the
 * driver's own count of resident pages (device_peak) must stay within
 * the budget, the driver must evict nothing (uvm_evictions), and the
 * library's swap-outs are counted as passive evictions.  The same budget
 * with uvm_cap=driver is the contrast: there the driver evicts and the
 * library does not.  With uvm_cap=both, the default, the library evicts
 * as with library while it finds tensors to swap out, and the driver
 * takes only what it cannot.  The errors name the knobs.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "gpt_model.h"
#include "mlp_model.h"
#include "tensormm.h"

#define STEPS 4

struct run {
	float losses[STEPS];
	uint8_t *weights;
	size_t len;
	struct tmm_stats st;
};

static void finish(tmm_ctx *ctx, const char *config, int rc, struct run *r)
{
	ck_assert_msg(rc == 0, "training under '%s' failed: %s", config,
		      tmm_last_error(ctx));
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	/* Every tensor is destroyed by now: nothing may stay counted. */
	ck_assert_uint_eq(r->st.uvm_held, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static void train_mlp(const char *config, struct run *r)
{
	struct mlp_config mc;
	tmm_ctx *ctx;

	mlp_config_default(&mc);
	mc.steps = STEPS;
	mc.layers = 5;
	mc.width = 192;
	mc.batch = 64;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	finish(ctx, config,
	       mlp_train(ctx, &mc, r->losses, &r->weights, &r->len, NULL), r);
}

static void train_gpt(const char *config, struct run *r)
{
	struct gpt_config gc;
	tmm_ctx *ctx;

	gpt_config_default(&gc);
	gc.steps = STEPS;
	gc.batch = 4;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	finish(ctx, config,
	       gpt_train(ctx, &gc, r->losses, &r->weights, &r->len, NULL), r);
}

typedef void (*train_fn)(const char *config, struct run *r);

static const train_fn models[2] = { train_mlp, train_gpt };
static const char *const model_names[2] = { "mlp", "gpt" };
/* Each model's unconstrained run in mode=uvm, made once. */
static struct run reference[2];

static const struct run *reference_of(int model)
{
	struct run *r = &reference[model];

	if (!r->weights) {
		models[model]("backend=sim,sim_memory=backed,mode=uvm,"
			      "uvm_cap=library", r);
		ck_assert_uint_eq(r->st.iterations, STEPS);
		ck_assert_uint_eq(r->st.passive_evictions, 0);
		ck_assert_uint_eq(r->st.uvm_evictions, 0);
		ck_assert_uint_gt(r->st.uvm_held_peak, 0);
	}
	return r;
}

/* Trains `model` at `percent` of the reference's pages with the extra
 * config words `extra`, and checks the bytes against the reference. */
static void run_at(int model, unsigned percent, const char *extra,
		   struct run *got)
{
	const struct run *ref = reference_of(model);
	uint64_t budget = ref->st.uvm_held_peak * percent / 100;
	char config[256];

	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=uvm,budget=%lluB%s",
		 (unsigned long long)budget, extra);
	models[model](config, got);
	ck_assert_uint_eq(got->st.iterations, STEPS);
	ck_assert_uint_eq(got->len, ref->len);
	ck_assert_msg(memcmp(got->weights, ref->weights, ref->len) == 0,
		      "%s: weights differ at %u%% (%s)", model_names[model],
		      percent, config);
	ck_assert_msg(memcmp(got->losses, ref->losses, sizeof(ref->losses))
			      == 0,
		      "%s: losses differ at %u%% (%s)", model_names[model],
		      percent, config);
	free(got->weights);
}

/* uvm_cap=library: the library evicts, the driver never has to. */
static void check_library(int model, unsigned percent, const char *policy)
{
	struct run got = { 0 };
	char extra[96];

	snprintf(extra, sizeof(extra), ",uvm_cap=library,policy=%s", policy);
	run_at(model, percent, extra, &got);
	ck_assert_uint_le(got.st.uvm_held_peak, got.st.budget);
	/* The driver's own count of the pages on the device, with the
	 * whole device as its limit. */
	ck_assert_uint_le(got.st.device_peak, got.st.budget);
	ck_assert_uint_eq(got.st.uvm_evictions, 0);
	ck_assert_uint_gt(got.st.passive_evictions, 0);
	ck_assert_uint_gt(got.st.passive_eviction_bytes, 0);
	ck_assert_uint_ge(got.st.swap_out_count, got.st.passive_evictions);
}

/* uvm_cap=driver at the same budget: the driver evicts, the library
 * moves only what the plan says. */
static void check_driver(int model, unsigned percent)
{
	struct run got = { 0 };

	run_at(model, percent, ",uvm_cap=driver,policy=passive", &got);
	ck_assert_uint_le(got.st.device_peak, got.st.budget);
	ck_assert_uint_gt(got.st.uvm_evictions, 0);
	ck_assert_uint_eq(got.st.passive_evictions, 0);
	ck_assert_uint_eq(got.st.swap_out_count, 0);
}

/*
 * uvm_cap=both (the default) at the same budget: the library evicts
 * ahead of the driver, which then has nothing to evict; the pages stay
 * within the budget as with uvm_cap=library.
 */
static void check_both(int model, unsigned percent, const char *extra)
{
	struct run got = { 0 };

	run_at(model, percent, extra, &got);
	ck_assert_uint_le(got.st.uvm_held_peak, got.st.budget);
	ck_assert_uint_le(got.st.device_peak, got.st.budget);
	ck_assert_uint_eq(got.st.uvm_evictions, 0);
	ck_assert_uint_gt(got.st.passive_evictions, 0);
}

/*
 * budget=30%peak: the first iteration measures the library's count of
 * pages with the whole device, and the budget drops to 30% of it, the
 * tensors over it swapped out there and then (tmm_mover_set_limit).
 */
START_TEST(mlp_at_30_percent_of_its_peak)
{
	const struct run *ref = reference_of(0);
	struct run got = { 0 };

	train_mlp("backend=sim,sim_memory=backed,mode=uvm,uvm_cap=library,"
		  "budget=30%peak", &got);
	ck_assert_uint_eq(got.len, ref->len);
	ck_assert(memcmp(got.weights, ref->weights, ref->len) == 0);
	ck_assert(memcmp(got.losses, ref->losses, sizeof(ref->losses)) == 0);
	ck_assert_uint_le(got.st.budget, ref->st.uvm_held_peak * 30 / 100);
	ck_assert_uint_ge(got.st.budget, ref->st.uvm_held_peak * 25 / 100);
	ck_assert_uint_gt(got.st.passive_evictions, 0);
	ck_assert_uint_eq(got.st.uvm_evictions, 0);
	free(got.weights);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

#define KIB 1024u

/* out[0] = in[0]; user: the bytes. */
static int copy_op(void *const *in, void *const *out, void *user,
		   void *stream)
{
	(void)stream;
	memcpy(out[0], in[0], *(const size_t *)user);
	return 0;
}

static int run_copy(tmm_ctx *ctx, tmm_tensor from, tmm_tensor to,
		    size_t *bytes)
{
	tmm_op op = { .name = "copy", .inputs = &from, .n_inputs = 1,
		      .outputs = &to, .n_outputs = 1, .run = copy_op,
		      .user = bytes };

	return tmm_run(ctx, &op);
}

static tmm_tensor written(tmm_ctx *ctx, size_t bytes, const char *name)
{
	static unsigned char data[1024 * KIB];
	tmm_tensor t;

	ck_assert_uint_le(bytes, sizeof(data));
	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, name,
					   &t), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, data, bytes), 0);
	return t;
}

static void has(const char *text, const char *part)
{
	ck_assert_msg(strstr(text, part), "\"%s\" lacks \"%s\"", text,
		      part);
}

/* An op whose pages alone are more than the budget is refused before
 * anything moves, naming the budget and the cap. */
START_TEST(an_op_over_the_budget_names_the_knobs)
{
	size_t bytes = 768 * KIB;
	tmm_ctx *ctx;
	tmm_tensor a, b;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=uvm,"
					"uvm_cap=library,budget=1MiB,"
					"log=error"), 0);
	a = written(ctx, bytes, "a");
	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, "b",
					   &b), 0);
	ck_assert_int_eq(run_copy(ctx, a, b, &bytes), -ENOMEM);
	has(tmm_last_error(ctx), "TENSORMM_BUDGET");
	has(tmm_last_error(ctx), "TENSORMM_UVM_CAP=library");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A tensor tmm_acquire pins holds its pages: an op that fits the budget
 * but not beside it finds nothing to swap out, and the message says
 * what holds the pages and which knobs to turn.  Released, it is the
 * one swapped out.  With uvm_cap=driver the same op runs: the driver
 * oversubscribes; so it does with uvm_cap=both, whose library finds
 * nothing it may swap out and leaves the pages over the budget to the
 * driver, which evicts.
 */
START_TEST(pinned_pages_leave_no_room_and_say_so)
{
	static const char *const caps[] = { "library", "driver", "both" };
	size_t small = 256 * KIB;

	for (int c = 0; c < 3; c++) {
		struct tmm_stats st = { .version = TMM_STATS_VERSION };
		char config[128];
		tmm_ctx *ctx;
		tmm_tensor big, a, b;
		void *p;
		int rc;

		snprintf(config, sizeof(config), "backend=sim,mode=uvm,"
			 "uvm_cap=%s,budget=1MiB,log=error", caps[c]);
		ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
		big = written(ctx, 640 * KIB, "big");
		ck_assert_int_eq(tmm_acquire(ctx, big, TMM_READ, &p), 0);
		a = written(ctx, small, "a");
		ck_assert_int_eq(tmm_tensor_create(ctx, small, TMM_ACTIVATION,
						   "b", &b), 0);
		rc = run_copy(ctx, a, b, &small);
		if (c == 0) {
			ck_assert_int_eq(rc, -ENOMEM);
			has(tmm_last_error(ctx), "tensor 'b'");
			has(tmm_last_error(ctx), "tmm_acquire pins");
			has(tmm_last_error(ctx), "TENSORMM_BUDGET");
			has(tmm_last_error(ctx), "TENSORMM_UVM_CAP=both");
			ck_assert_int_eq(tmm_release(ctx, big), 0);
			ck_assert_int_eq(run_copy(ctx, a, b, &small), 0);
			ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
			ck_assert_uint_eq(st.passive_evictions, 1);
			ck_assert_uint_eq(st.passive_eviction_bytes,
					  640 * KIB);
			ck_assert_uint_le(st.uvm_held_peak, st.budget);
		} else {
			ck_assert_msg(rc == 0, "%s", tmm_last_error(ctx));
			ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
			ck_assert_uint_eq(st.passive_evictions, 0);
			ck_assert_uint_gt(st.uvm_evictions, 0);
			ck_assert_int_eq(tmm_release(ctx, big), 0);
		}
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

static struct tmm_stats stats(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/*
 * uvm_cap=both with budget=25%peak, a tensor pinned by tmm_acquire over
 * the first iteration's end: the budget drops below the pinned pages,
 * which the library may not swap out.  Lowering the limit is no error
 * (the driver holds it and evicts what it must), and the run goes on,
 * every byte intact; released, the tensor is the library's to swap out
 * again: the next allocation evicts down to the lowered budget.
 */
START_TEST(a_pinned_tensor_over_a_lowered_budget_is_the_drivers)
{
	static unsigned char want[640 * KIB], got[640 * KIB];
	size_t small = 256 * KIB;
	struct tmm_stats st;
	uint64_t before, driver_evictions;
	tmm_tensor big, a, b, c;
	tmm_ctx *ctx;
	void *p;

	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (unsigned char)(i * 131u + 7u);
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=uvm,uvm_cap=both,"
					"budget=25%peak,log=error"), 0);
	before = stats(ctx).budget;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(want), TMM_ACTIVATION,
					   "big", &big), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, big, 0, want, sizeof(want)),
			 0);
	ck_assert_int_eq(tmm_acquire(ctx, big, TMM_READ, &p), 0);
	a = written(ctx, small, "a");
	ck_assert_int_eq(tmm_tensor_create(ctx, small, TMM_ACTIVATION, "b",
					   &b), 0);
	ck_assert_int_eq(run_copy(ctx, a, b, &small), 0);
	ck_assert_msg(tmm_iteration_end(ctx) == 0, "%s", tmm_last_error(ctx));
	st = stats(ctx);
	ck_assert_uint_lt(st.budget, before);
	ck_assert_uint_lt(st.budget, sizeof(want)); /* below the pinned */
	ck_assert_uint_gt(st.uvm_held, st.budget);

	/* The next op fits only where the driver evicts: it does. */
	driver_evictions = st.uvm_evictions;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_msg(run_copy(ctx, b, a, &small) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_uint_gt(stats(ctx).uvm_evictions, driver_evictions);
	ck_assert_int_eq(tmm_release(ctx, big), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);

	/* Released: the next tensor's pages come by the library's
	 * evictions, down to the budget, the driver's no more. */
	driver_evictions = stats(ctx).uvm_evictions;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, small, TMM_ACTIVATION, "c",
					   &c), 0);
	ck_assert_int_eq(run_copy(ctx, a, c, &small), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	st = stats(ctx);
	ck_assert_uint_le(st.uvm_held, st.budget);
	ck_assert_uint_gt(st.passive_evictions, 0);
	ck_assert_uint_eq(st.uvm_evictions, driver_evictions);
	ck_assert_int_eq(tmm_tensor_read(ctx, big, 0, got, sizeof(got)), 0);
	ck_assert(memcmp(got, want, sizeof(want)) == 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A host write of a new tensor takes room on the device only where the
 * budget has it: writing weights must not push out other weights, so the
 * third of three half-budget tensors waits on the host, uncounted, and
 * comes to the device when an op needs it, the least recently used
 * tensor making room.  Its bytes are right all along.
 */
START_TEST(a_host_write_with_no_room_stays_on_the_host)
{
	static unsigned char data[512 * KIB], back[512 * KIB];
	size_t bytes = sizeof(data);
	tmm_ctx *ctx;
	tmm_tensor w[3], out;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=uvm,"
					"uvm_cap=library,budget=1MiB,"
					"log=error"), 0);
	for (int i = 0; i < 3; i++) {
		memset(data, 0x10 + i, bytes);
		ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_PERSISTENT,
						   "w", &w[i]), 0);
		ck_assert_int_eq(tmm_tensor_write(ctx, w[i], 0, data, bytes),
				 0);
	}
	ck_assert_uint_eq(stats(ctx).uvm_held, 1024 * KIB);
	ck_assert_uint_eq(stats(ctx).passive_evictions, 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, w[2], 0, back, bytes), 0);
	ck_assert_int_eq(back[0], 0x12);
	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_ACTIVATION, "out",
					   &out), 0);
	ck_assert_msg(run_copy(ctx, w[2], out, &bytes) == 0, "%s",
		      tmm_last_error(ctx));
	ck_assert_uint_eq(stats(ctx).passive_evictions, 2);
	ck_assert_uint_le(stats(ctx).uvm_held_peak, 1024 * KIB);
	ck_assert_int_eq(tmm_tensor_read(ctx, out, 0, back, bytes), 0);
	ck_assert_int_eq(back[bytes - 1], 0x12);
	ck_assert_int_eq(tmm_tensor_read(ctx, w[0], 0, back, bytes), 0);
	ck_assert_int_eq(back[0], 0x10);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(mlp_at_50_percent) { check_library(0, 50, "none"); }
END_TEST
START_TEST(mlp_at_30_percent) { check_library(0, 30, "none"); }
END_TEST
START_TEST(mlp_passive_at_30_percent) { check_library(0, 30, "passive"); }
END_TEST
START_TEST(mlp_driver_at_30_percent) { check_driver(0, 30); }
END_TEST
START_TEST(gpt_at_50_percent) { check_library(1, 50, "none"); }
END_TEST
START_TEST(gpt_at_30_percent) { check_library(1, 30, "none"); }
END_TEST
START_TEST(gpt_passive_at_30_percent) { check_library(1, 30, "passive"); }
END_TEST
START_TEST(gpt_driver_at_30_percent) { check_driver(1, 30); }

START_TEST(mlp_both_at_30_percent)
{
	check_both(0, 30, ",uvm_cap=both,policy=passive");
}

START_TEST(gpt_by_default_at_30_percent)
{
	check_both(1, 30, ",policy=passive");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("uvm_cap");
	TCase *mlp = tcase_create("mlp"), *gpt = tcase_create("gpt");
	SRunner *sr;
	int status;

	tcase_set_timeout(mlp, 300);
	tcase_set_timeout(gpt, 300);
	tcase_add_test(mlp, mlp_at_50_percent);
	tcase_add_test(mlp, mlp_at_30_percent);
	tcase_add_test(mlp, mlp_passive_at_30_percent);
	tcase_add_test(mlp, mlp_driver_at_30_percent);
	tcase_add_test(mlp, mlp_both_at_30_percent);
	tcase_add_test(mlp, mlp_at_30_percent_of_its_peak);
	tcase_add_test(mlp, an_op_over_the_budget_names_the_knobs);
	tcase_add_test(mlp, pinned_pages_leave_no_room_and_say_so);
	tcase_add_test(mlp,
		       a_pinned_tensor_over_a_lowered_budget_is_the_drivers);
	tcase_add_test(mlp, a_host_write_with_no_room_stays_on_the_host);
	tcase_add_test(gpt, gpt_at_50_percent);
	tcase_add_test(gpt, gpt_at_30_percent);
	tcase_add_test(gpt, gpt_passive_at_30_percent);
	tcase_add_test(gpt, gpt_driver_at_30_percent);
	tcase_add_test(gpt, gpt_by_default_at_30_percent);
	suite_add_tcase(s, mlp);
	suite_add_tcase(s, gpt);
	sr = srunner_create(s);
	/* In-process, so the reference runs are made once per model. */
	srunner_set_fork_status(sr, CK_NOFORK);
	status = check_run_all(sr);
	free(reference[0].weights);
	free(reference[1].weights);
	return status;
}
