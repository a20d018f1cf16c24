/* SPDX-License-Identifier: MIT */
/*
 * guide_state.c — answering what the plan being followed says (see
 * guide_state.h): reads of the guide's state, which guide.c changes.
 */
#include "guide_state.h"
#include "tracker.h"

bool tmm_guide_keeps(const struct tmm_ctx *ctx,
		     const struct tmm_tensor_rec *t)
{
	const struct tmm_guide *g = ctx->guide;
	uint64_t key;
	uint32_t lo = 0, hi;

	if (!g->n_kept || !g->installed)
		return false;
	key = tmm_tracker_key(ctx, t);
	hi = g->n_kept;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (g->kept[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= g->n_kept || g->kept[lo].key != key)
		return false;
	/* A diverged iteration no longer knows where it is in the plan. */
	return !g->following || g->diverged || g->kept[lo].until >= g->at;
}

const struct tmm_plan *tmm_guide_plan(const struct tmm_ctx *ctx)
{
	return ctx->guide->installed ? &ctx->guide->plan : NULL;
}

enum tmm_plan_state tmm_guide_state(const struct tmm_ctx *ctx)
{
	const struct tmm_guide *g = ctx->guide;

	if (!g->installed)
		return TMM_PLAN_MEASURING;
	return g->diverged ? TMM_PLAN_DIVERGED : TMM_PLAN_GUIDED;
}

bool tmm_guide_following(const struct tmm_ctx *ctx)
{
	return ctx->guide->following && !ctx->guide->diverged;
}

uint32_t tmm_guide_split_parts(struct tmm_ctx *ctx,
			       const struct tmm_tensor_rec *first,
			       enum tmm_split_evict *evicts_first)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t at, parts = 0;
	uint64_t key;

	*evicts_first = TMM_SPLIT_KEEPS_INPUT;
	if (!g->following || g->diverged)
		return 0;
	at = tmm_tracker_current(ctx)->n_accesses;
	key = tmm_tracker_key(ctx, first);
	if (at >= g->plan.n_accesses || g->plan.access_keys[at] != key)
		return 0;
	/* Actions before `at` have fired: the cursor is at or before the
	 * first action that `at` triggers. */
	for (uint32_t i = g->next;
	     i < g->plan.n_actions && g->plan.actions[i].trigger <= at; i++) {
		const struct tmm_plan_action *a = &g->plan.actions[i];

		if (a->trigger != at)
			continue;
		if (a->type == TMM_ACT_SPLIT)
			parts = a->parts;
		else if (a->type == TMM_ACT_EVICT_DROP && a->key == key)
			*evicts_first = TMM_SPLIT_DROPS_INPUT;
		else if (a->type == TMM_ACT_EVICT_SWAP && a->key == key)
			*evicts_first = TMM_SPLIT_SWAPS_INPUT;
	}
	return parts;
}

/* The plan's EVICT_SWAP at the op's nth access, with all of `flags`. */
static bool swap_at_op(struct tmm_ctx *ctx, unsigned nth, uint32_t flags)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t at;

	if (!g->following || g->diverged)
		return false;
	at = tmm_tracker_current(ctx)->n_accesses + nth;
	if (at >= g->plan.n_accesses)
		return false;
	for (uint32_t i = g->next;
	     i < g->plan.n_actions && g->plan.actions[i].trigger <= at; i++) {
		const struct tmm_plan_action *a = &g->plan.actions[i];

		if (a->trigger == at && a->type == TMM_ACT_EVICT_SWAP &&
		    a->key == g->plan.access_keys[at] &&
		    (a->flags & flags) == flags)
			return true;
	}
	return false;
}

bool tmm_guide_swaps_at_op(struct tmm_ctx *ctx, unsigned nth)
{
	return swap_at_op(ctx, nth, 0);
}

bool tmm_guide_sync_swap_at_op(struct tmm_ctx *ctx, unsigned nth)
{
	return swap_at_op(ctx, nth, TMM_ACT_SYNC);
}
