/* SPDX-License-Identifier: MIT */
/*
 * fill.c — setting every byte of a tensor without a callback
 * (tmm_tensor_fill in tensormm.h).
 *
 * A fill is an op of the library's own, run like any other: the tensor
 * is its only output, fully overwritten, so it is made resident without
 * its old bytes, the access is recorded and planned, and the bytes are
 * set on the device's compute stream in order with the kernels around
 * them.  It is not declared pure: its callback needs the context, which
 * a recomputation long after this call could not be handed, so a filled
 * tensor that must leave the device is swapped, not dropped.
 */
#include <errno.h>

#include "lib/core/guard.h"
#include "run.h"
#include "view.h"

struct fill_args {
	struct tmm_ctx *ctx;
	int byte;
	size_t bytes;
};

static int fill_run(void *const *in, void *const *out, void *user,
		    void *stream)
{
	struct fill_args *a = user;
	struct tmm_backend *be = &a->ctx->be;

	(void)in;
	(void)stream; /* the backend's own compute stream is the same */
	return be->ops->fill(be, out[0], a->byte, a->bytes);
}

static int fill_op(struct tmm_ctx *ctx, struct tmm_tensor_rec *t, int byte)
{
	struct fill_args a = { ctx, byte, t->bytes };
	tmm_tensor h = tmm_tensor_handle(ctx, t);
	tmm_op op = {
		.name = "tmm_tensor_fill",
		.kind = TMM_OP_ELEMENTWISE,
		.outputs = &h,
		.n_outputs = 1,
		.run = fill_run,
		.user = &a,
		/* one write of every byte */
		.cost = { .flops = 0, .bytes = (double)t->bytes },
	};

	return tmm_run_op(ctx, &op);
}

static int tensor_fill(struct tmm_ctx *ctx, tmm_tensor h, int byte)
{
	struct tmm_tensor_rec *t;
	int rc;

	if (byte < 0 || byte > 255)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_fill: byte %d is not 0 to 255",
				byte);
	t = tmm_tensor_lookup(ctx, h, "tmm_tensor_fill");
	if (!t)
		return -EBADF;
	/* Every byte is overwritten: nothing is gathered or caught up,
	 * but a parent's views fall behind it (view.c). */
	if (ctx->live_views) {
		rc = tmm_view_before_use(ctx, t, false, "tmm_tensor_fill");
		if (rc < 0)
			return rc;
	}
	rc = fill_op(ctx, t, byte);
	if (rc == 0 && ctx->live_views)
		tmm_view_after_write(ctx, t);
	return rc;
}

int tmm_tensor_fill(tmm_ctx *ctx, tmm_tensor h, int byte)
{
	int entered = tmm_guard_enter(ctx, TMM_CALL_TENSOR_FILL);
	int rc;

	if (entered < 0)
		return entered;
	rc = tensor_fill(ctx, h, byte);
	tmm_guard_leave(ctx, entered);
	return rc;
}
