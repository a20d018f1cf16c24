/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_recompute_fake.c — recomputation in mode=uvm asks the CUDA
 * driver for nothing of its own (issue #19).
 *
 * On an H200 (docs/gpu-h200.md), mode=uvm with the policies that
 * recompute took 0.9-2.7 s a step where the others took 125-180 ms.  The
 * budget there only shapes the plans (uvm_cap=driver: CUDA's driver is
 * not held to it), yet every drop discarded its tensor's pages
 * (cudaMemDiscardBatchAsync) and the re-run's kernel made them afresh by
 * faults, at the first-touch rate.  Here examples/mlp_gpu's training, 12
 * layers, runs on the CUDA test double (tests/cudafake/), which counts
 * the runtime calls: a steady step (the difference between a LONG and a
 * SHORT run, over LONG - SHORT) of checkpoint, which recomputes, against
 * one of none, which does not, both at 40% of the peak.
 *
 * - uvm_cap=driver: a drop keeps its pages (the driver had no cause to
 *   evict them) and the re-run writes them where they are: checkpoint
 *   makes no more discards, prefetches or advice a step than none, and
 *   no host sync of any kind more (stream or device syncs; event syncs
 *   are left out: they retire the op timing's event pairs, one a kernel,
 *   recomputations included).  Before the fix a step made a discard for
 *   each drop (21 here).
 * - uvm_cap=library: the library holds the pages to the budget, so a
 *   drop gives them up: its range goes back as a kept block, with its
 *   pages, for the next tensor (the regeneration or one before it) to
 *   take, and only what the held pages then need is discarded.  At
 *   least one kept block more a step than none takes for every two
 *   recomputations (13 more for 21 here; none at all when every drop
 *   discarded), and fewer discards than one a drop (15.7 more than
 *   none's, 34 before).  The re-run's outputs are made by a prefetch on
 *   the compute stream before its kernel, not by its faults: at least
 *   one prefetch a step more than none for every two recomputations (the
 *   plans differ, and so do the fresh outputs each prefetches; 20.6 more
 *   for 21 here).  Before that fix there were 11 fewer.
 *
 * Every run is bit-identical to the unconstrained one (losses and final
 * weights), with no race found.
 */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "mlp_gpu_train.h"
#include "mlp_model.h"
#include "tensormm.h"

/* liveness=keep: the dead tensors both plans evict are copied out alike,
 * so that the difference is the recomputations' own calls.  With
 * liveness=discard (the default) none's dead evictions make no driver
 * call at all (28.3 prefetches a step against 259.7), and checkpoint's
 * step makes 4.7 prefetches more than none's, 2.0 of them on demand: its
 * plan's, which this test does not judge. */
#define QUIET "cupti=off,stats_shm=off,log=error,liveness=keep"
#define SHORT 3
#define LONG 6

struct run {
	struct cudafake_calls calls;
	struct tmm_stats st;
	float losses[LONG];
	uint8_t *weights;
	size_t len;
};

/* A step per call kind, and the recomputations, of a steady step. */
struct step {
	double prefetches, discards, advises, stream_syncs, device_syncs;
	double recomputations, on_demand, kept_hits;
};

/* The compute-bound shape's structure (12 layers, weights twice an
 * activation) at a size the double trains in a second. */
static void shape(struct mlp_config *mc, unsigned steps)
{
	mlp_config_default(mc);
	mc->width = 128;
	mc->inputs = 128;
	mc->layers = 12;
	mc->batch = 64;
	mc->steps = steps;
	mc->kernels = mlp_gpu_ops();
}

static void train(const char *config, unsigned steps, struct run *r)
{
	struct mlp_config mc;
	tmm_ctx *ctx;

	shape(&mc, steps);
	cudafake_reset(1);
	ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
	ck_assert_msg(mlp_train(ctx, &mc, r->losses, &r->weights, &r->len,
				NULL) == 0, "%s: %s", config,
		      tmm_last_error(ctx));
	r->st = (struct tmm_stats){ .version = TMM_STATS_VERSION };
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	tmm_ctx_destroy(ctx);
	mlp_gpu_blas_forget_stream();
	cudafake_calls(&r->calls);
	ck_assert_uint_eq(cudafake_races(), 0);
}

#define PER_STEP(f) (((double)b->f - (double)a->f) / (LONG - SHORT))

/* The steady step of `config`, whose LONG run must match ref's. */
static void steady_step(const char *config, const struct run *ref,
			struct step *s)
{
	static struct run runs[2];
	const struct run *a = &runs[0], *b = &runs[1];

	train(config, SHORT, &runs[0]);
	train(config, LONG, &runs[1]);
	ck_assert_msg(b->len == ref->len &&
			      !memcmp(b->weights, ref->weights, b->len) &&
			      !memcmp(b->losses, ref->losses,
				      sizeof(b->losses)),
		      "%s: not bit-identical to the unconstrained run",
		      config);
	s->prefetches = PER_STEP(calls.prefetches);
	s->discards = PER_STEP(calls.discards);
	s->advises = PER_STEP(calls.advises);
	s->stream_syncs = PER_STEP(calls.stream_syncs);
	s->device_syncs = PER_STEP(calls.device_syncs);
	s->recomputations = PER_STEP(st.recomputations);
	s->kept_hits = PER_STEP(st.uvm_kept_hits);
	/* A back-access that finds a tensor on the host prefetches it on
	 * the spot (mover_uvm.c): those are left out of the prefetches
	 * compared below, which are the recomputation's own. */
	s->on_demand = PER_STEP(st.on_demand_swap_ins);
	s->prefetches -= s->on_demand;
	fprintf(stderr, "%s, a step: %.1f prefetches (and %.1f on demand), "
		"%.1f discards, %.1f advice, %.1f stream syncs, %.1f device "
		"syncs, %.1f recomputations, %.1f kept blocks taken\n", config,
		s->prefetches, s->on_demand, s->discards, s->advises,
		s->stream_syncs, s->device_syncs, s->recomputations,
		s->kept_hits);
	free(runs[0].weights);
	free(runs[1].weights);
}

/* none's and checkpoint's steady steps at 40% of the peak, with `cap`. */
static void both(const char *cap, struct step *none, struct step *ckpt)
{
	static struct run ref;
	char cfg[256];

	ck_assert_int_eq(mlp_gpu_blas_open(64), 0);
	train("backend=cuda,mode=swap,budget=90%,policy=none," QUIET, LONG,
	      &ref);
	ck_assert_uint_eq(ref.st.swap_out_count, 0);
	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=uvm,uvm_cap=%s,"
		 "budget=%lluB,policy=none," QUIET, cap,
		 (unsigned long long)ref.st.device_peak * 40 / 100);
	steady_step(cfg, &ref, none);
	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=uvm,uvm_cap=%s,"
		 "budget=%lluB,policy=checkpoint," QUIET, cap,
		 (unsigned long long)ref.st.device_peak * 40 / 100);
	steady_step(cfg, &ref, ckpt);
	free(ref.weights);
	mlp_gpu_blas_close();
	ck_assert_msg(ckpt->recomputations >= 4,
		      "checkpoint recomputed %.1f ops a step: too few to "
		      "tell", ckpt->recomputations);
}

START_TEST(driver_cap_recomputes_with_no_driver_call)
{
	struct step none, ckpt;

	both("driver", &none, &ckpt);
	ck_assert_msg(ckpt.discards <= none.discards + 1,
		      "checkpoint discards %.1f a step, none %.1f: the drops "
		      "discard pages the driver had no cause to evict",
		      ckpt.discards, none.discards);
	ck_assert_msg(ckpt.prefetches <= none.prefetches + 1,
		      "checkpoint prefetches %.1f a step, none %.1f",
		      ckpt.prefetches, none.prefetches);
	ck_assert(ckpt.advises <= none.advises);
	ck_assert(ckpt.stream_syncs <= none.stream_syncs);
	ck_assert(ckpt.device_syncs <= none.device_syncs);
}
END_TEST

START_TEST(library_cap_prefetches_the_regenerated_pages)
{
	struct step none, ckpt;

	both("library", &none, &ckpt);
	ck_assert_msg(ckpt.kept_hits >= none.kept_hits +
						ckpt.recomputations / 2,
		      "checkpoint's tensors take %.1f kept blocks a step, "
		      "none's %.1f, for %.1f recomputations: the library's "
		      "drops should hand their pages on", ckpt.kept_hits,
		      none.kept_hits, ckpt.recomputations);
	ck_assert_msg(ckpt.discards < none.discards + ckpt.recomputations,
		      "checkpoint discards %.1f a step, none %.1f, for %.1f "
		      "recomputations: the drops discard what they could "
		      "hand on", ckpt.discards, none.discards,
		      ckpt.recomputations);
	ck_assert_msg(ckpt.prefetches >= none.prefetches +
						 ckpt.recomputations / 2,
		      "checkpoint prefetches %.1f a step, none %.1f, for "
		      "%.1f recomputations: the re-runs' outputs are made by "
		      "faults", ckpt.prefetches, none.prefetches,
		      ckpt.recomputations);
	ck_assert(ckpt.stream_syncs <= none.stream_syncs);
	ck_assert(ckpt.device_syncs <= none.device_syncs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("uvm_recompute_fake");
	TCase *tc = tcase_create("recompute");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, driver_cap_recomputes_with_no_driver_call);
	tcase_add_test(tc, library_cap_prefetches_the_regenerated_pages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
