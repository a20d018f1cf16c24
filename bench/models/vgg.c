/* SPDX-License-Identifier: MIT */
/*
 * vgg.c — VGG-16.
 *
 * Shapes: Simonyan & Zisserman, "Very Deep Convolutional Networks for
 * Large-Scale Image Recognition", ICLR 2015, Table 1 column D: thirteen
 * 3×3 convolutions (stride 1, padding 1, with bias) in five blocks of
 * 64, 128, 256, 512, 512 channels, each block closed by a 2×2 max pool;
 * then FC-4096, FC-4096, FC-1000.  Input 224×224×3.  Table 2 of the paper
 * gives 138 M parameters.  Trained with SGD and momentum, as in §3.1.
 */
#include <stdio.h>

#include "zoo.h"

int zoo_build_vgg(struct zgraph *g, const struct zoo_model *m,
		  const struct zoo_args *a)
{
	/* channels per conv; 0 is a max pool */
	static const unsigned cfg[] = { 64, 64, 0, 128, 128, 0, 256, 256,
					256, 0, 512, 512, 512, 0, 512, 512,
					512, 0 };
	struct zg_fm x = zg_image(g, a->batch, 3, 224, 224);
	struct zg_mat h;
	unsigned conv = 0, pool = 0;
	char n[32];

	(void)m;
	for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
		if (!cfg[i]) {
			snprintf(n, sizeof(n), "pool%u", ++pool);
			x = zg_maxpool(g, n, x, 2, 2, ZG_VALID);
			continue;
		}
		snprintf(n, sizeof(n), "conv%u", ++conv);
		x = zg_conv(g, n, x, (uint64_t)cfg[i] * a->scale, 3, 3, 1,
			    ZG_SAME, true);
		snprintf(n, sizeof(n), "relu%u", conv);
		x = zg_relu(g, n, x);
	}
	h = zg_flatten(x);
	h = zg_mrelu(g, "fc6.relu", zg_linear(g, "fc6", h, 4096, true));
	h = zg_mrelu(g, "fc7.relu", zg_linear(g, "fc7", h, 4096, true));
	h = zg_linear(g, "fc8", h, 1000, true);
	zg_softmax_xent(g, "loss", h);
	return g->err;
}
