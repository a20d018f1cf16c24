/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_order.c — the cuda backend's managed-memory moves are ordered
 * after the work that touches the same bytes, on the CUDA test double
 * (tests/cudafake/), whose race detector sees every unordered pair.
 *
 * In mode=uvm a swap-out is a prefetch to the host on the D2H copy
 * stream, a prefetch back is one to the device on the H2D stream, and a
 * drop or an overwrite is a discard on the compute stream, where the
 * kernels run.  Each must come after what last wrote or discarded the
 * range, on whichever stream that ran (issue #20: "The uvm mover's
 * prefetch to the host is not ordered after the compute that last wrote
 * the tensor, nor after a discard").  By the copy way (uvm_path.h) a
 * swap-out is a pinned copy and, once the host sees it complete, a
 * discard on the compute stream; the copy back must follow that discard,
 * and the host's reads and writes of the range must too (issue #19: a
 * wrong bias read back on an H200, by the copy way only).  In swap mode,
 * a swap-in that compaction moves to make room is moved only once it has
 * landed, and a failed wait for it loses nothing.  Every seed of the
 * double's order is tried, and the bytes are checked after each.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "fill_twin.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"
#include "lib/move/swap_engine.h"
#include "tensormm.h"

#define BYTES (256u << 10)
#define SEEDS 20

/* A kernel that fills `bytes` of out[0] with the byte `user`. */
static int launch_fill(void *const *out, size_t bytes, void *user,
		       void *stream)
{
	return fill_twin_launch(out[0], bytes, (uint8_t)(uintptr_t)user,
				stream);
}

static int fill_run(void *const *in, void *const *out, void *user,
		    void *stream)
{
	(void)in;
	return launch_fill(out, BYTES, user, stream);
}

/* How mode=uvm evicts: by prefetch (the default's choice on a GPU that
 * is not simulated), or by pinned copy (uvm_path.h), made by the
 * runtime's cudaMemcpyAsync or by the library's copy kernel
 * (uvm_copier=kernel, cuda_copier.h). */
enum way { BY_PREFETCH, BY_COPY, BY_COPY_KERNEL };

static tmm_ctx *make_ctx_way(tmm_tensor *t, enum way way)
{
	static const char *const conf[] = {
		[BY_PREFETCH] = "",
		[BY_COPY] = ",uvm_swap_path=copy",
		[BY_COPY_KERNEL] = ",uvm_swap_path=copy,uvm_copier=kernel",
	};
	char cfg[256];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=uvm,budget=64MiB,"
		 "cupti=off,stats_shm=off,policy=passive%s", conf[way]);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
					   "t", t),
			 0);
	return ctx;
}

/* The copy way of a loop test's round: _i 0 the runtime's copies, 1 the
 * copy kernel's. */
static enum way copy_way(int round)
{
	return round ? BY_COPY_KERNEL : BY_COPY;
}

/* The copy kernel made the copies where it was asked to, and only then
 * (cudafake_calls counts its launches since the program began). */
static void expect_copier(enum way way, unsigned long launches_before)
{
	struct cudafake_calls c;

	cudafake_calls(&c);
	if (way == BY_COPY_KERNEL)
		ck_assert_uint_gt(c.kernel_copies, launches_before);
	else
		ck_assert_uint_eq(c.kernel_copies, launches_before);
}

static unsigned long copier_launches(void)
{
	struct cudafake_calls c;

	cudafake_calls(&c);
	return c.kernel_copies;
}

static tmm_ctx *make_ctx(tmm_tensor *t)
{
	return make_ctx_way(t, BY_PREFETCH);
}

static void write_t(tmm_ctx *ctx, tmm_tensor t, uint8_t value)
{
	tmm_op op = { .name = "fill", .outputs = &t, .n_outputs = 1,
		      .run = fill_run, .user = (void *)(uintptr_t)value };

	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
}

static void expect_bytes(tmm_ctx *ctx, tmm_tensor t, uint8_t value)
{
	uint8_t *buf = malloc(BYTES);

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, buf, BYTES) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t i = 0; i < BYTES; i++)
		ck_assert_msg(buf[i] == value, "byte %zu is %#x, not %#x", i,
			      buf[i], value);
	free(buf);
}

static void expect_no_race(unsigned seed)
{
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_msg(cudafake_races() == 0, "seed %u: %u race(s), the "
		      "first: %s", seed, cudafake_races(),
		      cudafake_races() ? cudafake_race(0) : "");
}

/* A kernel writes t; t is swapped out at once: the prefetch to the host
 * must wait for the kernel. */
START_TEST(a_swap_out_waits_for_the_writer)
{
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t;
		tmm_ctx *ctx = make_ctx(&t);

		cudafake_reset(seed);
		write_t(ctx, t, 0x5a);
		ck_assert_int_eq(tmm_mover_swap_out(ctx,
						    tmm_tensor_find(ctx, t), false),
				 0);
		expect_no_race(seed);
		expect_bytes(ctx, t, 0x5a);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

/* Swapped out and prefetched back at once: the prefetch to the device
 * must wait for the one to the host, on the other copy stream. */
START_TEST(a_prefetch_back_waits_for_the_swap_out)
{
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t;
		tmm_ctx *ctx = make_ctx(&t);
		struct tmm_tensor_rec *r;

		write_t(ctx, t, 0x33);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		r = tmm_tensor_find(ctx, t);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
		ck_assert_int_eq(tmm_mover_prefetch(ctx, r), 0);
		expect_no_race(seed);
		expect_bytes(ctx, t, 0x33);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

/* Overwritten by the next op, t is discarded first (its old bytes are
 * dead); swapped out right after that op, the prefetch must wait for the
 * discard and the new writer, and the new bytes must be what arrives. */
START_TEST(a_swap_out_waits_for_a_discard)
{
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t;
		tmm_ctx *ctx = make_ctx(&t);
		struct tmm_tensor_rec *r;

		write_t(ctx, t, 0x11);
		r = tmm_tensor_find(ctx, t);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		write_t(ctx, t, 0x22); /* HOST, overwritten: discarded */
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
		expect_no_race(seed);
		expect_bytes(ctx, t, 0x22);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

/*
 * Swapped out, then read again before the copy ended (a back-access: the
 * copy goes on, into a host buffer no one will read), then destroyed:
 * its block must not go to the next tensor while the copy still reads
 * it, or that tensor's kernel writes under the copy.
 */
START_TEST(a_block_freed_under_a_swap_out_waits_for_it)
{
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor a, b;
		tmm_ctx *ctx;
		struct tmm_tensor_rec *r;

		ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
						   "budget=64MiB,cupti=off,"
						   "stats_shm=off,"
						   "policy=passive") == 0,
			      "%s", tmm_last_error(NULL));
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "a", &a), 0);
		write_t(ctx, a, 0x44);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		r = tmm_tensor_find(ctx, a);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
		ck_assert_int_eq(tmm_mover_make_resident(ctx, r, true), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, a), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "b", &b), 0);
		write_t(ctx, b, 0x66);
		expect_no_race(seed);
		expect_bytes(ctx, b, 0x66);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
}
END_TEST

/*
 * The copy way out of mode=uvm (uvm_path.h), on a device that lags the
 * host: the copy out is retired while the host waits for it, which
 * queues the discard of t's range on the compute stream (the device has
 * not run it yet); the program reads t (from the host buffer), then t
 * comes back by a prefetch and a copy, and the program reads it again,
 * from its managed pages.  The discard must come before the prefetch and
 * the copy, and the host's read of the pages after all three: the
 * double's race detector checks the host's access against what it has
 * not waited for (cudafake_host_access), and the bytes say the rest.
 */
START_TEST(the_copy_way_back_is_read_after_its_discard)
{
	enum way way = copy_way(_i);
	unsigned long launches = copier_launches();

	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t;
		tmm_ctx *ctx = make_ctx_way(&t, way);
		struct tmm_tensor_rec *r;

		write_t(ctx, t, 0x77);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		r = tmm_tensor_find(ctx, t);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r, false), 0);
		ck_assert_int_eq(r->state, TMM_TS_SWAPPING_OUT);
		ck_assert_ptr_nonnull(r->host);
		ck_assert_int_eq(tmm_mover_settle(ctx, r), 0);
		ck_assert_int_eq(r->state, TMM_TS_HOST);
		expect_bytes(ctx, t, 0x77);
		ck_assert_int_eq(tmm_mover_make_resident(ctx, r, true), 0);
		expect_bytes(ctx, t, 0x77);
		expect_no_race(seed);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
	expect_copier(way, launches);
}
END_TEST

/*
 * The end of a run by the copy way: t leaves by copy and the program
 * reads it while the copy is still in flight (the host waits for the
 * copy, the discard is queued, the bytes come from the host buffer),
 * then destroys it; the next tensor takes t's range and the program
 * writes it from the host.  That write must come after the discard of
 * t's pages, which the device has not run yet when it is asked for.
 */
START_TEST(a_range_discarded_by_the_copy_way_is_written_after_it)
{
	enum way way = copy_way(_i);
	unsigned long launches = copier_launches();

	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t, u;
		tmm_ctx *ctx = make_ctx_way(&t, way);
		uint8_t *buf = malloc(BYTES);

		ck_assert_ptr_nonnull(buf);
		write_t(ctx, t, 0x2c);
		ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
		cudafake_reset(seed);
		ck_assert_int_eq(tmm_mover_swap_out(ctx,
						    tmm_tensor_find(ctx, t), false),
				 0);
		expect_bytes(ctx, t, 0x2c);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "u", &u), 0);
		memset(buf, 0x3d, BYTES);
		ck_assert_msg(tmm_tensor_write(ctx, u, 0, buf, BYTES) == 0,
			      "%s", tmm_last_error(ctx));
		expect_no_race(seed);
		expect_bytes(ctx, u, 0x3d);
		free(buf);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
	expect_copier(way, launches);
}
END_TEST

/* The kernel of an output twice BYTES long. */
static int fill_twice_run(void *const *in, void *const *out, void *user,
			  void *stream)
{
	(void)in;
	return launch_fill(out, 2 * BYTES, user, stream);
}

#define SLOTS 16
/* Orders tried for the layout below: each costs sixteen tensors' moves,
 * so fewer than the single-tensor tests above. */
#define LANDING_SEEDS 4

/*
 * Swap mode on a device that lags the host: a full pool of SLOTS tensors
 * (tensor i holds bytes i + 1), every other one swapped out and straight
 * back in, the others destroyed but the last, so that swap-ins still
 * landing sit between the holes; the double's order is `seed`.
 */
static tmm_ctx *swap_ins_between_holes(unsigned seed, tmm_tensor *t)
{
	struct tmm_tensor_rec *r[SLOTS];
	tmm_ctx *ctx;

	ck_assert_msg(tmm_ctx_create(&ctx, "backend=cuda,mode=swap,"
					   "budget=4MiB,cupti=off,"
					   "stats_shm=off,policy=passive") == 0,
		      "%s", tmm_last_error(NULL));
	for (int i = 0; i < SLOTS; i++) {
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT,
						   NULL, &t[i]), 0);
		write_t(ctx, t[i], (uint8_t)(i + 1));
		r[i] = tmm_tensor_find(ctx, t[i]);
	}
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	cudafake_reset(seed);
	for (int i = 0; i < SLOTS; i += 2)
		ck_assert_int_eq(tmm_mover_swap_out(ctx, r[i], true), 0);
	for (int i = 0; i < SLOTS; i += 2)
		ck_assert_int_eq(tmm_mover_swap_in(ctx, r[i]), 0);
	for (int i = 1; i < SLOTS - 1; i += 2)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t[i]), 0);
	ck_assert_int_eq(r[0]->state, TMM_TS_SWAPPING_IN);
	return ctx;
}

/* Makes `big`, two slots, and runs its kernel, which fills it with
 * 0x4c; returns tmm_run's result. */
static int make_big(tmm_ctx *ctx, tmm_tensor *big)
{
	tmm_op op = { .name = "fill", .outputs = big, .n_outputs = 1,
		      .run = fill_twice_run, .user = (void *)(uintptr_t)0x4c };

	if (!big->id)
		ck_assert_int_eq(tmm_tensor_create(ctx, 2 * BYTES,
						   TMM_ACTIVATION, "big", big),
				 0);
	return tmm_run(ctx, &op);
}

/* No race, nothing evicted, and every byte where it was: the tensors
 * left by swap_ins_between_holes, and big's. */
static void all_kept(tmm_ctx *ctx, unsigned seed, const tmm_tensor *t,
		     tmm_tensor big)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	uint8_t *buf = malloc(2 * BYTES);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_ge(st.compaction_moves, 1);
	expect_no_race(seed);
	for (int i = 0; i < SLOTS; i += 2)
		expect_bytes(ctx, t[i], (uint8_t)(i + 1));
	expect_bytes(ctx, t[SLOTS - 1], SLOTS);
	ck_assert_int_eq(tmm_tensor_read(ctx, big, 0, buf, 2 * BYTES), 0);
	for (size_t k = 0; k < 2 * BYTES; k++)
		ck_assert_uint_eq(buf[k], 0x4c);
	free(buf);
}

/*
 * By the copy way with t away by migration (TMM_ACT_MIGRATE: a prefetch
 * on the migrate stream) and u by copy: u's way back (fresh pages on the
 * H2D stream, then a copy) is not ordered after the migrate stream
 * (backend_cuda_managed.c), so it must touch nothing the migration does;
 * t's way back on the migrate stream follows its way out; and once t is
 * destroyed while away, the next tensor in its range is written after
 * the migration.  Both keep their bytes, with no race, whatever the
 * double's order.
 */
START_TEST(a_migration_beside_the_copy_way_races_nothing)
{
	enum way way = copy_way(_i);
	unsigned long launches = copier_launches();

	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= SEEDS; seed++) {
		tmm_tensor t, u, v;
		tmm_ctx *ctx = make_ctx_way(&t, way);
		struct tmm_tensor_rec *rt, *ru;

		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "u", &u), 0);
		cudafake_reset(seed);
		write_t(ctx, t, 0x21);
		write_t(ctx, u, 0x42);
		rt = tmm_tensor_find(ctx, t);
		ru = tmm_tensor_find(ctx, u);
		ck_assert_int_eq(tmm_mover_migrate_out(ctx, rt), 0);
		ck_assert(rt->uvm_migrated);
		ck_assert_ptr_null(rt->host);
		ck_assert_int_eq(tmm_mover_swap_out(ctx, ru, false), 0);
		ck_assert_ptr_nonnull(ru->host);
		ck_assert_int_eq(tmm_mover_settle(ctx, ru), 0);
		ck_assert_int_eq(tmm_mover_prefetch(ctx, ru), 0);
		ck_assert_int_eq(tmm_mover_prefetch(ctx, rt), 0);
		ck_assert(!rt->uvm_migrated);
		expect_bytes(ctx, u, 0x42);
		expect_bytes(ctx, t, 0x21);
		expect_no_race(seed);
		/* Away by migration again, and destroyed there: its range
		 * goes to v, which a kernel writes. */
		cudafake_reset(seed);
		ck_assert_int_eq(tmm_mover_make_resident(ctx, rt, true), 0);
		ck_assert_int_eq(tmm_mover_migrate_out(ctx, rt), 0);
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t), 0);
		ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_ACTIVATION,
						   "v", &v), 0);
		write_t(ctx, v, 0x63);
		expect_bytes(ctx, v, 0x63);
		expect_no_race(seed);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
	expect_copier(way, launches);
}
END_TEST

/*
 * An output of two slots fits only once a swap-in has landed and moved
 * (mover.c, tmm_compact_landing_in_the_way): the move, on the compute
 * stream, must read the tensor after its copy has written it, and the
 * output's kernel write the hole after the move; nothing is evicted.
 */
START_TEST(a_swap_in_moved_for_room_moves_after_it_lands)
{
	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= LANDING_SEEDS; seed++) {
		tmm_tensor t[SLOTS], big = { 0 };
		tmm_ctx *ctx = swap_ins_between_holes(seed, t);

		ck_assert_msg(make_big(ctx, &big) == 0, "%s",
			      tmm_last_error(ctx));
		all_kept(ctx, seed, t, big);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
}
END_TEST

/*
 * The same, the host's wait for the swap-in failing: the op fails and
 * names the call, nothing has moved or left, and the op runs when asked
 * again.
 */
START_TEST(a_failed_wait_for_a_landing_loses_nothing)
{
	setenv("CUDAFAKE_LAG", "20", 1);
	for (unsigned seed = 1; seed <= LANDING_SEEDS; seed++) {
		tmm_tensor t[SLOTS], big = { 0 };
		tmm_ctx *ctx = swap_ins_between_holes(seed, t);

		ck_assert_int_eq(tmm_fault_set("cudaEventSynchronize@1"), 0);
		ck_assert_int_lt(make_big(ctx, &big), 0);
		ck_assert_int_eq(tmm_fault_set(""), 0);
		ck_assert_msg(strstr(tmm_last_error(ctx),
				     "cudaEventSynchronize"),
			      "%s", tmm_last_error(ctx));
		ck_assert_msg(make_big(ctx, &big) == 0, "%s",
			      tmm_last_error(ctx));
		all_kept(ctx, seed, t, big);
		ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	}
	unsetenv("CUDAFAKE_LAG");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_order");

	/* Copies of managed memory queued like any, not holding the host as
	 * CUDA's do (tests/cudafake/README.md): the library's order must not
	 * rest on that, and the race detector then sees what it leaves out. */
	setenv("CUDAFAKE_MANAGED_COPY", "async", 1);
	TCase *tc = tcase_create("uvm");

	tcase_add_test(tc, a_swap_out_waits_for_the_writer);
	tcase_add_test(tc, a_prefetch_back_waits_for_the_swap_out);
	tcase_add_test(tc, a_swap_out_waits_for_a_discard);
	tcase_add_test(tc, a_block_freed_under_a_swap_out_waits_for_it);
	tcase_add_loop_test(tc, the_copy_way_back_is_read_after_its_discard, 0, 2);
	tcase_add_loop_test(tc, a_range_discarded_by_the_copy_way_is_written_after_it, 0, 2);
	tcase_add_loop_test(tc, a_migration_beside_the_copy_way_races_nothing, 0, 2);
	tcase_add_test(tc, a_swap_in_moved_for_room_moves_after_it_lands);
	tcase_add_test(tc, a_failed_wait_for_a_landing_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
