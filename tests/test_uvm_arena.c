/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_arena.c — mode=uvm on the managed arena (lib/mem/uvm_arena.h).
 *
 * A training loop that makes and destroys its tensors every step makes
 * managed allocations (counted by the simulator) only in its first step,
 * and when everything fits its later steps take no fault: their tensors
 * land on pages the previous step populated.  Tensors are whole big pages
 * apart, so a discard of one leaves its neighbour's bytes exact (the
 * simulator poisons the whole pages a discard touches).  A read between
 * steps of pages on the device goes by copy and leaves them there.  A
 * segment the backend refuses (the device_alloc fault site) fails the op
 * that needed it with a message naming the op and the budget, and the
 * context goes on.  The arena alone: segments, page alignment, reuse
 * (its kept blocks are tested in test_uvm_arena_kept.c).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/fault.h"
#include "lib/base/managed_page.h"
#include "lib/core/context.h"
#include "lib/mem/uvm_arena.h"
#include "lib/move/mover_uvm.h"
#include "test_sim.h"
#include "toy_ops.h"

#define PAGE TMM_MANAGED_PAGE
#define CHAIN 12
#define STEPS 4

static uint64_t managed_allocs(tmm_ctx *ctx)
{
	struct tmm_sim_counters c;

	ck_assert_int_eq(tmm_sim_get_counters(&ctx->be, &c), 0);
	return c.managed_allocs;
}

static struct tmm_stats stats(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/* Trains STEPS steps under `config`; out receives w at the end, allocs[s]
 * the managed allocations made by the end of step s, faults[s] and
 * migrated[s] the faults and the bytes they copied. */
static void train(const char *config, uint32_t *out, uint64_t *allocs,
		  uint64_t *faults, uint64_t *migrated)
{
	uint32_t seed[ELEMS];
	tmm_ctx *ctx;
	tmm_tensor w;

	for (uint32_t k = 0; k < ELEMS; k++)
		seed[k] = k * 2654435761u;
	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, seed, BYTES), 0);
	for (int s = 0; s < STEPS; s++) {
		toy_chain_step(ctx, w, CHAIN);
		allocs[s] = managed_allocs(ctx);
		faults[s] = stats(ctx).uvm_faults;
		migrated[s] = stats(ctx).uvm_fault_bytes;
	}
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, out, BYTES), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/* (a) Fresh tensors every step, no managed allocation after the first:
 * with room for everything, and with a budget that oversubscribes. */
START_TEST(no_managed_allocation_after_the_first_step)
{
	static const char *const budgets[] = { "budget=64MiB",
					       "budget=256KiB" };
	static uint32_t ref[ELEMS], got[ELEMS];
	uint64_t allocs[STEPS], faults[STEPS], migrated[STEPS];

	train("backend=sim,sim_memory=backed,mode=swap,budget=64MiB", ref,
	      allocs, faults, migrated);
	for (size_t b = 0; b < 2; b++) {
		char config[128];

		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=backed,mode=uvm,%s",
			 budgets[b]);
		train(config, got, allocs, faults, migrated);
		ck_assert_msg(memcmp(got, ref, sizeof(ref)) == 0,
			      "%s: bytes differ from mode=swap", config);
		ck_assert_uint_ge(allocs[0], 1);
		for (int s = 1; s < STEPS; s++)
			ck_assert_msg(allocs[s] == allocs[0],
				      "%s: %llu managed allocations after "
				      "step %d, %llu after the first", config,
				      (unsigned long long)allocs[s], s + 1,
				      (unsigned long long)allocs[0]);
	}
}
END_TEST

/* When everything fits, a step's fresh tensors land on pages the step
 * before populated on the device: only the first step faults, and no
 * fault ever copies (a fresh page is zero-filled). */
START_TEST(populated_pages_are_reused_without_faults)
{
	static uint32_t got[ELEMS];
	uint64_t allocs[STEPS], faults[STEPS], migrated[STEPS];

	train("backend=sim,sim_memory=backed,mode=uvm,budget=64MiB", got,
	      allocs, faults, migrated);
	/* Every tensor's page is fresh once: the chain (w was written by
	 * the host, so its page is there: it migrates). */
	ck_assert_uint_ge(faults[0], CHAIN);
	ck_assert_uint_eq(migrated[0], TMM_MANAGED_PAGE);
	for (int s = 1; s < STEPS; s++) {
		ck_assert_msg(faults[s] == faults[0],
			      "step %d faulted %llu pages", s + 1,
			      (unsigned long long)(faults[s] - faults[s - 1]));
		ck_assert_uint_eq(migrated[s], migrated[0]);
	}
}
END_TEST

/*
 * One step that writes its input from the host, whole, into a fresh
 * tensor (as a training loop writes each batch), folds it into w and
 * destroys it; *faults and *migrated receive the uvm fault counters
 * after the step.
 */
static void input_step(tmm_ctx *ctx, tmm_tensor w, uint32_t s,
		       uint64_t *faults, uint64_t *migrated)
{
	uint32_t batch[ELEMS];
	tmm_tensor x;

	for (uint32_t k = 0; k < ELEMS; k++)
		batch[k] = (k + 1) * (s + 7) * 40503u;
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION, "x",
					   &x), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, x, 0, batch, BYTES), 0);
	{
		tmm_tensor in[2] = { w, x };

		toy_run(ctx, "update", TMM_OP_BACKWARD, toy_mix, in, 2, &w, 1);
	}
	ck_assert_int_eq(tmm_tensor_destroy(ctx, x), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	*faults = stats(ctx).uvm_faults;
	*migrated = stats(ctx).uvm_fault_bytes;
}

/*
 * Issue #19: an input written whole every step into a range whose pages
 * the device holds goes by a copy, as in swap mode, so its pages stay on
 * the device: after the first step no kernel faults.  (A host touch
 * would migrate them to the host, and the kernel would fault them back:
 * on an H200 a 32 MiB batch crossed the link twice a step by faults.)
 * The bytes are swap mode's.
 */
START_TEST(an_input_written_each_step_stays_on_the_device)
{
	static const char *const modes[] = { "swap", "uvm" };
	static uint32_t got[2][ELEMS];
	uint64_t faults[STEPS], migrated[STEPS];

	for (int m = 0; m < 2; m++) {
		char config[128];
		tmm_ctx *ctx;
		tmm_tensor w;

		snprintf(config, sizeof(config), "backend=sim,sim_memory="
			 "backed,mode=%s,budget=64MiB", modes[m]);
		ck_assert_int_eq(tmm_ctx_create(&ctx, config), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT,
						   "w", &w), 0);
		ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, got[m], BYTES),
				 0);
		for (uint32_t s = 0; s < STEPS; s++)
			input_step(ctx, w, s, &faults[s], &migrated[s]);
		ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, got[m], BYTES),
				 0);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	ck_assert_mem_eq(got[0], got[1], sizeof(got[0]));
	ck_assert_uint_gt(faults[0], 0);
	for (int s = 1; s < STEPS; s++)
		ck_assert_msg(faults[s] == faults[0] &&
				      migrated[s] == migrated[0],
			      "step %d faulted %llu pages (%llu bytes copied)",
			      s + 1,
			      (unsigned long long)(faults[s] - faults[s - 1]),
			      (unsigned long long)(migrated[s] -
						   migrated[s - 1]));
}
END_TEST

/*
 * Between steps, the host reads a tensor whose pages the device holds by
 * a copy from them: the pages stay, and the next step's kernel takes no
 * fault.  Within a step the read touches them, as before: they migrate
 * to the host, and the next step faults them back.  Both reads give the
 * same bytes.  A copy that fails fails the read and loses nothing.
 */
START_TEST(a_read_between_steps_leaves_the_pages_on_the_device)
{
	static uint32_t between[ELEMS], within[ELEMS];
	uint64_t f0, m0, f1, m1, f2, m2;
	tmm_ctx *ctx;
	tmm_tensor w;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory="
					      "backed,mode=uvm,budget=64MiB"),
			 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, between, BYTES), 0);
	input_step(ctx, w, 0, &f0, &m0);
	input_step(ctx, w, 1, &f0, &m0);
	/* The copy failing (the fault site copy): the read fails naming
	 * it, and the next one reads the same bytes, the pages still on
	 * the device. */
	ck_assert_int_eq(tmm_fault_set("copy@1"), 0);
	ck_assert_int_lt(tmm_tensor_read(ctx, w, 0, within, BYTES), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(strstr(tmm_last_error(ctx), "copy"), "%s",
		      tmm_last_error(ctx));
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, between, BYTES), 0);
	ck_assert(tmm_uvm_known_on_device(ctx, tmm_tensor_find(ctx, w)));
	ck_assert_uint_eq(stats(ctx).uvm_faults, f0);
	input_step(ctx, w, 2, &f1, &m1);
	ck_assert_uint_eq(f1, f0);
	ck_assert_uint_eq(m1, m0);
	/* Within a step: a touch, and the pages come back by faults. */
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, between, BYTES), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, within, BYTES), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_mem_eq(between, within, BYTES);
	ck_assert(!tmm_uvm_known_on_device(ctx, tmm_tensor_find(ctx, w)));
	input_step(ctx, w, 3, &f2, &m2);
	ck_assert_uint_gt(f2, f1);
	ck_assert_uint_ge(m2 - m1, BYTES);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A batch of prefetches on the simulator, which has no batch call and
 * prefetches range by range (tmm_backend_prefetch_many): the second
 * range failing (fault site copy) fails the batch, and neither tensor is
 * counted on its way; both keep their bytes, and a batch without the
 * fault brings them.
 */
START_TEST(a_batch_failing_part_way_loses_nothing)
{
	static uint32_t in[2][ELEMS], out[ELEMS];
	struct tmm_tensor_rec *r[2];
	tmm_tensor t[2];
	tmm_ctx *ctx;
	uint64_t held;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory="
					      "backed,mode=uvm,"
					      "uvm_swap_path=prefetch,"
					      "budget=64MiB"), 0);
	for (int i = 0; i < 2; i++) {
		for (uint32_t k = 0; k < ELEMS; k++)
			in[i][k] = (k + 3) * (uint32_t)(i + 11) * 2654435761u;
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT,
						   i ? "b" : "a", &t[i]), 0);
		ck_assert_int_eq(tmm_tensor_write(ctx, t[i], 0, in[i], BYTES),
				 0);
		r[i] = tmm_tensor_find(ctx, t[i]);
		ck_assert_int_eq(tmm_uvm_swap_out(ctx, r[i], false), 0);
		ck_assert_int_eq(r[i]->state, TMM_TS_HOST);
	}
	held = ctx->uvm_held;
	for (int attempt = 0; attempt < 2; attempt++) {
		tmm_uvm_batch_open(ctx);
		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(tmm_uvm_prefetch(ctx, r[i]), 0);
		ck_assert_int_eq(tmm_fault_set(attempt ? "" : "copy@2"), 0);
		if (attempt == 0) {
			ck_assert_int_lt(tmm_uvm_batch_close(ctx), 0);
			for (int i = 0; i < 2; i++)
				ck_assert_int_eq(r[i]->state, TMM_TS_HOST);
			ck_assert_uint_eq(ctx->uvm_held, held);
		} else {
			ck_assert_int_eq(tmm_uvm_batch_close(ctx), 0);
			for (int i = 0; i < 2; i++)
				ck_assert_int_eq(r[i]->state,
						 TMM_TS_SWAPPING_IN);
		}
		ck_assert_int_eq(tmm_fault_set(""), 0);
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0, out,
							 BYTES), 0);
			ck_assert_mem_eq(out, in[i], BYTES);
		}
	}
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* A fresh page touched by a kernel costs a fault (zero-filled: no copy
 * and no time on the copy engines), a page still populated does not: a
 * tensor destroyed inside an iteration leaves its pages to the next one.
 * Outside an iteration they go with it (a discard): nothing says a tensor
 * will take their place. */
START_TEST(a_fresh_page_faults_and_a_populated_one_does_not)
{
	tmm_ctx *ctx;
	tmm_tensor a, b;
	struct tmm_stats st;
	void *pa, *pb;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=uvm,"
					      "budget=16MiB"), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 3 * TMM_MANAGED_PAGE,
					   TMM_ACTIVATION, "a", &a), 0);
	ck_assert_int_eq(tmm_acquire(ctx, a, TMM_WRITE, &pa), 0);
	ck_assert_int_eq(tmm_release(ctx, a), 0);
	st = stats(ctx);
	ck_assert_uint_eq(st.uvm_faults, 3);
	ck_assert_uint_eq(st.uvm_fault_bytes, 0);
	/* b takes a's range back, pages on the device: no fault. */
	ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 3 * TMM_MANAGED_PAGE,
					   TMM_ACTIVATION, "b", &b), 0);
	ck_assert_int_eq(tmm_acquire(ctx, b, TMM_WRITE, &pb), 0);
	ck_assert_int_eq(tmm_release(ctx, b), 0);
	ck_assert_ptr_eq(pa, pb);
	st = stats(ctx);
	ck_assert_uint_eq(st.uvm_faults, 3);
	ck_assert_uint_eq(st.device_in_use, 3 * TMM_MANAGED_PAGE);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	/* Destroyed outside an iteration: its pages go, and the next
	 * tensor there faults them in fresh. */
	ck_assert_int_eq(tmm_tensor_destroy(ctx, b), 0);
	st = stats(ctx);
	ck_assert_uint_eq(st.device_in_use, 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 3 * TMM_MANAGED_PAGE,
					   TMM_ACTIVATION, "a2", &a), 0);
	ck_assert_int_eq(tmm_acquire(ctx, a, TMM_WRITE, &pa), 0);
	ck_assert_int_eq(tmm_release(ctx, a), 0);
	ck_assert_ptr_eq(pa, pb);
	ck_assert_uint_eq(stats(ctx).uvm_faults, 6);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* (b) Two tensors side by side in one VA block; a discard of the first
 * (a drop's) leaves the second bit for bit. */
START_TEST(a_discard_leaves_the_neighbour_intact)
{
	static uint8_t one[5000], two[70000], back[70000];
	struct tmm_tensor_rec *ra, *rb;
	tmm_ctx *ctx;
	tmm_tensor a, b;
	uintptr_t da, db;

	for (size_t i = 0; i < sizeof(one); i++)
		one[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(two); i++)
		two[i] = (uint8_t)(i * 13 + 5);
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=uvm,budget=16MiB"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(one), TMM_ACTIVATION,
					   "a", &a), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, sizeof(two), TMM_ACTIVATION,
					   "b", &b), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, a, 0, one, sizeof(one)), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, b, 0, two, sizeof(two)), 0);
	ra = tmm_tensor_find(ctx, a);
	rb = tmm_tensor_find(ctx, b);
	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	da = (uintptr_t)ra->dev;
	db = (uintptr_t)rb->dev;
	/* Neighbours in one 2 MiB VA block, whole big pages apart. */
	ck_assert_uint_lt(da > db ? da - db : db - da, TMM_MANAGED_BLOCK);
	ck_assert_uint_eq((da > db ? da - db : db - da) % TMM_MANAGED_PAGE,
			  0);
	tmm_uvm_discard(ctx, ra);
	ck_assert_int_eq(tmm_tensor_read(ctx, b, 0, back, sizeof(two)), 0);
	ck_assert_mem_eq(back, two, sizeof(two));
	/* The discard did happen: a's bytes are poisoned. */
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, back, sizeof(one)), 0);
	for (size_t i = 0; i < sizeof(one); i++)
		ck_assert_uint_eq(back[i], 0xDB);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* Runs fill(w) -> out; returns tmm_run's result. */
static int fill(tmm_ctx *ctx, tmm_tensor w, tmm_tensor out)
{
	tmm_op op = { .name = "fill_next", .kind = TMM_OP_ELEMENTWISE,
		      .inputs = &w, .n_inputs = 1, .outputs = &out,
		      .n_outputs = 1, .run = toy_fill,
		      .cost = { 4.0 * ELEMS, 12.0 * ELEMS } };

	return tmm_run(ctx, &op);
}

/*
 * (d) The segment the first tensor needs is refused: the write fails
 * with a message naming the tensor, the arena, the budget's tunable and
 * the fault site, and the next try works.  Then the second segment,
 * needed once the first is full, is refused under an op: the op fails,
 * named, the tensors of the first segment keep their bytes, and the op
 * run again works.
 */
START_TEST(a_refused_segment_fails_the_op_cleanly)
{
	static uint32_t seed[ELEMS], back[ELEMS], want[ELEMS];
	/* 1 MiB budget: 2 MiB segments, 32 big pages, one per tensor. */
	enum { PER_SEGMENT = 32 };
	tmm_tensor t[PER_SEGMENT + 2], w;
	tmm_ctx *ctx;
	const char *e;
	int rc;

	for (uint32_t k = 0; k < ELEMS; k++)
		seed[k] = k ^ 0x9e3779b9u;
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					      "mode=uvm,budget=1MiB,"
					      "fault=device_alloc@1"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "w",
					   &w), 0);
	rc = tmm_tensor_write(ctx, w, 0, seed, BYTES);
	ck_assert_int_eq(rc, -ENOMEM);
	e = tmm_last_error(ctx);
	ck_assert_msg(strstr(e, "no managed memory for tensor") &&
			      strstr(e, "managed arena") &&
			      strstr(e, "TENSORMM_BUDGET") &&
			      strstr(e, TMM_SITE_DEVICE_ALLOC),
		      "%s", e);
	ck_assert_uint_eq(managed_allocs(ctx), 0);
	/* Usable: the next try makes the segment. */
	ck_assert_int_eq(tmm_tensor_write(ctx, w, 0, seed, BYTES), 0);
	ck_assert_uint_eq(managed_allocs(ctx), 1);
	/* w and 31 outputs fill the first segment. */
	for (int i = 0; i < PER_SEGMENT + 2; i++)
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   NULL, &t[i]), 0);
	for (int i = 0; i < PER_SEGMENT - 1; i++)
		ck_assert_msg(fill(ctx, w, t[i]) == 0, "%s",
			      tmm_last_error(ctx));
	ck_assert_uint_eq(managed_allocs(ctx), 1);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_DEVICE_ALLOC "@1"), 0);
	rc = fill(ctx, w, t[PER_SEGMENT - 1]);
	ck_assert_int_eq(rc, -ENOMEM);
	e = tmm_last_error(ctx);
	ck_assert_msg(strstr(e, "op 'fill_next'") &&
			      strstr(e, "managed arena"), "%s", e);
	ck_assert_uint_eq(managed_allocs(ctx), 1);
	/* What was there is intact, and the op runs now. */
	ck_assert_int_eq(tmm_tensor_read(ctx, w, 0, back, BYTES), 0);
	ck_assert_mem_eq(back, seed, BYTES);
	ck_assert_int_eq(tmm_tensor_read(ctx, t[0], 0, want, BYTES), 0);
	ck_assert_int_eq(fill(ctx, w, t[PER_SEGMENT - 1]), 0);
	ck_assert_int_eq(fill(ctx, w, t[PER_SEGMENT]), 0);
	ck_assert_uint_eq(managed_allocs(ctx), 2);
	for (int i = 1; i <= PER_SEGMENT; i++) {
		ck_assert_int_eq(tmm_tensor_read(ctx, t[i], 0, back, BYTES),
				 0);
		ck_assert_mem_eq(back, want, BYTES);
	}
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_fault_set(""), 0);
}
END_TEST

/* The arena alone, on the simulator's managed memory. */
/* A simulated P100 with phantom memory, for the arena tests that need a
 * backend of their own. */
static void open_phantom_p100(struct tmm_backend *be)
{
	struct tmm_config cfg;

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	open_cfg(be, &cfg);
}

START_TEST(segments_are_kept_and_blocks_are_whole_pages)
{
	struct tmm_uvm_arena *a;
	struct tmm_uvm_arena_stats st;
	struct tmm_pool_block *b[4];
	struct tmm_backend be;
	struct tmm_sim_counters c;
	void *p[4], *again;
	char why[256];

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	/* No segment before the first block: twice 3 MiB, in VA blocks. */
	tmm_uvm_arena_get_stats(a, &st);
	ck_assert_uint_eq(st.segments, 0);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 1, &b[0], &p[0], why,
					     sizeof(why)), 0);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 100 * KIB, &b[1], &p[1], why,
					     sizeof(why)), 0);
	tmm_uvm_arena_get_stats(a, &st);
	ck_assert_uint_eq(st.segments, 1);
	ck_assert_uint_eq(st.capacity, 6 * MIB);
	ck_assert_uint_eq(st.in_use, 3 * TMM_MANAGED_PAGE);
	ck_assert_uint_eq(((uintptr_t)p[1] > (uintptr_t)p[0]
				   ? (uintptr_t)p[1] - (uintptr_t)p[0]
				   : (uintptr_t)p[0] - (uintptr_t)p[1]) %
				  TMM_MANAGED_PAGE,
			  0);
	/* Larger than what is free: a second segment, at least as large
	 * as the arena so far. */
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 7 * MIB, &b[2], &p[2], why,
					     sizeof(why)), 0);
	tmm_uvm_arena_get_stats(a, &st);
	ck_assert_uint_eq(st.segments, 2);
	ck_assert_uint_eq(st.capacity, 6 * MIB + 8 * MIB);
	/* Freed and taken again: the same range, no new allocation. */
	tmm_uvm_arena_free(a, b[2]);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 7 * MIB, &b[3], &again, why,
					     sizeof(why)), 0);
	ck_assert_ptr_eq(again, p[2]);
	ck_assert_int_eq(tmm_sim_get_counters(&be, &c), 0);
	ck_assert_uint_eq(c.managed_allocs, 2);
	tmm_uvm_arena_get_stats(a, &st);
	ck_assert_uint_eq(st.peak, 3 * TMM_MANAGED_PAGE + 7 * MIB);
	/* A stranger's block, and NULL, are ignored. */
	tmm_uvm_arena_free(a, NULL);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 0, &b[2], &p[2], why,
					     sizeof(why)), -EINVAL);
	tmm_uvm_arena_free(a, b[0]);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_free(a, b[3]);
	tmm_uvm_arena_get_stats(a, &st);
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_eq(st.segments, 2);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/* What the arena knows of where its pages are: a big page at a time,
 * nothing at first, nothing outside its segments. */
START_TEST(the_arena_notes_pages_on_the_device)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *b[2];
	struct tmm_backend be;
	char why[256], outside[16];
	void *p[2];

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, 3 * TMM_MANAGED_PAGE, &b[0],
					     &p[0], why, sizeof(why)), 0);
	ck_assert_int_eq(tmm_uvm_arena_alloc(a, TMM_MANAGED_PAGE, &b[1],
					     &p[1], why, sizeof(why)), 0);
	/* A new segment knows nothing. */
	ck_assert(!tmm_uvm_arena_on_device(a, p[0], 3 * TMM_MANAGED_PAGE));
	tmm_uvm_arena_note(a, p[0], 3 * TMM_MANAGED_PAGE, true);
	ck_assert(tmm_uvm_arena_on_device(a, p[0], 3 * TMM_MANAGED_PAGE));
	ck_assert(tmm_uvm_arena_on_device(a, (char *)p[0] + 5, 1));
	/* The neighbour's page is its own. */
	ck_assert(!tmm_uvm_arena_on_device(a, p[1], TMM_MANAGED_PAGE));
	/* A byte taken off the device takes its whole page, and only it. */
	tmm_uvm_arena_note(a, (char *)p[0] + TMM_MANAGED_PAGE + 7, 1, false);
	ck_assert(!tmm_uvm_arena_on_device(a, p[0], 3 * TMM_MANAGED_PAGE));
	ck_assert(tmm_uvm_arena_on_device(a, p[0], TMM_MANAGED_PAGE));
	ck_assert(tmm_uvm_arena_on_device(
		a, (char *)p[0] + 2 * TMM_MANAGED_PAGE, TMM_MANAGED_PAGE));
	/* Memory that is not the arena's is never known, nor noted. */
	tmm_uvm_arena_note(a, outside, sizeof(outside), true);
	ck_assert(!tmm_uvm_arena_on_device(a, outside, sizeof(outside)));
	ck_assert(!tmm_uvm_arena_on_device(NULL, p[0], 1));
	tmm_uvm_arena_free(a, b[0]);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

static Suite *arena_suite(void)
{
	Suite *s = suite_create("uvm_arena");
	TCase *tc = tcase_create("arena");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, no_managed_allocation_after_the_first_step);
	tcase_add_test(tc, populated_pages_are_reused_without_faults);
	tcase_add_test(tc, a_fresh_page_faults_and_a_populated_one_does_not);
	tcase_add_test(tc, a_discard_leaves_the_neighbour_intact);
	tcase_add_test(tc, a_refused_segment_fails_the_op_cleanly);
	tcase_add_test(tc, segments_are_kept_and_blocks_are_whole_pages);
	tcase_add_test(tc, the_arena_notes_pages_on_the_device);
	tcase_add_test(tc, an_input_written_each_step_stays_on_the_device);
	tcase_add_test(tc, a_read_between_steps_leaves_the_pages_on_the_device);
	tcase_add_test(tc, a_batch_failing_part_way_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(arena_suite);
}
