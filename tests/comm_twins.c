/* SPDX-License-Identifier: MIT */
/*
 * comm_twins.c — the comm-stream tests' kernels and backend on the CUDA
 * test double (see comm_twins.h).
 */
#include "config.h"
#include <check.h>
#include <string.h>

#include "comm_twins.h"
#include "cudafake/cudafake.h"
#include "lib/backend/backend_cuda.h"

/* Host twins: the double runs them, the ranges are what it checks. */
static void twin_write(void *arg)
{
	memset(arg, 0x5a, COMM_TWIN_BYTES);
}

static void twin_read(void *arg)
{
	(void)arg;
}

void comm_twin_launch(cudaStream_t stream, void *p, bool write)
{
	struct cudafake_range r = { p, COMM_TWIN_BYTES, write };

	ck_assert_int_eq(cudafake_launch(stream, write ? twin_write : twin_read,
					 p, &r, 1),
			 cudaSuccess);
}

void comm_twin_open(struct tmm_backend *be, struct tmm_config *cfg)
{
	memset(be, 0, sizeof(*be));
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = TMM_BACKEND_CUDA;
	cfg->mode = TMM_MODE_AUTO;
	cfg->host_numa_node = -1;
	cfg->log = TMM_LOG_WARN;
	be->ops = &tmm_backend_cuda_ops;
	ck_assert_msg(be->ops->open(be, cfg) == 0, "%s", be->error);
}
