/* SPDX-License-Identifier: MIT */
/*
 * bench_planners.c — planning time of every planner on a 10,000-access
 * trace (issue #4 asks for under 50 ms each).
 *
 * The trace is made here, not recorded: a 1,250-layer network whose
 * forward op of layer i reads x[i-1] and w[i] and writes x[i], and whose
 * backward op reads x[i-1], w[i] and g[i] and writes g[i-1] and dw[i]:
 * 8 accesses a layer, 10,000 in all.  Layer kinds cycle through
 * convolution, normalisation, activation and pooling, so that the
 * layer-typed policies have work; activations are freed after their last
 * use.  The budget is half the peak.  Times are real host time on this
 * machine (CLOCK_MONOTONIC), the minimum and median of several runs.
 *
 *   bench_planners [POLICY...]     (default: every policy)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "machine.h"
#include "hints/planner.h"
#include "lib/base/crc32.h"
#include "tensormm.h"

#define LAYERS 1250
#define RUNS 7

struct builder {
	struct tmm_trace t;
	uint32_t cap_t, cap_o, cap_ot, cap_a;
	uint64_t now;
};

static void *grow(void *p, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	*cap = need * 2;
	p = realloc(p, elem * *cap);
	if (!p) {
		fprintf(stderr, "bench_planners: out of memory\n");
		exit(1);
	}
	return p;
}

static uint32_t tensor(struct builder *b, uint64_t bytes, bool inside,
		       enum tmm_kind kind)
{
	uint32_t i = b->t.n_tensors++;

	b->t.tensors = grow(b->t.tensors, &b->cap_t, b->t.n_tensors,
			    sizeof(*b->t.tensors));
	b->t.tensors[i] = (struct tmm_trace_tensor){
		.key = inside ? tmm_key_of_ordinal(i) : 0x10000 + i,
		.bytes = bytes, .kind = kind, .producer = TMM_TRACE_NONE,
		.flags = inside ? TMM_TT_MADE_INSIDE : 0,
		.name = TMM_TRACE_NONE,
	};
	return i;
}

static void op(struct builder *b, enum tmm_op_kind kind, unsigned flags,
	       uint64_t ns, const uint32_t *in, unsigned n_in,
	       const uint32_t *out, unsigned n_out)
{
	uint32_t o = b->t.n_ops++;

	b->t.ops = grow(b->t.ops, &b->cap_o, b->t.n_ops, sizeof(*b->t.ops));
	b->t.ops[o] = (struct tmm_trace_op){
		.name = TMM_TRACE_NONE, .kind = (uint16_t)kind,
		.flags = (uint16_t)flags, .first = b->t.n_op_tensors,
		.n_inputs = (uint16_t)n_in, .n_outputs = (uint16_t)n_out,
		.begin_ns = b->now, .end_ns = b->now + ns,
	};
	for (unsigned i = 0; i < n_in + n_out; i++) {
		uint32_t t = i < n_in ? in[i] : out[i - n_in];
		uint32_t k = b->t.n_accesses++;

		b->t.op_tensors = grow(b->t.op_tensors, &b->cap_ot,
				       b->t.n_op_tensors + 1,
				       sizeof(*b->t.op_tensors));
		b->t.op_tensors[b->t.n_op_tensors++] = t;
		b->t.accesses = grow(b->t.accesses, &b->cap_a, b->t.n_accesses,
				     sizeof(*b->t.accesses));
		b->t.accesses[k] = (struct tmm_trace_access){
			.tensor = t, .op = o, .begin_ns = b->now,
			.end_ns = b->now + ns,
			.flags = i < n_in ? TMM_TA_READ : TMM_TA_WRITE,
		};
		if (i >= n_in)
			b->t.tensors[t].producer = o;
	}
	b->now += ns;
}

static void build(struct builder *b)
{
	static const enum tmm_op_kind kinds[] = {
		TMM_OP_CONV, TMM_OP_NORM, TMM_OP_ACT, TMM_OP_POOL,
	};
	uint32_t *x = malloc(sizeof(uint32_t) * (LAYERS + 1));
	uint32_t *w = malloc(sizeof(uint32_t) * (LAYERS + 1));
	uint32_t g;

	if (!x || !w)
		exit(1);
	memset(b, 0, sizeof(*b));
	x[0] = tensor(b, 4 << 20, false, TMM_PERSISTENT);
	for (int i = 1; i <= LAYERS; i++) {
		enum tmm_op_kind k = kinds[i % 4];
		uint32_t in[2];

		w[i] = tensor(b, 64 << 10, false, TMM_PERSISTENT);
		x[i] = tensor(b, (uint64_t)(1 + i % 3) << 20, true,
			      TMM_ACTIVATION);
		in[0] = x[i - 1];
		in[1] = w[i];
		op(b, k, TMM_OP_PURE, k == TMM_OP_CONV ? 200000 : 20000, in, 2,
		   &x[i], 1);
	}
	g = tensor(b, 1 << 20, true, TMM_GRADIENT);
	op(b, TMM_OP_LOSS, TMM_OP_PURE, 10000, &x[LAYERS], 1, &g, 1);
	for (int i = LAYERS; i >= 1; i--) {
		uint32_t in[3] = { x[i - 1], w[i], g };
		uint32_t out[2];

		out[0] = tensor(b, 1 << 20, true, TMM_GRADIENT);
		out[1] = tensor(b, 64 << 10, true, TMM_GRADIENT);
		op(b, kinds[i % 4], TMM_OP_BACKWARD, 300000, in, 3, out, 2);
		g = out[0];
	}
	/* Freed after their last use, as a framework frees them. */
	for (uint32_t k = 0; k < b->t.n_accesses; k++) {
		struct tmm_trace_tensor *t =
			&b->t.tensors[b->t.accesses[k].tensor];

		if (t->flags & TMM_TT_MADE_INSIDE) {
			t->flags |= TMM_TT_FREED_INSIDE;
			t->free_ns = b->t.accesses[k].end_ns;
		}
	}
	free(x);
	free(w);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const all[] = {
		"passive", "none", "vdnn-conv", "vdnn-all", "checkpoint",
		"superneurons", "capuchin", "tensile", "tsplit", "stream",
		"auto",
	};
	/* The policies named on the command line, or all of them. */
	const char *const *policies = argc > 1 ? (const char *const *)argv + 1
					       : all;
	size_t n_policies = argc > 1 ? (size_t)argc - 1
				     : sizeof(all) / sizeof(all[0]);
	struct builder b;
	struct tmm_planner_input in;
	struct tmm_plan p;
	char err[256];
	uint64_t peak;

	build(&b);
	if (tmm_trace_validate(&b.t, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_planners: bad trace: %s\n", err);
		return 1;
	}
	in = (struct tmm_planner_input){
		.trace = &b.t, .budget = 1ull << 40,
		.device = { .capacity = 16ull << 30, .h2d_gbps = 12,
			    .d2h_gbps = 12, .copy_latency_ns = 10000,
			    .launch_ns = 5000 },
	};
	if (tmm_planner_make("none", &in, &p, err, sizeof(err)) < 0)
		return 1;
	peak = p.predicted_peak;
	tmm_plan_free(&p);
	in.budget = peak / 2;

	printf("bench_planners: planning time of a %u-access trace (%u ops, "
	       "%u tensors), budget %.0f MiB = half its %.0f MiB peak\n",
	       b.t.n_accesses, b.t.n_ops, b.t.n_tensors,
	       (double)in.budget / (1 << 20), (double)peak / (1 << 20));
	{
		char machine[256];

		bench_describe_machine(machine, sizeof(machine));
		printf("%s; host time, %d runs each\n\n", machine, RUNS);
	}
	/* The plan's CRC-32 tells a change that made planning faster
	 * from one that also changed the plan. */
	printf("%-13s %10s %10s %8s %6s %10s\n", "policy", "min ms",
	       "median ms", "actions", "fits", "plan crc");
	for (size_t i = 0; i < n_policies; i++) {
		double ns[RUNS];
		uint32_t actions = 0, crc = 0;
		bool fits = false;

		for (int r = 0; r < RUNS; r++) {
			double t0 = bench_now_s();

			if (tmm_planner_make(policies[i], &in, &p, err,
					     sizeof(err)) < 0) {
				fprintf(stderr, "bench_planners: %s\n", err);
				return 1;
			}
			ns[r] = bench_now_s() - t0;
			actions = p.n_actions;
			fits = p.fits;
			crc = tmm_crc32(0, p.actions,
					sizeof(*p.actions) * p.n_actions);
			tmm_plan_free(&p);
		}
		qsort(ns, RUNS, sizeof(ns[0]), by_value);
		printf("%-13s %10.2f %10.2f %8u %6s   %08x\n", policies[i],
		       ns[0] * 1e3, ns[RUNS / 2] * 1e3, actions,
		       fits ? "yes" : "no", crc);
	}
	tmm_trace_free(&b.t);
	return 0;
}
