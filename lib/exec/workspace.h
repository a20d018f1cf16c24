/* SPDX-License-Identifier: MIT */
/*
 * workspace.h — the user's workspace, for the library's own callers.
 *
 * tmm_workspace is a public call, let into the context by the guard
 * (lib/core/guard.h); a caller that is itself a public call holding the
 * context (the cuDNN pickers, cudnn_algo.c) takes the workspace here
 * instead of entering twice.  Giving it back is tmm_workspace_drop
 * (context.h), which teardown and the iteration's end share.
 */
#ifndef TMM_WORKSPACE_H
#define TMM_WORKSPACE_H

#include <stddef.h>

struct tmm_ctx;

/* tmm_workspace, for a caller already in a call on ctx: same returns,
 * same messages. */
int tmm_workspace_take(struct tmm_ctx *ctx, size_t min, size_t max,
		       void **ptr, size_t *got);

#endif /* TMM_WORKSPACE_H */
