/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_dlopen.c — CUPTI and cuDNN, which libtensormm loads where
 * first used rather than links (lib/base/dynlib.h, the dl_path tunable),
 * on the CUDA test double and its stand-in libraries
 * (tests/cudafake/stand_in.h):
 *  - loaded from dl_path's directory, each works;
 *  - CUPTI missing (dl_path names an empty directory), or failed at its
 *    dlopen or a dlsym by the fault tunable: op times fall back to
 *    cudaEvents, and the context says why at log=info: the library's
 *    file name, the dynamic linker's reason and what to do;
 *  - cuDNN missing, failed, or of another major version: each picker
 *    fails with -ENOSYS and that message, and the context goes on;
 *  - the outcome is the process's: a later call that could find it gets
 *    the same answer;
 *  - a program that asks for neither loads neither.
 * Each test runs in a process of its own (Check's fork), so that each
 * is the process's first load.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "lib/core/context.h"
#include "scratch_dir.h"
#include "tensormm.h"
#ifdef TMM_HAVE_CUDNN
#include "conv_3x3.h"
#include "tensormm_cudnn.h"
#endif

/* A context on the double, with `extra` keys; asserts it is made. */
static tmm_ctx *make_ctx(const char *extra)
{
	char cfg[1024];
	tmm_ctx *ctx;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=64MiB,"
		 "stats_shm=off,%s", extra);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s: %s", cfg,
		      tmm_last_error(NULL));
	return ctx;
}

#define expect_in(text, part)                                              \
	ck_assert_msg(strstr(text, part), "\"%s\" is not in: %s", part, text)

#ifdef TMM_HAVE_CUPTI

static void records(void)
{
	cudafake_cupti_mode(CUDAFAKE_CUPTI_RECORDS);
}

START_TEST(cupti_is_loaded_from_dl_path)
{
	tmm_ctx *ctx = make_ctx("cupti=on,dl_path=" STAND_IN_DIR);

	ck_assert_msg(strcmp(ctx->be.info.timing, "cupti") == 0, "%s",
		      ctx->be.info.timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * Creates a context with `extra` keys and log=info, its stderr in a
 * file; returns that file's text (static), and the timing in timing.
 */
static const char *create_and_log(const char *extra, char *timing,
				  size_t len)
{
	static char text[4096];
	char dir[256], path[300], cfg[600];
	tmm_ctx *ctx;
	FILE *f;
	size_t n;
	int saved;

	scratch_dir_make(dir, sizeof(dir), "dlopen-log");
	snprintf(path, sizeof(path), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert_ptr_nonnull(freopen(path, "w", stderr));
	snprintf(cfg, sizeof(cfg), "log=info,%s", extra);
	ctx = make_ctx(cfg);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	snprintf(timing, len, "%s", ctx->be.info.timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	scratch_dir_remove(dir);
	return text;
}

START_TEST(missing_cupti_falls_back_to_events_and_says_why)
{
	char empty[256], extra[400], timing[600], line[700];
	const char *log;
	tmm_ctx *ctx;

	scratch_dir_make(empty, sizeof(empty), "dlopen-empty");
	snprintf(extra, sizeof(extra), "cupti=on,dl_path=%s", empty);
	log = create_and_log(extra, timing, sizeof(timing));
	printf("without CUPTI, op timing by %s\n", timing);
	expect_in(timing, "events (CUPTI could not be loaded: ");
	expect_in(timing, TMM_CUPTI_SONAME ": cannot open shared object");
	expect_in(timing, empty);
	expect_in(timing, "cupti=off");
	/* Said once, at info level, when the context is made. */
	snprintf(line, sizeof(line), "tensormm[info]: op times measured by "
		 "%s\n", timing);
	expect_in(log, line);
	ck_assert_ptr_null(strstr(strstr(log, line) + strlen(line),
				  "CUPTI could not"));

	/* Missing for the process: where it is now is not looked at. */
	ctx = make_ctx("cupti=on,dl_path=" STAND_IN_DIR);
	ck_assert_str_eq(ctx->be.info.timing, timing);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	scratch_dir_remove(empty);
}
END_TEST

START_TEST(a_failed_dlopen_falls_back_to_events)
{
	tmm_ctx *ctx = make_ctx("cupti=on,fault=dlopen");

	expect_in(ctx->be.info.timing, "events (CUPTI could not be loaded: "
		  "injected failure (fault site dlopen)");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_missing_entry_point_falls_back_to_events)
{
	/* The third of TMM_CUPTI_CALLS. */
	tmm_ctx *ctx = make_ctx("cupti=on,fault=dlsym@3");

	expect_in(ctx->be.info.timing, "events (CUPTI could not be loaded: "
		  "it has no cuptiGetDeviceId");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST


#endif /* TMM_HAVE_CUPTI */

#ifdef TMM_HAVE_CUDNN

static cudnnHandle_t h;
static cudnnTensorDescriptor_t x, y;
static cudnnFilterDescriptor_t w;
static cudnnConvolutionDescriptor_t conv;

/* A convolution's descriptors, made by the test as a program linked
 * with cuDNN makes them (the double's cudnn.c). */
static void descriptors(void)
{
	conv_3x3_make(&h, &x, &y, &w, &conv, 1, 8, 32);
}

static void free_descriptors(void)
{
	conv_3x3_free(h, x, y, w, conv);
}

/* The forward picker's answer on ctx. */
static int pick(tmm_ctx *ctx)
{
	cudnnConvolutionFwdAlgo_t algo;
	void *ws = NULL;
	size_t ws_bytes = 0;

	return tmm_cudnn_conv_fwd_algo(ctx, h, x, w, conv, y, 0, &algo, &ws,
				       &ws_bytes);
}

START_TEST(cudnn_is_loaded_from_dl_path)
{
	tmm_ctx *ctx = make_ctx("cupti=off,dl_path=" STAND_IN_DIR);

	ck_assert_msg(pick(ctx) == 0, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(missing_cudnn_fails_the_pickers_with_enosys)
{
	char empty[256], extra[400], first[512];
	cudnnConvolutionBwdDataAlgo_t data;
	cudnnConvolutionBwdFilterAlgo_t filter;
	void *ws;
	size_t ws_bytes;
	tmm_ctx *ctx, *again;

	scratch_dir_make(empty, sizeof(empty), "dlopen-empty");
	snprintf(extra, sizeof(extra), "cupti=off,dl_path=%s", empty);
	ctx = make_ctx(extra);
	ck_assert_int_eq(pick(ctx), -ENOSYS);
	snprintf(first, sizeof(first), "%s", tmm_last_error(ctx));
	printf("without cuDNN: %s\n", first);
	expect_in(first, "tmm_cudnn_conv_fwd_algo: cuDNN could not be "
			 "loaded: ");
	expect_in(first, TMM_CUDNN_SONAME ": cannot open shared object");
	expect_in(first, "tried " TMM_CUDNN_SONAME ", libcudnn.so in "
			 "dl_path's ");
	expect_in(first, empty);
	expect_in(first, "install cuDNN");
	/* The other pickers, the same; the context goes on. */
	ck_assert_int_eq(tmm_cudnn_conv_bwd_data_algo(ctx, h, w, y, conv, x,
						      0, &data, &ws,
						      &ws_bytes),
			 -ENOSYS);
	expect_in(tmm_last_error(ctx), "tmm_cudnn_conv_bwd_data_algo: cuDNN "
				       "could not be loaded");
	ck_assert_int_eq(tmm_cudnn_conv_bwd_filter_algo(ctx, h, x, y, conv,
							w, 0, &filter, &ws,
							&ws_bytes),
			 -ENOSYS);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);

	/* Missing for the process: where it is now is not looked at. */
	again = make_ctx("cupti=off,dl_path=" STAND_IN_DIR);
	ck_assert_int_eq(pick(again), -ENOSYS);
	expect_in(tmm_last_error(again), empty);
	ck_assert_int_eq(tmm_ctx_destroy(again), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	scratch_dir_remove(empty);
}
END_TEST

START_TEST(a_failed_dlopen_fails_the_pickers)
{
	/* dlopen: the first library loaded in this process is cuDNN. */
	tmm_ctx *ctx = make_ctx("cupti=off,fault=dlopen");

	ck_assert_int_eq(pick(ctx), -ENOSYS);
	expect_in(tmm_last_error(ctx), "cuDNN could not be loaded: injected "
				       "failure (fault site dlopen)");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(a_missing_cudnn_entry_point_is_named)
{
	/* The fifth of TMM_CUDNN_CALLS. */
	tmm_ctx *ctx = make_ctx("cupti=off,fault=dlsym@5");

	ck_assert_int_eq(pick(ctx), -ENOSYS);
	expect_in(tmm_last_error(ctx), "cuDNN could not be loaded: it has no "
				       "cudnnGetConvolutionForwardAlgorithm_v7");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(another_major_version_is_not_used)
{
	tmm_ctx *ctx = make_ctx("cupti=off");

	setenv("CUDAFAKE_CUDNN_VERSION", "8907", 1);
	ck_assert_int_eq(pick(ctx), -ENOSYS);
	unsetenv("CUDAFAKE_CUDNN_VERSION");
	expect_in(tmm_last_error(ctx), "cuDNN could not be used: it is cuDNN "
				       "8 (version 8907)");
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

#endif /* TMM_HAVE_CUDNN */

/* Whatever the build: a context that wants neither library, CUPTI off
 * and no picker called, looks for neither. */
START_TEST(cupti_off_does_not_load_it)
{
	tmm_ctx *ctx = make_ctx("cupti=off,fault=dlopen@1000");

	ck_assert_str_eq(ctx->be.info.timing, "events");
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	ck_assert_uint_eq(tmm_fault_calls("dlopen"), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *dlopen_suite(void)
{
	Suite *s = suite_create("cuda_dlopen");
	TCase *tc = tcase_create("cupti");
#ifdef TMM_HAVE_CUDNN
	TCase *dnn = tcase_create("cudnn");

	tcase_add_checked_fixture(dnn, descriptors, free_descriptors);
	tcase_add_test(dnn, cudnn_is_loaded_from_dl_path);
	tcase_add_test(dnn, missing_cudnn_fails_the_pickers_with_enosys);
	tcase_add_test(dnn, a_failed_dlopen_fails_the_pickers);
	tcase_add_test(dnn, a_missing_cudnn_entry_point_is_named);
	tcase_add_test(dnn, another_major_version_is_not_used);
	suite_add_tcase(s, dnn);
#endif

#ifdef TMM_HAVE_CUPTI
	tcase_add_checked_fixture(tc, records, NULL);
	tcase_add_test(tc, cupti_is_loaded_from_dl_path);
	tcase_add_test(tc, missing_cupti_falls_back_to_events_and_says_why);
	tcase_add_test(tc, a_failed_dlopen_falls_back_to_events);
	tcase_add_test(tc, a_missing_entry_point_falls_back_to_events);
#endif
	tcase_add_test(tc, cupti_off_does_not_load_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dlopen_suite());

	/* A process per test, even where CK_FORK=no asks otherwise: the
	 * loaded or missing library is the process's. */
	srunner_set_fork_status(sr, CK_FORK);
	return check_run_all(sr);
}
