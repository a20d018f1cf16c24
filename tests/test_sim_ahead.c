/* SPDX-License-Identifier: MIT */
/*
 * test_sim_ahead.c — the simulated host that runs ahead of its device
 * (sim_host=ahead), and what the runtime must do to lose nothing by it
 * (issue #19).
 *
 * A real GPU's host queues kernels and copies and goes on: the H200 of
 * docs/gpu-h200.md ran every planned policy at 2-3x its unconstrained
 * step in swap mode where the lockstep simulator predicted 1.05-2.3x.
 * With sim_host=ahead the simulator's host does the same, and these
 * cases hold three things:
 *
 *  - the backend: a kernel costs the host its launch only; a copy starts
 *    when the host issues it; a query sees work still running that the
 *    host has passed; the host moves where it waits, and at kernels_wait;
 *  - the trace: recorded by the host's clock, its ops are placed on the
 *    device's timeline (tracker.c), so the plans made ahead are the very
 *    plans made in lockstep, byte for byte.  Before, a whole step's ops
 *    looked a few microseconds apart and the tensors destroyed at its end
 *    dead at their last use: the plan of `none` on the transfer-bound MLP
 *    had 0 actions instead of 141;
 *  - the swap-ins: an op that makes compute wait for a tensor's copy
 *    retires the swap-in there (swap_engine.h).  Before, the host found
 *    the tensor still arriving at the plan's later swap-out of it and
 *    skipped it: tensile and auto on the compute-bound MLP at 40% ran at
 *    2.06x the unconstrained step, skipping 52 and 85 actions, where the
 *    same plans run at 1.12x and 1.05x in lockstep;
 *  - mode=uvm's copies out: one whose pages the next op needs is retired
 *    with the compute engine waiting for it, as in swap mode (mover.c).
 *
 * And bytes: a backed run ahead is bit-identical to the unconstrained one,
 * and one whose engine waits fail in turn (the fault site `wait`) ends
 * with those bytes or the error.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "drive.h"
#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/fault.h"
#include "lib/base/tunables.h"
#include "lib/core/context.h"
#include "tensormm.h"
#include "zoo.h"

#define GIB (UINT64_C(1) << 30)
/* p100: 1e12 flop = 1e12 / 9.3e3 ns = 107526881.72 / 0.6 + 5000 launch */
#define P100_TFLOP UINT64_C(179216470)
#define P100_LAUNCH UINT64_C(5000)
/* p100: 1 GiB H2D = 10000 + 2^30 / 11.69 = 10000 + 91851310.86 */
#define P100_H2D_GIB UINT64_C(91861311)

#define H100 "backend=sim,sim_memory=phantom,sim_profile=h100-sxm5-pcie5-80g"
#define ITERATIONS 6

static void open_sim(struct tmm_backend *be, bool ahead)
{
	struct tmm_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = TMM_BACKEND_SIM;
	snprintf(cfg.sim_profile, sizeof(cfg.sim_profile), "p100-pcie3-16g");
	cfg.sim_memory = TMM_SIM_PHANTOM;
	cfg.host_numa_node = -1;
	cfg.sim_host_ahead = ahead;
	memset(be, 0, sizeof(*be));
	be->ops = &tmm_backend_sim_ops;
	ck_assert_msg(be->ops->open(be, &cfg) == 0, "open: %s", be->error);
}

static struct tmm_sim_counters counters(const struct tmm_backend *be)
{
	struct tmm_sim_counters c;

	ck_assert_int_eq(tmm_sim_get_counters(be, &c), 0);
	return c;
}

/* One kernel of 1e12 flop, then a 1 GiB copy in, and where each is. */
START_TEST(the_host_runs_ahead_until_it_waits)
{
	const struct tmm_cost tflop = { .flops = 1e12 };
	struct tmm_backend be;
	tmm_event k, copy;
	void *h, *d;
	uint64_t ns;

	open_sim(&be, true);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, &ns), 0);
	ck_assert_uint_eq(ns, P100_TFLOP);
	/* The host paid the launch; the device has the whole op queued. */
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_LAUNCH);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_COMPUTE, &k),
			 0);
	ck_assert_uint_eq(k.t_ns, P100_TFLOP);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 0);
	/* A copy issued now starts now, beside the kernel. */
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &copy),
			 0);
	ck_assert_uint_eq(copy.t_ns, P100_LAUNCH + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->event_query(&be, &copy), 0);
	/* The host meets the device where it waits for it. */
	ck_assert_int_eq(be.ops->event_sync(&be, &copy), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_LAUNCH + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 0);
	ck_assert_int_eq(be.ops->kernels_wait(&be), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_int_eq(be.ops->event_query(&be, &k), 1);
	/* The device never waited; the host did, up to the kernel's end. */
	ck_assert_uint_eq(counters(&be).stall_ns, 0);
	ck_assert_uint_eq(counters(&be).host_wait_ns,
			  P100_TFLOP - P100_LAUNCH);
	/* A kernel issued once the engine has run dry starts at the host. */
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, &ns), 0);
	ck_assert_uint_eq(counters(&be).engine_ns[TMM_ENGINE_COMPUTE],
			  2 * P100_TFLOP);
	be.ops->host_free(&be, h, GIB);
	be.ops->dev_free(&be, d, GIB);
	be.ops->close(&be);
}
END_TEST

/* The same calls in lockstep: the host is where the compute engine is. */
START_TEST(in_lockstep_the_host_is_the_compute_engine)
{
	const struct tmm_cost tflop = { .flops = 1e12 };
	struct tmm_backend be;
	tmm_event copy;
	void *h, *d;

	open_sim(&be, false);
	ck_assert_int_eq(be.ops->host_alloc(&be, GIB, -1, &h), 0);
	ck_assert_int_eq(be.ops->dev_alloc(&be, GIB, &d), 0);
	ck_assert_int_eq(be.ops->kernel_begin(&be, &tflop), 0);
	ck_assert_int_eq(be.ops->kernel_end(&be, &tflop, NULL), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_int_eq(be.ops->copy_async(&be, TMM_ENGINE_H2D, d, h, GIB),
			 0);
	ck_assert_int_eq(be.ops->event_record(&be, TMM_ENGINE_H2D, &copy),
			 0);
	ck_assert_uint_eq(copy.t_ns, P100_TFLOP + P100_H2D_GIB);
	ck_assert_int_eq(be.ops->kernels_wait(&be), 0);
	ck_assert_uint_eq(be.ops->now_ns(&be), P100_TFLOP);
	ck_assert_uint_eq(counters(&be).host_wait_ns, 0);
	be.ops->host_free(&be, h, GIB);
	be.ops->dev_free(&be, d, GIB);
	be.ops->close(&be);
}
END_TEST

static struct drive_result result;

/* Runs a zoo model for ITERATIONS under config; returns the last step. */
static const struct drive_result *drive(const char *model, unsigned batch,
					const char *config, bool bytes)
{
	const struct zoo_model *m = zoo_find(model);
	struct zoo_args a = { batch, 1 };
	struct drive_opts o = { .config = config, .iterations = ITERATIONS,
				.weight_bytes = bytes };
	struct zgraph g;

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	free(result.weights);
	zoo_drive(&g, &o, &result);
	zg_free(&g);
	ck_assert_msg(result.rc == 0 && result.done == ITERATIONS,
		      "%s under %s: %s", model, config, result.error);
	return &result;
}

static uint64_t peak_of(const char *model, unsigned batch)
{
	const struct drive_result *r =
		drive(model, batch, H100 ",mode=swap,policy=none", false);
	uint64_t peak = 0;

	for (unsigned i = 0; i < r->done; i++)
		if (r->it[i].peak > peak)
			peak = r->it[i].peak;
	return peak;
}

/* Reads a whole file into a malloc'd buffer. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s was not written", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert(buf != NULL);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static const struct {
	const char *model;
	unsigned batch;
	double fraction;
	const char *policy;
} same_plans[] = {
	{ "mlp_compute", 2048, 0.4, "tensile" },
	{ "mlp_compute", 2048, 0.4, "auto" },
	/* Its tensors are destroyed at the step's end: the trace's frees
	 * must be placed after the ops issued before them. */
	{ "mlp_transfer", 8192, 0.3, "none" },
};

/* The plan made ahead is the plan made in lockstep, byte for byte. */
START_TEST(plans_made_ahead_are_the_lockstep_plans)
{
	const char *model = same_plans[_i].model;
	unsigned batch = same_plans[_i].batch;
	char dir[] = "/tmp/tmm-ahead-XXXXXX", path[2][64], config[512];
	uint64_t budget;
	size_t len[2];
	char *plan[2];

	ck_assert(mkdtemp(dir) != NULL);
	budget = (uint64_t)((double)peak_of(model, batch) *
			    same_plans[_i].fraction);
	for (int ahead = 0; ahead < 2; ahead++) {
		snprintf(path[ahead], sizeof(path[ahead]), "%s/%s.plan", dir,
			 ahead ? "ahead" : "lockstep");
		snprintf(config, sizeof(config),
			 H100 ",mode=swap,policy=%s,budget=%lluB,hints=%s%s",
			 same_plans[_i].policy, (unsigned long long)budget,
			 path[ahead], ahead ? ",sim_host=ahead" : "");
		drive(model, batch, config, false);
		plan[ahead] = slurp(path[ahead], &len[ahead]);
	}
	ck_assert_msg(len[0] == len[1] && memcmp(plan[0], plan[1], len[0]) == 0,
		      "%s at %.0f%% under %s: the plan made with the host "
		      "ahead differs from the lockstep one (%zu against %zu "
		      "bytes)", model, 100 * same_plans[_i].fraction,
		      same_plans[_i].policy, len[1], len[0]);
	for (int i = 0; i < 2; i++) {
		free(plan[i]);
		unlink(path[i]);
	}
	rmdir(dir);
}
END_TEST

/*
 * Ahead, the plans of tensile and auto on the compute-bound MLP at 40%
 * are carried out whole (no action skipped, no passive eviction) and run
 * within 25% of their lockstep step.
 */
START_TEST(plans_are_carried_out_with_the_host_ahead)
{
	const char *policies[] = { "tensile", "auto" };
	const char *policy = policies[_i];
	uint64_t budget = peak_of("mlp_compute", 2048) * 2 / 5, ns[2];
	char config[512];

	for (int ahead = 0; ahead < 2; ahead++) {
		const struct drive_result *r;

		snprintf(config, sizeof(config),
			 H100 ",mode=swap,policy=%s,budget=%lluB%s", policy,
			 (unsigned long long)budget,
			 ahead ? ",sim_host=ahead" : "");
		r = drive("mlp_compute", 2048, config, false);
		ck_assert_msg(r->st.plan_actions_skipped == 0,
			      "%s%s: %llu plan actions skipped", policy,
			      ahead ? " ahead" : "",
			      (unsigned long long)r->st.plan_actions_skipped);
		ck_assert_msg(r->st.guided_passive_evictions == 0,
			      "%s%s: %llu guided passive evictions", policy,
			      ahead ? " ahead" : "",
			      (unsigned long long)
				      r->st.guided_passive_evictions);
		ns[ahead] = r->it[ITERATIONS - 1].ns;
	}
	printf("mlp_compute 40%% %-8s lockstep %.1f ms, ahead %.1f ms "
	       "(simulated)\n", policy, ns[0] / 1e6, ns[1] / 1e6);
	ck_assert_uint_le(4 * ns[1], 5 * ns[0]);
}
END_TEST

/*
 * TSPLIT's split ops with the host ahead: the space right below a split
 * op's input is often held there by a bias of a few KiB, which the
 * runtime met by cutting the op into up to 2048 micro-ops (27048 over 6
 * steps against 12928 in lockstep; the step 214.4 ms against 109.8).
 * Where the budget has room for the whole output, the output is whole
 * instead (lib/exec/split.c), so ahead the ops run as at most a quarter
 * more micro-ops than in lockstep, and the step is within 10% of
 * lockstep's.
 */
START_TEST(tsplit_splits_ahead_as_in_lockstep)
{
	uint64_t budget = peak_of("mlp_compute", 2048) * 2 / 5, ns[2];
	uint64_t micro[2];
	char config[512];

	for (int ahead = 0; ahead < 2; ahead++) {
		const struct drive_result *r;

		snprintf(config, sizeof(config),
			 H100 ",mode=swap,policy=tsplit,budget=%lluB%s",
			 (unsigned long long)budget,
			 ahead ? ",sim_host=ahead" : "");
		r = drive("mlp_compute", 2048, config, false);
		ck_assert_uint_gt(r->st.split_ops, 0);
		micro[ahead] = r->st.micro_ops;
		ns[ahead] = r->it[ITERATIONS - 1].ns;
	}
	printf("mlp_compute 40%% tsplit: lockstep %.1f ms, %llu micro-ops; "
	       "ahead %.1f ms, %llu micro-ops (simulated)\n", ns[0] / 1e6,
	       (unsigned long long)micro[0], ns[1] / 1e6,
	       (unsigned long long)micro[1]);
	ck_assert_uint_le(4 * micro[1], 5 * micro[0]);
	ck_assert_uint_le(10 * ns[1], 11 * ns[0]);
}
END_TEST

/*
 * mode=uvm with the copy way out: a copy out holds its pages until it is
 * retired, and ahead the host sees it end late.  Where the pages coming
 * need its room, it is retired with the compute engine waiting for the
 * copy (mover.c, uvm_retire_for), so tensile and auto at 40% run ahead
 * within 25% of their lockstep step (before: 10.4x the unconstrained
 * step ahead against 1.7x in lockstep, the driver writing back what the
 * host had not yet seen copied).
 *
 * And a step in mode=uvm settles two iterations later than in swap mode
 * (the blocks one step keeps serve the next), so auto's twin runs five
 * iterations there, not three (lib/twin/trial.c): with three it judged
 * tensile's plan 23% slower than it ran and took stream's, 5% slower
 * (75.3 against 71.5 ms).  Auto's step is within 2% of tensile's, the
 * fastest there.
 */
START_TEST(uvm_plans_run_ahead_as_in_lockstep)
{
	const char *policies[] = { "tensile", "auto" };
	uint64_t budget = peak_of("mlp_compute", 2048) * 2 / 5, ns[2][2];
	char config[512];

	for (int p = 0; p < 2; p++) {
		for (int ahead = 0; ahead < 2; ahead++) {
			snprintf(config, sizeof(config),
				 H100 ",mode=uvm,uvm_swap_path=copy,policy=%s,"
				 "budget=%lluB%s", policies[p],
				 (unsigned long long)budget,
				 ahead ? ",sim_host=ahead" : "");
			ns[p][ahead] = drive("mlp_compute", 2048, config,
					     false)->it[ITERATIONS - 1].ns;
		}
		printf("mlp_compute 40%% mode=uvm %-8s lockstep %.1f ms, "
		       "ahead %.1f ms (simulated)\n", policies[p],
		       ns[p][0] / 1e6, ns[p][1] / 1e6);
		ck_assert_uint_le(4 * ns[p][1], 5 * ns[p][0]);
	}
	ck_assert_uint_le(100 * ns[1][0], 102 * ns[0][0]);
}
END_TEST

/*
 * Auto judges its candidates by trials on a twin that runs as the run
 * does: with the host ahead, the twin's is too (tmm_trial_device's
 * host_ahead).  Before, the twin ran in lockstep: in mode=uvm at 40% it
 * judged the plan of capuchin+idle at 60.0 ms a step, which ran at 67.2
 * ahead, and took it over tensile's (64.7) and stream's (64.2), 4.7%
 * behind the best.  Now auto is within 3% of the best of the two, #19's
 * goal for auto against every other policy.
 */
START_TEST(auto_judges_plans_as_the_host_runs_them)
{
	const char *peers[] = { "tensile", "stream" };
	uint64_t budget = peak_of("mlp_compute", 2048) * 2 / 5, best = 0, ns;
	char config[512];

	for (int p = 0; p < 2; p++) {
		snprintf(config, sizeof(config),
			 H100 ",mode=uvm,uvm_swap_path=copy,policy=%s,"
			 "budget=%lluB,sim_host=ahead", peers[p],
			 (unsigned long long)budget);
		ns = drive("mlp_compute", 2048, config, false)
			     ->it[ITERATIONS - 1].ns;
		if (!best || ns < best)
			best = ns;
	}
	snprintf(config, sizeof(config),
		 H100 ",mode=uvm,uvm_swap_path=copy,policy=auto,"
		 "budget=%lluB,sim_host=ahead", (unsigned long long)budget);
	ns = drive("mlp_compute", 2048, config, false)->it[ITERATIONS - 1].ns;
	printf("mlp_compute 40%% mode=uvm ahead: auto %.1f ms, best of "
	       "tensile and stream %.1f ms (simulated)\n", ns / 1e6,
	       best / 1e6);
	ck_assert_uint_le(100 * ns, 103 * best);
}
END_TEST

/*
 * With no twin, as on a real GPU, and by prefetch, the way auto takes on
 * one: auto prices its candidates at the rates the moves go at (the
 * profile's prefetch to the host, 8.7 GB/s, against 55 by pinned copy),
 * with the forecast's steady state.  Priced by the pinned link, three
 * plans tied at the unconstrained step and auto took tensile's, which ran
 * at 2.06x, where stream's ran at 1.48x.  Now auto is within 3% of the
 * best of the two.
 */
START_TEST(auto_prices_plans_at_the_prefetch_rates)
{
	const char *peers[] = { "tensile", "stream" };
	uint64_t budget = peak_of("mlp_compute", 2048) * 2 / 5, best = 0, ns;
	char config[512];

	for (int p = 0; p < 2; p++) {
		snprintf(config, sizeof(config),
			 H100 ",mode=uvm,uvm_swap_path=prefetch,policy=%s,"
			 "budget=%lluB,sim_host=ahead,auto_twin=off",
			 peers[p], (unsigned long long)budget);
		ns = drive("mlp_compute", 2048, config, false)
			     ->it[ITERATIONS - 1].ns;
		if (!best || ns < best)
			best = ns;
	}
	snprintf(config, sizeof(config),
		 H100 ",mode=uvm,uvm_swap_path=prefetch,policy=auto,"
		 "budget=%lluB,sim_host=ahead,auto_twin=off",
		 (unsigned long long)budget);
	ns = drive("mlp_compute", 2048, config, false)->it[ITERATIONS - 1].ns;
	printf("mlp_compute 40%% mode=uvm by prefetch, ahead, no twin: auto "
	       "%.1f ms, best of tensile and stream %.1f ms (simulated)\n",
	       ns / 1e6, best / 1e6);
	ck_assert_uint_le(100 * ns, 103 * best);
}
END_TEST

/*
 * With no twin, in mode=uvm by copy on the transfer-bound MLP at 30%,
 * ahead: five plans forecast the unconstrained step, and the fewest
 * actions took stream's, whose prefetches land just in time and ran at
 * 40.4 ms where tensile's ran at 32.9.  Ties now go to the plan whose
 * prefetches land earliest before their use (least_lead_ns), and auto is
 * within 3% of tensile's.
 */
START_TEST(auto_breaks_ties_by_the_earliest_landing)
{
	uint64_t budget = peak_of("mlp_transfer", 8192) * 3 / 10, ns[2];
	const char *policies[] = { "tensile", "auto" };
	char config[512];

	for (int p = 0; p < 2; p++) {
		snprintf(config, sizeof(config),
			 H100 ",mode=uvm,uvm_swap_path=copy,policy=%s,"
			 "budget=%lluB,sim_host=ahead,auto_twin=off",
			 policies[p], (unsigned long long)budget);
		ns[p] = drive("mlp_transfer", 8192, config, false)
				->it[ITERATIONS - 1].ns;
	}
	printf("mlp_transfer 30%% mode=uvm by copy, ahead, no twin: auto "
	       "%.1f ms, tensile %.1f ms (simulated)\n", ns[1] / 1e6,
	       ns[0] / 1e6);
	ck_assert_uint_le(100 * ns[1], 103 * ns[0]);
}
END_TEST

#define BACKED_ANY_MODE \
	"backend=sim,sim_memory=backed,sim_profile=h100-sxm5-pcie5-80g"
#define BACKED BACKED_ANY_MODE ",mode=swap"
#define BYTES_MODEL "mlp_transfer"
#define BYTES_BATCH 256

/* The unconstrained run's weights (malloc'd, *len bytes), and its peak. */
static uint8_t *unconstrained_weights(size_t *len, uint64_t *peak)
{
	const struct drive_result *r =
		drive(BYTES_MODEL, BYTES_BATCH, BACKED ",policy=none", true);
	uint8_t *want = malloc(r->weights_len);

	ck_assert(want != NULL);
	memcpy(want, r->weights, r->weights_len);
	*len = r->weights_len;
	*peak = 0;
	for (unsigned i = 0; i < r->done; i++)
		if (r->it[i].peak > *peak)
			*peak = r->it[i].peak;
	return want;
}

/* Bytes: a backed run with the host ahead, under a plan that swaps, in
 * swap mode and in mode=uvm by the copy way, ends with the unconstrained
 * run's weights. */
START_TEST(a_run_ahead_keeps_every_byte)
{
	const struct drive_result *r;
	char config[512];
	uint64_t peak;
	size_t len;
	uint8_t *want = unconstrained_weights(&len, &peak);

	snprintf(config, sizeof(config),
		 BACKED_ANY_MODE ",%s,policy=%s,budget=%lluB,sim_host=ahead",
		 _i < 2 ? "mode=swap" : "mode=uvm,uvm_swap_path=copy",
		 _i % 2 ? "auto" : "tensile",
		 (unsigned long long)(peak * 2 / 5));
	r = drive(BYTES_MODEL, BYTES_BATCH, config, true);
	ck_assert(r->st.swap_out_count > 0 || r->st.swap_out_bytes > 0);
	ck_assert_uint_eq(r->weights_len, len);
	ck_assert_msg(memcmp(r->weights, want, len) == 0,
		      "the weights differ from the unconstrained run's");
	free(want);
	free(result.weights);
	result.weights = NULL;
}
END_TEST

/* What the run of uvm_prefetches_fired_together_go_together gathered. */
static int note_gathered(void *arg, tmm_ctx *ctx, unsigned n)
{
	(void)n;
	*(uint64_t *)arg = ctx->c.prefetches_gathered;
	return 0;
}

/*
 * mode=uvm by prefetch: the plan's prefetches that fire together after an
 * op for one later op go to the device in one call (tmm_uvm_batch_flush),
 * and the run still ends with the unconstrained run's bytes.
 */
START_TEST(uvm_prefetches_fired_together_go_together)
{
	uint64_t peak, gathered = 0;
	size_t len;
	uint8_t *want = unconstrained_weights(&len, &peak);
	const struct zoo_model *m = zoo_find(BYTES_MODEL);
	struct zoo_args a = { BYTES_BATCH, 1 };
	char config[512];
	struct drive_opts o = { .config = config, .iterations = ITERATIONS,
				.weight_bytes = true,
				.after_iteration = note_gathered,
				.after_arg = &gathered };
	struct zgraph g;

	snprintf(config, sizeof(config),
		 BACKED_ANY_MODE ",mode=uvm,uvm_swap_path=prefetch,"
		 "policy=tensile,budget=%lluB,sim_host=ahead",
		 (unsigned long long)(peak * 2 / 5));
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	free(result.weights);
	zoo_drive(&g, &o, &result);
	zg_free(&g);
	ck_assert_msg(result.rc == 0, "%s", result.error);
	printf("%s: %llu of %llu prefetches went with others\n", config,
	       (unsigned long long)gathered,
	       (unsigned long long)result.st.swap_in_count);
	ck_assert_uint_gt(gathered, 1);
	ck_assert_uint_eq(result.weights_len, len);
	ck_assert_msg(memcmp(result.weights, want, len) == 0,
		      "the weights differ from the unconstrained run's");
	free(want);
	free(result.weights);
	result.weights = NULL;
}
END_TEST

/*
 * Failure: each of a spread of the engine waits of a run ahead under
 * tensile (the compute waits that retire arriving tensors among them,
 * and in mode=uvm by the copy way those that retire copies out) fails in
 * turn.  Every run ends with the unconstrained run's bytes or with the
 * injected error, and its context destroys cleanly.
 */
START_TEST(a_failed_wait_ahead_loses_nothing)
{
	const struct zoo_model *m = zoo_find(BYTES_MODEL);
	struct zoo_args a = { BYTES_BATCH, 1 };
	char config[512];
	uint64_t peak;
	size_t len;
	uint8_t *want = unconstrained_weights(&len, &peak);
	unsigned long calls, step, errors = 0;
	/* The copies out queued like any, as CUDA's are not: held, the host
	 * would see each one end before it goes on, and no wait would
	 * retire one. */
	const char *mode = _i ? "mode=uvm,uvm_swap_path=copy,"
				"sim_managed_copy=queued"
			      : "mode=swap";

	snprintf(config, sizeof(config), BACKED_ANY_MODE ",%s,policy=tensile,"
		 "budget=%lluB,sim_host=ahead,fault=wait@999999999", mode,
		 (unsigned long long)(peak * 2 / 5));
	drive(BYTES_MODEL, BYTES_BATCH, config, true);
	/* In mode=uvm some of them retire copies out whose room an op
	 * needs (uvm_retire_for). */
	if (_i)
		ck_assert_uint_gt(result.st.swap_out_waits, 0);
	calls = tmm_fault_calls("wait");
	ck_assert_uint_gt(calls, 0);
	step = calls / 24 ? calls / 24 : 1;
	for (unsigned long k = 1; k <= calls; k += step) {
		struct drive_opts o = { .config = config,
					.iterations = ITERATIONS,
					.weight_bytes = true };
		struct zgraph g;

		snprintf(config, sizeof(config), BACKED_ANY_MODE ",%s,"
			 "policy=tensile,budget=%lluB,sim_host=ahead,"
			 "fault=wait@%lu", mode,
			 (unsigned long long)(peak * 2 / 5), k);
		ck_assert(zoo_build(m, &a, &g) == 0);
		free(result.weights);
		result.weights = NULL;
		zoo_drive(&g, &o, &result);
		zg_free(&g);
		ck_assert_msg(result.destroy_rc == 0, "wait@%lu: the context "
			      "was not destroyed cleanly", k);
		if (result.rc < 0) {
			ck_assert_msg(strstr(result.error, "site wait"),
				      "wait@%lu: %s", k, result.error);
			errors++;
			continue;
		}
		ck_assert_msg(result.weights_len == len &&
				      memcmp(result.weights, want, len) == 0,
			      "wait@%lu: the run ended with other bytes", k);
	}
	ck_assert_uint_gt(errors, 0);
	free(want);
	free(result.weights);
	result.weights = NULL;
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_ahead");
	TCase *tc = tcase_create("backend");

	tcase_add_test(tc, the_host_runs_ahead_until_it_waits);
	tcase_add_test(tc, in_lockstep_the_host_is_the_compute_engine);
	suite_add_tcase(s, tc);
	tc = tcase_create("runtime");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, plans_made_ahead_are_the_lockstep_plans, 0,
			    (int)(sizeof(same_plans) / sizeof(same_plans[0])));
	tcase_add_loop_test(tc, plans_are_carried_out_with_the_host_ahead, 0,
			    2);
	tcase_add_test(tc, tsplit_splits_ahead_as_in_lockstep);
	tcase_add_test(tc, uvm_plans_run_ahead_as_in_lockstep);
	tcase_add_test(tc, auto_judges_plans_as_the_host_runs_them);
	tcase_add_loop_test(tc, a_run_ahead_keeps_every_byte, 0, 4);
	tcase_add_test(tc, uvm_prefetches_fired_together_go_together);
	tcase_add_test(tc, auto_prices_plans_at_the_prefetch_rates);
	tcase_add_test(tc, auto_breaks_ties_by_the_earliest_landing);
	tcase_add_loop_test(tc, a_failed_wait_ahead_loses_nothing, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
