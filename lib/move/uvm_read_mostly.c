/* SPDX-License-Identifier: MIT */
/*
 * uvm_read_mostly.c — a frozen tensor's eviction by prefetch in mode=uvm,
 * with no bytes moved (see uvm_read_mostly.h).
 */
#include <errno.h>

#include "uvm_read_mostly.h"
#include "lib/base/xalloc.h"
#include "lib/record/tracker.h"

bool tmm_uvm_read_mostly_clean(const struct tmm_ctx *ctx,
			       const struct tmm_tensor_rec *t)
{
	const uint8_t both = ADVISED_READ_MOSTLY | ADVISED_READ_MOSTLY_HOSTED;

	return (t->uvm_advised & both) == both && !tmm_tracker_written(ctx, t);
}

/* Lifts t's advice: its copies collapse onto the host's.  A failure
 * costs only room, so it is logged. */
static void lift(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	int rc = ctx->be.ops->advise(&ctx->be, t->dev, t->bytes,
				     TMM_ADVISE_UNSET_READ_MOSTLY);

	t->uvm_advised &= (uint8_t)~ADVISED_READ_MOSTLY_PENDING;
	if (rc < 0) {
		tmm_log(ctx, TMM_LOG_WARN, "mode=uvm: read-mostly advice not "
			"lifted from an evicted tensor (%s): its device copy "
			"stays until the driver needs the room; "
			"TENSORMM_UVM_READ_MOSTLY=off evicts such tensors by "
			"prefetch", ctx->be.error);
		return;
	}
	t->uvm_advised = (uint8_t)((t->uvm_advised & ~ADVISED_READ_MOSTLY) |
				   ADVISED_READ_MOSTLY_AWAY);
}

/* Takes entry i off the list (its order does not matter). */
static void unlist(struct tmm_ctx *ctx, unsigned i)
{
	struct tmm_uvm_leaving *l = &ctx->uvm_leaving;

	l->tensors[i] = l->tensors[--l->n];
}

void tmm_uvm_read_mostly_leave(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_uvm_leaving *l = &ctx->uvm_leaving;

	if (!(t->uvm_advised & ADVISED_READ_MOSTLY))
		return;
	/* The prefetch leaves the host a whole copy. */
	t->uvm_advised |= ADVISED_READ_MOSTLY_HOSTED;
	if (l->n == l->cap) {
		unsigned cap = l->cap ? 2 * l->cap : 16;
		void *p = tmm_realloc(l->tensors, cap * sizeof(*l->tensors));

		if (!p) {
			/* Lifted now, the advice could collapse pages a
			 * kernel still reads: it stays, and so does the
			 * device's copy, until the driver needs the room. */
			tmm_log(ctx, TMM_LOG_WARN, "mode=uvm: no memory to "
				"note an evicted read-mostly tensor; its "
				"device copy stays until the driver needs the "
				"room");
			return;
		}
		l->tensors = p;
		l->cap = cap;
	}
	l->tensors[l->n++] = t;
	t->uvm_advised |= ADVISED_READ_MOSTLY_PENDING;
}

void tmm_uvm_read_mostly_progress(struct tmm_ctx *ctx)
{
	struct tmm_uvm_leaving *l = &ctx->uvm_leaving;

	for (unsigned i = 0; i < l->n;) {
		struct tmm_tensor_rec *t = l->tensors[i];

		/* The eviction's event: waited for and released by now
		 * where something needed it done. */
		if (t->copy.valid &&
		    ctx->be.ops->event_query(&ctx->be, &t->copy) == 0) {
			i++;
			continue;
		}
		unlist(ctx, i);
		lift(ctx, t);
	}
}

void tmm_uvm_read_mostly_forget(struct tmm_ctx *ctx,
				struct tmm_tensor_rec *t)
{
	struct tmm_uvm_leaving *l = &ctx->uvm_leaving;

	if (!(t->uvm_advised & ADVISED_READ_MOSTLY_PENDING))
		return;
	for (unsigned i = 0; i < l->n; i++)
		if (l->tensors[i] == t) {
			unlist(ctx, i);
			break;
		}
	t->uvm_advised &= (uint8_t)~ADVISED_READ_MOSTLY_PENDING;
}

void tmm_uvm_read_mostly_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	/* Still waiting: its advice, and its device copy, never went. */
	tmm_uvm_read_mostly_forget(ctx, t);
	if (!(t->uvm_advised & ADVISED_READ_MOSTLY_AWAY))
		return;
	t->uvm_advised &= (uint8_t)~ADVISED_READ_MOSTLY_AWAY;
	if (ctx->be.ops->advise(&ctx->be, t->dev, t->bytes,
				TMM_ADVISE_READ_MOSTLY) < 0) {
		/* Back without it: its coming migrates the pages, and the
		 * host's copy is not whole after. */
		t->uvm_advised &= (uint8_t)~ADVISED_READ_MOSTLY_HOSTED;
		tmm_log(ctx, TMM_LOG_WARN, "mode=uvm: read-mostly advice not "
			"given back to a returning tensor (%s): its next "
			"eviction moves its bytes", ctx->be.error);
		return;
	}
	t->uvm_advised |= ADVISED_READ_MOSTLY;
}
