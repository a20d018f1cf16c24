/* SPDX-License-Identifier: MIT */
/*
 * cuda_main.h — the main() of a GPU test: skip (exit 77, automake's
 * code) when no CUDA device answers, else run the suite in-process (the
 * CUDA runtime does not survive Check's fork, and the CUDA test double's
 * state is the process's).  Linked against the double (tests/cudafake/),
 * a device always answers.
 */
#ifndef CUDA_MAIN_H
#define CUDA_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

static inline int cuda_test_main(Suite *(*make_suite)(void))
{
	SRunner *sr;
	cudaError_t e;
	int n = 0, failed;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		printf("SKIP: no CUDA device: %s\n",
		       e != cudaSuccess ? cudaGetErrorString(e)
					: "device count is 0");
		return 77;
	}
	sr = srunner_create(make_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* CUDA_MAIN_H */
