/* SPDX-License-Identifier: MIT */
/*
 * test_model_zoo.c — the benchmark's model zoo (bench/models/).
 *
 * The zoo is only worth its tables if its graphs are the published
 * networks: each model's trainable parameters, and the CNNs' forward
 * multiply-adds, must be within 2% of the published figures, and each
 * graph must be one a framework could run (no op reads a tensor before it
 * exists, every forward activation is used, the flags and kinds are what
 * the policies will key on, and every op over the samples can be split
 * into them for TSPLIT).  One small model
 * also runs through the real runtime on a phantom device, with room and
 * under pressure.  Graph building is pure bookkeeping, so this is fast.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "drive.h"
#include "graph.h"
#include "tensormm.h"
#include "zoo.h"

/*
 * The published figures, written here rather than read from the zoo's
 * table so a slip in one cannot hide a slip in the other.
 */
static const struct {
	const char *model;
	double params;
	const char *source;
} published[] = {
	{ "resnet50", 25.6e6, "Keras Applications / torchvision" },
	{ "resnet101", 44.5e6, "Keras Applications / torchvision" },
	{ "resnet152", 60.2e6, "Keras Applications / torchvision" },
	{ "vgg16", 138e6, "Simonyan & Zisserman 2015, Table 2" },
	{ "inception_v3", 23.9e6, "Keras Applications, no auxiliary head" },
	{ "densenet121", 8.0e6, "Keras Applications / torchvision" },
	{ "bert_base", 110e6, "Devlin et al. 2019, section 3" },
	{ "bert_large", 340e6, "Devlin et al. 2019, section 3" },
	{ "gpt2_small", 124e6, "released GPT-2 checkpoint" },
	{ "gpt2_medium", 355e6, "released GPT-2 checkpoint" },
};

/*
 * Forward multiply-adds per image of the convolutions and linear layers:
 * the "GFLOPS" column of torchvision's model table, which counts
 * multiply-adds.  The cost hints drive the simulated times, so they must
 * be the networks' real work too.
 */
static const struct {
	const char *model;
	double gmacs;
} published_macs[] = {
	{ "vgg16", 15.47 },	{ "resnet50", 4.09 },
	{ "resnet101", 7.80 },	{ "resnet152", 11.51 },
	{ "inception_v3", 5.71 }, { "densenet121", 2.83 },
};

#define PHANTOM "backend=sim,mode=swap,sim_memory=phantom"

static void build(const char *name, unsigned batch, unsigned scale,
		  struct zgraph *g)
{
	const struct zoo_model *m = zoo_find(name);
	struct zoo_args a = { batch, scale };

	ck_assert_msg(m != NULL, "model %s is not in the zoo", name);
	ck_assert_msg(zoo_build(m, &a, g) == 0, "%s: %s", name, g->errmsg);
}

START_TEST(parameters_match_the_published_counts)
{
	struct zgraph g;
	double got, want = published[_i].params;

	build(published[_i].model, 1, 1, &g);
	got = (double)zg_params(&g);
	ck_assert_msg(got > want * 0.98 && got < want * 1.02,
		      "%s: %.3fM parameters, published %.1fM (%s)",
		      published[_i].model, got / 1e6, want / 1e6,
		      published[_i].source);
	zg_free(&g);
}
END_TEST

START_TEST(forward_work_matches_the_published_counts)
{
	struct zgraph g;
	double macs = 0, want = published_macs[_i].gmacs * 1e9;

	build(published_macs[_i].model, 1, 1, &g);
	for (uint32_t i = 0; i < g.n_forward; i++)
		if (g.op[i].kind == TMM_OP_CONV ||
		    g.op[i].kind == TMM_OP_MATMUL)
			macs += g.op[i].flops / 2;
	ck_assert_msg(macs > want * 0.98 && macs < want * 1.02,
		      "%s: %.2f GMACs forward, published %.2f",
		      published_macs[_i].model, macs / 1e9, want / 1e9);
	zg_free(&g);
}
END_TEST

/* Every model in the zoo: a well-formed iteration. */
START_TEST(every_graph_is_well_formed)
{
	size_t n;
	const struct zoo_model *m = &zoo_models(&n)[_i];
	struct zgraph g;
	char msg[256];
	uint32_t bwd = 0, opt = 0, params = 0, state = 0;

	build(m->name, 2, 1, &g);
	ck_assert_msg(zg_check(&g, msg, sizeof(msg)) == 0, "%s: %s", m->name,
		      msg);
	for (uint32_t i = 0; i < g.nop; i++) {
		const struct zg_op *op = &g.op[i];
		bool loader = op->n_in == 0;

		ck_assert(op->n_out > 0);
		ck_assert_int_lt(op->kind, TMM_OP_KIND_COUNT);
		if (i < g.n_forward) {
			/* forward: pure, except loaders of outside data */
			ck_assert_msg(!(op->flags & TMM_OP_BACKWARD), "%s",
				      op->name);
			ck_assert_msg(loader == !(op->flags & TMM_OP_PURE),
				      "%s: %s", m->name, op->name);
			ck_assert(loader || op->flops > 0 ||
				  op->kind == TMM_OP_OTHER);
		} else if (op->kind == TMM_OP_OPTIMIZER) {
			/* in place: weight and state are in and out */
			ck_assert(!(op->flags & TMM_OP_PURE));
			ck_assert_uint_eq(zg_inputs(&g, i)[0],
					  zg_outputs(&g, i)[0]);
			opt++;
		} else {
			ck_assert_msg(op->flags & TMM_OP_BACKWARD, "%s",
				      op->name);
			/* steps come after the backward, unless each
			 * weight is updated as soon as its gradient is
			 * ready (graph.h: update_early) */
			ck_assert(!opt || g.update_early);
			bwd++;
		}
	}
	for (uint32_t t = 0; t < g.nt; t++) {
		if (g.t[t].param)
			params++;
		else if (g.t[t].kind == TMM_PERSISTENT)
			state++;
		else
			ck_assert_msg(g.t[t].producer < g.nop, "%s: %s",
				      m->name, g.t[t].name);
	}
	ck_assert_uint_gt(bwd, g.n_forward / 2);
	ck_assert_uint_eq(opt, params); /* one step per weight */
	ck_assert_uint_eq(state, params * (g.optimizer == ZG_ADAM ? 2 : 1));
	zg_free(&g);
}
END_TEST

/*
 * TSPLIT: a tensor whose size grows with the batch has a sample dimension
 * and says how many rows (built at two batches: its rows grow alike); one
 * whose size does not (a weight, its gradient, optimizer state, BN
 * statistics, the loss) has none.  Every op over such a tensor splits into
 * the batch's rows (the images; the sequences or the tokens), cutting
 * just those tensors, into whole rows; the others do not split.
 */
START_TEST(ops_over_the_samples_split_into_them)
{
	const unsigned batch = 3;
	size_t n;
	const struct zoo_model *m = &zoo_models(&n)[_i];
	struct zgraph g, twice;
	uint32_t split = 0;

	build(m->name, batch, 1, &g);
	build(m->name, 2 * batch, 1, &twice);
	ck_assert_uint_eq(g.nt, twice.nt);
	for (uint32_t t = 0; t < g.nt; t++) {
		const struct zg_tensor *a = &g.t[t], *b = &twice.t[t];
		bool samples = b->bytes != a->bytes;

		/* A convolution's workspace grows with the batch, not in
		 * proportion to it (the filters' transforms do not), and
		 * is never cut: each micro-op takes it whole. */
		if (a->kind == TMM_SCRATCH) {
			ck_assert_uint_eq(a->rows, 0);
			continue;
		}

		ck_assert_msg(samples ? b->bytes == 2 * a->bytes &&
						a->rows >= batch &&
						a->rows % batch == 0 &&
						b->rows == 2 * a->rows
				      : a->rows == 0,
			      "%s: %s has %llu rows, %llu bytes at batch %u "
			      "and %llu at %u", m->name, a->name,
			      (unsigned long long)a->rows,
			      (unsigned long long)a->bytes, batch,
			      (unsigned long long)b->bytes, 2 * batch);
	}
	for (uint32_t i = 0; i < g.nop; i++) {
		const struct zg_op *op = &g.op[i];
		const zg_t *ids = zg_inputs(&g, i);
		const unsigned char *cut = g.sliced + op->in_at;
		uint64_t e = op->slice_extent;
		bool samples = false;

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			const struct zg_tensor *t = &g.t[ids[k]];

			samples |= t->rows != 0;
			ck_assert_msg(!cut[k] == !t->rows, "%s: %s %s %s",
				      m->name, op->name,
				      cut[k] ? "cuts" : "keeps whole",
				      t->name);
			ck_assert(!cut[k] || (t->bytes % e == 0 &&
					      t->rows % e == 0));
		}
		ck_assert_msg(samples ? e >= batch && e % batch == 0 : e == 0,
			      "%s: %s splits into %llu rows, batch %u",
			      m->name, op->name, (unsigned long long)e, batch);
		if (e)
			split++;
	}
	ck_assert_uint_gt(split, g.n_forward);
	zg_free(&g);
	zg_free(&twice);
}
END_TEST

/* An activation lives from its forward op to its backward use. */
START_TEST(activations_live_until_their_backward_use)
{
	struct zgraph g;
	uint32_t saved = 0;

	build("resnet50", 2, 1, &g);
	for (uint32_t t = 0; t < g.nt; t++) {
		if (g.t[t].kind != TMM_ACTIVATION ||
		    g.op[g.t[t].producer].n_in == 0)
			continue;
		if (g.t[t].last_use >= g.n_forward)
			saved++;
	}
	/* convs keep their inputs, ReLUs their outputs, BNs both */
	ck_assert_uint_gt(saved, 150);
	zg_free(&g);
}
END_TEST

START_TEST(a_broken_graph_is_rejected)
{
	struct zgraph g;
	char msg[256];
	struct zg_layer l = { .name = "orphan", .kind = TMM_OP_ACT,
			      .n_in = 1, .n_out = 1, .out_bytes = { 64 } };
	zg_t x;

	/* an activation that nothing reads */
	zg_init(&g, ZG_SGD_MOMENTUM);
	x = zg_input(&g, "x", 64, 4);
	l.in[0] = x;
	zg_layer(&g, &l);
	ck_assert_int_eq(zg_finish(&g), 0);
	ck_assert_int_eq(zg_check(&g, msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "never read") != NULL, "%s", msg);
	zg_free(&g);

	/* a layer reading a tensor id that does not exist */
	zg_init(&g, ZG_SGD_MOMENTUM);
	l.in[0] = 42;
	ck_assert_uint_eq(zg_layer(&g, &l), ZG_NONE);
	ck_assert_int_eq(g.err, -EINVAL);
	ck_assert_msg(strstr(g.errmsg, "not a tensor") != NULL, "%s",
		      g.errmsg);
	zg_free(&g);
}
END_TEST

START_TEST(batch_and_width_scale_the_right_tensors)
{
	struct zgraph a, b, w;
	uint64_t act_a = 0, act_b = 0;

	build("vgg16", 2, 1, &a);
	build("vgg16", 4, 1, &b);
	build("vgg16", 2, 2, &w);
	ck_assert_uint_eq(zg_params(&a), zg_params(&b));
	for (uint32_t t = 0; t < a.nt; t++)
		if (a.t[t].kind == TMM_ACTIVATION)
			act_a += a.t[t].bytes;
	for (uint32_t t = 0; t < b.nt; t++)
		if (b.t[t].kind == TMM_ACTIVATION)
			act_b += b.t[t].bytes;
	/* all but the loss's one scalar */
	ck_assert_uint_eq(act_b + 4, 2 * act_a);
	/* conv weights grow with the square of the width */
	ck_assert_uint_gt(zg_params(&w), zg_params(&a) + 14000000ull * 2);
	zg_free(&a);
	zg_free(&b);
	zg_free(&w);
	ck_assert_ptr_null(zoo_find("alexnet"));
	{
		struct zoo_args bad = { 0, 1 };

		ck_assert_int_eq(zoo_build(zoo_find("resnet50"), &bad, &a),
				 -EINVAL);
		ck_assert_msg(strstr(a.errmsg, "batch") != NULL, "%s",
			      a.errmsg);
		zg_free(&a);
	}
}
END_TEST

static uint64_t samples;

static void count_sample(void *arg, uint32_t op, uint64_t in_use)
{
	(void)arg;
	(void)op;
	samples += in_use > 0;
}

START_TEST(a_small_model_trains_through_the_runtime)
{
	struct zgraph g;
	struct drive_result r, tight;
	struct drive_opts o = { .config = PHANTOM, .iterations = 3,
				.sample = count_sample,
				.sample_iteration = 2 };
	char config[128];

	build("resnet50", 2, 1, &g);
	ck_assert_msg(zoo_drive(&g, &o, &r) == 0, "%s", r.error);
	ck_assert_uint_eq(r.done, 3);
	ck_assert_uint_eq(r.st.iterations, 3);
	ck_assert_uint_gt(r.st.device_peak, 0);
	ck_assert_uint_eq(r.st.passive_evictions, 0);
	ck_assert_uint_ge(r.st.ops, 3ull * g.nop); /* and the weights' init */
	ck_assert_uint_gt(r.it[2].ns, 0);
	ck_assert_uint_eq(samples, g.nop);
	ck_assert_uint_le(r.it[2].peak, r.st.device_peak);

	/* At 60% of that peak, with no plan but liveness, passive mode
	 * swaps, and the run still completes. */
	snprintf(config, sizeof(config),
		 PHANTOM ",policy=none,sim_capacity=%llu",
		 (unsigned long long)(r.it[2].peak * 6 / 10));
	o.config = config;
	o.sample = NULL;
	ck_assert_msg(zoo_drive(&g, &o, &tight) == 0, "%s", tight.error);
	ck_assert_uint_eq(tight.done, 3);
	ck_assert_uint_gt(tight.it[2].passive_evictions, 0);
	ck_assert_uint_le(tight.st.device_peak, r.it[2].peak * 6 / 10);
	ck_assert_uint_gt(tight.it[2].ns, r.it[2].ns);
	/* The default policy (auto) plans the shortage away. */
	snprintf(config, sizeof(config), PHANTOM ",sim_capacity=%llu",
		 (unsigned long long)(r.it[2].peak * 6 / 10));
	ck_assert_msg(zoo_drive(&g, &o, &tight) == 0, "%s", tight.error);
	ck_assert_uint_eq(tight.done, 3);
	ck_assert_uint_eq(tight.st.guided_passive_evictions, 0);
	ck_assert_uint_eq(tight.st.plan_divergences, 0);
	zg_free(&g);
}
END_TEST

START_TEST(the_driver_reports_what_failed)
{
	struct zgraph g;
	struct drive_result r;
	struct drive_opts o = { .config = PHANTOM ",sim_capacity=64MiB",
				.iterations = 1 };

	/* VGG-16's weights alone are 550 MB */
	build("vgg16", 1, 1, &g);
	ck_assert_int_lt(zoo_drive(&g, &o, &r), 0);
	ck_assert_int_eq(r.rc, -ENOMEM);
	ck_assert_msg(strlen(r.error) > 0, "no message");
	o.config = PHANTOM ",policy=no-such-policy";
	ck_assert_int_eq(zoo_drive(&g, &o, &r), -EINVAL);
	ck_assert_msg(strstr(r.error, "no-such-policy") != NULL, "%s",
		      r.error);
	zg_free(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("model_zoo");
	TCase *tc = tcase_create("zoo");
	size_t n;

	zoo_models(&n);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, parameters_match_the_published_counts, 0,
			    (int)(sizeof(published) / sizeof(published[0])));
	tcase_add_loop_test(tc, forward_work_matches_the_published_counts, 0,
			    (int)(sizeof(published_macs) /
				  sizeof(published_macs[0])));
	tcase_add_loop_test(tc, every_graph_is_well_formed, 0, (int)n);
	tcase_add_loop_test(tc, ops_over_the_samples_split_into_them, 0,
			    (int)n);
	tcase_add_test(tc, activations_live_until_their_backward_use);
	tcase_add_test(tc, a_broken_graph_is_rejected);
	tcase_add_test(tc, batch_and_width_scale_the_right_tensors);
	tcase_add_test(tc, a_small_model_trains_through_the_runtime);
	tcase_add_test(tc, the_driver_reports_what_failed);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
