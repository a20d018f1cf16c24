/* SPDX-License-Identifier: MIT */
/*
 * run.h — running an op inside the library (run.c).
 */
#ifndef TMM_RUN_H
#define TMM_RUN_H

#include "lib/core/context.h"

/* tmm_run without the guard, for the library's own ops
 * (tmm_tensor_fill): the caller is already let into the context. */
int tmm_run_op(struct tmm_ctx *ctx, const tmm_op *op);

#endif /* TMM_RUN_H */
