/* SPDX-License-Identifier: MIT */
/*
 * test_api_stats.c — the public API's statistics: tmm_stats_print as text
 * and as JSON (every field of the current version, balanced), the peak
 * reset, and cached pinned buffers and arena segments given back.
 * The rest of the API's contract is test_api.c's.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"

static tmm_ctx *ctx;

static void setup(void)
{
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "budget=1MiB"), 0);
}

static void teardown(void)
{
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

#define contains(hay, needle) ck_assert_ptr_nonnull(strstr((hay), (needle)))

struct sink {
	char buf[4096];
	size_t len;
};

static void to_sink(void *arg, const char *text, size_t len)
{
	struct sink *s = arg;

	if (s->len + len < sizeof(s->buf)) {
		memcpy(s->buf + s->len, text, len);
		s->len += len;
		s->buf[s->len] = '\0';
	}
}

START_TEST(stats_print_text_and_json)
{
	struct sink text = { .len = 0 }, json = { .len = 0 };
	int depth = 0;

	ck_assert_int_eq(tmm_stats_print(ctx, to_sink, &text, 0), 0);
	contains(text.buf, "SIMULATED");
	contains(text.buf, "p100-pcie3-16g device 0");
	contains(text.buf, "swap out");
	contains(text.buf, "recompute");
	contains(text.buf, "iterations guided");
	contains(text.buf, "micro-ops");
	contains(text.buf, "  link      copies 11.7 GB/s in, 12.9 out; "
			   "prefetches 11.7 in, 12.9 out (the profile's)\n");
	ck_assert_int_eq(tmm_stats_print(ctx, to_sink, &json, TMM_STATS_JSON),
			 0);
	ck_assert_int_eq(json.buf[0], '{');
	ck_assert_str_eq(json.buf + json.len - 2, "}\n");
	contains(json.buf, "\"simulated\":true");
	contains(json.buf, "\"budget\":1048576");
	contains(json.buf, "\"plan_divergences\":0");
	contains(json.buf, "\"version\":15");
	contains(json.buf, "\"link_h2d_mbps\":11690,\"link_d2h_mbps\":12900,");
	contains(json.buf, "\"uvm_prefetch_out_bytes\":0,");
	contains(json.buf, "\"uvm_migrate_out_bytes\":0,"
			   "\"uvm_migrate_in_bytes\":0,"
			   "\"uvm_kernel_copy_bytes\":0,"
			   "\"uvm_kernel_copy_h2d_mbps\":0,"
			   "\"uvm_kernel_copy_d2h_mbps\":0,"
			   "\"uvm_kernel_copy_blocks\":0");
	/* Nothing migrated, no copy kernel: no migrate or copier line. */
	ck_assert_ptr_null(strstr(text.buf, "  migrate "));
	ck_assert_ptr_null(strstr(text.buf, "  copier "));
	contains(json.buf, "\"uvm_fault_ns\":0");
	contains(json.buf, "\"uvm_driver_counted\":false}");
	contains(json.buf, "\"uvm_kept\":0");
	contains(json.buf, "\"uvm_kept_hits\":0");
	contains(json.buf, "\"prefetch_wait_ns\":0");
	contains(json.buf, "\"device_index\":0,");
	contains(json.buf, "\"share_reservation\":0");
	contains(json.buf, "\"split_ops\":0");
	contains(json.buf, "\"micro_ops\":0");
	contains(json.buf, "\"split_fallbacks\":0");
	contains(json.buf, "\"device_mapped\":0");
	contains(json.buf, "\"device_mapped_peak\":0");
	contains(json.buf, "\"uvm_held\":0");
	contains(json.buf, "\"uvm_held_peak\":0");
	contains(json.buf, "\"plan_state\":\"measuring\"");
	/* Balanced, and no key twice in a row without a comma. */
	for (size_t k = 0; k < json.len; k++) {
		depth += json.buf[k] == '{';
		depth -= json.buf[k] == '}';
		ck_assert(!(json.buf[k] == '"' && k + 1 < json.len &&
			    json.buf[k + 1] == '"'));
	}
	ck_assert_int_eq(depth, 0);
	ck_assert_int_eq(tmm_stats_print(NULL, to_sink, &json, 0), -EBADF);
}
END_TEST

/* The pinned buffers a swap-in let go of are cached, and handed back. */
START_TEST(release_cached_gives_back_pinned_buffers)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_tensor a, b;
	uint64_t freed = 0;
	tmm_ctx *c;
	void *p;

	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim,sim_memory=backed,"
					"mode=swap,budget=4MiB,log=error"),
			 0);
	ck_assert_int_eq(tmm_tensor_create(c, 3 << 20, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_tensor_create(c, 3 << 20, TMM_ACTIVATION, "b",
					   &b), 0);
	/* a on the device, then b takes its place, then a comes back. */
	ck_assert_int_eq(tmm_acquire(c, a, TMM_WRITE, &p), 0);
	ck_assert_int_eq(tmm_release(c, a), 0);
	ck_assert_int_eq(tmm_acquire(c, b, TMM_WRITE, &p), 0);
	ck_assert_int_eq(tmm_release(c, b), 0);
	ck_assert_int_eq(tmm_acquire(c, a, TMM_READ, &p), 0);
	ck_assert_int_eq(tmm_release(c, a), 0);
	/* b is on the host now; destroyed, its buffer is cached. */
	ck_assert_int_eq(tmm_tensor_destroy(c, b), 0);
	ck_assert_int_eq(tmm_stats_get(c, &st), 0);
	ck_assert_uint_gt(st.host_pinned, st.host_in_use);
	ck_assert_int_eq(tmm_release_cached(c, &freed), 0);
	ck_assert_uint_gt(freed, 0);
	ck_assert_int_eq(tmm_stats_get(c, &st), 0);
	ck_assert_uint_le(st.host_pinned, st.host_in_use + (1u << 20));
	/* Nothing cached now: nothing more to give. */
	ck_assert_int_eq(tmm_release_cached(c, &freed), 0);
	ck_assert_uint_eq(freed, 0);
	ck_assert_int_eq(tmm_ctx_destroy(c), 0);
	ck_assert_int_eq(tmm_release_cached(NULL, NULL), -EBADF);

	/* mode=uvm: a segment of the managed arena with no tensor left. */
	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim,sim_memory=backed,"
					"mode=uvm,budget=4MiB,log=error"),
			 0);
	ck_assert_int_eq(tmm_tensor_create(c, 3 << 20, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_acquire(c, a, TMM_WRITE, &p), 0);
	ck_assert_int_eq(tmm_release(c, a), 0);
	ck_assert_int_eq(tmm_tensor_destroy(c, a), 0);
	ck_assert_int_eq(tmm_release_cached(c, &freed), 0);
	ck_assert_uint_ge(freed, 8u << 20); /* twice the budget, at least */
	/* The arena makes a segment again when it needs one. */
	ck_assert_int_eq(tmm_tensor_create(c, 3 << 20, TMM_ACTIVATION, "a",
					   &a), 0);
	ck_assert_int_eq(tmm_acquire(c, a, TMM_WRITE, &p), 0);
	ck_assert_int_eq(tmm_release(c, a), 0);
	ck_assert_int_eq(tmm_ctx_destroy(c), 0);
}
END_TEST

/* Brings t to the device, as an op would. */
static void on_device(tmm_ctx *c, tmm_tensor t)
{
	void *p;

	ck_assert_int_eq(tmm_acquire(c, t, TMM_READ, &p), 0);
	ck_assert_int_eq(tmm_release(c, t), 0);
}

/* The peak starts again from what is in use, in both modes; a new high
 * after the reset is seen. */
START_TEST(stats_reset_peak)
{
	static const char *const modes[] = { "swap", "uvm" };
	static uint8_t bytes[8 << 20];

	for (int m = 0; m < 2; m++) {
		struct tmm_stats st = { .version = TMM_STATS_VERSION };
		tmm_tensor big, small;
		char config[128];
		tmm_ctx *c;

		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=backed,mode=%s,log=error",
			 modes[m]);
		ck_assert_int_eq(tmm_ctx_create(&c, config), 0);
		ck_assert_int_eq(tmm_tensor_create(c, 8 << 20, TMM_ACTIVATION,
						   "big", &big), 0);
		ck_assert_int_eq(tmm_tensor_write(c, big, 0, bytes, 8 << 20),
				 0);
		on_device(c, big);
		ck_assert_int_eq(tmm_tensor_create(c, 1 << 20, TMM_ACTIVATION,
						   "small", &small), 0);
		ck_assert_int_eq(tmm_tensor_write(c, small, 0, bytes, 1 << 20),
				 0);
		on_device(c, small);
		ck_assert_int_eq(tmm_tensor_destroy(c, big), 0);
		ck_assert_int_eq(tmm_stats_get(c, &st), 0);
		ck_assert_uint_ge(st.device_peak, 9 << 20);
		ck_assert_int_eq(tmm_stats_reset_peak(c), 0);
		ck_assert_int_eq(tmm_stats_get(c, &st), 0);
		ck_assert_uint_lt(st.device_peak, 9 << 20);
		ck_assert_uint_eq(st.device_peak, st.device_in_use);
		/* A new high after the reset counts. */
		ck_assert_int_eq(tmm_tensor_create(c, 4 << 20, TMM_ACTIVATION,
						   "more", &big), 0);
		ck_assert_int_eq(tmm_tensor_write(c, big, 0, bytes, 4 << 20),
				 0);
		on_device(c, big);
		ck_assert_int_eq(tmm_stats_get(c, &st), 0);
		ck_assert_uint_ge(st.device_peak, 5 << 20);
		ck_assert_uint_lt(st.device_peak, 9 << 20);
		ck_assert_int_eq(tmm_ctx_destroy(c), 0);
	}
	ck_assert_int_eq(tmm_stats_reset_peak(NULL), -EBADF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api_stats");
	TCase *tc = tcase_create("stats");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, stats_print_text_and_json);
	tcase_add_test(tc, stats_reset_peak);
	tcase_add_test(tc, release_cached_gives_back_pinned_buffers);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
