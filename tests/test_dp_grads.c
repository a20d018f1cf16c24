/* SPDX-License-Identifier: MIT */
/*
 * test_dp_grads.c — examples/dp_grads.c when an op of its step fails:
 * the all-reduce of a bucket, or the update of the bucket held back for
 * it (the plain path, without ZeRO), on the simulator with real bytes.
 *
 * The model is 8 parameters of 4 floats in 4 groups of 2, one bucket a
 * group (bucket_bytes 1), on one rank of one micro-batch: bucket k is
 * reduced after parameter 2k+1's gradient and updated (w += g) at the
 * all-reduce of bucket k+1, bucket 3 at once.  The all-reduce (the
 * test's transport: the mean of one rank is the gradient itself) and the
 * update's kernel fail by returning -EIO from their run callbacks, so
 * that tmm_run fails as it does for any error of the library.
 *
 * Each failing step must return the error, name the op that failed
 * (dp_trainer_failed), and have updated the buckets before it once and
 * no other; the next step, without the failure, must update every
 * parameter exactly once, with that step's gradient: no bucket is left
 * held into it.  The same holds when the step stops outside dp_grads
 * (the model's own backward failing) with a bucket held.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "dp_grads.h"
#include "tensormm.h"

#define PARAMS 8
#define FLOATS 4

/* What the callbacks saw, and which of them is to fail. */
static struct {
	unsigned updates[PARAMS];     /* kernels run, this step */
	float grad_seen[PARAMS];      /* the gradient each last added */
	unsigned reduced;	      /* all-reduces run, this step */
	int fail_reduce;	      /* this bucket's all-reduce, or -1 */
	int fail_update;	      /* this parameter's kernel, or -1 */
} seen;

static int allreduce(void *const *in, void *const *out, void *user,
		     void *stream)
{
	const struct dp_bucket *b = user;

	(void)in;
	(void)out;
	(void)stream;
	if ((int)(b->first / 2) == seen.fail_reduce)
		return -EIO;
	seen.reduced++;
	return 0;
}

static const struct dp_transport transport = { .allreduce = allreduce };

struct param_kernel {
	unsigned p;
};

static struct param_kernel kernels[PARAMS];

/* w += g, elementwise. */
static int sgd(void *const *in, void *const *out, void *user, void *stream)
{
	const struct param_kernel *k = user;
	const float *g = in[1];
	float *w = out[0];

	(void)stream;
	if ((int)k->p == seen.fail_update)
		return -EIO;
	for (unsigned i = 0; i < FLOATS; i++)
		w[i] += g[i];
	seen.updates[k->p]++;
	seen.grad_seen[k->p] = g[0];
	return 0;
}

static int update(tmm_ctx *ctx, unsigned p, tmm_tensor w, tmm_tensor g,
		  void *arg)
{
	tmm_tensor in[2] = { w, g };
	tmm_op op = {
		.name = "sgd", .kind = TMM_OP_OPTIMIZER,
		.flags = TMM_OP_BACKWARD, .inputs = in, .n_inputs = 2,
		.outputs = in, .n_outputs = 1, .run = sgd,
		.user = &kernels[p],
	};

	(void)arg;
	return tmm_run(ctx, &op);
}

static const size_t floats[PARAMS] = { FLOATS, FLOATS, FLOATS, FLOATS,
				       FLOATS, FLOATS, FLOATS, FLOATS };
static const unsigned group[PARAMS] = { 0, 0, 1, 1, 2, 2, 3, 3 };

struct scene {
	tmm_ctx *ctx;
	struct dp_comm comm;
	struct dp_model model;
	struct dp_trainer *t;
	tmm_tensor w[PARAMS];
	float sum[PARAMS]; /* what each weight should hold */
};

static void set_up(struct scene *s)
{
	struct dp_setup ds;

	memset(s, 0, sizeof(*s));
	for (unsigned p = 0; p < PARAMS; p++)
		kernels[p].p = p;
	ck_assert_int_eq(tmm_ctx_create(&s->ctx, "backend=sim,"
					"sim_memory=backed,mode=swap"), 0);
	s->comm = (struct dp_comm){ .rank = 0, .size = 1 };
	s->model = (struct dp_model){ .n_params = PARAMS, .floats = floats,
				      .group = group, .update = update };
	ds = (struct dp_setup){ .comm = &s->comm, .model = &s->model,
				.transport = &transport, .bucket_bytes = 1 };
	ck_assert_int_eq(dp_trainer_open(s->ctx, &ds, &s->t), 0);
	ck_assert_uint_eq(dp_trainer_buckets(s->t), 4);
	for (unsigned p = 0; p < PARAMS; p++) {
		ck_assert_int_eq(tmm_tensor_create(s->ctx,
						   FLOATS * sizeof(float),
						   TMM_PERSISTENT, "w",
						   &s->w[p]), 0);
		ck_assert_int_eq(tmm_tensor_fill(s->ctx, s->w[p], 0), 0);
	}
}

static void tear_down(struct scene *s)
{
	for (unsigned p = 0; p < PARAMS; p++)
		ck_assert_int_eq(tmm_tensor_destroy(s->ctx, s->w[p]), 0);
	dp_trainer_close(s->ctx, s->t);
	ck_assert_int_eq(tmm_ctx_destroy(s->ctx), 0);
}

/* Parameter p's gradient in step `step`: every element this. */
static float grad_of(unsigned step, unsigned p)
{
	return (float)(step * 10 + p + 1);
}

/*
 * One step: each parameter's gradient, then dp_grad_ready, as a model's
 * backward does, up to parameter `stop` (exclusive: the backward failed
 * there) or the first error.  Returns that error, or 0.
 */
static int step(struct scene *s, unsigned n, unsigned stop)
{
	tmm_tensor g[PARAMS];
	unsigned made = 0;
	int rc = 0;

	memset(seen.updates, 0, sizeof(seen.updates));
	seen.reduced = 0;
	ck_assert_int_eq(tmm_iteration_begin(s->ctx), 0);
	for (unsigned p = 0; p < stop && rc == 0; p++) {
		float v[FLOATS];

		for (unsigned i = 0; i < FLOATS; i++)
			v[i] = grad_of(n, p);
		ck_assert_int_eq(tmm_tensor_create(s->ctx, sizeof(v),
						   TMM_GRADIENT, "g", &g[p]),
				 0);
		made++;
		ck_assert_int_eq(tmm_tensor_write(s->ctx, g[p], 0, v,
						  sizeof(v)), 0);
		rc = dp_grad_ready(s->ctx, s->t, p, 0, s->w[p], &g[p]);
	}
	for (unsigned p = 0; p < made; p++)
		ck_assert_int_eq(tmm_tensor_destroy(s->ctx, g[p]), 0);
	ck_assert_int_eq(tmm_iteration_end(s->ctx), 0);
	for (unsigned p = 0; p < PARAMS; p++)
		if (seen.updates[p])
			s->sum[p] += grad_of(n, p);
	return rc;
}

/* Parameters [0, done) were updated once this step, the others not. */
static void updated_up_to(unsigned done, const char *what)
{
	for (unsigned p = 0; p < PARAMS; p++)
		ck_assert_msg(seen.updates[p] == (p < done),
			      "%s: parameter %u updated %u time(s)", what, p,
			      seen.updates[p]);
}

/* A whole step without failure: every parameter once, with its own
 * gradient of this step, and the weights hold every update's sum. */
static void clean_step(struct scene *s, unsigned n)
{
	seen.fail_reduce = seen.fail_update = -1;
	ck_assert_int_eq(step(s, n, PARAMS), 0);
	ck_assert_ptr_null(dp_trainer_failed(s->t));
	ck_assert_uint_eq(seen.reduced, 4);
	updated_up_to(PARAMS, "the step after");
	for (unsigned p = 0; p < PARAMS; p++) {
		float w[FLOATS];

		ck_assert_msg(seen.grad_seen[p] == grad_of(n, p),
			      "parameter %u updated with %g, not step %u's %g",
			      p, seen.grad_seen[p], n, grad_of(n, p));
		ck_assert_int_eq(tmm_tensor_read(s->ctx, s->w[p], 0, w,
						 sizeof(w)), 0);
		ck_assert_msg(w[0] == s->sum[p], "w%u is %g, not %g", p, w[0],
			      s->sum[p]);
	}
}

/* Bucket 2's all-reduce fails: bucket 0 was updated (at bucket 1's
 * all-reduce); bucket 1, held for bucket 2's, never is. */
START_TEST(a_failed_allreduce_ends_the_step)
{
	struct scene s;
	const char *f;

	set_up(&s);
	clean_step(&s, 0);
	seen.fail_reduce = 2;
	seen.fail_update = -1;
	ck_assert_int_lt(step(&s, 1, PARAMS), 0);
	f = dp_trainer_failed(s.t);
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(f, "the all-reduce of bucket 2 of 4");
	ck_assert_ptr_nonnull(strstr(tmm_last_error(s.ctx), "allreduce"));
	updated_up_to(2, "bucket 2's all-reduce failed");
	clean_step(&s, 2);
	tear_down(&s);
}
END_TEST

/* The update of bucket 1, held for bucket 2's all-reduce, fails at its
 * second parameter: its first one and bucket 0 were updated. */
START_TEST(a_failed_held_update_ends_the_step)
{
	struct scene s;
	const char *f;

	set_up(&s);
	clean_step(&s, 0);
	seen.fail_reduce = -1;
	seen.fail_update = 3;
	ck_assert_int_lt(step(&s, 1, PARAMS), 0);
	f = dp_trainer_failed(s.t);
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(f, "the update of parameter 3 (held for the next "
			    "all-reduce) of bucket 1 of 4");
	ck_assert_ptr_nonnull(strstr(tmm_last_error(s.ctx), "sgd"));
	/* Bucket 2 was reduced, never updated. */
	ck_assert_uint_eq(seen.reduced, 3);
	updated_up_to(3, "parameter 3's update failed");
	clean_step(&s, 2);
	tear_down(&s);
}
END_TEST

/* The last bucket is updated at once, not held: its failure names it. */
START_TEST(a_failed_last_update_ends_the_step)
{
	struct scene s;

	set_up(&s);
	seen.fail_reduce = -1;
	seen.fail_update = 6;
	ck_assert_int_lt(step(&s, 0, PARAMS), 0);
	ck_assert_ptr_nonnull(dp_trainer_failed(s.t));
	ck_assert_str_eq(dp_trainer_failed(s.t),
			 "the update of parameter 6 (the step's last bucket) "
			 "of bucket 3 of 4");
	updated_up_to(6, "parameter 6's update failed");
	clean_step(&s, 1);
	tear_down(&s);
}
END_TEST

/* The model's backward fails after bucket 1's all-reduce, which holds
 * bucket 1: the next step must not update it with the old gradients. */
START_TEST(a_step_stopped_elsewhere_leaves_nothing_held)
{
	struct scene s;

	set_up(&s);
	seen.fail_reduce = seen.fail_update = -1;
	ck_assert_int_eq(step(&s, 0, 4), 0);
	updated_up_to(2, "stopped after bucket 1");
	clean_step(&s, 1);
	tear_down(&s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dp_grads");
	TCase *tc = tcase_create("failures");

	tcase_add_test(tc, a_failed_allreduce_ends_the_step);
	tcase_add_test(tc, a_failed_held_update_ends_the_step);
	tcase_add_test(tc, a_failed_last_update_ends_the_step);
	tcase_add_test(tc, a_step_stopped_elsewhere_leaves_nothing_held);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
