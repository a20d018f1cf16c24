/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda.h — the backend on a real GPU, through the CUDA runtime.
 *
 * The runtime reaches it through its ops like any other device: the
 * chooser (backend_open.c) opens it, and its test opens it directly.  It
 * is built only with CUDA (./configure --with-cuda), so the declaration
 * is too: a use without it fails to compile, not to link.
 */
#ifndef TMM_BACKEND_CUDA_H
#define TMM_BACKEND_CUDA_H

#include "backend.h"

#include <stdint.h>

#ifdef TMM_HAVE_CUDA
extern const struct tmm_backend_ops tmm_backend_cuda_ops;

/*
 * The host clock the backend reads (its now_ns), in ns.  A weak
 * definition: a build linked against the CUDA test double
 * (tests/cudafake/) gets the double's clock instead, so that traces, and
 * the plans made from them, are the same on every machine however fast
 * or loaded.
 */
uint64_t tmm_cuda_host_ns(void);

/* The CUDA devices this process sees (0 when CUDA answers none): the
 * chooser's test for whether a device= that cuda refused names a GPU
 * this machine lacks, or there is no GPU at all. */
int tmm_cuda_device_count(void);
#endif

#endif /* TMM_BACKEND_CUDA_H */
