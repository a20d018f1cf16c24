/* SPDX-License-Identifier: MIT */
/*
 * zoo.c — the model zoo by name (zoo.h).
 *
 * The published parameter counts are trainable weights; each line says
 * where its figure comes from.  tests/test_model_zoo.c checks ours against
 * them within 2%.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zoo.h"

static const struct zoo_model models[] = {
	{ "vgg16", "VGG-16", zoo_build_vgg, 16, 138.0e6,
	  "Simonyan & Zisserman 2015, Table 2" },
	{ "resnet50", "ResNet-50", zoo_build_resnet, 0, 25.6e6,
	  "Keras Applications table / torchvision" },
	{ "resnet101", "ResNet-101", zoo_build_resnet, 1, 44.5e6,
	  "Keras Applications table / torchvision" },
	{ "resnet152", "ResNet-152", zoo_build_resnet, 2, 60.2e6,
	  "Keras Applications table / torchvision" },
	{ "inception_v3", "Inception-V3", zoo_build_inception, 3, 23.9e6,
	  "Keras Applications table (no auxiliary head)" },
	{ "inception_v4", "Inception-V4", zoo_build_inception, 4, 42.7e6,
	  "timm inception_v4 (the paper gives no count)" },
	{ "densenet121", "DenseNet-121", zoo_build_densenet, 121, 8.0e6,
	  "Keras Applications table / torchvision" },
	{ "bert_base", "BERT-base s128", zoo_build_transformer, 0, 110e6,
	  "Devlin et al. 2019, section 3" },
	{ "bert_base_512", "BERT-base s512", zoo_build_transformer, 1, 110e6,
	  "Devlin et al. 2019, section 3" },
	{ "bert_large", "BERT-large s128", zoo_build_transformer, 2, 340e6,
	  "Devlin et al. 2019, section 3" },
	{ "bert_large_512", "BERT-large s512", zoo_build_transformer, 3,
	  340e6, "Devlin et al. 2019, section 3" },
	{ "gpt2_small", "GPT-2 small", zoo_build_transformer, 4, 124e6,
	  "released checkpoint (the paper's Table 2 says 117M)" },
	{ "gpt2_medium", "GPT-2 medium", zoo_build_transformer, 5, 355e6,
	  "released checkpoint (the paper's Table 2 says 345M)" },
	{ "transformer", "Transformer (TSPLIT)", zoo_build_transformer, 6,
	  65e6, "Vaswani et al. 2017, Table 3, base" },
	{ "mlp_compute", "MLP 12x4096 (GPU run)", zoo_build_mlp, 0,
	  256.0 * 4096 + 11.0 * 4096 * 4096 + 4096.0 * 10 + 12 * 4096 + 10,
	  "examples/mlp_gpu's shape: weights and biases counted" },
	{ "mlp_transfer", "MLP 24x1024 (GPU run)", zoo_build_mlp, 1,
	  256.0 * 1024 + 23.0 * 1024 * 1024 + 1024.0 * 10 + 24 * 1024 + 10,
	  "examples/mlp_gpu's shape: weights and biases counted" },
};

const struct zoo_model *zoo_models(size_t *n)
{
	*n = sizeof(models) / sizeof(models[0]);
	return models;
}

const struct zoo_model *zoo_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(models) / sizeof(models[0]);
	     i++)
		if (strcmp(models[i].name, name) == 0)
			return &models[i];
	return NULL;
}

int zoo_build(const struct zoo_model *m, const struct zoo_args *a,
	      struct zgraph *g)
{
	bool adam = m->build == zoo_build_transformer;
	int rc;

	zg_init(g, adam ? ZG_ADAM : ZG_SGD_MOMENTUM);
	if (!a->batch || !a->scale) {
		g->err = -EINVAL;
		snprintf(g->errmsg, sizeof(g->errmsg),
			 "%s: batch (%u) and scale (%u) must be at least 1",
			 m->name, a->batch, a->scale);
		return g->err;
	}
	rc = m->build(g, m, a);
	return rc < 0 ? rc : zg_finish(g);
}
