/* SPDX-License-Identifier: MIT */
/*
 * uvm_path.c — mode=uvm's copy way out and back (see uvm_path.h).
 * Which way a context takes is policy: hints/uvm_way.c.
 *
 * The order of the steps is CUDA's: the copy out waits for the compute
 * that last wrote the tensor (an event), and the discard comes only once
 * the copy is seen complete; back in, the prefetch and the copy run on
 * one stream, in that order, and the compute that reads the tensor waits
 * for the copy's event like any swap-in's.
 */
#include <errno.h>

#include "uvm_path.h"
#include "clean_copy.h"
#include "device_mem.h"
#include "swap_engine.h"
#include "lib/mem/uvm_arena.h"

int tmm_uvm_copy_in(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	/* A range with its pages on the device (a kept block, whose last
	 * kernels the copy waits for below) is only written.  Else its
	 * pages are made first, after the discard of the way out, which
	 * the backend orders after the work on the range; the copy
	 * follows on the engine. */
	if (!tmm_uvm_arena_on_device(ctx->uvm_arena, t->dev, t->bytes)) {
		rc = be->ops->prefetch(be, TMM_ENGINE_H2D, t->dev, t->bytes,
				       TMM_LOC_DEVICE, -1);
		if (rc < 0)
			return tmm_mover_backend_error(ctx, rc);
		tmm_uvm_arena_note(ctx->uvm_arena, t->dev, t->bytes, true);
	}
	/* Retired early, its copy out may still be filling the host
	 * buffer: the copy back comes after compute, which waited for it
	 * (tmm_mover_retire_early), so its event is no longer needed. */
	be->ops->event_release(be, &t->copy);
	rc = tmm_mover_copy_after_compute(ctx, TMM_ENGINE_H2D, t->dev,
					  t->host, t->bytes, &t->copy);
	if (rc < 0)
		return rc;
	/* Its buffer may stay as its clean copy (clean_copy.h). */
	tmm_clean_note_swap_in(t);
	tmm_uvm_arriving(ctx, t);
	return 0;
}
