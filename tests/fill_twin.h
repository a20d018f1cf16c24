/* SPDX-License-Identifier: MIT */
/*
 * fill_twin.h — what the ordering tests on the CUDA test double share
 * (test_cuda_order.c, test_cuda_uvm_compact.c): a kernel that fills a
 * range with one byte, whose host twin the double runs and whose range
 * its race detector checks as written.
 */
#ifndef TESTS_FILL_TWIN_H
#define TESTS_FILL_TWIN_H

#include <stddef.h>
#include <stdint.h>

/* Launches on `stream` a kernel that sets `bytes` at out to `value`.
 * Returns 0, or -1 (no host memory, or the double refused it). */
int fill_twin_launch(void *out, size_t bytes, uint8_t value, void *stream);

#endif /* TESTS_FILL_TWIN_H */
