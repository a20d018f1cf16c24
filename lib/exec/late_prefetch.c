/* SPDX-License-Identifier: MIT */
/*
 * late_prefetch.c — prefetches judged late where the compute runs (see
 * late_prefetch.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "late_prefetch.h"
#include "lib/base/xalloc.h"
#include "lib/record/guide_state.h"
#include "lib/record/tracker.h"

/* The plan's prefetch `action` for the tensor of `key` came late, and
 * the compute engine stood still `ns` for it. */
static void count_late(struct tmm_ctx *ctx, uint64_t key, uint32_t action,
		       uint64_t ns)
{
	struct tmm_guide *g = ctx->guide;

	/* Moving triggers re-sorts the actions, and a plan may have been
	 * installed since: an index noted before may name another action
	 * now, and the key tells. */
	if (!g->installed || action >= g->plan.n_actions ||
	    g->plan.actions[action].key != key)
		return;
	g->plan.actions[action].late++;
	ctx->c.prefetch_late++;
	ctx->c.prefetch_wait_ns += ns;
}

/* A wait not measured counts as the host sees it; said once a context. */
static void unmeasured(struct tmm_ctx *ctx, uint64_t key, uint32_t action,
		       const char *why)
{
	struct tmm_guide *g = ctx->guide;

	if (!g->late_unmeasured_said) {
		g->late_unmeasured_said = true;
		tmm_log(ctx, TMM_LOG_WARN, "a late prefetch's wait could not "
			"be measured on the device (%s): such prefetches are "
			"judged late as the host sees them, which runs ahead "
			"of a GPU", why);
	}
	count_late(ctx, key, action, 0);
}

void tmm_late_prefetch_note(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			    uint32_t action)
{
	struct tmm_backend *be = &ctx->be;
	struct tmm_guide *g = ctx->guide;
	uint64_t key = tmm_tracker_key(ctx, t);
	struct tmm_late_wait *l;

	if (!be->ops->engine_wait_timed || !be->ops->timed_wait_ns) {
		count_late(ctx, key, action, 0);
		return;
	}
	if (g->n_late == g->cap_late) {
		uint32_t cap = g->cap_late ? 2 * g->cap_late : 16;
		void *p = tmm_realloc(g->late, cap * sizeof(*g->late));

		if (!p) {
			unmeasured(ctx, key, action,
				   "out of host memory for the list");
			return;
		}
		g->late = p;
		g->cap_late = cap;
	}
	l = &g->late[g->n_late];
	*l = (struct tmm_late_wait){ .key = key, .action = action };
	/* The mover orders the compute engine after the copy again (a
	 * wait on work already waited for costs nothing), so a failure
	 * here loses no order. */
	if (be->ops->engine_wait_timed(be, TMM_ENGINE_COMPUTE, &t->copy,
				       &l->w) < 0) {
		unmeasured(ctx, key, action, be->error);
		return;
	}
	g->n_late++;
}

void tmm_late_prefetch_settle(struct tmm_ctx *ctx)
{
	struct tmm_backend *be = &ctx->be;
	struct tmm_guide *g = ctx->guide;

	for (uint32_t i = 0; i < g->n_late; i++) {
		struct tmm_late_wait *l = &g->late[i];
		uint64_t ns = 0;

		if (be->ops->timed_wait_ns(be, &l->w, &ns) < 0)
			unmeasured(ctx, l->key, l->action, be->error);
		else if (ns > TMM_LATE_WAIT_NS)
			count_late(ctx, l->key, l->action, ns);
	}
	g->n_late = 0;
}

void tmm_late_prefetch_forget(struct tmm_ctx *ctx)
{
	struct tmm_backend *be = &ctx->be;
	struct tmm_guide *g = ctx->guide;

	for (uint32_t i = 0; i < g->n_late; i++) {
		uint64_t ns;

		/* Reading releases; what it says no longer matters. */
		(void)be->ops->timed_wait_ns(be, &g->late[i].w, &ns);
	}
	free(g->late);
	g->late = NULL;
	g->n_late = g->cap_late = 0;
}
