/* SPDX-License-Identifier: MIT */
/*
 * test_pool_chunks.c — swap mode over mapped chunks (pool=chunks) at the
 * level of a context: an op whose tensors fit the budget but whose inputs
 * lie scattered over the chunks the pool may map runs, by packing them,
 * with no byte lost and no eviction; a chunk the device refuses to map
 * fails the op with -ENOMEM and a message naming the knob, and the
 * context goes on once the device maps again.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "lib/base/fault.h"
#include "tensormm.h"

#define KIB 1024u
#define MIB (1024u * KIB)
#define CHUNK (2u * MIB)

/* What the op writes into its one output: `bytes` of `value`. */
struct fill_spec {
	size_t bytes;
	int value;
};

static int fill(void *const *in, void *const *out, void *user, void *stream)
{
	const struct fill_spec *f = user;

	(void)in;
	(void)stream;
	memset(out[0], f->value, f->bytes);
	return 0;
}

static void make(tmm_ctx *ctx, size_t bytes, int value, tmm_tensor *t)
{
	uint8_t *buf = malloc(bytes);

	ck_assert_ptr_nonnull(buf);
	memset(buf, value, bytes);
	ck_assert_int_eq(tmm_tensor_create(ctx, bytes, TMM_PERSISTENT, NULL, t),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, *t, 0, buf, bytes), 0);
	free(buf);
}

static void holds(tmm_ctx *ctx, tmm_tensor t, size_t bytes, int value)
{
	uint8_t *buf = malloc(bytes);

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(tmm_tensor_read(ctx, t, 0, buf, bytes) == 0, "%s",
		      tmm_last_error(ctx));
	for (size_t k = 0; k < bytes; k++)
		if (buf[k] != (uint8_t)value)
			ck_abort_msg("byte %zu is %u, not %d", k, buf[k],
				     value);
	free(buf);
}

static int run_fill(tmm_ctx *ctx, tmm_tensor *in, unsigned n_in,
		    struct fill_spec *f, tmm_tensor *out)
{
	tmm_op op = { .name = "fill", .kind = TMM_OP_OTHER, .run = fill,
		      .user = f, .inputs = in, .n_inputs = n_in,
		      .outputs = out, .n_outputs = 1 };

	return tmm_run(ctx, &op);
}

static struct tmm_stats stats(tmm_ctx *ctx)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };

	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	return st;
}

/*
 * An 8 MiB budget: the pool may map 5 chunks of a 20 MiB range.  Three
 * 1.1 MiB inputs are placed a filler apart (the fillers then go), so
 * that they hold 4 chunks, and the op's 4.6 MiB output needs 2 more:
 * 6 chunks, one too many, though the bytes fit.  Nothing can be evicted
 * (the inputs are the op's), so the last resort packs the inputs at the
 * bottom of the range, in 2 chunks, which leaves room for the output.
 */
START_TEST(packing_frees_the_chunks_an_op_that_fits_needs)
{
	struct fill_spec f = { 4700 * KIB, 0x7e };
	tmm_tensor in[3], filler[2], out;
	struct tmm_stats st;
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,pool=chunks,budget=8MiB,"
					"policy=none"), 0);
	for (int i = 0; i < 3; i++) {
		make(ctx, 1126 * KIB, i + 1, &in[i]);
		if (i < 2)
			make(ctx, 2 * MIB, 9, &filler[i]);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tmm_tensor_destroy(ctx, filler[i]), 0);
	st = stats(ctx);
	ck_assert_uint_eq(st.device_in_use, 3 * 1126 * KIB);
	ck_assert_uint_eq(st.device_mapped, 4 * CHUNK);

	ck_assert_int_eq(tmm_tensor_create(ctx, f.bytes, TMM_ACTIVATION, "out",
					   &out), 0);
	ck_assert_msg(run_fill(ctx, in, 3, &f, &out) == 0, "%s",
		      tmm_last_error(ctx));
	st = stats(ctx);
	ck_assert_uint_eq(st.passive_evictions, 0);
	ck_assert_uint_eq(st.compaction_moves, 3);
	ck_assert_uint_le(st.device_mapped, 5 * CHUNK);
	for (int i = 0; i < 3; i++)
		holds(ctx, in[i], 1126 * KIB, i + 1);
	holds(ctx, out, f.bytes, f.value);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * The device refuses every mapping from some point on: the op that needs
 * a new chunk fails with -ENOMEM, its message names pool=chunks and the
 * knob, and once the device maps again the same op runs and every byte
 * is where it was.
 */
START_TEST(a_refused_mapping_fails_the_op_clean)
{
	struct fill_spec f = { 3 * MIB, 0x3c };
	tmm_tensor a, b;
	tmm_ctx *ctx;
	int rc;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,sim_memory=backed,"
					"mode=swap,pool=chunks,budget=8MiB,"
					"policy=none,log=error"), 0);
	make(ctx, 3 * MIB, 5, &a);
	ck_assert_int_eq(tmm_tensor_create(ctx, f.bytes, TMM_ACTIVATION, "b",
					   &b), 0);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_DEVICE_ALLOC "@1+"), 0);
	rc = run_fill(ctx, &a, 1, &f, &b);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_msg(strstr(tmm_last_error(ctx), "pool=chunks") &&
			      strstr(tmm_last_error(ctx),
				     "TENSORMM_POOL=arena") &&
			      strstr(tmm_last_error(ctx), "injected fault"),
		      "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(run_fill(ctx, &a, 1, &f, &b) == 0, "%s",
		      tmm_last_error(ctx));
	holds(ctx, a, 3 * MIB, 5);
	holds(ctx, b, f.bytes, f.value);
	ck_assert_uint_le(stats(ctx).device_mapped_peak, 5 * CHUNK);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/* pool=chunks is for swap mode: uvm ignores it, and arena is the
 * default, with nothing mapped. */
START_TEST(chunks_only_in_swap_mode)
{
	tmm_ctx *ctx;
	tmm_tensor t;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=uvm,"
					"pool=chunks,budget=8MiB"), 0);
	make(ctx, 1 * MIB, 4, &t);
	ck_assert_uint_eq(stats(ctx).device_mapped_peak, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					"budget=8MiB"), 0);
	make(ctx, 1 * MIB, 4, &t);
	ck_assert_uint_eq(stats(ctx).device_mapped_peak, 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool_chunks");
	TCase *tc = tcase_create("pool_chunks");

	tcase_add_test(tc, packing_frees_the_chunks_an_op_that_fits_needs);
	tcase_add_test(tc, a_refused_mapping_fails_the_op_clean);
	tcase_add_test(tc, chunks_only_in_swap_mode);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
