/* SPDX-License-Identifier: MIT */
/*
 * dp_host.c — the collectives of dp_grads.h on host memory, over MPI
 * (dp_comm.h): what runs on the sim, whose backed memory is host memory.
 *
 * Sums are deterministic: every contribution (rank r, micro-batch k) is
 * gathered, then added in the order (0,0), (0,1) .. (N-1,M-1), starting
 * from the first one itself (not from zero, which would turn a -0.0 into
 * +0.0), and the sum multiplied by 1/(N x M).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dp_grads.h"

/* Packs micro-batch k's gradients of bucket b into flat[0 .. floats). */
static void pack(const struct dp_bucket *b, void *const *in, unsigned mb,
		 unsigned k, float *flat)
{
	for (unsigned p = 0; p < b->n_params; p++)
		memcpy(flat + b->param[p].off, in[p * mb + k],
		       b->param[p].count * sizeof(float));
}

/* acc[0..len) = scale x (c_0 + c_1 + ... + c_{n-1}), c_i at i x stride. */
static void ordered_sum(const float *c, unsigned n, size_t stride,
			size_t len, float scale, float *acc)
{
	memcpy(acc, c, len * sizeof(float));
	for (unsigned i = 1; i < n; i++) {
		const float *ci = c + (size_t)i * stride;

		for (size_t j = 0; j < len; j++)
			acc[j] += ci[j];
	}
	for (size_t j = 0; j < len; j++)
		acc[j] *= scale;
}

/* Writes the elements [lo, hi) of bucket b's flat layout into its
 * tensors out[p]; element i is at src[i - lo]. */
static void unpack_range(const struct dp_bucket *b, const float *src,
			 size_t lo, size_t hi, void *const *out)
{
	for (unsigned p = 0; p < b->n_params; p++) {
		const struct dp_param *pp = &b->param[p];
		size_t a = pp->off > lo ? pp->off : lo;
		size_t e = pp->off + pp->count < hi ? pp->off + pp->count : hi;

		if (a < e)
			memcpy((float *)out[p] + (a - pp->off), src + (a - lo),
			       (e - a) * sizeof(float));
	}
}

static int host_allreduce(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct dp_bucket *b = user;
	const struct dp_comm *c = dp_trainer_comm(b->t);
	unsigned mb = dp_trainer_micro(b->t), all = (unsigned)c->size * mb;
	size_t len = b->floats;
	float *send = malloc(sizeof(float) * len * mb);
	float *recv = malloc(sizeof(float) * len * all);
	float *acc = malloc(sizeof(float) * len);
	int rc = -ENOMEM;

	(void)stream;
	if (send && recv && acc) {
		for (unsigned k = 0; k < mb; k++)
			pack(b, in, mb, k, send + k * len);
		rc = dp_comm_allgather(c, send, sizeof(float) * len * mb,
				       recv);
	}
	if (rc == 0) {
		/* recv holds rank r's micro-batch k at (r x M + k) x len. */
		ordered_sum(recv, all, len, len, 1.0f / (float)all, acc);
		unpack_range(b, acc, 0, len, out);
	}
	free(send);
	free(recv);
	free(acc);
	return rc;
}

static int host_reduce_scatter(void *const *in, void *const *out,
			       void *user, void *stream)
{
	const struct dp_bucket *b = user;
	const struct dp_comm *c = dp_trainer_comm(b->t);
	unsigned mb = dp_trainer_micro(b->t), all = (unsigned)c->size * mb;
	size_t part = b->shard, whole = part * c->size;
	float *flat = calloc(whole * mb, sizeof(float));
	float *send = malloc(sizeof(float) * whole * mb);
	float *recv = malloc(sizeof(float) * part * all);
	float *acc = malloc(sizeof(float) * (part ? part : 1));
	int rc = -ENOMEM;

	(void)stream;
	if (flat && send && recv && acc) {
		/* flat: micro-batch k's bucket at k x whole, zero-padded to
		 * N parts; send: for rank q, its part of every micro-batch,
		 * at (q x M + k) x part. */
		for (unsigned k = 0; k < mb; k++)
			pack(b, in, mb, k, flat + k * whole);
		for (int q = 0; q < c->size; q++)
			for (unsigned k = 0; k < mb; k++)
				memcpy(send + ((size_t)q * mb + k) * part,
				       flat + k * whole + (size_t)q * part,
				       part * sizeof(float));
		rc = dp_comm_alltoall(c, send, sizeof(float) * part * mb,
				      recv);
	}
	if (rc == 0 && b->hi > b->lo) {
		/* recv: rank q's micro-batch k of this rank's part at
		 * (q x M + k) x part: the all-reduce's order. */
		ordered_sum(recv, all, part, b->hi - b->lo,
			    1.0f / (float)all, acc);
		unpack_range(b, acc, b->lo, b->hi, out);
	}
	free(flat);
	free(send);
	free(recv);
	free(acc);
	return rc;
}

static int host_allgather(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct dp_bucket *b = user;
	const struct dp_comm *c = dp_trainer_comm(b->t);
	size_t len = b->floats, part = b->shard, whole = part * c->size;
	float *flat = calloc(whole, sizeof(float));
	float *recv = malloc(sizeof(float) * whole);
	int rc = -ENOMEM;

	(void)stream;
	if (flat && recv) {
		pack(b, in, 1, 0, flat);
		rc = dp_comm_allgather(c, flat + b->lo,
				       sizeof(float) * part, recv);
	}
	/* recv holds rank q's part at q x part: the bucket's flat layout. */
	if (rc == 0)
		unpack_range(b, recv, 0, len, out);
	free(flat);
	free(recv);
	return rc;
}

static const struct dp_transport host_transport = {
	.allreduce = host_allreduce,
	.reduce_scatter = host_reduce_scatter,
	.allgather = host_allgather,
};

const struct dp_transport *dp_host_transport(void)
{
	return &host_transport;
}
