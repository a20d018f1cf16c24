/* SPDX-License-Identifier: MIT */
/*
 * test_tensor_state.c — the tensor life cycle.
 *
 * The table of legal transitions is checked against the diagram of
 * DESIGN.md, written out here independently; then a tensor is driven
 * through every transition the swap engine takes, with its bytes checked
 * after each, and every refused request is checked to leave it unchanged.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/core/context.h"
#include "lib/move/mover.h"

#define N 4096

START_TEST(transition_table_matches_design)
{
	static const struct {
		enum tmm_tstate from, to;
	} expected[] = {
		{ TMM_TS_EMPTY, TMM_TS_RESIDENT },
		{ TMM_TS_EMPTY, TMM_TS_HOST },
		{ TMM_TS_RESIDENT, TMM_TS_SWAPPING_OUT },
		{ TMM_TS_RESIDENT, TMM_TS_DROPPED },
		{ TMM_TS_SWAPPING_OUT, TMM_TS_HOST },
		{ TMM_TS_SWAPPING_OUT, TMM_TS_RESIDENT },
		{ TMM_TS_HOST, TMM_TS_SWAPPING_IN },
		{ TMM_TS_SWAPPING_IN, TMM_TS_RESIDENT },
		{ TMM_TS_DROPPED, TMM_TS_RESIDENT },
	};
	unsigned legal = 0;

	for (int f = 0; f < TMM_TS_COUNT; f++) {
		for (int t = 0; t < TMM_TS_COUNT; t++) {
			bool want = false;

			for (size_t k = 0; k < sizeof(expected) /
						       sizeof(expected[0]);
			     k++)
				if (expected[k].from == (enum tmm_tstate)f &&
				    expected[k].to == (enum tmm_tstate)t)
					want = true;
			ck_assert_msg(tmm_tstate_legal(f, t) == want,
				      "%s -> %s", tmm_tstate_name(f),
				      tmm_tstate_name(t));
			legal += want;
		}
	}
	ck_assert_uint_eq(legal, 9);
	ck_assert(!tmm_tstate_legal(TMM_TS_COUNT, TMM_TS_EMPTY));
	ck_assert(!tmm_tstate_legal(TMM_TS_EMPTY, (enum tmm_tstate)-1));
	ck_assert_str_eq(tmm_tstate_name(TMM_TS_SWAPPING_IN), "SWAPPING_IN");
	ck_assert_str_eq(tmm_tstate_name(TMM_TS_COUNT), "INVALID");
}
END_TEST

static tmm_ctx *ctx;
static uint8_t data[N], back[N];

static void setup(void)
{
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "sim_memory=backed,"
					      "budget=8KiB"), 0);
	for (unsigned k = 0; k < N; k++)
		data[k] = (uint8_t)(k * 7 + 3);
}

static void teardown(void)
{
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static struct tmm_tensor_rec *make(tmm_tensor *h, bool write)
{
	ck_assert_int_eq(tmm_tensor_create(ctx, N, TMM_ACTIVATION, "t", h),
			 0);
	if (write)
		ck_assert_int_eq(tmm_tensor_write(ctx, *h, 0, data, N), 0);
	return tmm_tensor_lookup(ctx, *h, "test");
}

static void bytes_intact(tmm_tensor h)
{
	memset(back, 0, N);
	ck_assert_int_eq(tmm_tensor_read(ctx, h, 0, back, N), 0);
	ck_assert_mem_eq(back, data, N);
}

START_TEST(full_cycle_keeps_bytes)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, false);

	ck_assert_int_eq(t->state, TMM_TS_EMPTY);
	ck_assert_int_eq(tmm_tensor_write(ctx, h, 0, data, N), 0);
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT); /* EMPTY -> RESIDENT */
	ck_assert_ptr_nonnull(t->dev);

	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, false), 0);
	ck_assert_int_eq(t->state, TMM_TS_SWAPPING_OUT);
	/* Both copies exist while the copy runs. */
	ck_assert_ptr_nonnull(t->dev);
	ck_assert_ptr_nonnull(t->host);

	ck_assert_int_eq(tmm_mover_settle(ctx, t), 0);
	ck_assert_int_eq(t->state, TMM_TS_HOST); /* SWAPPING_OUT -> HOST */
	ck_assert_ptr_null(t->dev);
	bytes_intact(h);

	ck_assert_int_eq(tmm_mover_swap_in(ctx, t), 0);
	ck_assert_int_eq(t->state, TMM_TS_SWAPPING_IN);
	ck_assert_ptr_nonnull(t->dev);
	ck_assert_ptr_nonnull(t->host);
	ck_assert_int_eq(tmm_mover_settle(ctx, t), 0);
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT); /* SWAPPING_IN -> RES. */
	ck_assert_ptr_null(t->host);
	bytes_intact(h);
}
END_TEST

START_TEST(back_access_cancels_swap_out)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, true);
	void *dev = t->dev;

	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, false), 0);
	t->pins++;
	ck_assert_int_eq(tmm_mover_make_resident(ctx, t, true), 0);
	t->pins--;
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT);
	ck_assert_ptr_eq(t->dev, dev); /* the same device bytes */
	ck_assert_ptr_null(t->host);
	ck_assert_uint_eq(ctx->c.host_in_use, 0);
	bytes_intact(h);
}
END_TEST

START_TEST(write_without_room_lands_on_host)
{
	tmm_tensor a, b, c;

	make(&a, true);
	make(&b, true); /* the 8 KiB budget is now full */
	struct tmm_tensor_rec *t = make(&c, false);

	ck_assert_int_eq(tmm_tensor_write(ctx, c, 0, data, N), 0);
	ck_assert_int_eq(t->state, TMM_TS_HOST); /* EMPTY -> HOST */
	ck_assert_uint_eq(ctx->c.passive_evictions, 0);
	bytes_intact(c);
	bytes_intact(a);
}
END_TEST

START_TEST(illegal_requests_are_refused)
{
	tmm_tensor h, e;
	struct tmm_tensor_rec *t = make(&h, true);
	struct tmm_tensor_rec *empty = make(&e, false);

	/* swap in a RESIDENT tensor */
	ck_assert_int_eq(tmm_mover_swap_in(ctx, t), -EINVAL);
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT);
	/* evict a pinned tensor */
	t->pins++;
	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, false), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "pinned"));
	t->pins--;
	ck_assert_int_eq(t->state, TMM_TS_RESIDENT);
	/* evict an EMPTY tensor */
	ck_assert_int_eq(tmm_mover_swap_out(ctx, empty, false), -EINVAL);
	ck_assert_int_eq(empty->state, TMM_TS_EMPTY);
	/* evict a tensor already on the host */
	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, true), 0);
	ck_assert_int_eq(t->state, TMM_TS_HOST);
	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, false), -EINVAL);
	ck_assert_int_eq(t->state, TMM_TS_HOST);
	/* read an EMPTY tensor */
	ck_assert_int_eq(tmm_tensor_read(ctx, e, 0, back, N), -ENODATA);
	/* an EMPTY input of an op */
	empty->pins++;
	ck_assert_int_eq(tmm_mover_make_resident(ctx, empty, true), -ENODATA);
	empty->pins--;
	ck_assert_int_eq(empty->state, TMM_TS_EMPTY);
	bytes_intact(h);
}
END_TEST

START_TEST(destroy_in_flight_frees_everything)
{
	tmm_tensor h;
	struct tmm_tensor_rec *t = make(&h, true);

	ck_assert_int_eq(tmm_mover_swap_out(ctx, t, false), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, h), 0);
	ck_assert_uint_eq(ctx->c.host_in_use, 0);
	{
		struct tmm_stats st = { .version = TMM_STATS_VERSION };

		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.device_in_use, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor_state");
	TCase *table = tcase_create("table"), *cycle = tcase_create("cycle");

	tcase_add_test(table, transition_table_matches_design);
	tcase_add_checked_fixture(cycle, setup, teardown);
	tcase_add_test(cycle, full_cycle_keeps_bytes);
	tcase_add_test(cycle, back_access_cancels_swap_out);
	tcase_add_test(cycle, write_without_room_lands_on_host);
	tcase_add_test(cycle, illegal_requests_are_refused);
	tcase_add_test(cycle, destroy_in_flight_frees_everything);
	suite_add_tcase(s, table);
	suite_add_tcase(s, cycle);
	return check_run_all(srunner_create(s));
}
