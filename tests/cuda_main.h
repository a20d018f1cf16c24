/* SPDX-License-Identifier: MIT */
/*
 * cuda_main.h — the main() of a GPU test: skip (exit 77, automake's
 * code) when no CUDA device answers, else run the suite in-process (the
 * CUDA runtime does not survive Check's fork, and the CUDA test double's
 * state is the process's).  Linked against the double (tests/cudafake/),
 * a device always answers.  The run itself is check_main.h's.
 */
#ifndef CUDA_MAIN_H
#define CUDA_MAIN_H

#include <check.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "check_main.h"

static inline int cuda_test_main(Suite *(*make_suite)(void))
{
	SRunner *sr;
	cudaError_t e;
	int n = 0;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		printf("SKIP: no CUDA device: %s\n",
		       e != cudaSuccess ? cudaGetErrorString(e)
					: "device count is 0");
		return 77;
	}
	sr = srunner_create(make_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	return check_run_all(sr);
}

#endif /* CUDA_MAIN_H */
