/* SPDX-License-Identifier: MIT */
/*
 * cuda_copy_kernel_body.h — what one thread of the copy kernel
 * (cuda_copy_kernel.cu, uvm_copier=kernel) copies, written once for two
 * compilers: nvcc builds the kernel from it, and a C compiler builds the
 * CUDA test double's twin of the kernel (tests/cudafake/library.c), which
 * runs it for every thread of the launch's grid.  So the double runs the
 * kernel's own indexing, tail included, and tests/test_cuda_copier.c
 * holds it to every size, alignment and grid.
 *
 * Both pointers are 16-byte aligned (cuda_copier.c launches it only
 * then): the bulk moves in 16-byte words, each thread taking every
 * `stride`-th word from `first`, and the last bytes (fewer than 16) the
 * same way, one byte where it took a word.
 */
#ifndef TMM_CUDA_COPY_KERNEL_BODY_H
#define TMM_CUDA_COPY_KERNEL_BODY_H

#include <stdint.h>

#ifdef __CUDACC__
#define TMM_COPY_HD __device__
typedef uint4 tmm_copy_word;
#else
#define TMM_COPY_HD
typedef struct {
	uint32_t x, y, z, w;
} tmm_copy_word;
#endif

/* Thread `first` of `stride` threads copies its share of `bytes`. */
static inline TMM_COPY_HD void tmm_copy_thread(unsigned long long first,
					       unsigned long long stride,
					       void *dst, const void *src,
					       unsigned long long bytes)
{
	const unsigned long long words = bytes / 16;
	tmm_copy_word *d = (tmm_copy_word *)dst;
	const tmm_copy_word *s = (const tmm_copy_word *)src;
	unsigned long long i = first;

	/* Four loads in flight before their stores: a read of pinned host
	 * memory waits a round trip over the link, and a thread that
	 * waited for each word alone would move a quarter as much. */
	for (; i + 3 * stride < words; i += 4 * stride) {
		tmm_copy_word a = s[i], b = s[i + stride],
			      c = s[i + 2 * stride], e = s[i + 3 * stride];

		d[i] = a;
		d[i + stride] = b;
		d[i + 2 * stride] = c;
		d[i + 3 * stride] = e;
	}
	for (; i < words; i += stride)
		d[i] = s[i];
	for (unsigned long long j = first; j < bytes % 16; j += stride)
		((unsigned char *)dst)[words * 16 + j] =
			((const unsigned char *)src)[words * 16 + j];
}

#endif /* TMM_CUDA_COPY_KERNEL_BODY_H */
