/* SPDX-License-Identifier: MIT */
/*
 * conv_algo.c — the cuDNN convolution algorithms a zoo convolution may run
 * with: each one's workspace and its time relative to the fastest
 * (graph.h: zg_conv_algos).
 *
 * A model, not a measurement: cuDNN's exact needs depend on its version
 * and the GPU.  The sizes follow what each algorithm has to hold, from
 * public descriptions:
 *
 * - IMPLICIT_GEMM needs no workspace (cuDNN API reference,
 *   cudnnConvolutionFwdAlgo_t: it forms the lowered matrix implicitly).
 * - IMPLICIT_PRECOMP_GEMM "still needs some memory workspace to
 *   precompute some indices" (same reference): an index per filter
 *   element, 4·C·R·S bytes here.
 * - GEMM forms the lowered (im2col) matrix explicitly: C·R·S rows by
 *   N·P·Q columns (Chetlur et al., "cuDNN: Efficient Primitives for Deep
 *   Learning", arXiv:1410.0759, 2014, §3.1), fp32.
 * - WINOGRAD_NONFUSED (3×3, stride 1) keeps the transformed tiles of the
 *   input, the output and the filters: F(4×4, 3×3) turns every 4×4 output
 *   tile into a 6×6 one (Lavin & Gray, "Fast Algorithms for Convolutional
 *   Neural Networks", CVPR 2016, §4–5), so 36 values for each of the
 *   N·⌈P/4⌉·⌈Q/4⌉ tiles of C input and K output channels, and 36·C·K for
 *   the filters.
 * - FFT (stride 1) keeps the complex transforms of the input, the filters
 *   and the output over the padded extent (Vasilache et al., "Fast
 *   Convolutional Nets with fbfft", ICLR 2015, §3): (N·C + C·K + N·K)
 *   planes of (P+R−1)·((Q+S−1)/2+1) complex64 values.
 *
 * Which algorithms a shape admits follows the same reference (FFT and
 * Winograd only at stride 1, Winograd only for 3×3); which is fastest,
 * and by how much, is our assumption, loosely taken from Lavin & Gray
 * (F(4×4,3×3) 1.5–2× faster than cuDNN's GEMM variants on VGG's layers),
 * Vasilache et al. (FFT 1.4× and more for kernels above 3×3) and
 * SuperNeurons (PPoPP'18, §4, Fig. 12: 203 → 240 images/s, 1.18× for the
 * whole network, once the convolutions had their workspace).  The op's
 * cost hint stays what it was before workspaces were modelled and is
 * taken as the time of IMPLICIT_GEMM, the algorithm that needs none
 * (graph.h), so a framework that never has a workspace (DRIVE_WS_NONE)
 * times its convolutions as before and the others run them faster.
 *
 * TensorFlow autotunes only the algorithms whose workspace is within its
 * limit, TF_CUDNN_WORKSPACE_LIMIT_IN_MB, 4096 by default
 * (tensorflow/core/kernels/conv_ops.cc, 1.x), so the larger ones are not
 * offered at all.  The backward op of a zoo convolution runs both cuDNN
 * backward calls (data, then filter) one after the other, reusing the one
 * workspace: its need is the larger of the two, which for these shapes
 * is the same transform or lowering as the forward's, so the lists are
 * the same.
 */
#include "graph.h"

#define F32 4u
#define WS_LIMIT (4096ull << 20) /* TensorFlow's default, above */

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static void add(struct zg_algo *a, unsigned *n, uint64_t ws, double time)
{
	/* the last slot is kept for IMPLICIT_GEMM, which needs none */
	if (*n >= ZG_MAX_ALGOS || (ws > WS_LIMIT && ws))
		return;
	a[*n].ws = ws;
	a[*n].time = time;
	(*n)++;
}

unsigned zg_conv_algos(const struct zg_conv_shape *s, struct zg_algo *a)
{
	uint64_t crs = s->c * s->kh * s->kw;
	uint64_t precomp = F32 * crs;
	unsigned n = 0;

	if (s->kh == 1 && s->kw == 1) {
		/* a 1×1 convolution is a plain GEMM: nothing to lower */
		add(a, &n, precomp, 1.0);
		add(a, &n, 0, 1.1);
		return n;
	}
	if (s->stride == 1 && s->kh == 3 && s->kw == 3) {
		uint64_t tiles = s->n * ceil_div(s->ho, 4) *
				 ceil_div(s->wo, 4);

		add(a, &n, F32 * 36 * (tiles * (s->c + s->k) + s->c * s->k),
		    1.0);
		add(a, &n, precomp, 1.6);
		add(a, &n, 0, 1.9);
		return n;
	}
	if (s->stride == 1) {
		uint64_t bins = (s->ho + s->kh - 1) *
				((s->wo + s->kw - 1) / 2 + 1);

		add(a, &n, 8 * bins * (s->n * s->c + s->c * s->k +
				       s->n * s->k), 1.0);
		add(a, &n, precomp, 1.4);
		add(a, &n, 0, 1.7);
		return n;
	}
	add(a, &n, F32 * crs * s->n * s->ho * s->wo, 1.0);
	add(a, &n, precomp, 1.25);
	add(a, &n, 0, 1.5);
	return n;
}
