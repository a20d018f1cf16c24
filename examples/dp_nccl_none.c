/* SPDX-License-Identifier: MIT */
/*
 * dp_nccl_none.c — dp_nccl.h in a build without NCCL: the cuda backend
 * is refused with what to do instead.
 */
#include "dp_nccl.h"

int dp_nccl_setup(const struct dp_comm *c, struct mlp_config *mc,
		  int device, struct dp_setup *s)
{
	(void)c;
	(void)mc;
	(void)device;
	(void)s;
	return 1;
}

void dp_nccl_close(struct dp_setup *s)
{
	(void)s;
}

const char *dp_nccl_why(int code)
{
	(void)code;
	return "the context is on the cuda backend, but this build of "
	       "mlp_dp has no NCCL (configure found no CUDA with cuBLAS, "
	       "nvcc and NCCL): run it on the sim (TENSORMM_BACKEND=sim), "
	       "or configure again where NCCL is installed";
}
