/* SPDX-License-Identifier: MIT */
/*
 * cuda_copy_kernel.cu — the copy kernel of uvm_copier=kernel
 * (cuda_copier.h), the library's one piece of device code.
 *
 * mode=uvm copies a tensor between managed memory and a pinned host
 * buffer.  CUDA's runtime makes a cudaMemcpyAsync with a managed end
 * return only once the copy has run ("API synchronization behavior"),
 * so the host queues no kernel meanwhile: on the H200 mode=uvm's copies
 * and kernels ran one after the other (docs/gpu-h200-goals.md).  A
 * kernel launch returns at once.  This kernel moves the bytes itself,
 * reading one end and writing the other over the link where that end
 * is pinned host memory, on the copy stream the runtime's copy would
 * have taken.
 *
 * The build compiles it to PTX (nvcc -ptx) and embeds the text in the
 * library (cuda_copy_kernel_ptx.c), which the cuda backend loads with
 * cudaLibraryLoadData at open: the library stays C, and the driver
 * compiles the PTX for whatever GPU it finds.
 *
 * What each thread copies is cuda_copy_kernel_body.h's, which the CUDA
 * test double runs too.
 */
#include "cuda_copy_kernel_body.h"

extern "C" __global__ void tmm_copy_kernel(void *dst, const void *src,
					   unsigned long long bytes)
{
	tmm_copy_thread((unsigned long long)blockIdx.x * blockDim.x +
				threadIdx.x,
			(unsigned long long)gridDim.x * blockDim.x, dst, src,
			bytes);
}
