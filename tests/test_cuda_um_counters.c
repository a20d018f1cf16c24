/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_um_counters.c — on CUDA, mode=uvm reports the driver's own
 * migrations and faults from CUPTI's unified-memory counters
 * (lib/backend/cuda_um.h; issue #19, "uvm mode reports the truth").
 *
 * On the CUDA test double in its records mode (tests/cudafake/cupti.c):
 * each prefetch the library makes gives a record of cause USER, and the
 * driver's own work, which the double has no pages to do, is stood in
 * for by the test from inside an op (cudafake_cupti_um_fault, _evict).
 *  - Counted: tmm_stats says so, and its fault, prefetch and eviction
 *    fields are the records' sums, faults on another device left out;
 *    the fault path's time is the fault groups' own; the report prints
 *    it.
 *  - A driver that cannot count (CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED)
 *    trains the same, and tmm_stats says the figures are not known, the
 *    context's info naming CUPTI's refusal.
 *  - mode=swap and cupti=off do not count, nor does mode=uvm by
 *    default (uvm_counters=off: on an H200 the counters made a step
 *    with nothing migrating 1.35x as long, docs/gpu-h200-goals.md), and its
 *    info names the knob.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/core/context.h"
#include "tensormm.h"

#define BYTES (1u << 20)
#define FAULT_BYTES (192u << 10)
#define FAULT_NS 5000u
#define EVICT_BYTES (64u << 10)

/* What the op's callback stands in for the driver: two groups of three
 * faults on device 0, one on device 1 (not this context's), and one
 * eviction from device 0. */
static int drivers_work(void *const *in, void *const *out, void *user,
			void *stream)
{
	(void)out;
	(void)user;
	(void)stream;
	cudafake_cupti_um_fault(0, in[0], 3, FAULT_BYTES, FAULT_NS);
	cudafake_cupti_um_fault(0, in[0], 3, FAULT_BYTES, FAULT_NS);
	cudafake_cupti_um_fault(1, in[0], 7, 4 * FAULT_BYTES, 9 * FAULT_NS);
	cudafake_cupti_um_evict(0, in[0], EVICT_BYTES);
	return 0;
}

/* The report of tmm_stats_print, gathered. */
static char report[8192];
static size_t report_len;

static void gather(void *arg, const char *text, size_t len)
{
	(void)arg;
	if (report_len + len < sizeof(report)) {
		memcpy(report + report_len, text, len);
		report_len += len;
		report[report_len] = '\0';
	}
}

/* One iteration of one op reading a tensor the host wrote, under
 * `config`; *st receives the statistics after it, `report` their text,
 * and info (when not NULL) the context's managed_counts.  The op's
 * output is left unwritten: its bytes are not this test's. */
static void one_step(const char *config, struct tmm_stats *st,
		     char *info, size_t infolen)
{
	tmm_ctx *ctx;
	tmm_tensor x, y;
	static uint8_t bytes[BYTES];
	tmm_op op = { .name = "stand_in", .inputs = &x, .n_inputs = 1,
		      .outputs = &y, .n_outputs = 1, .run = drivers_work };

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s",
		      tmm_last_error(NULL));
	if (info)
		snprintf(info, infolen, "%s", ctx->be.info.managed_counts);
	memset(bytes, 7, sizeof(bytes));
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "x",
					   &x), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, BYTES, TMM_PERSISTENT, "y",
					   &y), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, x, 0, bytes, BYTES), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_msg(tmm_run(ctx, &op) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	report_len = 0;
	report[0] = '\0';
	ck_assert_int_eq(tmm_stats_print(ctx, gather, NULL, 0), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

#define PLAIN_UVM "backend=cuda,mode=uvm,policy=none,stats_shm=off,log=error"
#define UVM PLAIN_UVM ",uvm_counters=on"

static void setup(void)
{
	cudafake_cupti_mode(CUDAFAKE_CUPTI_RECORDS);
	cudafake_cupti_um_refuse(false);
}

static void teardown(void)
{
	cudafake_cupti_um_refuse(false);
	cudafake_cupti_mode(CUDAFAKE_CUPTI_REFUSE);
}

START_TEST(the_drivers_work_is_counted)
{
	struct tmm_stats st;

	one_step(UVM, &st, NULL, 0);
	ck_assert_uint_eq(st.uvm_driver_counted, 1);
	ck_assert_uint_eq(st.uvm_fault_batches, 2);
	ck_assert_uint_eq(st.uvm_faults, 6);
	ck_assert_uint_eq(st.uvm_fault_bytes, 2 * FAULT_BYTES);
	ck_assert_uint_eq(st.uvm_fault_ns, 2 * FAULT_NS);
	ck_assert_uint_eq(st.uvm_evictions, 1);
	ck_assert_uint_eq(st.uvm_eviction_bytes, EVICT_BYTES);
	/* The host wrote x, so its pages came to the device by the
	 * library's prefetch, and y's were made by one: both whole. */
	ck_assert_uint_eq(st.uvm_prefetch_bytes % (64u << 10), 0);
	ck_assert_uint_ge(st.uvm_prefetch_bytes, BYTES);
	ck_assert_msg(strstr(report, "spent 0.010 ms servicing device page "
				     "faults (CUPTI"),
		      "%s", report);
}
END_TEST

START_TEST(a_driver_that_cannot_count_trains_and_says_so)
{
	struct tmm_stats st;
	char info[200];

	cudafake_cupti_um_refuse(true);
	one_step(UVM, &st, info, sizeof(info));
	ck_assert_uint_eq(st.uvm_driver_counted, 0);
	ck_assert_uint_eq(st.uvm_fault_bytes, 0);
	ck_assert_uint_eq(st.uvm_evictions, 0);
	ck_assert_uint_eq(st.uvm_fault_ns, 0);
	ck_assert_msg(strstr(info, "cuptiActivityConfigureUnifiedMemoryCounter"
				   ": CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED"),
		      "%s", info);
	ck_assert_msg(strstr(report, "are not known here"), "%s", report);
}
END_TEST

START_TEST(swap_mode_and_cupti_off_do_not_count)
{
	struct tmm_stats st;
	char info[200];

	one_step("backend=cuda,mode=swap,policy=none,stats_shm=off,"
		 "log=error", &st, NULL, 0);
	ck_assert_uint_eq(st.uvm_driver_counted, 0);
	ck_assert_uint_eq(st.uvm_fault_bytes, 0);
	one_step(UVM ",cupti=off", &st, info, sizeof(info));
	ck_assert_uint_eq(st.uvm_driver_counted, 0);
	ck_assert_uint_eq(st.uvm_fault_batches, 0);
	ck_assert_msg(strstr(info, "CUPTI is not in use"), "%s", info);
}
END_TEST

START_TEST(uvm_mode_counts_only_when_asked)
{
	struct tmm_stats st;
	char info[200];

	one_step(PLAIN_UVM, &st, info, sizeof(info));
	ck_assert_uint_eq(st.uvm_driver_counted, 0);
	ck_assert_uint_eq(st.uvm_fault_batches, 0);
	ck_assert_uint_eq(st.uvm_evictions, 0);
	ck_assert_msg(strstr(info, "uvm_counters=off"), "%s", info);
	ck_assert_msg(strstr(report, "are not known here"), "%s", report);
}
END_TEST

static Suite *um_suite(void)
{
	Suite *s = suite_create("cuda_um_counters");
	TCase *tc = tcase_create("counters");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_drivers_work_is_counted);
	tcase_add_test(tc, a_driver_that_cannot_count_trains_and_says_so);
	tcase_add_test(tc, swap_mode_and_cupti_off_do_not_count);
	tcase_add_test(tc, uvm_mode_counts_only_when_asked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(um_suite);
}
