/* SPDX-License-Identifier: MIT */
/*
 * inception.c — Inception-V3 and Inception-V4.
 *
 * Inception-V3: Szegedy, Vanhoucke, Ioffe, Shlens & Wojna, "Rethinking the
 * Inception Architecture for Computer Vision", CVPR 2016, Table 1 and
 * Figures 5-7, with the filter counts of the released model (the Keras
 * Applications InceptionV3, whose table lists 23.9 M parameters without
 * the auxiliary head; we leave that head out too).  Input 299×299×3.
 *
 * Inception-V4: Szegedy, Ioffe, Vanhoucke & Alemi, "Inception-v4,
 * Inception-ResNet and the Impact of Residual Connections on Learning",
 * AAAI 2017, Figures 3 (stem), 4 (Inception-A), 5 (Inception-B),
 * 6 (Inception-C), 7 (Reduction-A with k, l, m, n = 192, 224, 256, 384,
 * Table 1) and 8 (Reduction-B); 4 + 7 + 3 blocks (Figure 9).  Input
 * 299×299×3.
 *
 * Every convolution is conv + batch norm + ReLU.  Trained with SGD and
 * momentum (the papers used RMSProp, whose one state tensor per weight
 * costs the same memory).
 */
#include <stdio.h>

#include "zoo.h"

struct net {
	struct zgraph *g;
	unsigned k; /* width scale */
	unsigned serial;
};

/* conv-bn-relu with an automatic name; channels scaled by the width. */
static struct zg_fm cbr(struct net *t, struct zg_fm x, unsigned c,
			unsigned kh, unsigned kw, unsigned s, enum zg_pad pad)
{
	char n[32];

	snprintf(n, sizeof(n), "c%u", ++t->serial);
	return zg_conv_bn_relu(t->g, n, x, (uint64_t)c * t->k, kh, kw, s,
			       pad);
}

static struct zg_fm cat(struct net *t, const struct zg_fm *p, unsigned n)
{
	char name[32];

	snprintf(name, sizeof(name), "cat%u", ++t->serial);
	return zg_concat(t->g, name, p, n);
}

static struct zg_fm maxp(struct net *t, struct zg_fm x, unsigned k,
			 unsigned s, enum zg_pad pad)
{
	char n[32];

	snprintf(n, sizeof(n), "maxpool%u", ++t->serial);
	return zg_maxpool(t->g, n, x, k, s, pad);
}

static struct zg_fm avgp(struct net *t, struct zg_fm x)
{
	char n[32];

	snprintf(n, sizeof(n), "avgpool%u", ++t->serial);
	return zg_avgpool(t->g, n, x, 3, 1, ZG_SAME);
}

/* ---- Inception-V3 -------------------------------------------------------- */

/* 35×35 block (Figure 5): 1×1; 1×1→5×5; 1×1→3×3→3×3; pool→1×1. */
static struct zg_fm v3_a(struct net *t, struct zg_fm x, unsigned pool_c)
{
	struct zg_fm b[4];

	b[0] = cbr(t, x, 64, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, cbr(t, x, 48, 1, 1, 1, ZG_SAME), 64, 5, 5, 1, ZG_SAME);
	b[2] = cbr(t, x, 64, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 96, 3, 3, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 96, 3, 3, 1, ZG_SAME);
	b[3] = cbr(t, avgp(t, x), pool_c, 1, 1, 1, ZG_SAME);
	return cat(t, b, 4);
}

/* 35→17 reduction. */
static struct zg_fm v3_ra(struct net *t, struct zg_fm x)
{
	struct zg_fm b[3];

	b[0] = cbr(t, x, 384, 3, 3, 2, ZG_VALID);
	b[1] = cbr(t, x, 64, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 96, 3, 3, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 96, 3, 3, 2, ZG_VALID);
	b[2] = maxp(t, x, 3, 2, ZG_VALID);
	return cat(t, b, 3);
}

/* 17×17 block (Figure 6) with factorised 7×7s of c channels. */
static struct zg_fm v3_b(struct net *t, struct zg_fm x, unsigned c)
{
	struct zg_fm b[4];

	b[0] = cbr(t, x, 192, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, x, c, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], c, 1, 7, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 192, 7, 1, 1, ZG_SAME);
	b[2] = cbr(t, x, c, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], c, 7, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], c, 1, 7, 1, ZG_SAME);
	b[2] = cbr(t, b[2], c, 7, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 192, 1, 7, 1, ZG_SAME);
	b[3] = cbr(t, avgp(t, x), 192, 1, 1, 1, ZG_SAME);
	return cat(t, b, 4);
}

/* 17→8 reduction. */
static struct zg_fm v3_rb(struct net *t, struct zg_fm x)
{
	struct zg_fm b[3];

	b[0] = cbr(t, cbr(t, x, 192, 1, 1, 1, ZG_SAME), 320, 3, 3, 2,
		   ZG_VALID);
	b[1] = cbr(t, x, 192, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 192, 1, 7, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 192, 7, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 192, 3, 3, 2, ZG_VALID);
	b[2] = maxp(t, x, 3, 2, ZG_VALID);
	return cat(t, b, 3);
}

/* 8×8 block (Figure 7) with the expanded 1×3 / 3×1 pairs. */
static struct zg_fm v3_c(struct net *t, struct zg_fm x)
{
	struct zg_fm b[6], s;

	b[0] = cbr(t, x, 320, 1, 1, 1, ZG_SAME);
	s = cbr(t, x, 384, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, s, 384, 1, 3, 1, ZG_SAME);
	b[2] = cbr(t, s, 384, 3, 1, 1, ZG_SAME);
	s = cbr(t, x, 448, 1, 1, 1, ZG_SAME);
	s = cbr(t, s, 384, 3, 3, 1, ZG_SAME);
	b[3] = cbr(t, s, 384, 1, 3, 1, ZG_SAME);
	b[4] = cbr(t, s, 384, 3, 1, 1, ZG_SAME);
	b[5] = cbr(t, avgp(t, x), 192, 1, 1, 1, ZG_SAME);
	return cat(t, b, 6);
}

static struct zg_fm v3(struct net *t, struct zg_fm x)
{
	x = cbr(t, x, 32, 3, 3, 2, ZG_VALID);
	x = cbr(t, x, 32, 3, 3, 1, ZG_VALID);
	x = cbr(t, x, 64, 3, 3, 1, ZG_SAME);
	x = maxp(t, x, 3, 2, ZG_VALID);
	x = cbr(t, x, 80, 1, 1, 1, ZG_VALID);
	x = cbr(t, x, 192, 3, 3, 1, ZG_VALID);
	x = maxp(t, x, 3, 2, ZG_VALID);
	x = v3_a(t, x, 32);
	x = v3_a(t, x, 64);
	x = v3_a(t, x, 64);
	x = v3_ra(t, x);
	x = v3_b(t, x, 128);
	x = v3_b(t, x, 160);
	x = v3_b(t, x, 160);
	x = v3_b(t, x, 192);
	x = v3_rb(t, x);
	x = v3_c(t, x);
	return v3_c(t, x);
}

/* ---- Inception-V4 -------------------------------------------------------- */

static struct zg_fm v4_stem(struct net *t, struct zg_fm x)
{
	struct zg_fm b[2];

	x = cbr(t, x, 32, 3, 3, 2, ZG_VALID);
	x = cbr(t, x, 32, 3, 3, 1, ZG_VALID);
	x = cbr(t, x, 64, 3, 3, 1, ZG_SAME);
	b[0] = maxp(t, x, 3, 2, ZG_VALID);
	b[1] = cbr(t, x, 96, 3, 3, 2, ZG_VALID);
	x = cat(t, b, 2);
	b[0] = cbr(t, cbr(t, x, 64, 1, 1, 1, ZG_SAME), 96, 3, 3, 1, ZG_VALID);
	b[1] = cbr(t, x, 64, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 64, 7, 1, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 64, 1, 7, 1, ZG_SAME);
	b[1] = cbr(t, b[1], 96, 3, 3, 1, ZG_VALID);
	x = cat(t, b, 2);
	b[0] = cbr(t, x, 192, 3, 3, 2, ZG_VALID);
	b[1] = maxp(t, x, 3, 2, ZG_VALID);
	return cat(t, b, 2);
}

static struct zg_fm v4_a(struct net *t, struct zg_fm x)
{
	struct zg_fm b[4];

	b[0] = cbr(t, avgp(t, x), 96, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, x, 96, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, cbr(t, x, 64, 1, 1, 1, ZG_SAME), 96, 3, 3, 1, ZG_SAME);
	b[3] = cbr(t, x, 64, 1, 1, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 96, 3, 3, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 96, 3, 3, 1, ZG_SAME);
	return cat(t, b, 4);
}

static struct zg_fm v4_ra(struct net *t, struct zg_fm x)
{
	struct zg_fm b[3];

	b[0] = maxp(t, x, 3, 2, ZG_VALID);
	b[1] = cbr(t, x, 384, 3, 3, 2, ZG_VALID);
	b[2] = cbr(t, x, 192, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 224, 3, 3, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 256, 3, 3, 2, ZG_VALID);
	return cat(t, b, 3);
}

static struct zg_fm v4_b(struct net *t, struct zg_fm x)
{
	struct zg_fm b[4];

	b[0] = cbr(t, avgp(t, x), 128, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, x, 384, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, x, 192, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 224, 1, 7, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 256, 7, 1, 1, ZG_SAME);
	b[3] = cbr(t, x, 192, 1, 1, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 192, 1, 7, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 224, 7, 1, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 224, 1, 7, 1, ZG_SAME);
	b[3] = cbr(t, b[3], 256, 7, 1, 1, ZG_SAME);
	return cat(t, b, 4);
}

static struct zg_fm v4_rb(struct net *t, struct zg_fm x)
{
	struct zg_fm b[3];

	b[0] = maxp(t, x, 3, 2, ZG_VALID);
	b[1] = cbr(t, cbr(t, x, 192, 1, 1, 1, ZG_SAME), 192, 3, 3, 2,
		   ZG_VALID);
	b[2] = cbr(t, x, 256, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 256, 1, 7, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 320, 7, 1, 1, ZG_SAME);
	b[2] = cbr(t, b[2], 320, 3, 3, 2, ZG_VALID);
	return cat(t, b, 3);
}

static struct zg_fm v4_c(struct net *t, struct zg_fm x)
{
	struct zg_fm b[6], s;

	b[0] = cbr(t, avgp(t, x), 256, 1, 1, 1, ZG_SAME);
	b[1] = cbr(t, x, 256, 1, 1, 1, ZG_SAME);
	s = cbr(t, x, 384, 1, 1, 1, ZG_SAME);
	b[2] = cbr(t, s, 256, 1, 3, 1, ZG_SAME);
	b[3] = cbr(t, s, 256, 3, 1, 1, ZG_SAME);
	s = cbr(t, x, 384, 1, 1, 1, ZG_SAME);
	s = cbr(t, s, 448, 3, 1, 1, ZG_SAME);
	s = cbr(t, s, 512, 1, 3, 1, ZG_SAME);
	b[4] = cbr(t, s, 256, 1, 3, 1, ZG_SAME);
	b[5] = cbr(t, s, 256, 3, 1, 1, ZG_SAME);
	return cat(t, b, 6);
}

static struct zg_fm v4(struct net *t, struct zg_fm x)
{
	x = v4_stem(t, x);
	for (int i = 0; i < 4; i++)
		x = v4_a(t, x);
	x = v4_ra(t, x);
	for (int i = 0; i < 7; i++)
		x = v4_b(t, x);
	x = v4_rb(t, x);
	for (int i = 0; i < 3; i++)
		x = v4_c(t, x);
	return x;
}

/* variant 3: Inception-V3; 4: Inception-V4. */
int zoo_build_inception(struct zgraph *g, const struct zoo_model *m,
			const struct zoo_args *a)
{
	struct net t = { g, a->scale, 0 };
	struct zg_fm x = zg_image(g, a->batch, 3, 299, 299);

	x = m->variant == 4 ? v4(&t, x) : v3(&t, x);
	x = zg_gap(g, "gap", x);
	zg_softmax_xent(g, "loss",
			zg_linear(g, "fc", zg_flatten(x), 1000, true));
	return g->err;
}
