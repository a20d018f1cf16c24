/* SPDX-License-Identifier: MIT */
/*
 * resnet.c — ResNet-50, ResNet-101 and ResNet-152.
 *
 * Shapes: He, Zhang, Ren & Sun, "Deep Residual Learning for Image
 * Recognition", CVPR 2016, Table 1: a 7×7/2 convolution of 64 channels
 * and a 3×3/2 max pool, then four stages of bottleneck blocks (1×1, 3×3,
 * 1×1 convolutions of w, w, 4w channels, w = 64, 128, 256, 512) repeated
 * 3-4-6-3 (50 layers), 3-4-23-3 (101) or 3-8-36-3 (152) times; global
 * average pooling and FC-1000.  Input 224×224×3.  Every convolution is
 * followed by batch normalisation (§3.4); the first block of a stage
 * projects its shortcut with a 1×1 convolution (option B, §3.3).  The
 * stride-2 of a stage sits on its 3×3 convolution (the common "v1.5"
 * placement; parameters are the same either way).  Trained with SGD and
 * momentum (§3.4).
 */
#include <stdio.h>

#include "zoo.h"

static struct zg_fm bottleneck(struct zgraph *g, const char *name,
			       struct zg_fm x, uint64_t w, unsigned stride,
			       bool project)
{
	struct zg_fm y, sc = x;
	char n[48];

	snprintf(n, sizeof(n), "%s.a", name);
	y = zg_conv_bn_relu(g, n, x, w, 1, 1, 1, ZG_SAME);
	snprintf(n, sizeof(n), "%s.b", name);
	y = zg_conv_bn_relu(g, n, y, w, 3, 3, stride, ZG_SAME);
	snprintf(n, sizeof(n), "%s.c.conv", name);
	y = zg_conv(g, n, y, 4 * w, 1, 1, 1, ZG_SAME, false);
	snprintf(n, sizeof(n), "%s.c.bn", name);
	y = zg_bn(g, n, y);
	if (project) {
		snprintf(n, sizeof(n), "%s.proj.conv", name);
		sc = zg_conv(g, n, x, 4 * w, 1, 1, stride, ZG_SAME, false);
		snprintf(n, sizeof(n), "%s.proj.bn", name);
		sc = zg_bn(g, n, sc);
	}
	snprintf(n, sizeof(n), "%s.add", name);
	y = zg_add(g, n, y, sc);
	snprintf(n, sizeof(n), "%s.relu", name);
	return zg_relu(g, n, y);
}

int zoo_build_resnet(struct zgraph *g, const struct zoo_model *m,
		     const struct zoo_args *a)
{
	static const unsigned blocks[][4] = {
		{ 3, 4, 6, 3 },	 /* 50 */
		{ 3, 4, 23, 3 }, /* 101 */
		{ 3, 8, 36, 3 }, /* 152 */
	};
	const unsigned *nb = blocks[m->variant < 3 ? m->variant : 0];
	struct zg_fm x = zg_image(g, a->batch, 3, 224, 224);
	char n[32];

	x = zg_conv_bn_relu(g, "stem", x, 64ull * a->scale, 7, 7, 2, ZG_SAME);
	x = zg_maxpool(g, "stem.pool", x, 3, 2, ZG_SAME);
	for (unsigned s = 0; s < 4; s++) {
		for (unsigned b = 0; b < nb[s]; b++) {
			snprintf(n, sizeof(n), "s%ub%u", s + 1, b + 1);
			x = bottleneck(g, n, x, (64ull << s) * a->scale,
				       b == 0 && s > 0 ? 2 : 1, b == 0);
		}
	}
	x = zg_gap(g, "gap", x);
	zg_softmax_xent(g, "loss",
			zg_linear(g, "fc", zg_flatten(x), 1000, true));
	return g->err;
}
