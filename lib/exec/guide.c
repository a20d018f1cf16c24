/* SPDX-License-Identifier: MIT */
/*
 * guide.c — firing a plan's actions at their trigger accesses.
 *
 * The actions are sorted by trigger, so following the plan is a cursor
 * that moves forward with the accesses: constant work per access, plus the
 * work of the actions themselves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "guide.h"
#include "guide_input.h"
#include "layer_sync.h"
#include "lib/move/mover.h"
#include "lib/move/mover_uvm.h"
#include "lib/io/plan_file.h"
#include "hints/planner.h"
#include "late_prefetch.h"
#include "lib/move/dead.h"
#include "recompute.h"
#include "replan.h"
#include "lib/record/tracker.h"
#include "lib/base/xalloc.h"

int tmm_guide_create(struct tmm_ctx *ctx)
{
	ctx->guide = tmm_calloc(1, sizeof(*ctx->guide));
	if (!ctx->guide)
		return -ENOMEM;
	if (tmm_replan_create(&ctx->guide->replan) < 0) {
		free(ctx->guide);
		ctx->guide = NULL;
		return -ENOMEM;
	}
	return 0;
}

void tmm_guide_destroy(struct tmm_ctx *ctx)
{
	if (!ctx->guide)
		return;
	tmm_late_prefetch_forget(ctx);
	tmm_plan_free(&ctx->guide->plan);
	free(ctx->guide->kept);
	free(ctx->guide->dead);
	free(ctx->guide->held_at);
	tmm_replan_destroy(ctx->guide->replan);
	free(ctx->guide);
	ctx->guide = NULL;
}

/* What the program frees that the plan's drops still need (recompute.c
 * keeps those as ghosts), and what liveness=discard may drop.  Without
 * the memory for the first list, drops that need a freed tensor are
 * refused, as they were before ghosts; without it for the second, dead
 * tensors are copied out. */
static int keep_sources(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);

	free(g->kept);
	g->kept = NULL;
	g->n_kept = 0;
	free(g->dead);
	g->dead = NULL;
	g->n_dead = 0;
	/* What the last plan's iterations held says nothing of this one's. */
	g->n_held_at = 0;
	if (!first)
		return 0;
	if (tmm_plan_kept_sources(&g->plan, first, &g->kept, &g->n_kept) < 0)
		tmm_log(ctx, TMM_LOG_WARN, "out of memory listing the tensors "
			"the plan's drops need: some drops will be skipped");
	if (ctx->cfg.liveness_discard &&
	    tmm_dead_list(&g->plan, first, &g->dead, &g->n_dead) < 0)
		tmm_log(ctx, TMM_LOG_WARN, "out of memory listing the tensors "
			"liveness=discard may drop: they are copied out");
	return 0;
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
		return tmm_fail(ctx, -ENOMEM, "out of host memory copying "
				"the plan (%u actions) to follow it",
				plan->n_actions);
	for (uint32_t i = 0; i < copy.n_actions; i++)
		copy.actions[i].late = copy.actions[i].skipped =
			copy.actions[i].moved = 0;
	tmm_plan_free(&g->plan);
	g->plan = copy;
	g->installed = true;
	g->planned = true;
	return keep_sources(ctx);
}

/* Does the plan evict the tensor of prefetch pf for pf's back-access?
 * If not, pf is an across-iteration prefetch (see plan.h). */
static bool has_eviction(const struct tmm_plan *p,
			 const struct tmm_plan_action *pf)
{
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];

		if ((a->type == TMM_ACT_EVICT_SWAP ||
		     a->type == TMM_ACT_EVICT_DROP) &&
		    a->key == pf->key && a->back_access == pf->back_access)
			return true;
	}
	return false;
}

/*
 * An across-iteration prefetch expects its tensor on the host when the
 * iteration begins: the previous iteration swapped it out after its last
 * access.  The first guided iteration follows a measured one that did
 * not, so the swap-out is made here; later ones find it done.  Without
 * it, the plan's memory curve would not hold until the prefetch.  Only
 * for a plan that fits: under one that does not, passive mode decides
 * what leaves anyway, and a swap-out more only moves the layout of the
 * pool (an op's pinned tensors can then leave no hole big enough).
 */
static void evict_for_entry_prefetches(struct tmm_ctx *ctx)
{
	const struct tmm_plan *p = &ctx->guide->plan;

	/* Copies that ended while the host waited at the iteration's end
	 * (a host ahead of the device sees them only now). */
	tmm_mover_progress(ctx);
	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];
		struct tmm_tensor_rec *t;

		if (a->type != TMM_ACT_PREFETCH ||
		    a->back_access <= a->trigger || has_eviction(p, a))
			continue;
		t = tmm_tracker_tensor_of_key(ctx, a->key);
		if (t && !t->pins && t->state == TMM_TS_SWAPPING_IN &&
		    tmm_mover_retire_in_early(ctx, t) < 0)
			continue;
		/* A failure only costs memory: passive mode covers it. */
		if (t && !t->pins && t->state == TMM_TS_RESIDENT &&
		    tmm_mover_swap_out(ctx, t, false) == 0)
			ctx->c.plan_actions++;
	}
}

void tmm_guide_iteration_begin(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;

	g->following = g->installed;
	g->diverged = false;
	g->next = 0;
	g->at = 0;
	tmm_layer_sync_abandon(ctx, true);
	if (g->following && g->plan.fits)
		evict_for_entry_prefetches(ctx);
}

static void diverge(struct tmm_ctx *ctx, uint32_t access)
{
	struct tmm_guide *g = ctx->guide;

	g->diverged = true;
	tmm_layer_sync_abandon(ctx, true);
	ctx->c.plan_divergences++;
	tmm_tracker_event(ctx, TMM_EV_DIVERGED, NULL);
	tmm_log(ctx, TMM_LOG_INFO,
		"iteration %llu left its plan at access %u: passive mode for "
		"the rest of it",
		(unsigned long long)ctx->c.iterations + 1, access);
}

/* Writes the plan to the TENSORMM_HINTS file for the next run.  A file
 * that cannot be written costs that run its head start, nothing more. */
static void save_hints(struct tmm_ctx *ctx, const struct tmm_plan *plan)
{
	char err[600];

	if (tmm_plan_file_write(ctx->cfg.hints, plan, ctx->serial,
				ctx->cfg.hints_max, err, sizeof(err)) < 0)
		tmm_log(ctx, TMM_LOG_WARN,
			"the plan is not saved: %s; the next run will measure "
			"its first iteration again", err);
	else
		tmm_log(ctx, TMM_LOG_INFO, "plan saved to %s", ctx->cfg.hints);
}

int tmm_guide_load_hints(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	struct tmm_plan plan;
	char err[600];
	int rc;

	if (!ctx->cfg.hints[0])
		return 0;
	rc = tmm_plan_file_read(ctx->cfg.hints, &plan, ctx->serial,
				ctx->cfg.hints_max, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc == -ENOENT) {
		tmm_log(ctx, TMM_LOG_INFO,
			"no plan file at %s yet: the first iteration is "
			"measured, and the plan saved there", ctx->cfg.hints);
		return 0;
	}
	if (rc < 0) {
		tmm_log(ctx, TMM_LOG_WARN,
			"the plan file is not used: %s; the first iteration "
			"is measured instead", err);
		return 0;
	}
	/* Guided from the first iteration; its trace checks the plan when
	 * it ends (tmm_guide_plan_if_due). */
	tmm_plan_free(&g->plan);
	g->plan = plan;
	g->installed = true;
	g->planned = true;
	g->from_file = true;
	tmm_log(ctx, TMM_LOG_INFO,
		"following the plan of %s (policy %s, %u actions) from the "
		"first iteration", ctx->cfg.hints, plan.policy,
		plan.n_actions);
	return 0;
}

/*
 * The first iteration ran guided by a plan from file: keep it if it holds
 * for the trace just measured, else drop it and plan from that trace.
 */
static void check_hints(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	char err[400];

	g->from_file = false;
	if (g->diverged_once)
		snprintf(err, sizeof(err), "this program's first iteration "
			 "left it part-way");
	else if (tmm_plan_validate(&g->plan, first, err, sizeof(err)) == 0) {
		keep_sources(ctx);
		return;
	}
	tmm_log(ctx, TMM_LOG_WARN,
		"the plan file %s does not fit this program: %s; planning "
		"from the measured first iteration instead", ctx->cfg.hints,
		err);
	tmm_plan_free(&g->plan);
	g->installed = false;
	g->planned = false;
}

/*
 * The configured planner makes the plan from trace `from`: the first
 * iteration's, or after a drift the same retimed (replan.h).  Returns
 * whether a plan was installed.
 */
static bool make_plan(struct tmm_ctx *ctx, const struct tmm_trace *from)
{
	struct tmm_guide *g = ctx->guide;
	struct tmm_planner_input in = tmm_guide_planner_input(ctx, from);
	struct tmm_twin twin = { .ops = ctx->twin_ops };
	struct tmm_plan plan;
	struct timespec t0, t1;
	char err[400];
	int rc;

	/* auto_twin=off: auto plans as on a real GPU, by the forecast. */
	if (twin.ops && ctx->cfg.auto_twin &&
	    tmm_guide_twin_device(ctx, &twin.device) == 0)
		in.twin = &twin;
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
		return false;
	}
	{
		char a[32], b[32];

		/* none plans no way out of a shortage: not a surprise
		 * worth a warning. */
		bool quiet = plan.fits || strcmp(plan.policy, "none") == 0 ||
			     strcmp(plan.policy, "auto+none") == 0;

		/* A plan that does not fit is a warning once per budget:
		 * re-planning on drift, as often as every iteration, says
		 * it again at info. */
		if (!quiet) {
			quiet = g->unfit_warned_budget == ctx->budget;
			g->unfit_warned_budget = ctx->budget;
		}
		tmm_log(ctx, quiet ? TMM_LOG_INFO : TMM_LOG_WARN,
			"policy %s: %u actions, predicted peak %s of a %s "
			"budget%s",
			plan.policy, plan.n_actions,
			tmm_fmt_bytes(plan.predicted_peak, a, sizeof(a)),
			tmm_fmt_bytes(ctx->budget, b, sizeof(b)),
			plan.fits ? "" : ": it does not fit, passive mode "
					 "makes up the difference");
	}
	rc = tmm_guide_install(ctx, &plan);
	g->plan_budget = ctx->budget;
	if (rc < 0)
		tmm_log(ctx, TMM_LOG_WARN,
			"policy %s made a plan that does not hold: %s; the "
			"next iterations run in passive mode",
			ctx->cfg.policy, ctx->error);
	else if (ctx->cfg.hints[0])
		save_hints(ctx, &plan);
	tmm_plan_free(&plan);
	return rc == 0;
}

/*
 * TENSILE §IV-E: a guided iteration that followed its plan to the end
 * feeds its op latencies to the average; past the drift threshold the
 * planner runs again on the retimed first trace, and its plan is followed
 * from the next iteration.  The policy decides nothing here.
 */
static void replan_if_drifted(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	struct tmm_trace retimed;

	if (!first || !tmm_replan_observe(g->replan, tmm_tracker_current(ctx),
					  ctx->cfg.replan_drift))
		return;
	if (tmm_replan_trace(g->replan, first, &retimed) < 0)
		return; /* the old plan stays: it still holds */
	tmm_log(ctx, TMM_LOG_INFO,
		"op latencies drifted by %.1f%% since the plan was made: "
		"re-planning", 100 * tmm_replan_drift(g->replan));
	/* Planned or not, this drift is dealt with: a planner that fails
	 * is not retried at every iteration, only at the next drift. */
	(void)make_plan(ctx, &retimed);
	tmm_replan_planned(g->replan);
	tmm_trace_free(&retimed);
}

/* The trigger of the eviction that a prefetch brings back from: for a
 * wrap-around prefetch (plan.h), the swap-out with no back-access. */
static uint32_t evict_trigger(const struct tmm_plan *p,
			      const struct tmm_plan_action *pf)
{
	uint32_t back = pf->back_access <= pf->trigger ? TMM_PLAN_NONE
						       : pf->back_access;

	for (uint32_t i = 0; i < p->n_actions; i++) {
		const struct tmm_plan_action *a = &p->actions[i];

		if (a->type == TMM_ACT_EVICT_SWAP && a->key == pf->key &&
		    a->back_access == back)
			return a->trigger;
	}
	return 0;
}

/*
 * Would `bytes` more have fitted the budget while access k ran, in the
 * last guided iteration that reached it?  Unknown (no iteration measured,
 * or no memory to note it in) is yes, as it was before this was kept.
 */
static bool room_at(const struct tmm_ctx *ctx, uint32_t k, uint64_t bytes)
{
	const struct tmm_guide *g = ctx->guide;

	return k >= g->n_held_at || g->held_at[k] + bytes <= ctx->budget;
}

/*
 * Capuchin §4.4: a prefetch whose back-access found its tensor still
 * arriving fires 5% of its swap time earlier in the next iteration, at
 * the latest access that ends by then (never before its swap-out).
 * Nor to or before an access that had no room for it, in the last
 * guided iteration that ran it: there the plan's curve was full, and an
 * earlier prefetch would be skipped, or take the room that access's own
 * tensors need, which passive mode then makes by evicting (policy stream
 * on the MLP over pool=chunks at 30%, once dead tensors left without a
 * copy and the step ran faster).  Late it stays, by less if it can.
 */
static void move_late_prefetches(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	bool moved = false;

	for (uint32_t i = 0; first && i < g->plan.n_actions; i++) {
		struct tmm_plan_action *a = &g->plan.actions[i];
		struct tmm_tensor_rec *t;
		uint64_t swap_ns, at, when, need;
		uint32_t k, floor;

		/* A layer-synchronous prefetch runs beside the layer its
		 * policy chose (vDNN): late, it is a stall of that policy. */
		if (a->type != TMM_ACT_PREFETCH || a->late <= a->moved ||
		    (a->flags & TMM_ACT_SYNC))
			continue;
		a->moved = a->late;
		t = tmm_tracker_tensor_of_key(ctx, a->key);
		if (!t || a->trigger >= first->n_accesses)
			continue;
		swap_ns = ctx->be.info.copy_latency_ns +
			  (uint64_t)((double)t->bytes /
				     (ctx->be.info.h2d_gbps > 0
					      ? ctx->be.info.h2d_gbps
					      : 1));
		need = tmm_mover_footprint(ctx, t->bytes);
		at = first->accesses[a->trigger].end_ns;
		when = at > swap_ns / 20 ? at - swap_ns / 20 : 0;
		floor = evict_trigger(&g->plan, a);
		for (k = a->trigger; k > floor + 1 &&
				     first->accesses[k].end_ns > when &&
				     room_at(ctx, k, need) &&
				     room_at(ctx, k - 1, need);
		     k--)
			;
		if (k < a->trigger && k > floor) {
			a->trigger = k;
			moved = true;
		}
	}
	if (moved)
		tmm_plan_sort(&g->plan);
}

void tmm_guide_iteration_end(struct tmm_ctx *ctx)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t seen = tmm_tracker_current(ctx)->n_accesses;

	tmm_layer_sync_abandon(ctx, true);
	tmm_late_prefetch_settle(ctx);
	if (g->following) {
		/* Ending early is leaving the plan too. */
		if (!g->diverged && seen != g->plan.n_accesses)
			diverge(ctx, seen);
		if (g->from_file && g->diverged)
			g->diverged_once = true;
		ctx->c.guided_iterations++;
		move_late_prefetches(ctx);
		if (!g->diverged && !g->from_file &&
		    ctx->cfg.replan_drift > 0)
			replan_if_drifted(ctx);
	}
	g->following = false;
}

/*
 * The first plan, made from the measured iteration with its stalls taken
 * out (tmm_trace_without_stalls): the ops of a guided iteration do not
 * wait for passive mode's evictions or faults, and a prefetch timed by
 * those waits comes late.  Where the copy cannot be had, from the trace
 * as measured.
 */
static void plan_first(struct tmm_ctx *ctx)
{
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	struct tmm_trace lean;
	bool made;

	if (tmm_trace_without_stalls(first, &lean) < 0) {
		made = make_plan(ctx, first);
	} else {
		made = make_plan(ctx, &lean);
		tmm_trace_free(&lean);
	}
	if (made)
		(void)tmm_replan_reset(ctx->guide->replan, first);
}

void tmm_guide_plan_if_due(struct tmm_ctx *ctx)
{
	if (ctx->guide->from_file && tmm_tracker_first(ctx))
		check_hints(ctx);
	if (!ctx->guide->planned && tmm_tracker_first(ctx))
		plan_first(ctx);
}

void tmm_guide_replan(struct tmm_ctx *ctx)
{
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	char b[32];

	/* Before the first plan, plan_if_due will plan on the new budget;
	 * a plan from file was made for whatever budget wrote it. */
	if (!first || !ctx->guide->planned || ctx->guide->from_file)
		return;
	tmm_log(ctx, TMM_LOG_INFO, "budget now %s: re-planning",
		tmm_fmt_bytes(ctx->budget, b, sizeof(b)));
	if (make_plan(ctx, first))
		(void)tmm_replan_reset(ctx->guide->replan, first);
}

uint64_t tmm_guide_demand(struct tmm_ctx *ctx)
{
	const struct tmm_trace *first = tmm_tracker_first(ctx);
	struct tmm_guide *g = ctx->guide;
	struct tmm_planner_input in = tmm_guide_planner_input(ctx, first);

	if (!first)
		return 0;
	if (!g->unconstrained_peak &&
	    tmm_planner_peak(&in, &g->unconstrained_peak) < 0)
		return 0;
	/* A plan made with room for the whole peak knows better what the
	 * iteration holds at once; one made short of room only says how
	 * it copes. */
	if (g->installed && g->plan_budget >= g->unconstrained_peak &&
	    g->plan.predicted_peak)
		return g->plan.predicted_peak;
	return g->unconstrained_peak;
}

void tmm_guide_note_prefetch(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_guide *g = ctx->guide;
	uint32_t a = t->pending_prefetch;

	t->pending_prefetch = TMM_PLAN_NONE;
	/* Capuchin §4.4's feedback: the prefetch may have come too late,
	 * which the device tells (late_prefetch.h). */
	if (t->state == TMM_TS_SWAPPING_IN && g->installed)
		tmm_late_prefetch_note(ctx, t, a);
}

/*
 * liveness=discard: an EVICT_SWAP with no back-access, of a tensor the
 * measured iteration made and destroyed and no drop still to come
 * recomputes from: its bytes are dead from here to its destruction, so it
 * leaves without a copy (lib/move/dead.h).
 */
static bool dead_here(struct tmm_ctx *ctx, const struct tmm_plan_action *a)
{
	const struct tmm_guide *g = ctx->guide;

	return ctx->cfg.liveness_discard && a->back_access == TMM_PLAN_NONE &&
	       tmm_dead_at(g->dead, g->n_dead, a);
}

/* Carries out one action; an action that does not apply is skipped. */
static int fire(struct tmm_ctx *ctx, uint32_t index)
{
	struct tmm_guide *g = ctx->guide;
	struct tmm_plan_action *a = &g->plan.actions[index];
	struct tmm_tensor_rec *t = tmm_tracker_tensor_of_key(ctx, a->key);
	int rc = -EINVAL;

	/* The access that triggers an eviction may have found the tensor
	 * still arriving: compute waited for its copy, the host has not
	 * retired it yet.  A host ahead of the device (CUDA's) may not see
	 * the copy end for many ops: an eviction retires it at once. */
	if (t && t->state == TMM_TS_SWAPPING_IN)
		tmm_mover_progress(ctx);
	if (t && t->state == TMM_TS_SWAPPING_IN && !t->pins &&
	    (a->type == TMM_ACT_EVICT_SWAP || a->type == TMM_ACT_EVICT_DROP)) {
		int retired = tmm_mover_retire_in_early(ctx, t);

		if (retired < 0)
			return retired;
	}
	/* A SPLIT was carried out by tmm_run before the op ran (split.c),
	 * whatever became of the tensor since: here it is only counted. */
	if (a->type == TMM_ACT_SPLIT && ctx->split_access == a->trigger)
		rc = 0;
	else if (ctx->split_evicted_access == a->trigger && t &&
		 ((a->type == TMM_ACT_EVICT_DROP &&
		   t->state == TMM_TS_DROPPED) ||
		  (a->type == TMM_ACT_EVICT_SWAP && t->state == TMM_TS_HOST)))
		/* Dropped or swapped out row by row while the split op ran
		 * (split.c). */
		rc = 0;
	else if (a->type == TMM_ACT_EVICT_SWAP && t &&
		 t == ctx->split_streamed &&
		 (t->state == TMM_TS_SWAPPING_OUT || t->state == TMM_TS_HOST))
		/* Its output, copied out part by part as the split op
		 * wrote it (split_stream.c). */
		rc = 0;
	else if (t && !t->pins) {
		switch ((enum tmm_action_type)a->type) {
		case TMM_ACT_EVICT_SWAP:
			/* Its copy may have started before the op that
			 * read it last (layer_sync.h). */
			if (tmm_layer_sync_take(ctx, t))
				rc = 0;
			else if (dead_here(ctx, a) && tmm_dead_discard(ctx, t))
				rc = 0;
			else if (t->state == TMM_TS_RESIDENT &&
				 (a->flags & TMM_ACT_MIGRATE))
				rc = tmm_mover_migrate_out(ctx, t);
			else if (t->state == TMM_TS_RESIDENT)
				rc = tmm_mover_swap_out(ctx, t, false);
			if (rc == 0 && (a->flags & TMM_ACT_SYNC)) {
				int wrc = tmm_layer_sync_wait_out(ctx, t);

				if (wrc < 0) {
					ctx->c.plan_actions++;
					return wrc;
				}
			}
			break;
		case TMM_ACT_EVICT_DROP:
			if (t->state == TMM_TS_RESIDENT)
				rc = tmm_recompute_drop(ctx, t);
			/* Chen's segments: regenerated, it stays until its
			 * back-access (plan.h). */
			if (rc == 0)
				t->keep_regenerated =
					(a->flags & TMM_ACT_KEEP) != 0;
			break;
		case TMM_ACT_PREFETCH:
			/* vDNN's prefetch takes its memory as any
			 * allocation does, evicting when there is no room:
			 * it is not an optional head start. */
			if (t->state == TMM_TS_HOST &&
			    (a->flags & TMM_ACT_SYNC) && !tmm_mover_uvm(ctx))
				rc = tmm_mover_swap_in(ctx, t);
			else if (t->state == TMM_TS_HOST)
				rc = tmm_mover_prefetch(ctx, t);
			else if (t->state == TMM_TS_SWAPPING_OUT)
				/* Needed again before it has left: keep
				 * it. */
				rc = tmm_recompute_make_resident(ctx, t, true);
			if (rc == 0) {
				t->pending_prefetch = index;
				ctx->c.prefetches++;
				if (a->flags & TMM_ACT_SYNC)
					tmm_layer_sync_prefetched(ctx, t);
			}
			break;
		case TMM_ACT_ADVISE:
			/* Advice is for managed memory; the pinned-copy
			 * engine places bytes itself. */
			rc = tmm_mover_advise(ctx, t, a->advice);
			break;
		case TMM_ACT_SPLIT: /* counted above */
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

/* Notes what the device held as accesses [first, end) ran: their op's
 * tensors in place, before the actions they trigger free any. */
static void note_held(struct tmm_ctx *ctx, uint32_t first, uint32_t end)
{
	struct tmm_guide *g = ctx->guide;
	uint64_t held = tmm_mover_held(ctx);

	if (g->n_held_at < g->plan.n_accesses) {
		uint64_t *p = tmm_realloc(g->held_at, (size_t)g->plan.n_accesses *
							     sizeof(*p));

		if (!p)
			return; /* moves stay unbounded by it */
		/* Accesses not reached yet are unknown: room (room_at). */
		for (uint32_t k = 0; k < g->plan.n_accesses; k++)
			p[k] = 0;
		g->held_at = p;
		g->n_held_at = g->plan.n_accesses;
	}
	for (uint32_t k = first; k < end; k++)
		g->held_at[k] = held;
}

/*
 * The op of the measured iteration's access `k`, or TMM_TRACE_NONE.  A
 * batch of prefetches lands as a whole: each tensor's event is recorded
 * after the batch, so a tensor needed before the others would wait for
 * them.  Only prefetches for one op, which needs them all, go together
 * (gathering every run of prefetches made policy none's step on
 * bench_uvm's MLP 6% longer in mode=uvm at 100%, simulated).
 */
static uint32_t op_needing(struct tmm_ctx *ctx, uint32_t k)
{
	const struct tmm_trace *t = tmm_tracker_first(ctx);

	return t && k < t->n_accesses ? t->accesses[k].op : TMM_TRACE_NONE;
}

int tmm_guide_after_accesses(struct tmm_ctx *ctx, uint32_t first, uint32_t n)
{
	struct tmm_guide *g = ctx->guide;
	const struct tmm_trace *t;
	uint32_t end = first + n, batch_op = TMM_TRACE_NONE;
	int rc;

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
	g->at = end;
	note_held(ctx, first, end);
	/* The layer boundary: the op just run waits no more for what ran
	 * beside it (layer_sync.h). */
	rc = tmm_layer_sync_after_op(ctx);
	/* A run of prefetches for one op goes in one call (mover_uvm.h);
	 * any other action waits for those before it to be queued. */
	tmm_uvm_batch_open(ctx);
	while (rc == 0 && g->next < g->plan.n_actions &&
	       g->plan.actions[g->next].trigger < end) {
		const struct tmm_plan_action *a = &g->plan.actions[g->next];
		uint32_t op = a->type == TMM_ACT_PREFETCH
				      ? op_needing(ctx, a->back_access)
				      : TMM_TRACE_NONE;

		if (op == TMM_TRACE_NONE || op != batch_op)
			rc = tmm_uvm_batch_flush(ctx);
		batch_op = op;
		if (rc == 0)
			rc = fire(ctx, g->next++);
	}
	{
		int crc = tmm_uvm_batch_close(ctx);

		if (rc == 0)
			rc = crc;
	}
	tmm_layer_sync_abandon(ctx, rc < 0);
	return rc;
}
