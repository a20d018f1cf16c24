/* SPDX-License-Identifier: MIT */
/*
 * test_tensor_table.c — the table of tensor records and their handles
 * (lib/core/tensor_table.c): a stale handle stays stale however often its
 * slot is reused.
 *
 * A handle holds 24 bits of its slot's generation.  A tensor is made and
 * destroyed in the same slot more than 2^24 times (through the table
 * itself: the public calls would take minutes), and at every step the
 * first tensor's handle must name nothing; it used to name the tensor of
 * the 2^24-th reuse, whose generation had wrapped to the first one's.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "lib/core/context.h"
#include "tensormm.h"

#define GENERATIONS (1u << 24)

START_TEST(test_stale_handle_outlives_the_generations)
{
	struct tmm_tensor_rec *t;
	tmm_tensor first, last;
	uint32_t named = 0, failed = 0, first_slot;
	uint64_t i;
	tmm_ctx *ctx;

	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					"budget=1MiB,log=error"), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "first",
					   &first), 0);
	first_slot = tmm_tensor_find(ctx, first)->index;
	ck_assert_int_eq(tmm_tensor_destroy(ctx, first), 0);

	/* Each new record takes the slot just freed: the first one's, for
	 * as long as it is given out. */
	for (i = 0; i < GENERATIONS + 16ull; i++) {
		if (tmm_tensor_new(ctx, 64, TMM_ACTIVATION, NULL, &t) < 0) {
			failed++;
			break;
		}
		if (tmm_tensor_find(ctx, first))
			named++;
		tmm_tensor_free(ctx, t);
	}
	ck_assert_msg(!failed, "tmm_tensor_new failed at %llu: %s",
		      (unsigned long long)i, tmm_last_error(ctx));
	ck_assert_msg(named == 0, "the destroyed tensor's handle named %u "
		      "later tensors", named);

	/* The slot used every generation and is out of use for good;
	 * tensors go on in another. */
	ck_assert(!tmm_tensor_at(ctx, first_slot)->live);
	ck_assert_uint_eq(ctx->retired_slots, 1);
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "last",
					   &last), 0);
	ck_assert_uint_ne(tmm_tensor_find(ctx, last)->index, first_slot);
	ck_assert(last.id != first.id);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, first), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, first), -EBADF);
	ck_assert_ptr_nonnull(strstr(tmm_last_error(ctx), "destroyed"));
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, last), 64);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, last), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor_table");
	TCase *tc = tcase_create("handles");

	/* 2^24 records made and ended: about a second, more under the
	 * sanitizers or valgrind. */
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_stale_handle_outlives_the_generations);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
