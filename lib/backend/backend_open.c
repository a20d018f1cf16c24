/* SPDX-License-Identifier: MIT */
/*
 * backend_open.c — choosing and opening a backend.
 *
 * TENSORMM_BACKEND=auto prefers a real GPU: the cuda backend when the
 * library was built with CUDA and a device answers, else the simulator.
 * Asking for cuda explicitly on a machine without one is an error rather
 * than a silent fallback, so a benchmark never reports simulated figures
 * as if they were measured; so is a `device` that names a GPU the
 * machine's GPUs do not include (an index past them, a UUID none has).
 *
 * The one module that names the implementations (backend_sim.h,
 * backend_cuda.h); they know only backend.h, so none of them depends
 * back on the chooser.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend_open.h"
#include "backend_cuda.h"
#include "backend_sim.h"
#include "lib/base/tunables.h"

static int open_one(struct tmm_backend *be, const struct tmm_backend_ops *ops,
		    const struct tmm_config *cfg)
{
	memset(be, 0, sizeof(*be));
	be->ops = ops;
	return ops->open(be, cfg);
}

int tmm_backend_open(struct tmm_backend *be, const struct tmm_config *cfg,
		     char *err, size_t errlen)
{
	int rc;

	switch (cfg->backend) {
	case TMM_BACKEND_SIM:
		break;
	case TMM_BACKEND_CUDA:
#ifdef TMM_HAVE_CUDA
		rc = open_one(be, &tmm_backend_cuda_ops, cfg);
		if (rc < 0)
			snprintf(err, errlen, "backend=cuda: %s", be->error);
		return rc;
#else
		snprintf(err, errlen,
			 "backend=cuda: this libtensormm was built without "
			 "CUDA; rebuild with ./configure --with-cuda, or use "
			 "backend=sim");
		return -ENODEV;
#endif
	case TMM_BACKEND_AUTO:
#ifdef TMM_HAVE_CUDA
		rc = open_one(be, &tmm_backend_cuda_ops, cfg);
		if (rc == 0)
			return 0;
		/* A device this machine's GPUs lack was asked for: the
		 * simulator standing in would hide it. */
		if ((rc == -ENODEV || rc == -EINVAL) &&
		    cfg->device[0] && strcmp(cfg->device, "current") != 0 &&
		    tmm_cuda_device_count() > 0) {
			snprintf(err, errlen, "backend=auto: %s", be->error);
			return rc;
		}
		/* No usable GPU here: the simulator stands in. */
#endif
		break;
	}
	rc = open_one(be, &tmm_backend_sim_ops, cfg);
	if (rc < 0)
		snprintf(err, errlen, "backend=sim: %s", be->error);
	return rc;
}

void tmm_backend_close(struct tmm_backend *be)
{
	if (be->ops)
		be->ops->close(be);
	be->ops = NULL;
}
