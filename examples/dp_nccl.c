/* SPDX-License-Identifier: MIT */
/*
 * dp_nccl.c — mlp_dp on the cuda backend (dp_nccl.h): the GPU's MLP ops,
 * and the collectives of dp_grads.h with NCCL on the compute stream.
 *
 * The sums stay deterministic as on the host (dp_host.c): NCCL only
 * moves bytes (all-gather, or grouped sends and receives for the
 * reduce-scatter), and the sum is cuBLAS's saxpy of each contribution in
 * rank order onto the first, then sscal by 1/(N x M): both elementwise,
 * one rounding per addition, the host loop's arithmetic.  NCCL's own
 * reductions are not used: their order follows the ring, not the ranks.
 *
 * The staging buffers (a bucket's contributions, gathered) are plain
 * cudaMalloc memory outside the context's budget, grown to the largest
 * bucket and kept; docs/scaling.md says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
/* nccl.h declares ncclGroupStart() and friends without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "dp_nccl.h"
#include "mlp_gpu_train.h"

enum {
	NCCL_OK = 0,
	NCCL_NO_BLAS,	/* mlp_gpu_blas_open failed */
	NCCL_NO_COMM,	/* ncclGetUniqueId, the broadcast or the init */
	NCCL_NO_MEMORY,
	NCCL_NO_DEVICE, /* cudaSetDevice failed */
};

struct nccl_state {
	ncclComm_t comm;
	cublasHandle_t blas;
	float *stage[3];	/* staging buffers, grown as needed */
	size_t stage_floats[3];
};

static int cuda_failed(const char *what, cudaError_t e)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "mlp_dp: %s: %s\n", what, cudaGetErrorString(e));
	return -EIO;
}

static int nccl_failed(const char *what, ncclResult_t r)
{
	if (r == ncclSuccess)
		return 0;
	fprintf(stderr, "mlp_dp: %s: %s\n", what, ncclGetErrorString(r));
	return -EIO;
}

static int blas_failed(const char *what, cublasStatus_t st)
{
	if (st == CUBLAS_STATUS_SUCCESS)
		return 0;
	fprintf(stderr, "mlp_dp: %s: %s\n", what, cublasGetStatusString(st));
	return -EIO;
}

/* Staging buffer k of at least `floats` floats. */
static int stage(struct nccl_state *s, unsigned k, size_t floats,
		 float **out)
{
	if (s->stage_floats[k] < floats) {
		int rc;

		cudaFree(s->stage[k]);
		s->stage[k] = NULL;
		s->stage_floats[k] = 0;
		rc = cuda_failed("cudaMalloc(staging)",
				 cudaMalloc((void **)&s->stage[k],
					    floats * sizeof(float)));
		if (rc)
			return rc;
		s->stage_floats[k] = floats;
	}
	*out = s->stage[k];
	return 0;
}

static struct nccl_state *state_of(const struct dp_bucket *b)
{
	return dp_trainer_transport_arg(b->t);
}

/* Copies micro-batch k's gradients of b into flat, on the stream. */
static int pack(const struct dp_bucket *b, void *const *in, unsigned mb,
		unsigned k, float *flat, cudaStream_t st)
{
	for (unsigned p = 0; p < b->n_params; p++) {
		int rc = cuda_failed("cudaMemcpyAsync(pack)",
			cudaMemcpyAsync(flat + b->param[p].off,
					in[p * mb + k],
					b->param[p].count * sizeof(float),
					cudaMemcpyDeviceToDevice, st));
		if (rc)
			return rc;
	}
	return 0;
}

/* Elements [lo, hi) of b's flat layout, at src[i - lo], into out[p]. */
static int unpack_range(const struct dp_bucket *b, const float *src,
			size_t lo, size_t hi, void *const *out,
			cudaStream_t st)
{
	for (unsigned p = 0; p < b->n_params; p++) {
		const struct dp_param *pp = &b->param[p];
		size_t a = pp->off > lo ? pp->off : lo;
		size_t e = pp->off + pp->count < hi ? pp->off + pp->count : hi;
		int rc;

		if (a >= e)
			continue;
		rc = cuda_failed("cudaMemcpyAsync(unpack)",
			cudaMemcpyAsync((float *)out[p] + (a - pp->off),
					src + (a - lo), (e - a) * sizeof(float),
					cudaMemcpyDeviceToDevice, st));
		if (rc)
			return rc;
	}
	return 0;
}

/* acc = scale x (c_0 + ... + c_{n-1}), c_i at i x stride: in order. */
static int ordered_sum(struct nccl_state *s, const float *c, unsigned n,
		       size_t stride, size_t len, float scale, float *acc,
		       cudaStream_t st)
{
	const float one = 1.0f;
	int rc = blas_failed("cublasSetStream", cublasSetStream(s->blas, st));

	if (rc == 0)
		rc = cuda_failed("cudaMemcpyAsync(sum)",
				 cudaMemcpyAsync(acc, c, len * sizeof(float),
						 cudaMemcpyDeviceToDevice, st));
	for (unsigned i = 1; rc == 0 && i < n; i++)
		rc = blas_failed("cublasSaxpy",
				 cublasSaxpy(s->blas, (int)len, &one,
					     c + (size_t)i * stride, 1, acc,
					     1));
	if (rc == 0)
		rc = blas_failed("cublasSscal",
				 cublasSscal(s->blas, (int)len, &scale, acc,
					     1));
	return rc;
}

static int nccl_allreduce(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct dp_bucket *b = user;
	struct nccl_state *s = state_of(b);
	const struct dp_comm *c = dp_trainer_comm(b->t);
	unsigned mb = dp_trainer_micro(b->t), all = (unsigned)c->size * mb;
	size_t len = b->floats;
	cudaStream_t st = stream;
	float *send, *recv, *acc;
	int rc;

	if ((rc = stage(s, 0, len * mb, &send)) ||
	    (rc = stage(s, 1, len * all, &recv)) ||
	    (rc = stage(s, 2, len, &acc)))
		return rc;
	for (unsigned k = 0; rc == 0 && k < mb; k++)
		rc = pack(b, in, mb, k, send + k * len, st);
	if (rc == 0)
		rc = nccl_failed("ncclAllGather",
				 ncclAllGather(send, recv, len * mb,
					       ncclFloat, s->comm, st));
	if (rc == 0)
		rc = ordered_sum(s, recv, all, len, len, 1.0f / (float)all,
				 acc, st);
	if (rc == 0)
		rc = unpack_range(b, acc, 0, len, out, st);
	return rc;
}

static int nccl_reduce_scatter(void *const *in, void *const *out,
			       void *user, void *stream)
{
	const struct dp_bucket *b = user;
	struct nccl_state *s = state_of(b);
	const struct dp_comm *c = dp_trainer_comm(b->t);
	unsigned mb = dp_trainer_micro(b->t), all = (unsigned)c->size * mb;
	size_t part = b->shard, whole = part * c->size;
	cudaStream_t st = stream;
	float *flat, *recv, *acc;
	int rc;

	if ((rc = stage(s, 0, whole * mb, &flat)) ||
	    (rc = stage(s, 1, part * all, &recv)) ||
	    (rc = stage(s, 2, part, &acc)))
		return rc;
	rc = cuda_failed("cudaMemsetAsync",
			 cudaMemsetAsync(flat, 0, whole * mb * sizeof(float),
					 st));
	for (unsigned k = 0; rc == 0 && k < mb; k++)
		rc = pack(b, in, mb, k, flat + k * whole, st);
	/* Rank q's part of micro-batch k goes to q, who keeps it at
	 * (r x M + k) x part: the all-reduce's order. */
	if (rc == 0)
		rc = nccl_failed("ncclGroupStart", ncclGroupStart());
	for (int q = 0; rc == 0 && q < c->size; q++)
		for (unsigned k = 0; rc == 0 && k < mb; k++) {
			rc = nccl_failed("ncclSend",
				ncclSend(flat + k * whole + (size_t)q * part,
					 part, ncclFloat, q, s->comm, st));
			if (rc == 0)
				rc = nccl_failed("ncclRecv",
					ncclRecv(recv + ((size_t)q * mb + k) *
						 part, part, ncclFloat, q,
						 s->comm, st));
		}
	if (rc == 0)
		rc = nccl_failed("ncclGroupEnd", ncclGroupEnd());
	if (rc == 0 && b->hi > b->lo)
		rc = ordered_sum(s, recv, all, part, b->hi - b->lo,
				 1.0f / (float)all, acc, st);
	if (rc == 0)
		rc = unpack_range(b, acc, b->lo, b->hi, out, st);
	return rc;
}

static int nccl_allgather(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct dp_bucket *b = user;
	struct nccl_state *s = state_of(b);
	const struct dp_comm *c = dp_trainer_comm(b->t);
	size_t part = b->shard, whole = part * c->size;
	cudaStream_t st = stream;
	float *flat, *recv;
	int rc;

	if ((rc = stage(s, 0, whole, &flat)) ||
	    (rc = stage(s, 1, whole, &recv)))
		return rc;
	rc = cuda_failed("cudaMemsetAsync",
			 cudaMemsetAsync(flat, 0, whole * sizeof(float), st));
	if (rc == 0)
		rc = pack(b, in, 1, 0, flat, st);
	if (rc == 0)
		rc = nccl_failed("ncclAllGather",
				 ncclAllGather(flat + b->lo, recv, part,
					       ncclFloat, s->comm, st));
	if (rc == 0)
		rc = unpack_range(b, recv, 0, b->floats, out, st);
	return rc;
}

static const struct dp_transport nccl_transport = {
	.allreduce = nccl_allreduce,
	.reduce_scatter = nccl_reduce_scatter,
	.allgather = nccl_allgather,
};

int dp_nccl_setup(const struct dp_comm *c, struct mlp_config *mc,
		  int device, struct dp_setup *s)
{
	struct nccl_state *ns = calloc(1, sizeof(*ns));
	ncclUniqueId id;
	int rc = 0;

	if (!ns)
		return NCCL_NO_MEMORY;
	/* tmm_ctx_create leaves the caller's device current, not the
	 * context's (tensormm(7), TENSORMM_DEVICE). */
	if (cudaSetDevice(device) != cudaSuccess) {
		fprintf(stderr, "mlp_dp: rank %d: cudaSetDevice(%d) failed\n",
			c->rank, device);
		free(ns);
		return NCCL_NO_DEVICE;
	}
	if (mlp_gpu_blas_open(mc->batch)) {
		free(ns);
		return NCCL_NO_BLAS;
	}
	/* The communicator joins the context's device, current now. */
	if (c->rank == 0)
		rc = nccl_failed("ncclGetUniqueId", ncclGetUniqueId(&id));
	if (rc == 0)
		rc = dp_comm_bcast(c, &id, sizeof(id), 0);
	if (rc == 0)
		rc = nccl_failed("ncclCommInitRank",
				 ncclCommInitRank(&ns->comm, c->size, id,
						  c->rank));
	if (rc == 0)
		rc = blas_failed("cublasCreate", cublasCreate(&ns->blas));
	if (rc) {
		s->transport_arg = ns;
		dp_nccl_close(s);
		return NCCL_NO_COMM;
	}
	mc->kernels = mlp_gpu_ops();
	s->transport = &nccl_transport;
	s->transport_arg = ns;
	return NCCL_OK;
}

void dp_nccl_close(struct dp_setup *s)
{
	struct nccl_state *ns = s->transport_arg;

	if (!ns)
		return;
	for (unsigned k = 0; k < 3; k++)
		cudaFree(ns->stage[k]);
	if (ns->blas)
		cublasDestroy(ns->blas);
	if (ns->comm)
		ncclCommDestroy(ns->comm);
	mlp_gpu_blas_close();
	free(ns);
	s->transport_arg = NULL;
}

const char *dp_nccl_why(int code)
{
	switch (code) {
	case NCCL_NO_BLAS:
		return "cannot open cuBLAS for the MLP's GPU ops (see the "
		       "message above)";
	case NCCL_NO_COMM:
		return "cannot make the NCCL communicator (see the message "
		       "above): are all ranks on GPUs of their own "
		       "(TENSORMM_DEVICE)?";
	case NCCL_NO_MEMORY:
		return "out of host memory";
	case NCCL_NO_DEVICE:
		return "cannot make the context's device current (see the "
		       "message above)";
	default:
		return "cannot set up the cuda backend";
	}
}
