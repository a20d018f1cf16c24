/* SPDX-License-Identifier: MIT */
/*
 * graph.h — the model zoo's graph IR: one training iteration as an op list.
 *
 * A model builder calls the layer helpers below in forward order.  Each
 * helper emits the forward op at once and notes on a tape what its
 * backward needs (the saved forward tensors, the inputs that want a
 * gradient, the weights).  zg_finish() then walks the tape in reverse to
 * emit the backward ops, which read those saved tensors, so an activation
 * lives from its forward op to its last backward use as it would in a
 * framework; then it emits one optimizer step per weight.  The result is a
 * flat list of ops over tensor ids that bench/models/drive.c runs through
 * tmm_run.
 *
 * Splitting (TSPLIT): each tensor knows the rows of its sample dimension
 * (images, or tokens; outermost, as frameworks lay them out), and each op
 * that has some is marked splittable into them (zg_op.slice_extent, with
 * zgraph.sliced saying which of its tensors are cut), so that the runtime
 * may run it as micro-ops.  The ops are cost-only on a phantom device: no
 * callback is needed, only the shape.
 *
 * Sizes are fp32 (4 bytes an element).  FLOPs count a multiply-add as two.
 */
#ifndef ZOO_GRAPH_H
#define ZOO_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensormm.h"

/* A tensor id: an index into zgraph.t. */
typedef uint32_t zg_t;
#define ZG_NONE UINT32_MAX

/* The most inputs (or outputs) one layer helper takes. */
#define ZG_MAX_IO 8

/*
 * cuDNN-like convolution workspaces (conv_algo.c).  A convolution op (the
 * forward, and the backward with its data and filter gradients) may run
 * with any of a few algorithms, fastest first: each needs `ws` bytes of
 * workspace and takes `time` times as long as the fastest.  The last
 * needs none, and the op's cost hint is its time (the roofline of the
 * op's FLOPs, as the zoo timed every convolution before workspaces were
 * modelled): a faster algorithm takes its time over the last's.  The op
 * has one more output for it, a SCRATCH tensor (zg_op.ws) of the
 * fastest's need, so that the tracker and every plan see the
 * memory; the driver sizes it for the algorithm it picks (drive.h:
 * drive_ws) and destroys it after the op.
 */
#define ZG_MAX_ALGOS 4
#define ZG_WS_MIN 256 /* the tensor of an algorithm needing none: a
		       * tensor cannot be empty, and each iteration must
		       * make the same tensors for plans to follow */

struct zg_algo {
	uint64_t ws;  /* workspace bytes */
	double time;  /* duration relative to the fastest (1.0) */
};

struct zg_conv_shape {
	uint64_t n, c, h, w;	 /* input */
	uint64_t k, ho, wo;	 /* output channels and extent */
	unsigned kh, kw, stride;
};

/* The algorithms for a convolution of shape s, fastest first, into a
 * (ZG_MAX_ALGOS); returns how many (at least one). */
unsigned zg_conv_algos(const struct zg_conv_shape *s, struct zg_algo *a);

/*
 * Whose buffers the layer helpers model.  FUSED: one op per layer with
 * the tensors its backward needs (graph.h above), no dropout.  TF1:
 * TensorFlow 1.x running BERT's own code (google-research/bert,
 * modeling.py), op by op: each elementwise step of GELU and layer norm a
 * TensorFlow op whose gradient keeps its inputs, dropout keeping a fp32
 * mask, the attention heads transposed into copies (layers.c says which
 * buffer models what).
 */
enum zg_framework {
	ZG_FW_FUSED = 0,
	ZG_FW_TF1 = 1,
};

enum zg_optimizer {
	ZG_SGD_MOMENTUM = 0, /* one state tensor (velocity) per weight */
	ZG_ADAM = 1,	     /* two state tensors (m, v) per weight */
};

struct zg_tensor {
	uint64_t bytes;
	enum tmm_kind kind;
	bool param;	 /* a trainable weight (counted in zg_params) */
	bool needs_grad; /* a gradient flows back to it */
	uint32_t producer; /* first op writing it; UINT32_MAX if none */
	uint32_t last_use; /* last op reading or writing it */
	zg_t grad;	   /* its current gradient (while finishing) */
	bool stepped;	   /* a weight whose optimizer step is emitted */
	uint64_t rows;	   /* of its sample dimension; 0: it has none (a
			    * weight, optimizer state, BN statistics, the
			    * loss) */
	char name[40];
};

struct zg_op {
	char name[48];
	enum tmm_op_kind kind;
	unsigned flags;		 /* TMM_OP_PURE, TMM_OP_BACKWARD */
	uint64_t in_at, out_at;	 /* offsets into zgraph.ids */
	uint32_t n_in, n_out;
	double flops, bytes;	 /* the cost hint */
	double net_bytes;	 /* ... a collective's network bytes (0:
				  * none; bench/bench_scaling.c adds
				  * collectives) */
	uint64_t slice_extent;	 /* TSPLIT rows; 0: it does not split */
	zg_t ws;		 /* its workspace (SCRATCH, its last output),
				  * or ZG_NONE */
	struct zg_algo algo[ZG_MAX_ALGOS]; /* with ws: fastest first */
	unsigned n_algo;
};

struct zg_tape_entry;

struct zgraph {
	struct zg_tensor *t;
	uint32_t nt, ct;
	struct zg_op *op;
	uint32_t nop, cop;
	zg_t *ids; /* the ops' input and output lists, back to back */
	uint64_t nids, cids;
	/* Parallel to ids: nonzero where the op cuts the tensor into its
	 * slice_extent rows (tmm_op.sliced of the op is sliced + in_at). */
	unsigned char *sliced;
	uint64_t csliced;
	struct zg_tape_entry *tape;
	uint32_t ntape, ctape;
	enum zg_optimizer optimizer;
	/* Each weight's optimizer step right after its last gradient, in
	 * the backward pass (as examples/mlp_model.c does, so gradients
	 * die early), not all of them after it (as most frameworks do). */
	bool update_early;
	/* The iteration's tensors are destroyed when it ends, not after
	 * their last use (examples/mlp_model.c: the dead ones are the
	 * plan's to drop, by liveness). */
	bool destroy_at_end;
	enum zg_framework framework;
	/* Dropout's probability is not modelled, its memory is: the bytes
	 * of the mask an element keeps for the backward (0: no dropout
	 * ops; 4 with TF1, a fp32 mask). */
	unsigned dropout_mask_bytes;
	uint32_t n_forward; /* ops before the first backward op */
	bool finished;
	int err; /* sticky: the first error (-ENOMEM, -EINVAL) */
	char errmsg[160];
};

/* An empty graph whose weights will be trained with `opt`. */
void zg_init(struct zgraph *g, enum zg_optimizer opt);
void zg_free(struct zgraph *g);

/* Records the graph's first error (later ones are dropped). */
void zg_fail(struct zgraph *g, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- tensors ------------------------------------------------------------- */

/* A trainable weight of `elems` fp32 elements (PERSISTENT). */
zg_t zg_param(struct zgraph *g, const char *name, uint64_t elems);

/*
 * An input of the iteration (images, token ids, labels) of `bytes` bytes
 * in `rows` samples, made by a data-loading op with no inputs (on a
 * phantom device this is how a tensor gets "written": tmm_tensor_write is
 * refused there).
 */
zg_t zg_input(struct zgraph *g, const char *name, uint64_t bytes,
	      uint64_t rows);

/* ---- the generic layer --------------------------------------------------- */

/*
 * One forward op with its backward.  Inputs that need a gradient get one;
 * every param gets one.  `save_in` / `save_out` are bit masks of the inputs
 * and outputs that the backward op reads (bit i = in[i] or out[i]); the
 * backward also reads the gradients of the outputs and the params.
 * `rows` is the outputs' sample rows (images, tokens; 0: the layer does
 * not split), but for the outputs in the `unbatched_out` mask, which have
 * no sample dimension (BN statistics, the loss).  With
 * `passthrough`, the backward is no op at all: each input's gradient is
 * the output's (a residual add).  With `seed`, the layer is the loss: its
 * backward reads no output gradient and starts the backward pass.
 */
struct zg_layer {
	const char *name;
	enum tmm_op_kind kind;
	bool impure;	   /* the forward is not a function of its inputs */
	zg_t in[ZG_MAX_IO];
	unsigned n_in;
	zg_t param[ZG_MAX_IO];
	unsigned n_param;
	uint64_t out_bytes[ZG_MAX_IO];
	unsigned n_out;
	unsigned save_in, save_out;
	uint64_t rows;
	unsigned unbatched_out;
	double flops;	   /* forward */
	double bwd_flops;  /* backward (0: same as forward) */
	bool passthrough, seed;
	/* A convolution: the algorithms of its forward and of its backward
	 * (0: no workspace). */
	struct zg_algo algo[ZG_MAX_ALGOS], bwd_algo[ZG_MAX_ALGOS];
	unsigned n_algo, n_bwd_algo;
	zg_t out[ZG_MAX_IO]; /* filled by zg_layer */
};

/* Emits the layer; returns out[0] (ZG_NONE on error, see g->err). */
zg_t zg_layer(struct zgraph *g, struct zg_layer *l);

/* ---- CNN helpers: activations are NCHW, `struct zg_fm` a feature map ----- */

struct zg_fm {
	zg_t t;
	uint64_t n, c, h, w;
};

enum zg_pad { ZG_VALID, ZG_SAME };

/* Convolution kh×kw, stride s, with or without a bias. */
struct zg_fm zg_conv(struct zgraph *g, const char *name, struct zg_fm x,
		     uint64_t cout, unsigned kh, unsigned kw, unsigned s,
		     enum zg_pad pad, bool bias);
/* Batch normalisation (gamma and beta trained). */
struct zg_fm zg_bn(struct zgraph *g, const char *name, struct zg_fm x);
struct zg_fm zg_relu(struct zgraph *g, const char *name, struct zg_fm x);
/* conv + BN + ReLU, the unit of ResNet and Inception. */
struct zg_fm zg_conv_bn_relu(struct zgraph *g, const char *name,
			     struct zg_fm x, uint64_t cout, unsigned kh,
			     unsigned kw, unsigned s, enum zg_pad pad);
struct zg_fm zg_maxpool(struct zgraph *g, const char *name, struct zg_fm x,
			unsigned k, unsigned s, enum zg_pad pad);
struct zg_fm zg_avgpool(struct zgraph *g, const char *name, struct zg_fm x,
			unsigned k, unsigned s, enum zg_pad pad);
/* Global average pooling to c×1×1. */
struct zg_fm zg_gap(struct zgraph *g, const char *name, struct zg_fm x);
/* Elementwise sum of two maps of one shape (residual). */
struct zg_fm zg_add(struct zgraph *g, const char *name, struct zg_fm a,
		    struct zg_fm b);
/* Concatenation along channels (same n, h, w). */
struct zg_fm zg_concat(struct zgraph *g, const char *name,
		       const struct zg_fm *parts, unsigned n);
/* Image input n×c×h×w and its labels. */
struct zg_fm zg_image(struct zgraph *g, uint64_t n, uint64_t c, uint64_t h,
		      uint64_t w);

/* ---- dense helpers: activations are rows × features ---------------------- */

struct zg_mat {
	zg_t t;
	uint64_t rows, cols;
};

/* y = x W + b (W: cols × out). */
struct zg_mat zg_linear(struct zgraph *g, const char *name, struct zg_mat x,
			uint64_t out, bool bias);
struct zg_mat zg_layernorm(struct zgraph *g, const char *name,
			   struct zg_mat x);
struct zg_mat zg_gelu(struct zgraph *g, const char *name, struct zg_mat x);
struct zg_mat zg_mrelu(struct zgraph *g, const char *name, struct zg_mat x);
struct zg_mat zg_madd(struct zgraph *g, const char *name, struct zg_mat a,
		      struct zg_mat b);
/*
 * Dropout (training): y and the mask its backward reads, of
 * g->dropout_mask_bytes an element; with 0, x itself (no op).
 */
struct zg_mat zg_dropout(struct zgraph *g, const char *name, struct zg_mat x);
/* Flattens a feature map into n × (c h w) rows (a view: no op). */
struct zg_mat zg_flatten(struct zg_fm x);

/*
 * Multi-head attention over `batch` sequences: queries from q (batch·sq
 * rows), keys and values from kv (batch·skv rows), `heads` heads, the
 * width of q; causal masks the future.  kv == q (same t) is
 * self-attention, with one fused QKV projection.  Returns the output
 * projection (before any residual).
 */
struct zg_mat zg_attention(struct zgraph *g, const char *name,
			   struct zg_mat q, struct zg_mat kv, uint64_t batch,
			   unsigned heads, bool causal);

/*
 * Token embedding lookup: ids (rows int32) into a table of vocab × width
 * (the table is returned in *table so a head may tie to it).
 */
struct zg_mat zg_embedding(struct zgraph *g, const char *name, zg_t ids,
			   uint64_t rows, uint64_t vocab, uint64_t width,
			   zg_t *table);
/* Adds a learned position (or segment) table of `n` × width rows. */
struct zg_mat zg_add_table(struct zgraph *g, const char *name,
			   struct zg_mat x, uint64_t n);
/* logits = x · tableᵀ (a head tied to an embedding table). */
struct zg_mat zg_tied_head(struct zgraph *g, const char *name,
			   struct zg_mat x, zg_t table, uint64_t vocab);

/* Softmax cross-entropy of logits against labels (rows int32): the loss. */
void zg_softmax_xent(struct zgraph *g, const char *name, struct zg_mat logits);

/* ---- finishing ----------------------------------------------------------- */

/*
 * Emits the backward pass and the optimizer steps, then computes each
 * tensor's producer and last use.  Returns 0 or g->err.
 */
int zg_finish(struct zgraph *g);

/* Trainable parameters (elements of the weights). */
uint64_t zg_params(const struct zgraph *g);

/*
 * Checks the finished graph: every input of an op is a persistent tensor or
 * was produced by an earlier op; every activation made in the forward pass
 * is read by a later op.  Returns 0, or -EINVAL with the first problem in
 * msg.
 */
int zg_check(const struct zgraph *g, char *msg, size_t len);

/* The ids of op `i`'s inputs and outputs. */
static inline const zg_t *zg_inputs(const struct zgraph *g, uint32_t i)
{
	return g->ids + g->op[i].in_at;
}

static inline const zg_t *zg_outputs(const struct zgraph *g, uint32_t i)
{
	return g->ids + g->op[i].out_at;
}

#endif /* ZOO_GRAPH_H */
