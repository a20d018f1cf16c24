/* SPDX-License-Identifier: MIT */
/*
 * cuda_link.h — measuring the host link when the cuda backend opens
 * (cuda_link.c).
 */
#ifndef TMM_CUDA_LINK_H
#define TMM_CUDA_LINK_H

#include <cuda_runtime_api.h>

#include "backend.h"

struct tmm_cuda_copier;

/*
 * Sets info's h2d_gbps, d2h_gbps and copy_latency_ns from timed pinned
 * copies on the streams given, and says how in info->link.  Where they
 * cannot be measured the values in info stay, and info->link says why.
 * Takes 32 MiB of device and pinned memory for the while.
 */
void tmm_cuda_link_measure(struct tmm_device_info *info,
			   cudaStream_t h2d, cudaStream_t d2h);

/*
 * Sets info's uvm_prefetch_h2d_gbps, uvm_prefetch_d2h_gbps and
 * uvm_fresh_gbps from timed prefetches of one managed buffer on device
 * `device` (made on the device, sent to the host, brought back), and
 * says how in info->uvm_paths.  Where they cannot be measured, the
 * pinned rates already in info stand in and info->uvm_paths says why.
 * Call it after tmm_cuda_link_measure, on a device with concurrent
 * managed access.  Takes 32 MiB of managed memory for the while.
 */
void tmm_cuda_link_measure_managed(struct tmm_device_info *info, int device,
				   cudaStream_t h2d, cudaStream_t d2h);

/*
 * Sets info's kernel_copy_h2d_gbps and kernel_copy_d2h_gbps from copies
 * by `kernel` (uvm_copier=kernel) between one managed and one pinned
 * buffer, timed as tmm_cuda_link_measure times the pinned copies, and
 * adds the blocks and figures to info->managed_copier.  With `blocks` 0
 * (uvm_copier_blocks=0) it chooses the kernel's blocks first: the fewest
 * of 4, 8, 16, 32 and 64 whose rate both ways reaches 90% of the pinned
 * copies' (info's), else the fastest of them.  Where the rates cannot be
 * measured, the pinned ones stand in, 16 blocks where they were to be
 * chosen, and info->managed_copier says why.  Call it after
 * tmm_cuda_link_measure.  Takes 32 MiB of managed and pinned memory for
 * the while.
 */
void tmm_cuda_link_measure_kernel(struct tmm_device_info *info,
				  struct tmm_cuda_copier *kernel,
				  unsigned blocks, cudaStream_t h2d,
				  cudaStream_t d2h);

#endif /* TMM_CUDA_LINK_H */
