/* SPDX-License-Identifier: MIT */
/*
 * dp_cuda.c — dp_cuda.h's table.  Makefile.am defines MLP_DP_NCCL
 * where configure found NCCL (with CUDA, cuBLAS and nvcc) and
 * MLP_DP_STAGED where it found the GPU example's ops (CUDA, cuBLAS and
 * nvcc); each row is the transport or, without its define, what the
 * build lacks.
 */
#include <stddef.h>
#include <string.h>

#include "dp_cuda.h"
#include "dp_nccl.h"
#include "dp_staged.h"

static const struct dp_cuda_transport transports[] = {
#ifdef MLP_DP_NCCL
	{ .name = "nccl", .setup = dp_nccl_setup, .close = dp_nccl_close,
	  .why = dp_nccl_why },
#else
	{ .name = "nccl",
	  .missing = "the context is on the cuda backend, but this build "
		     "of mlp_dp has no NCCL (configure found no CUDA with "
		     "cuBLAS, nvcc and NCCL): run it on the sim "
		     "(TENSORMM_BACKEND=sim), or configure again where NCCL "
		     "is installed" },
#endif
#ifdef MLP_DP_STAGED
	{ .name = "mpi", .setup = dp_staged_setup, .close = dp_staged_close,
	  .why = dp_staged_why },
#else
	{ .name = "mpi",
	  .missing = "the context is on the cuda backend, but this build "
		     "of mlp_dp has no GPU ops for the MLP (configure found "
		     "no CUDA with cuBLAS and nvcc): run it on the sim "
		     "(TENSORMM_BACKEND=sim), or configure again where they "
		     "are installed" },
#endif
};

const struct dp_cuda_transport *dp_cuda_transport(const char *name)
{
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]);
	     i++)
		if (name && !strcmp(transports[i].name, name))
			return &transports[i];
	return NULL;
}
