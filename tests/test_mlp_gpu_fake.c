/* SPDX-License-Identifier: MIT */
/*
 * test_mlp_gpu_fake.c — examples/mlp_gpu's own training code on the CUDA
 * test double (tests/cudafake/): its cuBLAS calls answered by the
 * double's cuBLAS (cublas.c: sgemm queued on the handle's stream, a host
 * sgemm with one summation order) and its kernels by their host twins
 * (tests/mlp_gpu_twins.c, compiled from the kernels' own source,
 * examples/mlp_gpu_kernel_body.h).  So the GPU program's paths run in
 * `make check` on machines without a GPU (issue #20).
 *
 * As mlp_gpu does, it trains once unconstrained (90% of the device, no
 * swap-out) and then at 30% of that run's peak, in swap and in uvm mode,
 * here with the policies none, auto and capuchin over several seeds of
 * the double's schedule: every run's losses and weights must be
 * bit-identical to the double's own unconstrained run, no race may be
 * reported, and in swap mode the peak must stay within the budget.  The
 * shapes are small (mlp_gpu's --layers 4 --batch 16 --steps 4: its
 * largest op, the first layer's backward, still fits in 30% of the
 * peak, as no kernel of mlp_gpu splits) so that the test takes seconds.
 * A failed sgemm (the fault site cublasSgemm) and a failed allocation
 * of the ops' device scratch (cudaMalloc) stop a run cleanly, and
 * the double's sgemm is checked against cuBLAS's definition and by the
 * race detector.
 */
#include <check.h>
#include <cublas_v2.h>
#include <math.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/base/fault.h"
#include "mlp_gpu_train.h"
#include "mlp_model.h"
#include "tensormm.h"

#define SEEDS 10
/* What every run's configuration adds: no CUPTI (the double refuses it
 * by default anyway), no shared statistics, quiet. */
#define QUIET "cupti=off,stats_shm=off,log=error"

static const char *const policies[] = { "none", "auto", "capuchin" };

#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

/* mlp_gpu's model at --layers 4 --batch 16 --steps 4. */
static void small(struct mlp_config *mc)
{
	mlp_config_default(mc);
	mc->layers = 4;
	mc->batch = 16;
	mc->steps = 4;
}

static void release(struct mlp_gpu_result *r)
{
	free(r->losses);
	free(r->weights);
	*r = (struct mlp_gpu_result){ 0 };
}

static bool same(const struct mlp_gpu_result *a,
		 const struct mlp_gpu_result *b, unsigned steps)
{
	return a->len == b->len && !memcmp(a->weights, b->weights, a->len) &&
	       !memcmp(a->losses, b->losses, steps * sizeof(float));
}

/* The unconstrained run, as mlp_gpu makes it, on seed 1. */
static void reference(const struct mlp_config *mc, struct mlp_gpu_result *ref)
{
	unsigned long sgemms = cudafake_cublas_sgemms();

	cudafake_reset(1);
	ck_assert_int_eq(mlp_gpu_train("backend=cuda,mode=swap,budget=90%,"
				       "policy=none," QUIET, mc, ref, NULL),
			 0);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_uint_eq(ref->swap_outs, 0);
	ck_assert_uint_gt(ref->peak, 0);
	/* The products went through the double's cuBLAS. */
	ck_assert_uint_gt(cudafake_cublas_sgemms(), sgemms);
}

/* Every policy of one mode at 30% of the unconstrained peak, over the
 * seeds.  Every failing run is listed before the test fails. */
static void every_policy(const char *mode)
{
	struct mlp_gpu_result ref = { 0 };
	struct mlp_config mc;
	unsigned long long budget, swap_outs = 0;
	char cfg[256];
	unsigned failed = 0;

	small(&mc);
	ck_assert_int_eq(mlp_gpu_blas_open(16), 0);
	reference(&mc, &ref);
	budget = (unsigned long long)((double)ref.peak * 0.3);
	for (size_t p = 0; p < N_POLICIES; p++) {
		for (unsigned seed = 1; seed <= SEEDS; seed++) {
			struct mlp_gpu_result r = { 0 };
			const char *bad = NULL;

			snprintf(cfg, sizeof(cfg),
				 "backend=cuda,mode=%s,budget=%lluB,policy=%s,"
				 QUIET, mode, budget, policies[p]);
			cudafake_reset(seed);
			if (mlp_gpu_train(cfg, &mc, &r, NULL) != 0)
				bad = "training failed (stderr says why)";
			else if (cudafake_races())
				bad = cudafake_race(0);
			else if (!same(&ref, &r, mc.steps))
				bad = "losses or weights differ from the "
				      "unconstrained run";
			else if (!strcmp(mode, "swap") && r.peak > budget)
				bad = "peak above the budget";
			if (bad) {
				failed++;
				fprintf(stderr, "FAILED %s, seed %u: %s\n",
					cfg, seed, bad);
			}
			swap_outs += r.swap_outs;
			release(&r);
		}
	}
	release(&ref);
	mlp_gpu_blas_close();
	ck_assert_msg(failed == 0, "%u of %zu runs failed (stderr lists "
		      "them)", failed, N_POLICIES * SEEDS);
	/* The budget did bite. */
	ck_assert_uint_gt(swap_outs, 0);
}

START_TEST(swap_mode_trains_bit_identically)
{
	every_policy("swap");
}
END_TEST

START_TEST(uvm_mode_trains_bit_identically)
{
	every_policy("uvm");
}
END_TEST

/* A failing sgemm (the fault tunable's site cublasSgemm) stops the
 * training with -EIO, and the next run, without the fault, is
 * bit-identical to the reference: the failure left nothing behind. */
START_TEST(failed_sgemm_stops_the_run)
{
	struct mlp_gpu_result ref = { 0 }, r = { 0 };
	struct mlp_config mc;
	char cfg[256];

	small(&mc);
	ck_assert_int_eq(mlp_gpu_blas_open(16), 0);
	reference(&mc, &ref);
	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=%lluB,"
		 "policy=none,fault=cublasSgemm@7," QUIET,
		 (unsigned long long)((double)ref.peak * 0.3));
	cudafake_reset(3);
	ck_assert_int_eq(mlp_gpu_train(cfg, &mc, &r, NULL), -EIO);
	ck_assert_uint_eq(cudafake_races(), 0);
	release(&r);
	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=%lluB,"
		 "policy=none," QUIET,
		 (unsigned long long)((double)ref.peak * 0.3));
	cudafake_reset(3);
	ck_assert_int_eq(mlp_gpu_train(cfg, &mc, &r, NULL), 0);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert(same(&ref, &r, mc.steps));
	release(&r);
	release(&ref);
	mlp_gpu_blas_close();
}
END_TEST

/*
 * The ops' device scratch (the loss's per-row terms and the ones the bias
 * gradients are products with), made at their first call: where its
 * cudaMalloc fails, the op fails with -ENOMEM and the run stops, and the
 * next run, which makes it, is bit-identical to the reference.  Each
 * of the first six counts of the fault tunable's site cudaMalloc is
 * tried (the context's own allocations come first, and fail the context
 * or are let go; the later counts come after the run's last): two of
 * them fail an op, the scratch's.
 */
START_TEST(failed_scratch_allocation_stops_the_run)
{
	struct mlp_gpu_result ref = { 0 }, r = { 0 };
	struct mlp_config mc;
	char cfg[256];
	unsigned hits = 0;

	small(&mc);
	ck_assert_int_eq(mlp_gpu_blas_open(16), 0);
	reference(&mc, &ref);
	for (unsigned n = 1; n <= 6; n++) {
		bool made;
		int rc;

		/* A fresh handle with scratch for one row: the ops make
		 * room for the batch's 16 at their first call. */
		mlp_gpu_blas_close();
		ck_assert_int_eq(mlp_gpu_blas_open(1), 0);
		snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=90%%,"
			 "policy=none,fault=cudaMalloc@%u," QUIET, n);
		cudafake_reset(1);
		rc = mlp_gpu_train(cfg, &mc, &r, NULL);
		/* The count goes on past the context: stop it there. */
		ck_assert_int_eq(tmm_fault_set(""), 0);
		made = r.losses != NULL; /* the context was made */
		release(&r);
		ck_assert_uint_eq(cudafake_races(), 0);
		if (!made)
			continue;
		if (rc == 0)
			continue; /* let go, or past every allocation */
		ck_assert_int_eq(rc, -ENOMEM);
		hits++;
		cudafake_reset(1);
		ck_assert_int_eq(mlp_gpu_train("backend=cuda,mode=swap,"
					       "budget=90%,policy=none," QUIET,
					       &mc, &r, NULL),
				 0);
		ck_assert(same(&ref, &r, mc.steps));
		release(&r);
	}
	ck_assert_uint_ge(hits, 2);
	release(&ref);
	mlp_gpu_blas_close();
}
END_TEST

/* The double's sgemm itself: column-major, op(A) and op(B) as cuBLAS
 * defines them, beta == 0 not reading C, and its bytes checked by the
 * race detector like a kernel's. */

#define M 3
#define N 2
#define K 4

/* op(X)(i, j) of a column-major X with leading dimension ld. */
static float at(const float *x, int ld, bool t, int i, int j)
{
	return t ? x[j + i * ld] : x[i + j * ld];
}

static float *device_copy(const float *h, size_t n)
{
	float *d;

	ck_assert_int_eq(cudaMalloc((void **)&d, n * sizeof(float)),
			 cudaSuccess);
	ck_assert_int_eq(cudaMemcpy(d, h, n * sizeof(float),
				    cudaMemcpyHostToDevice),
			 cudaSuccess);
	return d;
}

START_TEST(sgemm_computes_as_cublas_defines)
{
	/* Small integers: every product and sum is exact in float. */
	float a[K * K], b[K * K], c[M * N], want[M * N], got[M * N];
	const float alpha = 2.0f, beta = 3.0f, zero = 0.0f;
	cublasHandle_t h;

	for (int i = 0; i < K * K; i++) {
		a[i] = (float)(i % 5) - 2.0f;
		b[i] = (float)(i % 3) + 1.0f;
	}
	ck_assert_int_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
	for (int v = 0; v < 4; v++) {
		bool ta = v & 1, tb = v & 2;
		/* A is M×K (lda M) or, transposed, K×M (lda K); B likewise. */
		int lda = ta ? K : M, ldb = tb ? N : K;
		float *da = device_copy(a, K * K), *db = device_copy(b, K * K);
		float *dc;

		for (int i = 0; i < M * N; i++)
			c[i] = (float)i;
		dc = device_copy(c, M * N);
		for (int j = 0; j < N; j++)
			for (int i = 0; i < M; i++) {
				float s = 0.0f;

				for (int l = 0; l < K; l++)
					s += at(a, lda, ta, i, l) *
					     at(b, ldb, tb, l, j);
				want[i + j * M] = alpha * s + beta * c[i + j * M];
			}
		ck_assert_int_eq(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
					     tb ? CUBLAS_OP_T : CUBLAS_OP_N, M,
					     N, K, &alpha, da, lda, db, ldb,
					     &beta, dc, M),
				 CUBLAS_STATUS_SUCCESS);
		ck_assert_int_eq(cudaMemcpy(got, dc, sizeof(got),
					    cudaMemcpyDeviceToHost),
				 cudaSuccess);
		ck_assert_msg(!memcmp(got, want, sizeof(got)),
			      "sgemm %c%c differs", ta ? 'T' : 'N',
			      tb ? 'T' : 'N');
		/* beta == 0: C is not read, so a NaN there is gone. */
		for (int i = 0; i < M * N; i++)
			c[i] = NAN;
		ck_assert_int_eq(cudaMemcpy(dc, c, sizeof(c),
					    cudaMemcpyHostToDevice),
				 cudaSuccess);
		ck_assert_int_eq(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
					     tb ? CUBLAS_OP_T : CUBLAS_OP_N, M,
					     N, K, &alpha, da, lda, db, ldb,
					     &zero, dc, M),
				 CUBLAS_STATUS_SUCCESS);
		ck_assert_int_eq(cudaMemcpy(got, dc, sizeof(got),
					    cudaMemcpyDeviceToHost),
				 cudaSuccess);
		for (int i = 0; i < M * N; i++)
			ck_assert(!isnan(got[i]));
		cudaFree(da);
		cudaFree(db);
		cudaFree(dc);
	}
	/* An ld below op(A)'s rows is refused, as cuBLAS refuses it. */
	ck_assert_int_eq(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K,
				     &alpha, a, M - 1, b, K, &beta, c, M),
			 CUBLAS_STATUS_INVALID_VALUE);
	ck_assert_int_eq(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}
END_TEST

/* An sgemm on one stream and a copy of its result on another, with
 * nothing ordering them, are a race naming cublasSgemm; an event
 * ordering them is not. */
START_TEST(sgemm_races_are_reported)
{
	float a[M * K] = { 1 }, b[K * N] = { 1 }, out[M * N];
	const float one = 1.0f, zero = 0.0f;
	cudaStream_t s1, s2;
	cudaEvent_t done;
	cublasHandle_t h;
	float *da, *db, *dc;

	cudafake_reset(7);
	da = device_copy(a, M * K);
	db = device_copy(b, K * N);
	ck_assert_int_eq(cudaMalloc((void **)&dc, sizeof(out)), cudaSuccess);
	ck_assert_int_eq(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking),
			 cudaSuccess);
	ck_assert_int_eq(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking),
			 cudaSuccess);
	ck_assert_int_eq(cudaEventCreate(&done), cudaSuccess);
	ck_assert_int_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
	ck_assert_int_eq(cublasSetStream(h, s1), CUBLAS_STATUS_SUCCESS);

	ck_assert_int_eq(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K,
				     &one, da, M, db, K, &zero, dc, M),
			 CUBLAS_STATUS_SUCCESS);
	ck_assert_int_eq(cudaMemcpyAsync(out, dc, sizeof(out),
					 cudaMemcpyDeviceToHost, s2),
			 cudaSuccess);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_uint_eq(cudafake_races(), 1);
	ck_assert_msg(strstr(cudafake_race(0), "cublasSgemm"), "%s",
		      cudafake_race(0));

	cudafake_reset(7);
	ck_assert_int_eq(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K,
				     &one, da, M, db, K, &zero, dc, M),
			 CUBLAS_STATUS_SUCCESS);
	ck_assert_int_eq(cudaEventRecord(done, s1), cudaSuccess);
	ck_assert_int_eq(cudaStreamWaitEvent(s2, done, 0), cudaSuccess);
	ck_assert_int_eq(cudaMemcpyAsync(out, dc, sizeof(out),
					 cudaMemcpyDeviceToHost, s2),
			 cudaSuccess);
	ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
	ck_assert_uint_eq(cudafake_races(), 0);

	ck_assert_int_eq(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
	cudaEventDestroy(done);
	cudaStreamDestroy(s1);
	cudaStreamDestroy(s2);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mlp_gpu_fake");
	TCase *tc = tcase_create("mlp_gpu");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swap_mode_trains_bit_identically);
	tcase_add_test(tc, uvm_mode_trains_bit_identically);
	tcase_add_test(tc, failed_sgemm_stops_the_run);
	tcase_add_test(tc, failed_scratch_allocation_stops_the_run);
	tcase_add_test(tc, sgemm_computes_as_cublas_defines);
	tcase_add_test(tc, sgemm_races_are_reported);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
