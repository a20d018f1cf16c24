/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_way.c — hints/uvm_way.c: mode=uvm's way of moving tensors and
 * mode=auto's choice of mode, as pure functions of a device's rates.
 *
 * The rates are the two cards measured (docs/gpu-h100.md,
 * docs/gpu-h200-goals.md) and a device whose managed moves cost what its
 * pinned copies do; the expected figures are worked out by hand in the
 * comments, not by calling the code under test.
 */
#include <check.h>

#include "check_main.h"
#include "hints/uvm_way.h"

/* H200: pinned 55.3 each way; prefetch 31.6 in, 9.9 out; fresh 31.6. */
static const struct tmm_uvm_rates h200 = { 55.3, 55.3, 31.6, 9.9, 31.6,
					   0, 0 };
/* H100 SXM5: pinned 52.1 in, 54.9 out; prefetch 49.3, 8.7; fresh 90. */
static const struct tmm_uvm_rates h100 = { 52.1, 54.9, 49.3, 8.7, 90.0,
					   0, 0 };
/* No managed figures: prefetches at the pinned rates, fresh pages free. */
static const struct tmm_uvm_rates plain = { 11.69, 12.9, 0, 0, 0, 0, 0 };
/* The H200's, copied by a copy kernel (uvm_copier=kernel) at 20 GB/s in
 * and 10 out: a rate no card has measured, slow enough to change the
 * choice. */
static const struct tmm_uvm_rates h200_kernel = { 55.3, 55.3, 31.6, 9.9,
						  31.6, 20.0, 10.0 };

#define NEAR(a, b) ((a) > (b) - 0.005 && (a) < (b) + 0.005)

START_TEST(the_copy_way_costs_its_copies_and_fresh_pages)
{
	/* 2 / 55.3 + 1 / 31.6 = 0.036166 + 0.031646 */
	ck_assert(NEAR(tmm_uvm_copy_way_ns_per_byte(&h200), 0.0678));
	/* 1 / 54.9 + 1 / 52.1 + 1 / 90 = 0.018215 + 0.019194 + 0.011111 */
	ck_assert(NEAR(tmm_uvm_copy_way_ns_per_byte(&h100), 0.0485));
	/* fresh pages free: the pinned round trip */
	ck_assert(NEAR(tmm_uvm_copy_way_ns_per_byte(&plain),
		       1 / 11.69 + 1 / 12.9));
	/* by the copy kernel, its rates, not the pinned ones:
	 * 1 / 10 + 1 / 20 + 1 / 31.6 = 0.1 + 0.05 + 0.031646 */
	ck_assert(NEAR(tmm_uvm_copy_way_ns_per_byte(&h200_kernel), 0.1816));
}
END_TEST

START_TEST(a_slow_copy_kernel_makes_the_copy_way_dear)
{
	/* 0.1816 against the prefetch's 0.1327: prefetch */
	ck_assert(!tmm_uvm_way_copy(&h200_kernel, TMM_UVM_PATH_AUTO));
	/* by copy, over swap mode's pinned round trip 0.036166: 5.02 */
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(&h200_kernel, true), 5.022));
}
END_TEST

START_TEST(the_rates_choose_the_way)
{
	/* 0.0678 against 1 / 9.9 + 1 / 31.6 = 0.1327: copy */
	ck_assert(tmm_uvm_way_copy(&h200, TMM_UVM_PATH_AUTO));
	/* 0.0485 against 1 / 8.7 + 1 / 49.3 = 0.1352: copy */
	ck_assert(tmm_uvm_way_copy(&h100, TMM_UVM_PATH_AUTO));
	/* the same cost both ways: not cheaper by a twentieth, prefetch */
	ck_assert(!tmm_uvm_way_copy(&plain, TMM_UVM_PATH_AUTO));
	/* asked for, a way is kept whatever the rates */
	ck_assert(tmm_uvm_way_copy(&plain, TMM_UVM_PATH_COPY));
	ck_assert(!tmm_uvm_way_copy(&h200, TMM_UVM_PATH_PREFETCH));
}
END_TEST

START_TEST(the_cost_ratio_is_over_swap_modes_copies)
{
	/* by copy 0.0678 / 0.0362; by prefetch 0.1327 / 0.0362 */
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(&h200, true), 1.875));
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(&h200, false), 3.669));
	/* 0.1352 / (0.018215 + 0.019194) */
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(&h100, false), 3.615));
	/* unknown prefetch rates, or no rates at all: 1 */
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(&plain, false), 1));
	ck_assert(NEAR(tmm_uvm_move_cost_ratio(
			       &(struct tmm_uvm_rates){ 0 }, true), 1));
}
END_TEST

/* Each of mode=auto's reasons, from the facts that lead to it. */
START_TEST(auto_takes_each_mode_for_its_reason)
{
	static const struct {
		struct tmm_auto_mode_facts f;
		enum tmm_mode_choice mode;
		enum tmm_auto_mode_why why;
		bool copy;
	} cases[] = {
		/* no managed access beside kernels: swap, whatever else */
		{ { h200, TMM_UVM_PATH_AUTO, false, false, false },
		  TMM_MODE_SWAP, TMM_AUTO_WHY_NO_CONCURRENT, false },
		/* no pressure: uvm, whatever the rates */
		{ { h100, TMM_UVM_PATH_PREFETCH, true, false, true },
		  TMM_MODE_UVM, TMM_AUTO_WHY_NO_PRESSURE, false },
		/* by copy where copies hold the host (CUDA's): swap */
		{ { h200, TMM_UVM_PATH_AUTO, true, true, true },
		  TMM_MODE_SWAP, TMM_AUTO_WHY_HELD_COPIES, true },
		/* by copy, queued: 1.875 > 1.5, swap for the fresh pages */
		{ { h200, TMM_UVM_PATH_AUTO, true, true, false },
		  TMM_MODE_SWAP, TMM_AUTO_WHY_SLOW_MOVES, true },
		/* by prefetch at 8.7 out: 3.6, swap */
		{ { h100, TMM_UVM_PATH_PREFETCH, true, true, true },
		  TMM_MODE_SWAP, TMM_AUTO_WHY_SLOW_MOVES, false },
		/* moves at the pinned rates: 1, uvm */
		{ { plain, TMM_UVM_PATH_AUTO, true, true, true },
		  TMM_MODE_UVM, TMM_AUTO_WHY_CHEAP_MOVES, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tmm_auto_mode_choice c =
			tmm_auto_mode_choose(&cases[i].f);

		ck_assert_msg(c.mode == cases[i].mode && c.why == cases[i].why &&
				      c.copy == cases[i].copy,
			      "case %zu: mode %d why %d copy %d", i, c.mode,
			      c.why, c.copy);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("uvm_way");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, the_copy_way_costs_its_copies_and_fresh_pages);
	tcase_add_test(tc, a_slow_copy_kernel_makes_the_copy_way_dear);
	tcase_add_test(tc, the_rates_choose_the_way);
	tcase_add_test(tc, the_cost_ratio_is_over_swap_modes_copies);
	tcase_add_test(tc, auto_takes_each_mode_for_its_reason);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
