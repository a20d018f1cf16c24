/* SPDX-License-Identifier: MIT */
/*
 * test_zoo_memory.c — the memory the zoo's frameworks hold beyond the
 * tensors a fused layer keeps: cuDNN's convolution workspaces
 * (bench/models/conv_algo.c), how each framework the driver plays sizes
 * them (drive.h: enum drive_ws), TensorFlow's op-by-op buffers in BERT
 * (graph.h: ZG_FW_TF1), and a framework that frees nothing until the
 * iteration ends (drive_opts.keep_all, TSPLIT's Base).
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

#define PHANTOM "backend=sim,mode=swap,sim_memory=phantom," \
		"sim_profile=p100-pcie3-16g"

static void build(const char *name, unsigned batch, struct zgraph *g)
{
	const struct zoo_model *m = zoo_find(name);
	struct zoo_args a = { batch, 1 };

	ck_assert_msg(m != NULL, "model %s is not in the zoo", name);
	ck_assert_msg(zoo_build(m, &a, g) == 0, "%s: %s", name, g->errmsg);
}

/*
 * One 3×3 convolution, 64 to 64 channels at 56×56, batch 8, and a loss:
 * Winograd is its fastest algorithm (36 values per 4×4 tile of 128
 * channels: 29 MB), IMPLICIT_PRECOMP_GEMM needs an index per filter
 * element (2304 bytes), IMPLICIT_GEMM none.  The image wants no gradient,
 * so the backward computes the filter's only.
 */
static void one_conv(struct zgraph *g)
{
	struct zg_fm x;

	zg_init(g, ZG_SGD_MOMENTUM);
	x = zg_image(g, 8, 64, 56, 56);
	x = zg_conv(g, "conv", x, 64, 3, 3, 1, ZG_SAME, false);
	zg_softmax_xent(g, "loss", zg_flatten(x));
	ck_assert_msg(zg_finish(g) == 0, "%s", g->errmsg);
}

/* The first op with a workspace. */
static uint32_t first_conv(const struct zgraph *g)
{
	for (uint32_t i = 0; i < g->nop; i++)
		if (g->op[i].ws != ZG_NONE)
			return i;
	ck_abort_msg("no op has a workspace");
	return 0;
}

/* Every convolution op, forward and backward, carries its algorithms and
 * its workspace as a SCRATCH output that no other op reads. */
START_TEST(convolutions_carry_their_workspace)
{
	struct zgraph g;
	uint32_t convs = 0;

	build("resnet50", 4, &g);
	for (uint32_t i = 0; i < g.nop; i++) {
		const struct zg_op *op = &g.op[i];
		const struct zg_tensor *ws;

		if (op->kind != TMM_OP_CONV) {
			ck_assert_msg(op->ws == ZG_NONE, "%s", op->name);
			continue;
		}
		convs++;
		ck_assert_msg(op->ws != ZG_NONE, "%s has no workspace",
			      op->name);
		ck_assert_uint_eq(zg_outputs(&g, i)[op->n_out - 1], op->ws);
		ws = &g.t[op->ws];
		ck_assert_int_eq(ws->kind, TMM_SCRATCH);
		ck_assert_uint_eq(ws->producer, i);
		ck_assert_uint_eq(ws->last_use, i);
		ck_assert_uint_ge(op->n_algo, 2);
		ck_assert_uint_eq(ws->bytes, op->algo[0].ws > ZG_WS_MIN
						     ? op->algo[0].ws
						     : ZG_WS_MIN);
		/* fastest first: each slower one needs less */
		ck_assert(op->algo[0].time == 1.0);
		for (unsigned a = 1; a < op->n_algo; a++) {
			ck_assert(op->algo[a].time > op->algo[a - 1].time);
			ck_assert_uint_le(op->algo[a].ws, op->algo[a - 1].ws);
		}
		ck_assert_uint_eq(op->algo[op->n_algo - 1].ws, 0);
		/* TensorFlow's limit: 4 GiB */
		ck_assert_uint_le(op->algo[0].ws, 4096ull << 20);
	}
	/* 53 convolutions, forward and backward */
	ck_assert_uint_eq(convs, 2 * 53);
	zg_free(&g);
}
END_TEST

/* The sizes follow the algorithms' buffers (conv_algo.c). */
START_TEST(workspace_sizes_follow_the_algorithms)
{
	struct zg_algo a[ZG_MAX_ALGOS];
	/* 3×3 stride 1: Winograd F(4×4,3×3) tiles */
	struct zg_conv_shape w = { 8, 64, 56, 56, 64, 56, 56, 3, 3, 1 };
	/* 7×7 stride 2: the lowered matrix, C·R·S × N·P·Q */
	struct zg_conv_shape l = { 8, 3, 224, 224, 64, 112, 112, 7, 7, 2 };
	/* 1×1: a plain GEMM */
	struct zg_conv_shape p = { 8, 256, 56, 56, 64, 56, 56, 1, 1, 1 };

	ck_assert_uint_eq(zg_conv_algos(&w, a), 3);
	ck_assert_uint_eq(a[0].ws, 4ull * 36 * (8 * 14 * 14 * 128 + 64 * 64));
	ck_assert_uint_eq(a[1].ws, 4ull * 64 * 9);
	ck_assert_uint_eq(zg_conv_algos(&l, a), 3);
	ck_assert_uint_eq(a[0].ws, 4ull * 3 * 49 * 8 * 112 * 112);
	ck_assert_uint_eq(zg_conv_algos(&p, a), 2);
	ck_assert_uint_eq(a[0].ws, 4ull * 256);
	/* at a batch whose Winograd tiles pass 4 GiB, TensorFlow never
	 * offers it: the fastest left is the precomputed GEMM */
	w.n = 2048;
	ck_assert_uint_eq(zg_conv_algos(&w, a), 2);
	ck_assert_uint_eq(a[0].ws, 4ull * 64 * 9);
	ck_assert(a[0].time > 1.0);
}
END_TEST

struct in_use {
	uint64_t at[64];
};

static void sample(void *arg, uint32_t op, uint64_t in_use)
{
	struct in_use *u = arg;

	if (op < 64)
		u->at[op] = in_use;
}

static void drive(const struct zgraph *g, const char *config,
		  enum drive_ws ws, struct in_use *u, struct drive_result *r)
{
	struct drive_opts o = { .config = config, .iterations = 2,
				.sample = sample, .sample_arg = u,
				.sample_iteration = 2, .ws = ws };

	ck_assert_msg(zoo_drive(g, &o, r) == 0, "%s", r->error);
	ck_assert_uint_eq(r->done, 2);
}

/* With room, the device holds the fastest algorithm's workspace while
 * the convolution runs, and gives it back after; without one (the zoo
 * before), the op runs the slowest. */
START_TEST(a_convolution_holds_its_workspace_while_it_runs)
{
	struct zgraph g;
	struct in_use fast = { { 0 } }, none = { { 0 } };
	struct drive_result rf, rn;
	uint32_t c;
	uint64_t ws;

	one_conv(&g);
	c = first_conv(&g);
	ws = g.op[c].algo[0].ws;
	ck_assert_uint_gt(ws, 20u << 20);
	drive(&g, PHANTOM ",policy=passive", DRIVE_WS_FASTEST, &fast, &rf);
	drive(&g, PHANTOM ",policy=passive", DRIVE_WS_NONE, &none, &rn);
	/* the same tensors but the workspace, a 256-byte placeholder
	 * without one */
	ck_assert_uint_eq(fast.at[c] - none.at[c], ws - ZG_WS_MIN);
	/* and it is gone once the op is done */
	ck_assert_uint_eq(fast.at[c + 1], none.at[c + 1]);
	ck_assert_uint_ge(rf.it[1].peak, fast.at[c]);
	ck_assert_uint_gt(rf.it[1].peak, rn.it[1].peak);
	ck_assert_uint_eq(rf.it[1].ws_bytes, rf.it[1].ws_fastest_bytes);
	ck_assert_uint_eq(rf.it[1].ws_slower_ops, 0);
	ck_assert_uint_eq(rn.it[1].ws_bytes, 0);
	ck_assert_uint_eq(rn.it[1].ws_slower_ops, 2); /* fwd and bwd */
	/* the slowest algorithms cost time */
	ck_assert_uint_gt(rn.it[1].ns, rf.it[1].ns);
	zg_free(&g);
}
END_TEST

/*
 * Under pressure: a budget that leaves the convolution a few MB.
 * SuperNeurons takes the fastest algorithm that fits (the precomputed
 * GEMM), TensorFlow falls back to the one that needs none, and a
 * framework that reserves the fastest's workspace cannot run the op at
 * all; policy superneurons gets SuperNeurons' choice by itself.
 */
START_TEST(superneurons_shrinks_the_workspace_under_pressure)
{
	struct zgraph g;
	struct in_use u = { { 0 } };
	struct drive_result dyn, tf, byp, pas, fast;
	struct drive_opts o = { .iterations = 1, .ws = DRIVE_WS_FASTEST };
	char config[256];
	uint32_t c;

	one_conv(&g);
	c = first_conv(&g);
	snprintf(config, sizeof(config), PHANTOM ",policy=superneurons,"
		 "budget=%lluB", 20ull << 20);
	drive(&g, config, DRIVE_WS_DYNAMIC, &u, &dyn);
	ck_assert_uint_gt(dyn.it[1].ws_slower_ops, 0);
	ck_assert_uint_gt(dyn.it[1].ws_bytes, 0);
	ck_assert_uint_lt(dyn.it[1].ws_bytes, dyn.it[1].ws_fastest_bytes);
	ck_assert_uint_le(dyn.it[1].ws_largest, g.op[c].algo[1].ws);
	ck_assert_uint_eq(dyn.st.passive_evictions, 0);
	ck_assert_uint_le(dyn.it[1].peak, 20ull << 20);

	drive(&g, config, DRIVE_WS_BY_POLICY, &u, &byp);
	ck_assert_uint_eq(byp.it[1].ws_bytes, dyn.it[1].ws_bytes);
	ck_assert_uint_eq(byp.it[1].ns, dyn.it[1].ns);

	drive(&g, config, DRIVE_WS_FALLBACK, &u, &tf);
	ck_assert_uint_eq(tf.it[1].ws_bytes, 0);
	ck_assert_uint_eq(tf.it[1].ws_slower_ops, dyn.it[1].ws_slower_ops);
	ck_assert_uint_gt(tf.it[1].ns, dyn.it[1].ns);

	/* any other policy gets TensorFlow's */
	snprintf(config, sizeof(config), PHANTOM ",policy=passive,"
		 "budget=%lluB", 20ull << 20);
	drive(&g, config, DRIVE_WS_BY_POLICY, &u, &pas);
	ck_assert_uint_eq(pas.it[1].ws_bytes, 0);
	/* the environment's policy wins over the program's, as in the
	 * library */
	ck_assert_int_eq(setenv("TENSORMM_POLICY", "superneurons", 1), 0);
	drive(&g, config, DRIVE_WS_BY_POLICY, &u, &pas);
	ck_assert_int_eq(unsetenv("TENSORMM_POLICY"), 0);
	ck_assert_uint_eq(pas.it[1].ws_bytes, dyn.it[1].ws_bytes);

	o.config = config;
	ck_assert_int_eq(zoo_drive(&g, &o, &fast), -ENOMEM);
	ck_assert_msg(strstr(fast.error, "budget") != NULL, "%s",
		      fast.error);
	zg_free(&g);
}
END_TEST

/*
 * BERT under TensorFlow 1.x: each layer keeps three score-sized tensors
 * (the softmax's output, dropout's fp32 mask, the dropped
 * probabilities) until its backward, and more of the hidden size: GELU's
 * x/√2 and cdf, layer norm's broadcast scale, the dropout masks.
 */
START_TEST(bert_keeps_what_tensorflow_kept)
{
	struct zgraph g;
	const unsigned batch = 2, seq = 128, heads = 12, layers = 12;
	uint64_t score = (uint64_t)batch * heads * seq * seq * 4;
	uint32_t kept_scores = 0, masks = 0;

	build("bert_base", batch, &g);
	ck_assert_int_eq(g.framework, ZG_FW_TF1);
	for (uint32_t t = 0; t < g.nt; t++) {
		if (g.t[t].kind != TMM_ACTIVATION ||
		    g.t[t].producer >= g.n_forward)
			continue;
		if (g.t[t].bytes == score && g.t[t].last_use >= g.n_forward)
			kept_scores++;
		if (strstr(g.t[t].name, ".drop.1"))
			masks++;
	}
	ck_assert_uint_eq(kept_scores, 3 * layers);
	/* per layer: the probabilities', the attention output's and the
	 * feed-forward output's; and the embeddings' */
	ck_assert_uint_eq(masks, 3 * layers + 1);
	zg_free(&g);

	/* The fused models keep theirs: one score-sized tensor, no
	 * dropout. */
	build("gpt2_small", 1, &g);
	ck_assert_int_eq(g.framework, ZG_FW_FUSED);
	for (uint32_t t = 0; t < g.nt; t++)
		ck_assert_msg(!strstr(g.t[t].name, "drop"), "%s",
			      g.t[t].name);
	zg_free(&g);
}
END_TEST

/* keep_all: nothing the iteration made is destroyed before it ends (but
 * the workspaces, after their op), so at its last op the device holds
 * them all. */
START_TEST(keep_all_frees_nothing_until_the_iteration_ends)
{
	struct zgraph g;
	struct drive_result keep, free_early;
	struct drive_opts o = { .config = PHANTOM ",policy=passive",
				.iterations = 2 };
	uint64_t made = 0;

	build("resnet50", 2, &g);
	for (uint32_t t = 0; t < g.nt; t++)
		if (g.t[t].kind != TMM_PERSISTENT &&
		    g.t[t].kind != TMM_SCRATCH)
			made += g.t[t].bytes;
	ck_assert_msg(zoo_drive(&g, &o, &free_early) == 0, "%s",
		      free_early.error);
	o.keep_all = true;
	ck_assert_msg(zoo_drive(&g, &o, &keep) == 0, "%s", keep.error);
	ck_assert_uint_eq(keep.done, 2);
	/* the pool rounds each tensor up to its alignment */
	ck_assert_uint_ge(keep.it[1].peak, keep.persistent_bytes + made);
	ck_assert_uint_le(keep.it[1].peak,
			  keep.persistent_bytes + made + 512ull * g.nt +
				  keep.it[1].ws_largest);
	ck_assert_uint_gt(keep.it[1].peak, 2 * free_early.it[1].peak);
	ck_assert_uint_eq(keep.st.passive_evictions, 0);
	zg_free(&g);
}
END_TEST

/* g's peak over four unconstrained steps in mode=swap on the simulated
 * H100 SXM5, the peak the budgets below are fractions of. */
static uint64_t unconstrained_peak(const struct zgraph *g,
				   struct drive_result *r)
{
	struct drive_opts o = { .iterations = 4 };
	uint64_t peak = 0;

	o.config = "backend=sim,sim_memory=phantom,log=error,"
		   "sim_profile=h100-sxm5-pcie5-80g,mode=swap,policy=none";
	ck_assert_msg(zoo_drive(g, &o, r) == 0, "%s", r->error);
	for (unsigned i = 0; i < r->done; i++)
		if (r->it[i].peak > peak)
			peak = r->it[i].peak;
	return peak;
}

/*
 * TensorFlow's rule takes the fastest algorithm's workspace when it can be
 * had, but what is free at the op can be free only because its inputs are
 * away: the workspace must also leave room for the whole op, which
 * tmm_run refuses past the budget.  VGG-16 under checkpoint in mode=uvm at
 * 30% of its peak (simulated H100 SXM5) trains every step (before: the
 * backward of conv4 took the fastest workspace with its inputs dropped,
 * and was refused at 1.44 GiB against a 1.33 GiB budget).
 */
START_TEST(a_workspace_leaves_room_for_the_whole_op)
{
	static struct drive_result r;
	struct drive_opts o = { .iterations = 4 };
	char config[256];
	uint64_t peak;
	struct zgraph g;

	build("vgg16", 32, &g);
	peak = unconstrained_peak(&g, &r);
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=phantom,log=error,"
		 "sim_profile=h100-sxm5-pcie5-80g,mode=uvm,policy=checkpoint,"
		 "budget=%lluB", (unsigned long long)(peak * 3 / 10));
	o.config = config;
	ck_assert_msg(zoo_drive(&g, &o, &r) == 0, "%s", r.error);
	ck_assert_uint_eq(r.done, 4);
	ck_assert_uint_gt(r.st.recomputations, 0);
	zg_free(&g);
}
END_TEST

/*
 * In mode=uvm the pages the library keeps populated for the next tensor
 * (uvm_kept) are room, not use: a workspace is placed over them as over
 * any free block.  ResNet-50 under tensile at half its peak with
 * uvm_cap=library (simulated H100 SXM5) takes as much workspace as in
 * mode=swap, which is all the fastest algorithms need (before: the
 * kept pages counted as use, and 106 convolutions a step ran a slower
 * algorithm with no workspace).
 */
START_TEST(kept_pages_are_room_for_a_workspace)
{
	static struct drive_result r;
	struct drive_opts o = { .iterations = 4 };
	char config[256];
	uint64_t peak, swap_ws;
	struct zgraph g;

	build("resnet50", 32, &g);
	peak = unconstrained_peak(&g, &r);
	for (int uvm = 0; uvm < 2; uvm++) {
		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=phantom,log=error,"
			 "sim_profile=h100-sxm5-pcie5-80g,mode=%s,"
			 "uvm_cap=library,policy=tensile,budget=%lluB",
			 uvm ? "uvm" : "swap", (unsigned long long)(peak / 2));
		o.config = config;
		ck_assert_msg(zoo_drive(&g, &o, &r) == 0, "%s", r.error);
		if (!uvm) {
			swap_ws = r.it[3].ws_bytes;
			continue;
		}
		ck_assert_uint_gt(r.st.uvm_kept, 0);
		ck_assert_msg(r.it[3].ws_bytes >= swap_ws,
			      "mode=uvm took %llu bytes of workspace in its "
			      "last step, mode=swap %llu (%llu ops slower)",
			      (unsigned long long)r.it[3].ws_bytes,
			      (unsigned long long)swap_ws,
			      (unsigned long long)r.it[3].ws_slower_ops);
	}
	zg_free(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zoo_memory");
	TCase *tc = tcase_create("zoo_memory");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, convolutions_carry_their_workspace);
	tcase_add_test(tc, workspace_sizes_follow_the_algorithms);
	tcase_add_test(tc, a_convolution_holds_its_workspace_while_it_runs);
	tcase_add_test(tc, superneurons_shrinks_the_workspace_under_pressure);
	tcase_add_test(tc, bert_keeps_what_tensorflow_kept);
	tcase_add_test(tc, keep_all_frees_nothing_until_the_iteration_ends);
	tcase_add_test(tc, a_workspace_leaves_room_for_the_whole_op);
	tcase_add_test(tc, kept_pages_are_room_for_a_workspace);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
