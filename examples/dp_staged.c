/* SPDX-License-Identifier: MIT */
/*
 * dp_staged.c — mlp_dp's collectives on the cuda backend through host
 * memory (dp_staged.h): issue #26 §7, N ranks on one GPU.
 *
 * A collective's callback gets the stream libtensormm gives it (the comm
 * stream, which has already waited for the compute stream's work on the
 * gradients).  On that stream each distinct device (or managed) buffer
 * of the op is copied to the host, the stream synchronised, the host
 * transport of the sim (dp_host.c) run on the copies, and the outputs
 * copied back, the stream synchronised again before the host copies go.
 * The sum is therefore the sim's: the same code, in rank order, so the
 * digest is the one-process `--accumulate N` run's on the same backend,
 * and NCCL's path (dp_nccl.c), whose saxpy adds in the same order.
 *
 * The host copies are pageable memory, allocated per collective: the
 * copies are synchronous with the host anyway (MPI needs the bytes), and
 * nothing of them counts against the context's device budget.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dp_staged.h"
#include "mlp_gpu_train.h"

enum {
	STAGED_OK = 0,
	STAGED_NO_DEVICE, /* cudaSetDevice failed */
	STAGED_NO_BLAS,	  /* mlp_gpu_blas_open failed */
};

/*
 * A collective's buffers on the host.  Every distinct device pointer of
 * in[] and out[] is staged once: out[p] is one of the inputs
 * (dp_grads.h), and the host transport must see that aliasing as it does
 * on the sim, where the two are one tensor.
 */
struct staging {
	unsigned n;	    /* distinct device buffers */
	void **dev;	    /* [n] */
	size_t *bytes;	    /* [n] */
	float *host;	    /* all their host copies, one after the other */
	size_t *at;	    /* [n]: buffer k's floats start at host + at[k] */
	void **hin, **hout; /* the host twins of in[] and out[] */
};

static int cuda_failed(const char *what, cudaError_t e)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "mlp_dp: %s: %s\n", what, cudaGetErrorString(e));
	return -EIO;
}

static void staging_free(struct staging *sg)
{
	free(sg->dev);
	free(sg->bytes);
	free(sg->host);
	free(sg->at);
	free(sg->hin);
	free(sg->hout);
}

/* Index of dev pointer p among the staged ones, adding it (of `bytes`)
 * when new. */
static unsigned staging_slot(struct staging *sg, void *p, size_t bytes)
{
	for (unsigned k = 0; k < sg->n; k++)
		if (sg->dev[k] == p)
			return k;
	sg->dev[sg->n] = p;
	sg->bytes[sg->n] = bytes;
	return sg->n++;
}

/*
 * Lays out the host copies of in[0 .. n_in) and out[0 .. n_out): in[i]
 * is parameter i / per_param's (per_param micro-batches of each),
 * out[p] parameter p's.  Returns 0 or -ENOMEM.
 */
static int staging_plan(struct staging *sg, const struct dp_bucket *b,
			void *const *in, unsigned n_in, unsigned per_param,
			void *const *out, unsigned n_out)
{
	unsigned all = n_in + n_out, *slot_in, *slot_out;
	size_t floats = 0;

	*sg = (struct staging){ 0 };
	sg->dev = calloc(all, sizeof(*sg->dev));
	sg->bytes = calloc(all, sizeof(*sg->bytes));
	sg->at = calloc(all, sizeof(*sg->at));
	sg->hin = calloc(n_in ? n_in : 1, sizeof(*sg->hin));
	sg->hout = calloc(n_out ? n_out : 1, sizeof(*sg->hout));
	slot_in = calloc(all, sizeof(*slot_in));
	if (!sg->dev || !sg->bytes || !sg->at || !sg->hin || !sg->hout ||
	    !slot_in) {
		free(slot_in);
		return -ENOMEM;
	}
	slot_out = slot_in + n_in;
	for (unsigned i = 0; i < n_in; i++)
		slot_in[i] = staging_slot(sg, in[i],
			b->param[i / per_param].count * sizeof(float));
	for (unsigned p = 0; p < n_out; p++)
		slot_out[p] = staging_slot(sg, out[p],
					   b->param[p].count * sizeof(float));
	for (unsigned k = 0; k < sg->n; k++) {
		sg->at[k] = floats;
		floats += sg->bytes[k] / sizeof(float);
	}
	sg->host = malloc((floats ? floats : 1) * sizeof(float));
	if (!sg->host) {
		free(slot_in);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n_in; i++)
		sg->hin[i] = sg->host + sg->at[slot_in[i]];
	for (unsigned p = 0; p < n_out; p++)
		sg->hout[p] = sg->host + sg->at[slot_out[p]];
	free(slot_in);
	return 0;
}

/* Queues the copy of every staged buffer to the host (to_host) or of
 * the outputs back to the device, on st. */
static int staging_copy(struct staging *sg, void *const *out,
			unsigned n_out, bool to_host, cudaStream_t st)
{
	if (to_host) {
		for (unsigned k = 0; k < sg->n; k++) {
			int rc = cuda_failed("cudaMemcpyAsync(gradients to "
					     "the host)",
				cudaMemcpyAsync(sg->host + sg->at[k],
						sg->dev[k], sg->bytes[k],
						cudaMemcpyDefault, st));
			if (rc)
				return rc;
		}
		return 0;
	}
	for (unsigned p = 0; p < n_out; p++) {
		bool again = false;
		int rc;

		/* An output named twice goes back once. */
		for (unsigned q = 0; q < p; q++)
			again = again || out[q] == out[p];
		if (again)
			continue;
		for (unsigned k = 0; k < sg->n; k++) {
			if (sg->dev[k] != out[p])
				continue;
			rc = cuda_failed("cudaMemcpyAsync(sums to the "
					 "device)",
				cudaMemcpyAsync(sg->dev[k],
						sg->host + sg->at[k],
						sg->bytes[k],
						cudaMemcpyDefault, st));
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The stream's queued copies have ended; what failed, if anything. */
static int staging_sync(cudaStream_t st, const char *what)
{
	return cuda_failed(what, cudaStreamSynchronize(st));
}

/*
 * One collective through the host: `host` (the sim's transport's
 * callback of the same kind) runs on the host copies.
 */
static int staged_run(tmm_run_fn host, void *user, void *const *in,
		      unsigned n_in, unsigned per_param, void *const *out,
		      void *stream)
{
	const struct dp_bucket *b = user;
	cudaStream_t st = stream;
	struct staging sg;
	int rc, sync;

	rc = staging_plan(&sg, b, in, n_in, per_param, out, b->n_params);
	if (rc == 0)
		rc = staging_copy(&sg, out, b->n_params, true, st);
	/* Always waited for, even after a failed copy: the host copies
	 * must outlive whatever was queued into them. */
	sync = staging_sync(st, "cudaStreamSynchronize(gradients to the "
			    "host)");
	if (rc == 0)
		rc = sync;
	if (rc == 0)
		rc = host(sg.hin, sg.hout, user, NULL);
	if (rc == 0) {
		rc = staging_copy(&sg, out, b->n_params, false, st);
		sync = staging_sync(st, "cudaStreamSynchronize(sums to the "
				    "device)");
		if (rc == 0)
			rc = sync;
	}
	staging_free(&sg);
	return rc;
}

static int staged_allreduce(void *const *in, void *const *out, void *user,
			    void *stream)
{
	const struct dp_bucket *b = user;
	unsigned mb = dp_trainer_micro(b->t);

	return staged_run(dp_host_transport()->allreduce, user, in,
			  b->n_params * mb, mb, out, stream);
}

static int staged_reduce_scatter(void *const *in, void *const *out,
				 void *user, void *stream)
{
	const struct dp_bucket *b = user;
	unsigned mb = dp_trainer_micro(b->t);

	return staged_run(dp_host_transport()->reduce_scatter, user, in,
			  b->n_params * mb, mb, out, stream);
}

static int staged_allgather(void *const *in, void *const *out, void *user,
			    void *stream)
{
	const struct dp_bucket *b = user;

	return staged_run(dp_host_transport()->allgather, user, in,
			  b->n_params, 1, out, stream);
}

static const struct dp_transport staged_transport = {
	.allreduce = staged_allreduce,
	.reduce_scatter = staged_reduce_scatter,
	.allgather = staged_allgather,
};

const struct dp_transport *dp_staged_transport(void)
{
	return &staged_transport;
}

int dp_staged_setup(const struct dp_comm *c, struct mlp_config *mc,
		    int device, struct dp_setup *s)
{
	/* tmm_ctx_create leaves the caller's device current, not the
	 * context's (tensormm(7), TENSORMM_DEVICE): the cuBLAS handle must
	 * join the device the tensors live on. */
	if (cudaSetDevice(device) != cudaSuccess) {
		fprintf(stderr, "mlp_dp: rank %d: cudaSetDevice(%d) failed\n",
			c->rank, device);
		return STAGED_NO_DEVICE;
	}
	if (mlp_gpu_blas_open(mc->batch))
		return STAGED_NO_BLAS;
	mc->kernels = mlp_gpu_ops();
	s->transport = &staged_transport;
	s->transport_arg = NULL;
	return STAGED_OK;
}

void dp_staged_close(struct dp_setup *s)
{
	if (s->transport != &staged_transport)
		return;
	mlp_gpu_blas_close();
	s->transport = NULL;
}

const char *dp_staged_why(int code)
{
	switch (code) {
	case STAGED_NO_DEVICE:
		return "cannot make the context's device current (see the "
		       "message above)";
	case STAGED_NO_BLAS:
		return "cannot open cuBLAS for the MLP's GPU ops (see the "
		       "message above)";
	default:
		return "cannot set up the cuda backend";
	}
}
