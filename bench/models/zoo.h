/* SPDX-License-Identifier: MIT */
/*
 * zoo.h — the model zoo: graph builders of one training iteration each,
 * by name.
 *
 * A builder emits, for a batch size and a width scale, the forward ops,
 * the backward ops and the optimizer steps of one iteration (graph.h).
 * The width scale multiplies every convolution's channels in a CNN and the
 * hidden size (and feed-forward size) of a transformer, as TSPLIT's
 * parameter scale does (TSPLIT §VI-B: "c1 × k channels after scaling").
 */
#ifndef ZOO_ZOO_H
#define ZOO_ZOO_H

#include <stddef.h>

#include "graph.h"

struct zoo_args {
	unsigned batch; /* samples per iteration, >= 1 */
	unsigned scale; /* width multiplier, >= 1 (1: the published model) */
};

struct zoo_model;
typedef int (*zoo_build_fn)(struct zgraph *g, const struct zoo_model *m,
			    const struct zoo_args *a);

struct zoo_model {
	const char *name;	   /* "resnet50": what --models takes */
	const char *title;	   /* "ResNet-50" */
	zoo_build_fn build;
	unsigned variant;	   /* depth or configuration, per family */
	double published_params;   /* trainable parameters, 0 if none */
	const char *params_source; /* where that figure comes from */
};

/* All models; *n receives their number. */
const struct zoo_model *zoo_models(size_t *n);

/* The model called `name`, or NULL. */
const struct zoo_model *zoo_find(const char *name);

/*
 * Initialises *g and builds model m into it, finished (zg_finish).
 * Returns 0, -EINVAL (bad arguments; message in g->errmsg) or -ENOMEM.
 * Free *g with zg_free whatever the result.
 */
int zoo_build(const struct zoo_model *m, const struct zoo_args *a,
	      struct zgraph *g);

/* The family builders (one file each). */
int zoo_build_vgg(struct zgraph *g, const struct zoo_model *m,
		  const struct zoo_args *a);
int zoo_build_resnet(struct zgraph *g, const struct zoo_model *m,
		     const struct zoo_args *a);
int zoo_build_inception(struct zgraph *g, const struct zoo_model *m,
			const struct zoo_args *a);
int zoo_build_densenet(struct zgraph *g, const struct zoo_model *m,
		       const struct zoo_args *a);
int zoo_build_transformer(struct zgraph *g, const struct zoo_model *m,
			  const struct zoo_args *a);
int zoo_build_mlp(struct zgraph *g, const struct zoo_model *m,
		  const struct zoo_args *a);

#endif /* ZOO_ZOO_H */
