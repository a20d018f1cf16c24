/* SPDX-License-Identifier: MIT */
/*
 * cuda_copier.h — copies of managed memory by the library's own kernel
 * (uvm_copier=kernel, tensormm(7)), so that they do not hold the host.
 *
 * A cudaMemcpyAsync with a managed end returns only once it has run
 * (CUDA Runtime API, "API synchronization behavior"), so mode=uvm's copy
 * way out and back kept the host from queueing kernels while each copy
 * ran: on the H200 its copies and kernels ran one after the other
 * (docs/gpu-h200-goals.md).  The copier launches cuda_copy_kernel.cu's
 * kernel on the copy stream instead, which returns at once and is
 * ordered like any work of that stream, so the runtime's events, waits
 * and after_other_streams order it as they ordered the copy.
 *
 * It knows managed memory by the ranges the backend allocated
 * (copier_note at cudaMallocManaged, copier_forget at cudaFree): a copy
 * with an end in one of them, both ends 16-byte aligned, goes by the
 * kernel; every other copy, of device memory in swap mode say, stays the
 * runtime's (the copy engines run those without holding the host).
 *
 * Built with CUDA only; the kernel's PTX is embedded at build time
 * (cuda_copy_kernel_ptx.c, made by nvcc), and is empty where the build
 * had no nvcc, which open reports.
 */
#ifndef TMM_CUDA_COPIER_H
#define TMM_CUDA_COPIER_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

struct tmm_cuda_copier;

/* The kernel's PTX, NUL-terminated ("" when built without nvcc). */
extern const char tmm_cuda_copy_kernel_ptx[];

/*
 * Loads the kernel for the current device, to run at most `blocks`
 * blocks a copy (0: 16, until tmm_cuda_copier_set_blocks).  Returns 0 and *out, or a negative errno with *out
 * NULL and the reason in why: -ENOTSUP where it cannot be had (no PTX
 * in this build, the device cannot reach pinned host memory by its host
 * address, the driver refuses the PTX), -ENOMEM without host memory.
 */
int tmm_cuda_copier_open(struct tmm_cuda_copier **out, int device,
			 unsigned blocks, char *why, size_t why_len);
/* The most blocks a copy runs from now on (at least 1), and so far. */
void tmm_cuda_copier_set_blocks(struct tmm_cuda_copier *c, unsigned blocks);
unsigned tmm_cuda_copier_blocks(const struct tmm_cuda_copier *c);

/* Unloads the kernel; NULL is nothing to do. */
void tmm_cuda_copier_close(struct tmm_cuda_copier *c);

/* [ptr, ptr + bytes) is managed memory from now on, until forgotten.
 * Returns 0 or -ENOMEM (host memory, fault site host_alloc). */
int tmm_cuda_copier_note(struct tmm_cuda_copier *c, const void *ptr,
			 size_t bytes);
void tmm_cuda_copier_forget(struct tmm_cuda_copier *c, const void *ptr);

/* Whether a copy from src to dst goes by the kernel: an end in managed
 * memory noted, and both ends 16-byte aligned. */
bool tmm_cuda_copier_takes(const struct tmm_cuda_copier *c, void *dst,
			   const void *src);
/* The bytes of the copies launched since open or the last restart (0
 * for NULL). */
unsigned long long tmm_cuda_copier_bytes(const struct tmm_cuda_copier *c);
/* Counts from 0 again: the copies that measured the kernel's rate at
 * open (cuda_link.h) are none of the program's. */
void tmm_cuda_copier_restart_count(struct tmm_cuda_copier *c);

/* Queues the copy on `stream`; cudaLaunchKernel's error. */
cudaError_t tmm_cuda_copier_launch(struct tmm_cuda_copier *c, void *dst,
				   const void *src, size_t bytes,
				   cudaStream_t stream);

#endif /* TMM_CUDA_COPIER_H */
