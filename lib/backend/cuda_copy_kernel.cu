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
 * Both pointers are 16-byte aligned (cuda_copier.c launches it only
 * then): the bulk moves in 16-byte words, a grid-stride loop over them,
 * and the last bytes (fewer than 16) one per thread.
 */
#include <stdint.h>

extern "C" __global__ void tmm_copy_kernel(void *dst, const void *src,
					   unsigned long long bytes)
{
	const unsigned long long stride =
		(unsigned long long)gridDim.x * blockDim.x;
	const unsigned long long first =
		(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	const unsigned long long words = bytes / 16;
	uint4 *d = (uint4 *)dst;
	const uint4 *s = (const uint4 *)src;
	unsigned long long i = first;

	/* Four loads in flight before their stores: a read of pinned host
	 * memory waits a round trip over the link, and a thread that
	 * waited for each word alone would move a quarter as much. */
	for (; i + 3 * stride < words; i += 4 * stride) {
		uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride],
		      e = s[i + 3 * stride];

		d[i] = a;
		d[i + stride] = b;
		d[i + 2 * stride] = c;
		d[i + 3 * stride] = e;
	}
	for (; i < words; i += stride)
		d[i] = s[i];
	if (first < bytes % 16)
		((unsigned char *)dst)[words * 16 + first] =
			((const unsigned char *)src)[words * 16 + first];
}
