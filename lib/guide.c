/*
 * guide.c — firing a plan's actions at their trigger accesses.
 *
 * The actions are sorted by trigger, so following the plan is a cursor
 * that moves forward with the accesses: constant work per access, plus the
 * work of the actions themselves.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "guide.h"
#include "mover.h"
#include "planner.h"
#include "recompute.h"
#include "tracker.h"

struct tmm_guide {
	struct tmm_plan plan;
	bool installed;	 /* a plan is there to follow */
	bool following;	 /* this iteration follows it */
	bool diverged;	 /* ... and has left it */
	bool planned;	 /* the planner has run (once) */
	uint32_t next;	 /* the next action to fire */
};

int tmm_guide_create(struct tmm_ctx *ctx)
{
	ctx->guide = calloc(1, sizeof(*ctx->guide));
	return ctx->guide ? 0 : -ENOMEM;
}

void tmm_guide_destroy(struct tmm_ctx *ctx)
{
	if (!ctx->guide)
		return;
	tmm_plan_free(&ctx->guide->plan);
	free(ctx->guide);
	ctx->guide = NULL;
}

int tmm_guide_install(struct tmm_ctx *ctx, const struct tmm_plan *plan)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	struct tmm_plan copy;
	char err[400];
	int rc;

	if (!first)
		return tmm_fail(ctx, -EAGAIN,
				"a plan is checked against the first "
				"iteration's trace: complete one iteration "
				"(tmm_iteration_begin/end) first");
	rc = tmm_plan_validate(plan, first, err, sizeof(err));
	if (rc < 0)
		return tmm_fail(ctx, rc, "the plan is rejected: %s", err);
	if (tmm_plan_copy(&copy, plan) < 0)
		return tmm_fail(ctx, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < copy.n_actions; i++)
		copy.actions[i].late = copy.actions[i].skipped = 0;
	tmm_plan_free(&g->plan);
	g->plan = copy;
	g->installed = true;
	g->planned = true;
	return 0;
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

void tmm_guide_iteration_begin(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;

	g->following = g->installed;
	g->diverged = false;
	g->next = 0;
}

static void diverge(struct tmm_ctx *ctx, uint32_t access)
{
	struct tmm_guide *g = ctx->guide;

	g->diverged = true;
	ctx->c.plan_divergences++;
	tmm_tracker_event(ctx, TMM_EV_DIVERGED, NULL);
	tmm_log(ctx, TMM_LOG_INFO,
		"iteration %llu left its plan at access %u: passive mode for "
		"the rest of it",
		(unsigned long long)ctx->c.iterations + 1, access);
}

/* After the first iteration, the configured planner makes the plan. */
static void make_plan(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	struct tmm_planner_input in = { .trace = first,
					.budget = ctx->budget };
	struct tmm_plan plan;
	struct timespec t0, t1;
	char err[400];
	int rc;

	g->planned = true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = tmm_planner_make(ctx->cfg.policy, &in, &plan, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ctx->c.plans_made++;
	ctx->c.plan_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
			 (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	if (rc < 0) {
		tmm_log(ctx, TMM_LOG_WARN,
			"no plan: %s; the next iterations run in passive mode",
			err);
		return;
	}
	if (tmm_guide_install(ctx, &plan) < 0)
		tmm_log(ctx, TMM_LOG_WARN,
			"policy %s made a plan that does not hold: %s; the "
			"next iterations run in passive mode",
			ctx->cfg.policy, ctx->error);
	tmm_plan_free(&plan);
}

void tmm_guide_iteration_end(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t seen = tmm_tracker_current(ctx)->n_accesses;

	if (g->following) {
		/* Ending early is leaving the plan too. */
		if (!g->diverged && seen != g->plan.n_accesses)
			diverge(ctx, seen);
		ctx->c.guided_iterations++;
	}
	g->following = false;
}

void tmm_guide_plan_if_due(struct tmm_ctx *ctx)
{
	if (!ctx->guide->planned && tmm_tracker_first(ctx))
		make_plan(ctx);
}

void tmm_guide_note_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t a = t->pending_prefetch;

	t->pending_prefetch = TMM_PLAN_NONE;
	/* Capuchin §4.4's feedback: the prefetch was too late. */
	if (t->state == TMM_TS_SWAPPING_IN && g->installed &&
	    a < g->plan.n_actions) {
		g->plan.actions[a].late++;
		ctx->c.prefetch_late++;
	}
}

/* Carries out one action; an action that does not apply is skipped. */
static int fire(struct tmm_ctx *ctx, uint32_t index)
{
	struct tmm_guide *g = ctx->guide;
	struct tmm_plan_action *a = &g->plan.actions[index];
	struct tmm_tensor_rec *t = tmm_tracker_tensor_of_key(ctx, a->key);
	int rc = -EINVAL;

	if (t && !t->pins) {
		switch ((enum tmm_action_type)a->type) {
		case TMM_ACT_EVICT_SWAP:
			if (t->state == TMM_TS_RESIDENT)
				rc = tmm_mover_swap_out(ctx, t, false);
			break;
		case TMM_ACT_EVICT_DROP:
			if (t->state == TMM_TS_RESIDENT)
				rc = tmm_recompute_drop(ctx, t);
			break;
		case TMM_ACT_PREFETCH:
			if (t->state == TMM_TS_HOST)
				rc = tmm_mover_prefetch(ctx, t);
			else if (t->state == TMM_TS_SWAPPING_OUT)
				/* Needed again before it has left: keep
				 * it. */
				rc = tmm_mover_make_resident(ctx, t, true);
			if (rc == 0) {
				t->pending_prefetch = index;
				ctx->c.prefetches++;
			}
			break;
		case TMM_ACT_ADVISE:
			/* Advice is for managed memory; the pinned-copy
			 * engine places bytes itself. */
			rc = tmm_mover_advise(ctx, t, a->advice);
			break;
		case TMM_ACT_TYPE_COUNT:
			break;
		}
	}
	if (rc == 0) {
		ctx->c.plan_actions++;
		return 0;
	}
	a->skipped++;
	ctx->c.plan_actions_skipped++;
	/* Only a device that fails is worth stopping for. */
	if (rc == -EINVAL || rc == -ENOSPC || rc == -ENOMEM ||
	    rc == -ENOTSUP)
		return 0;
	return rc;
}

int tmm_guide_after_accesses(struct tmm_ctx *ctx, uint32_t first, uint32_t n)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *t;
	uint32_t end = first + n;

	if (!g->following || g->diverged || !n)
		return 0;
	t = tmm_tracker_current(ctx);
	for (uint32_t k = first; k < end; k++) {
		if (k >= g->plan.n_accesses ||
		    t->tensors[t->accesses[k].tensor].key !=
			    g->plan.access_keys[k]) {
			diverge(ctx, k);
			return 0;
		}
	}
	while (g->next < g->plan.n_actions &&
	       g->plan.actions[g->next].trigger < end) {
		int rc = fire(ctx, g->next++);

		if (rc < 0)
			return rc;
	}
	return 0;
}
