/* SPDX-License-Identifier: MIT */
/*
 * test_swap_e2e.c — the swap engine end to end, on backed simulated memory.
 *
 * A chain of ops where op i reads t[i-1] and t[i/2] (so old tensors are
 * needed again after newer ones have pushed them out) runs once with the
 * whole device
 * and once with a budget of 30% of that run's peak.  Every tensor's bytes
 * must be identical, the constrained run must stay within its budget, and
 * its statistics must show that swapping really happened.  The same chain
 * in mode=uvm (managed memory, evicted by the simulated driver) must give
 * the same bytes.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"

#define CHAIN 48
#define ELEMS (16 * 1024) /* 64 KiB of uint32 per tensor */


/* out = rotl(a, 5) ^ (b * 2654435761) + index: cheap, order-sensitive,
 * so any stale or misplaced byte changes every later result. */
static int mix(void *const *in, void *const *out, void *user, void *stream)
{
	const uint32_t *a = in[0], *b = in[1];
	uint32_t *o = out[0];
	uint32_t salt = (uint32_t)(uintptr_t)user;

	(void)stream;
	for (uint32_t k = 0; k < ELEMS; k++)
		o[k] = ((a[k] << 5) | (a[k] >> 27)) ^
		       (b[k] * 2654435761u + k + salt);
	return 0;
}

struct chain_result {
	uint32_t *bytes; /* CHAIN * ELEMS values */
	struct tmm_stats st;
};

/* Runs the chain in a context made from `config`; 0 or negative errno. */
static int run_chain(const char *config, struct chain_result *r)
{
	tmm_ctx *ctx;
	tmm_tensor t[CHAIN];
	uint32_t *seed;
	int rc;

	rc = tmm_ctx_create(&ctx, config);
	ck_assert_msg(rc == 0, "ctx: %s", tmm_last_error(NULL));
	seed = malloc(ELEMS * sizeof(uint32_t));
	r->bytes = malloc((size_t)CHAIN * ELEMS * sizeof(uint32_t));
	ck_assert_ptr_nonnull(seed);
	ck_assert_ptr_nonnull(r->bytes);
	for (uint32_t k = 0; k < ELEMS; k++)
		seed[k] = k * 40503u + 17u;

	for (int i = 0; i < CHAIN; i++) {
		char name[16];

		snprintf(name, sizeof(name), "t%d", i);
		rc = tmm_tensor_create(ctx, ELEMS * sizeof(uint32_t),
				       TMM_ACTIVATION, name, &t[i]);
		ck_assert_int_eq(rc, 0);
	}
	rc = tmm_tensor_write(ctx, t[0], 0, seed, ELEMS * sizeof(uint32_t));
	ck_assert_msg(rc == 0, "write: %s", tmm_last_error(ctx));
	for (int i = 1; i < CHAIN; i++) {
		tmm_tensor in[2] = { t[i - 1], t[i / 2] };
		tmm_op op = {
			.name = "mix", .kind = TMM_OP_ELEMENTWISE,
			.flags = TMM_OP_PURE,
			.inputs = in, .n_inputs = 2,
			.outputs = &t[i], .n_outputs = 1,
			.run = mix, .user = (void *)(uintptr_t)i,
			.cost = { 3.0 * ELEMS, 12.0 * ELEMS },
		};

		rc = tmm_run(ctx, &op);
		if (rc < 0)
			goto out;
	}
	/* The statistics before reading back: reads move bytes too. */
	r->st.version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, &r->st), 0);
	for (int i = 0; i < CHAIN; i++) {
		rc = tmm_tensor_read(ctx, t[i], 0,
				     r->bytes + (size_t)i * ELEMS,
				     ELEMS * sizeof(uint32_t));
		ck_assert_msg(rc == 0, "read t%d: %s", i, tmm_last_error(ctx));
	}
out:
	free(seed);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return rc;
}

START_TEST(chain_under_30_percent_is_bit_identical)
{
	struct chain_result free_run, tight;
	char config[128];
	uint64_t budget;

	ck_assert_int_eq(run_chain("backend=sim,sim_memory=backed,"
				   "mode=swap,budget=100%", &free_run), 0);
	/* Unconstrained, every tensor stays: the peak is all of them. */
	ck_assert_uint_eq(free_run.st.device_peak,
			  (uint64_t)CHAIN * ELEMS * sizeof(uint32_t));
	ck_assert_uint_eq(free_run.st.swap_out_count, 0);

	budget = free_run.st.device_peak * 30 / 100;
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=swap,budget=%lluB",
		 (unsigned long long)budget);
	ck_assert_int_eq(run_chain(config, &tight), 0);

	ck_assert_msg(memcmp(free_run.bytes, tight.bytes,
			     (size_t)CHAIN * ELEMS * sizeof(uint32_t)) == 0,
		      "bytes differ under a 30%% budget");
	ck_assert_uint_le(tight.st.device_peak, tight.st.budget);
	ck_assert_uint_le(tight.st.budget, budget);
	ck_assert_uint_gt(tight.st.swap_out_count, 0);
	ck_assert_uint_gt(tight.st.passive_evictions, 0);
	/* The skip connections bring old tensors back on demand. */
	ck_assert_uint_gt(tight.st.swap_in_count, 0);
	ck_assert_uint_gt(tight.st.on_demand_swap_ins, 0);
	ck_assert_uint_eq(tight.st.swap_in_bytes,
			  tight.st.swap_in_count * ELEMS * sizeof(uint32_t));
	/* Waiting for copies costs simulated time. */
	ck_assert_uint_gt(tight.st.stall_ns, 0);
	ck_assert_uint_gt(tight.st.elapsed_ns, free_run.st.elapsed_ns);
	free(free_run.bytes);
	free(tight.bytes);
}
END_TEST

START_TEST(op_larger_than_budget_fails_cleanly)
{
	tmm_ctx *ctx;
	tmm_tensor a, b;
	uint32_t data[1024] = { 1, 2, 3 }, back[1024];
	int rc;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "budget=6KiB"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(data), TMM_ACTIVATION,
					   "a", &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(data), TMM_ACTIVATION,
					   "b", &b), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, a, 0, data, sizeof(data)), 0);
	{
		tmm_tensor in[1] = { a };
		tmm_tensor out[1] = { b };
		tmm_op op = { .name = "too_big", .inputs = in, .n_inputs = 1,
			      .outputs = out, .n_outputs = 1, .run = mix };

		/* a + b = 8 KiB > 6 KiB */
		rc = tmm_run(ctx, &op);
	}
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "too_big"));
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "8.00 KiB"));
	/* Nothing lost: a still reads back, b was never produced. */
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, back, sizeof(back)), 0);
	ck_assert_mem_eq(back, data, sizeof(data));
	ck_assert_int_eq(tmm_tensor_read(ctx, b, 0, back, sizeof(back)),
			 -ENODATA);
	tmm_ctx_destroy(ctx);
}
END_TEST

/* Proactive eviction is decoupled: compute does not wait for it, and an
 * allocation that needs the memory waits for the earliest swap-out before
 * evicting anything passively. */
START_TEST(async_swap_out_is_decoupled)
{
	tmm_ctx *ctx;
	tmm_tensor a, b, c;
	struct tmm_tensor_rec *ra;
	static uint32_t data[16384], back[16384];
	uint64_t t0;

	for (unsigned k = 0; k < 16384; k++)
		data[k] = k ^ 0x5a5a5a5au;
	/* Room for two 64 KiB tensors, not three. */
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "budget=128KiB"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(data), TMM_ACTIVATION,
					   "a", &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(data), TMM_ACTIVATION,
					   "b", &b), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(data), TMM_ACTIVATION,
					   "c", &c), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, a, 0, data, sizeof(data)), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, b, 0, data, sizeof(data)), 0);
	ra = tmm_tensor_lookup(ctx, a, "test");
	ck_assert_int_eq(ra->state, TMM_TS_RESIDENT);

	t0 = ctx->be.ops->now_ns(&ctx->be);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, ra, false), 0);
	ck_assert_int_eq(ra->state, TMM_TS_SWAPPING_OUT);
	/* Compute did not wait. */
	ck_assert_uint_eq(ctx->be.ops->now_ns(&ctx->be), t0);

	/* c needs a's memory: the mover waits for the swap-out. */
	{
		tmm_tensor in[2] = { b, b };
		tmm_op op = { .name = "mix_b", .inputs = in, .n_inputs = 2,
			      .outputs = &c, .n_outputs = 1, .run = mix };

		ck_assert_int_eq(tmm_run(ctx, &op), 0);
	}
	ck_assert_uint_eq(ctx->c.swap_out_waits, 1);
	ck_assert_uint_eq(ctx->c.passive_evictions, 0);
	ck_assert_int_eq(ra->state, TMM_TS_HOST);
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, back, sizeof(back)), 0);
	ck_assert_mem_eq(back, data, sizeof(data));
	tmm_ctx_destroy(ctx);
}
END_TEST

/* Phantom memory runs cost-only ops over sizes alone. */
START_TEST(phantom_runs_cost_only_ops)
{
	tmm_ctx *ctx;
	tmm_tensor t[8];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	char byte = 0;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "sim_memory=phantom,"
					      "budget=3GiB"), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, 1ull << 30,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t[0], 0, &byte, 1), -ENOTSUP);
	for (int i = 0; i < 8; i++) {
		tmm_op op = { .name = "phantom", .outputs = &t[i],
			      .n_outputs = 1, .inputs = &t[i ? i - 1 : 0],
			      .n_inputs = i ? 1 : 0,
			      .cost = { 1e9, 2.0 * (1 << 30) } };

		ck_assert_msg(tmm_run(ctx, &op) == 0, "%s",
			      tmm_last_error(ctx));
	}
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_le(st.device_peak, 3ull << 30);
	ck_assert_uint_ge(st.swap_out_count, 5);
	ck_assert_uint_gt(st.compute_ns, 0);
	tmm_ctx_destroy(ctx);
}
END_TEST

/*
 * Phantom memory in mode=uvm: 8 GiB of tensors through a 3 GiB budget.
 * Each op faults its fresh 1 GiB output in (16384 big pages, 64 batches,
 * zero-filled: no copy); past 3 GiB the driver evicts the oldest blocks,
 * whose only copy is on the device, so 5 GiB is written back.
 */
START_TEST(phantom_runs_cost_only_ops_in_uvm_mode)
{
	tmm_ctx *ctx;
	tmm_tensor t[8];
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=uvm,"
					      "uvm_cap=driver,"
					      "sim_memory=phantom,"
					      "budget=3GiB"), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, 1ull << 30,
						   TMM_ACTIVATION, NULL,
						   &t[i]), 0);
	for (int i = 0; i < 8; i++) {
		tmm_op op = { .name = "phantom", .outputs = &t[i],
			      .n_outputs = 1, .inputs = &t[i ? i - 1 : 0],
			      .n_inputs = i ? 1 : 0,
			      .cost = { 1e9, 2.0 * (1 << 30) } };

		ck_assert_msg(tmm_run(ctx, &op) == 0, "%s",
			      tmm_last_error(ctx));
	}
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.device_peak, 3ull << 30);
	ck_assert_uint_eq(st.uvm_faults, 8 * 16384);
	ck_assert_uint_eq(st.uvm_fault_batches, 8 * 64);
	ck_assert_uint_eq(st.uvm_fault_bytes, 0);
	ck_assert_uint_eq(st.uvm_evictions, 5 * 512);
	ck_assert_uint_eq(st.uvm_eviction_bytes, 5ull << 30);
	ck_assert_uint_eq(st.swap_out_count, 0);
	ck_assert_uint_gt(st.stall_ns, 0);
	tmm_ctx_destroy(ctx);
}
END_TEST

/* The chain on managed memory: the driver model thrashes, bytes hold. */
START_TEST(chain_in_uvm_mode_is_bit_identical)
{
	struct chain_result free_run, tight;
	const uint64_t tensor = ELEMS * sizeof(uint32_t);
	char config[128];
	uint64_t budget;

	ck_assert_int_eq(run_chain("backend=sim,sim_memory=backed,"
				   "mode=swap,budget=100%", &free_run), 0);
	budget = free_run.st.device_peak * 30 / 100;
	snprintf(config, sizeof(config),
		 "backend=sim,sim_memory=backed,mode=uvm,uvm_cap=driver,"
		 "budget=%lluB", (unsigned long long)budget);
	ck_assert_int_eq(run_chain(config, &tight), 0);
	ck_assert_msg(memcmp(free_run.bytes, tight.bytes,
			     (size_t)CHAIN * tensor) == 0,
		      "bytes differ in mode=uvm under a 30%% budget");
	ck_assert_str_eq(tight.st.mode, "uvm");
	ck_assert_uint_le(tight.st.device_peak, budget);
	ck_assert_uint_eq(tight.st.swap_out_count, 0);
	/* One 64 KiB page per tensor: every op faults its output in (zero
	 * filled: no copy), and skip connections fault old inputs back. */
	ck_assert_uint_ge(tight.st.uvm_faults, CHAIN - 1);
	ck_assert_uint_gt(tight.st.uvm_fault_bytes, 0);
	ck_assert_uint_eq(tight.st.uvm_fault_bytes % tensor, 0);
	/* An eviction takes a whole 2 MiB VA block, which the managed
	 * arena shares among several tensors: at least one tensor each. */
	ck_assert_uint_gt(tight.st.uvm_evictions, 0);
	ck_assert_uint_eq(tight.st.uvm_eviction_bytes % tensor, 0);
	ck_assert_uint_ge(tight.st.uvm_eviction_bytes,
			  tight.st.uvm_evictions * tensor);
	ck_assert_uint_le(tight.st.uvm_fault_batches, CHAIN);
	ck_assert_uint_gt(tight.st.stall_ns, 0);
	free(free_run.bytes);
	free(tight.bytes);
}
END_TEST

static Suite *swap_suite(void)
{
	Suite *s = suite_create("swap_e2e");
	TCase *tc = tcase_create("e2e");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, chain_under_30_percent_is_bit_identical);
	tcase_add_test(tc, chain_in_uvm_mode_is_bit_identical);
	tcase_add_test(tc, op_larger_than_budget_fails_cleanly);
	tcase_add_test(tc, async_swap_out_is_decoupled);
	tcase_add_test(tc, phantom_runs_cost_only_ops);
	tcase_add_test(tc, phantom_runs_cost_only_ops_in_uvm_mode);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(swap_suite);
}
