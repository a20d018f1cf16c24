/* SPDX-License-Identifier: MIT */
/*
 * dp_staged_none.c — dp_staged.h in a build without the GPU example's
 * ops (no CUDA, cuBLAS or nvcc): the cuda backend is refused with what
 * to do instead.
 */
#include <stddef.h>

#include "dp_staged.h"

int dp_staged_setup(const struct dp_comm *c, struct mlp_config *mc,
		    int device, struct dp_setup *s)
{
	(void)c;
	(void)mc;
	(void)device;
	(void)s;
	return 1;
}

void dp_staged_close(struct dp_setup *s)
{
	(void)s;
}

const char *dp_staged_why(int code)
{
	(void)code;
	return "the context is on the cuda backend, but this build of "
	       "mlp_dp has no GPU ops for the MLP (configure found no CUDA "
	       "with cuBLAS and nvcc): run it on the sim "
	       "(TENSORMM_BACKEND=sim), or configure again where they are "
	       "installed";
}

const struct dp_transport *dp_staged_transport(void)
{
	return NULL;
}
