/* SPDX-License-Identifier: MIT */
/*
 * comm_twins.h — what the comm-stream tests on the CUDA test double share
 * (test_cuda_comm_fake.c, test_cuda_comm_faults.c): a cuda backend opened
 * on the double, and kernels over one buffer of COMM_TWIN_BYTES whose
 * host twins the double runs and whose ranges its race detector checks.
 */
#ifndef TESTS_COMM_TWINS_H
#define TESTS_COMM_TWINS_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "lib/backend/backend.h"
#include "lib/base/tunables.h"

#define COMM_TWIN_BYTES (64u << 10)

/* A kernel on `stream` that writes (or only reads) COMM_TWIN_BYTES at p. */
void comm_twin_launch(cudaStream_t stream, void *p, bool write);

/* Opens the cuda backend on the double into be, with cfg's defaults. */
void comm_twin_open(struct tmm_backend *be, struct tmm_config *cfg);

#endif /* TESTS_COMM_TWINS_H */
