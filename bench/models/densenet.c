/* SPDX-License-Identifier: MIT */
/*
 * densenet.c — DenseNet-121.
 *
 * Shapes: Huang, Liu, van der Maaten & Weinberger, "Densely Connected
 * Convolutional Networks", CVPR 2017, Table 1 (DenseNet-121, growth rate
 * k = 32): a 7×7/2 convolution of 2k channels and a 3×3/2 max pool; dense
 * blocks of 6, 12, 24 and 16 layers, each layer BN-ReLU-Conv(1×1, 4k)
 * -BN-ReLU-Conv(3×3, k) (the "B" bottleneck of §3); transitions
 * BN-ReLU-Conv(1×1) halving the channels ("C", compression 0.5) and a 2×2
 * average pool; a final BN-ReLU, global average pooling and FC-1000.
 * Input 224×224×3.  The 8.0 M parameters are the Keras Applications /
 * torchvision count.
 *
 * Each layer concatenates its output to all earlier ones with a fresh
 * buffer, as a plain framework implementation does; that is what makes
 * DenseNet's memory grow quadratically with depth (Pleiss et al., 2017).
 */
#include <stdio.h>

#include "zoo.h"

static struct zg_fm bn_relu_conv(struct zgraph *g, const char *name,
				 struct zg_fm x, uint64_t c, unsigned k)
{
	char n[48];

	snprintf(n, sizeof(n), "%s.bn", name);
	x = zg_bn(g, n, x);
	snprintf(n, sizeof(n), "%s.relu", name);
	x = zg_relu(g, n, x);
	snprintf(n, sizeof(n), "%s.conv", name);
	return zg_conv(g, n, x, c, k, k, 1, ZG_SAME, false);
}

int zoo_build_densenet(struct zgraph *g, const struct zoo_model *m,
		       const struct zoo_args *a)
{
	static const unsigned layers[] = { 6, 12, 24, 16 };
	uint64_t k = 32ull * a->scale;
	struct zg_fm x = zg_image(g, a->batch, 3, 224, 224);
	char n[48];

	(void)m;
	x = zg_conv_bn_relu(g, "stem", x, 2 * k, 7, 7, 2, ZG_SAME);
	x = zg_maxpool(g, "stem.pool", x, 3, 2, ZG_SAME);
	for (unsigned b = 0; b < 4; b++) {
		for (unsigned l = 0; l < layers[b]; l++) {
			struct zg_fm parts[2];

			snprintf(n, sizeof(n), "d%ul%u.1", b + 1, l + 1);
			parts[1] = bn_relu_conv(g, n, x, 4 * k, 1);
			snprintf(n, sizeof(n), "d%ul%u.2", b + 1, l + 1);
			parts[1] = bn_relu_conv(g, n, parts[1], k, 3);
			parts[0] = x;
			snprintf(n, sizeof(n), "d%ul%u.cat", b + 1, l + 1);
			x = zg_concat(g, n, parts, 2);
		}
		if (b == 3)
			break;
		snprintf(n, sizeof(n), "t%u", b + 1);
		x = bn_relu_conv(g, n, x, x.c / 2, 1);
		snprintf(n, sizeof(n), "t%u.pool", b + 1);
		x = zg_avgpool(g, n, x, 2, 2, ZG_VALID);
	}
	x = zg_relu(g, "final.relu", zg_bn(g, "final.bn", x));
	x = zg_gap(g, "gap", x);
	zg_softmax_xent(g, "loss",
			zg_linear(g, "fc", zg_flatten(x), 1000, true));
	return g->err;
}
