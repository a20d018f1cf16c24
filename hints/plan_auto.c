/* SPDX-License-Identifier: MIT */
/*
 * plan_auto.c — `auto`: the best plan of all the planners, for this trace.
 *
 * Ours, not a paper's.  No one planner wins everywhere: vDNN's eager
 * offload trains the largest batches of convolutional nets when the link
 * is fast, Capuchin's and TENSILE's tensor-level choices cost least when
 * memory is only somewhat short, checkpointing wins when the link is slow,
 * TSPLIT when one op's input and output alone do not fit.  So `auto` asks
 * each of them for a plan and keeps the best.
 *
 * On the simulator every plan is tried on a twin of the device
 * (lib/twin/trial.h: the runtime itself, replaying the trace, lent to
 * the planners as in->twin), and, with auto_goal=fit (the default):
 *   1. a plan that trains without passive eviction beats one that does
 *      not (passive mode depends on what the allocator happens to find);
 *   2. then the faster steady iteration wins, then fewer evictions;
 *   3. a plan faster than every plan that trains, but that did not train,
 *      has the passive evictions of its trial scheduled as swaps
 *      (repair(), plan_repair.h), or, where that does not make it train,
 *      is made again for a tighter budget (tighten()); what trains is
 *      one more candidate.
 * With auto_goal=speed the faster steady iteration wins first: passive
 * evictions are paid for in the trial's time like any other stall.  At a
 * budget far below the peak, a plan that leaves part of the work to
 * passive mode is sometimes the fastest there is (Capuchin's, on
 * ResNet-50 at 25%), and no plan that trains is as fast.
 * With either goal, the plan that auto picks for a budget a fifth
 * smaller (made there as here, so down in->auto_rungs rungs: three by
 * default, to about half the budget) is one more candidate, tried under
 * the real budget and repaired as in 3 where it no longer trains there:
 * a plan made for less memory fits in more, so more memory only adds
 * choices.  Without them auto ran the GPT example in uvm mode twice as
 * slow at 55% of its peak as at 50% (issue #23).
 * On a real GPU there is no twin (nor on the simulator with the tunable
 * auto_twin=off, which lends none: lib/exec/guide.c), and the forecast
 * (plan_forecast.h), at the rates the run moves tensors at
 * (price_at_move_rates), judges every plan alike:
 *   1. a plan whose forecast fits the budget beats one that does not, and
 *      a planner's own claim to fit is required too (its model knows
 *      things the forecast does not, such as the margin it keeps for
 *      allocator waste);
 *   2. among plans that fit, the shortest forecast iteration wins, ties
 *      going to the plan whose prefetches land earliest before their use
 *      (the forecast's least lead: a plan timed just in time is the
 *      first to be late where the forecast is optimistic), then to the
 *      one with fewer actions (less to go wrong);
 *   3. when none fits, the lowest forecast peak wins: passive mode then
 *      has the least to make up.
 *
 * What auto guarantees on a twin is the order above: its plan is no
 * worse, by the goal's rules and the trials under the real budget, than
 * every candidate, the rungs' picks included.  So it is never worse than
 * its own pick at 4/5, 16/25 or 64/125 of the budget (with three rungs),
 * as that pick runs with the real one.  It is not a guarantee for every
 * smaller budget: one between two rungs has a pick of its own that this
 * one never sees, and a plan made for less room can meet passive
 * evictions with more (its tensors land elsewhere), which auto_goal=fit
 * then counts against it.  tests/test_auto_monotone holds the steady
 * iteration of the GPT and ResNet-50 non-increasing over 25-60% of their
 * peak.
 * Without a twin there are no rungs: each costs a whole search, the
 * planners' time again, which a real GPU would pay at every re-plan.
 *
 * The candidates are every planner except `passive` (no plan is never
 * better than `none`'s liveness) and `auto` itself, and Capuchin's a
 * second time with idle state swapped out (candidates[] says why).  The
 * chosen plan keeps its maker's name after "auto+" in plan.policy, for
 * the log and for plan files.  Planning costs the candidates' times
 * (made at once, one thread per CPU: make_all) and their trials, on a
 * twin once per rung (with three rungs, four to nine times the trials of
 * the budget alone on the zoo), paid once per plan (and per re-plan).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "idle_state.h"
#include "plan_forecast.h"
#include "planners.h"
#include "policies.h"
#include "plan_repair.h"

/* A candidate: a planner, and whether it swaps out the state idle
 * across the step boundary (idle_state.h) where in->offload_idle is
 * TMM_OFFLOAD_IDLE_AUTO.  With ON every planner that can does so, with
 * OFF none does, and the variants are not made. */
struct maker_of {
	const char *policy;
	bool offload_idle;
};

static const struct maker_of candidates[] = {
	{ "none", false },	   { "vdnn-conv", false },
	{ "vdnn-all", false },	   { "checkpoint", false },
	{ "superneurons", false }, { "capuchin", false },
	{ "tensile", false },	   { "tsplit", false },
	{ "stream", false },
	/* Beyond the papers: Capuchin's plan with idle state swapped
	 * out, ZeRO-Offload's move (ResNet-50 at 4 ranks and 30% of a
	 * rank's peak on the A100 profile: 277 to 222 ms a step,
	 * simulated, docs/scaling.md), where at one rank and 30% it
	 * makes Capuchin's plan slower (969 to 1176 ms): tried both
	 * ways.  The other planners gained less than Capuchin's there
	 * and are not tried twice, which would cost a trial each. */
	{ "capuchin", true },
};

struct candidate {
	struct tmm_plan plan;
	struct tmm_forecast f;
	struct tmm_trial_result trial;
	bool tried;  /* trial holds a result */
};

/* Whether a beats b by the forecast (the file comment's rules). */
static bool forecast_better(const struct candidate *a,
			    const struct candidate *b)
{
	bool ok_a = a->f.fits && a->plan.fits, ok_b = b->f.fits && b->plan.fits;

	if (ok_a != ok_b)
		return ok_a;
	if (!ok_a && a->f.peak != b->f.peak)
		return a->f.peak < b->f.peak;
	if (a->f.total_ns != b->f.total_ns)
		return a->f.total_ns < b->f.total_ns;
	if (a->f.least_lead_ns != b->f.least_lead_ns)
		return a->f.least_lead_ns > b->f.least_lead_ns;
	return a->plan.n_actions < b->plan.n_actions;
}

/* For fit, training comes before speed: passive mode depends on what
 * the allocator happens to find; a plan that fits does not. */
int tmm_auto_trial_order(const struct tmm_trial_result *a,
			 const struct tmm_trial_result *b,
			 enum tmm_auto_goal goal)
{
	if (goal == TMM_AUTO_GOAL_SPEED && a->iteration_ns != b->iteration_ns)
		return a->iteration_ns < b->iteration_ns ? -1 : 1;
	if (a->trained != b->trained)
		return a->trained ? -1 : 1;
	if (a->iteration_ns != b->iteration_ns)
		return a->iteration_ns < b->iteration_ns ? -1 : 1;
	if (a->passive_evictions != b->passive_evictions)
		return a->passive_evictions < b->passive_evictions ? -1 : 1;
	return 0;
}

/* Whether a beats b, for `goal`: by their trials (tmm_auto_trial_order),
 * then by the forecast.  A plan whose trial could not run loses to one
 * whose trial did. */
static bool trial_better(const struct candidate *a, const struct candidate *b,
			 enum tmm_auto_goal goal)
{
	int order;

	if (!a->tried || !b->tried)
		return a->tried != b->tried ? a->tried : forecast_better(a, b);
	order = tmm_auto_trial_order(&a->trial, &b->trial, goal);
	return order ? order < 0 : forecast_better(a, b);
}

#define N_CANDIDATES (sizeof(candidates) / sizeof(candidates[0]))
/* Room for the candidates and the lower rung's pick, then for what
 * retries made of them. */
#define N_BASE (N_CANDIDATES + 1)
#define N_SLOTS (2 * N_BASE)

/* Each rung's budget is RUNG_NUM / RUNG_DEN of the one above, and the
 * auto_rungs tunable says how many (3 by default, the lowest about half
 * the budget).  Two rungs left the GPT in uvm mode slower at 45% of its
 * peak than at 35%; a tenth less, six deep, cost about twice as much and
 * made no tested case monotone that this does not. */
#define RUNG_NUM 4
#define RUNG_DEN 5

/* On a twin, tries c's plan (anew: an earlier result is dropped).  A
 * trial that could not run leaves c untried: -ENOMEM from the twin is
 * also an op that did not fit its budget at all. */
static void try_plan(const struct tmm_planner_input *in, struct candidate *c)
{
	tmm_trial_result_free(&c->trial);
	c->tried = in->twin &&
		   in->twin->ops->run(&in->twin->device, in->trace, &c->plan,
				      &c->trial) == 0;
}

static void candidate_free(struct candidate *c)
{
	tmm_plan_free(&c->plan);
	tmm_trial_result_free(&c->trial);
}

/* Makes candidate m's plan for `in` and forecasts it; no trial.
 * c->plan.policy is left empty when the planner failed, or for a
 * variant that offload_idle rules out.  A variant's plan is named
 * "<policy>+idle".  Returns 0 or -ENOMEM.  Touches nothing but *c:
 * several run at once (make_all). */
static int make_forecast(const struct maker_of *m,
			 const struct tmm_planner_input *in,
			 const struct tmm_analysis *an, struct candidate *c)
{
	struct tmm_planner_input v = *in;
	char err[200];
	int rc;

	c->tried = false;
	memset(&c->trial, 0, sizeof(c->trial));
	memset(&c->plan, 0, sizeof(c->plan));
	if (m->offload_idle) {
		/* Where no state would move, the variant is its base plan
		 * again: not worth a plan and a trial. */
		if (in->offload_idle != TMM_OFFLOAD_IDLE_AUTO ||
		    !tmm_idle_state_any(an))
			return 0;
		v.offload_idle = TMM_OFFLOAD_IDLE_ON;
	}
	rc = tmm_policy_make(m->policy, &v, &c->plan, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		/* One planner failing leaves the others. */
		memset(&c->plan, 0, sizeof(c->plan));
		return 0;
	}
	if (m->offload_idle)
		snprintf(c->plan.policy, sizeof(c->plan.policy), "%s+idle",
			 m->policy);
	return tmm_forecast_plan(an, &c->plan, &c->f);
}

/* make_forecast, then, on a twin, the trial. */
static int make_candidate(const struct maker_of *m,
			  const struct tmm_planner_input *in,
			  const struct tmm_analysis *an, struct candidate *c)
{
	int rc = make_forecast(m, in, an, c);

	if (rc == 0 && c->plan.policy[0])
		try_plan(in, c);
	return rc;
}

/*
 * The candidates' plans are made at once, on in->auto_threads threads
 * (0: one per online CPU), because each planner is a pure function of
 * the trace, the budget and the device, and auto's time was their sum
 * (issue #22: 80 ms on bench_planners' 10k-access trace, against a goal
 * of 50).  Each thread takes the next candidate not yet taken, from the
 * end of the list, where the costly planners are (tsplit, tensile), so
 * that the cheap ones fill in behind them.  Each writes only its own
 * candidate, and the plans are the ones a single thread makes: the
 * choice between them is made after every thread is joined, in the
 * list's order, as before.  Trials stay on the caller's thread: a twin
 * is a whole context of the runtime.
 */
struct maker {
	const struct tmm_planner_input *in;
	const struct tmm_analysis *an;
	struct candidate *c;
	int rc[N_CANDIDATES];
	atomic_uint next; /* jobs taken: candidate N_CANDIDATES - 1 - next */
};

static void *make_some(void *arg)
{
	struct maker *m = arg;
	unsigned j;

	while ((j = atomic_fetch_add_explicit(&m->next, 1,
					      memory_order_relaxed)) <
	       N_CANDIDATES) {
		size_t i = N_CANDIDATES - 1 - j;

		m->rc[i] = make_forecast(&candidates[i], m->in, m->an,
					 &m->c[i]);
	}
	return NULL;
}

/* How many threads make the candidates' plans, the caller's included. */
static unsigned threads_for(const struct tmm_planner_input *in)
{
	long n = in->auto_threads;

	if (n == 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n < (long)N_CANDIDATES ? (unsigned)n : (unsigned)N_CANDIDATES;
}

/* Makes and forecasts every candidate into c[] (no trials).  A thread
 * that cannot be started leaves its share to the others.  Returns 0 or
 * the first candidate's error (-ENOMEM). */
static int make_all(const struct tmm_planner_input *in,
		    const struct tmm_analysis *an, struct candidate *c)
{
	struct maker m = { .in = in, .an = an, .c = c };
	pthread_t t[N_CANDIDATES];
	unsigned n = threads_for(in), started = 0;

	atomic_init(&m.next, 0);
	while (started + 1 < n &&
	       pthread_create(&t[started], NULL, make_some, &m) == 0)
		started++;
	make_some(&m);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	for (size_t i = 0; i < N_CANDIDATES; i++)
		if (m.rc[i] < 0)
			return m.rc[i];
	return 0;
}

/* Did c's trial run faster than every plan that trains, without
 * training itself?  Only such a plan can win by being made again or
 * repaired. */
static bool worth_retrying(const struct candidate *c,
			   uint64_t best_trained_ns)
{
	return c->tried && !c->trial.trained &&
	       c->trial.iteration_ns < best_trained_ns;
}

/*
 * Beyond the papers: a plan that ran faster than every plan that trains,
 * but with passive evictions, was made for a budget its planner's model
 * filled too closely.  It is made again for budgets 10%, 20% ... 40%
 * smaller, tried under the real one each time, and the first that trains
 * and beats every plan that trains goes into *out (left empty when none
 * does).  Only such plans are retried: the others cannot win.
 */
static int tighten(const struct maker_of *m,
		   const struct tmm_planner_input *in,
		   const struct tmm_analysis *an, const struct candidate *c,
		   uint64_t best_trained_ns, struct candidate *out)
{
	if (!worth_retrying(c, best_trained_ns))
		return 0;
	for (int step = 1; step <= 4; step++) {
		struct tmm_planner_input tight = *in;
		struct candidate t = { 0 };
		int rc;

		tight.budget = in->budget - in->budget / 10 * (uint64_t)step;
		rc = make_candidate(m, &tight, an, &t);
		if (rc < 0)
			return rc;
		if (t.tried && t.trial.trained &&
		    t.trial.iteration_ns < best_trained_ns) {
			*out = t;
			return 0;
		}
		candidate_free(&t);
	}
	return 0;
}

/* Rounds of repair(): each schedules what the last trial evicted. */
#define REPAIR_ROUNDS 6
/* Where a plan trains without repair, a repaired one must be faster by
 * this share (percent) to replace it: with the least slack of any plan,
 * it is the likeliest to meet a passive eviction its trial did not see
 * (a program's host reads and writes are not in the trace). */
#define REPAIR_MIN_GAIN_PCT 5

/*
 * Beyond the papers: a plan faster than every plan that trains, but
 * that did not train, has its trial's passive evictions scheduled as
 * swaps (plan_repair.h) and is tried again, for up to REPAIR_ROUNDS
 * rounds while each round leaves fewer passive evictions.  The first
 * repaired plan that trains, and beats every plan that trains by
 * REPAIR_MIN_GAIN_PCT, goes into *out (left empty when none does).
 * It is tried under the real budget: the twin replays the program's
 * allocations and destructions in their order, so on a program whose
 * iteration is all in the trace its verdict is the run's.
 */
static int repair(const struct tmm_planner_input *in,
		  const struct tmm_analysis *an, const struct candidate *c,
		  uint64_t best_trained_ns, struct candidate *out)
{
	struct candidate cur = { 0 }, next = { 0 };
	const struct candidate *from = c;
	uint64_t accept_ns = best_trained_ns;
	int rc = 0;

	if (!worth_retrying(c, best_trained_ns))
		return 0;
	if (best_trained_ns != UINT64_MAX)
		accept_ns -= best_trained_ns / 100 * REPAIR_MIN_GAIN_PCT;
	for (int round = 0; rc == 0 && round < REPAIR_ROUNDS; round++) {
		uint32_t added;

		rc = tmm_plan_repair(an, &from->plan, from->trial.evicted,
				     from->trial.n_evicted, &next.plan,
				     &added);
		if (rc < 0 || added == 0)
			break;
		next.f = from->f;
		try_plan(in, &next);
		if (!next.tried ||
		    next.trial.iteration_ns >= best_trained_ns ||
		    next.trial.passive_evictions >=
			    from->trial.passive_evictions)
			break;
		if (next.trial.trained) {
			if (next.trial.iteration_ns >= accept_ns)
				break;
			*out = next;
			memset(&next, 0, sizeof(next));
			break;
		}
		candidate_free(&cur);
		cur = next;
		memset(&next, 0, sizeof(next));
		from = &cur;
	}
	candidate_free(&next);
	candidate_free(&cur);
	return rc;
}

/* Lowers *best_ns to c's iteration if c trained faster. */
static void note_trained(const struct candidate *c, uint64_t *best_ns)
{
	if (c->tried && c->trial.trained && c->trial.iteration_ns < *best_ns)
		*best_ns = c->trial.iteration_ns;
}

static int pick(const struct tmm_planner_input *in, unsigned rungs,
		struct candidate *out);

/*
 * Into *c, the plan auto picks for the next rung down (in->budget less a
 * fifth), on a twin of that budget, with `rungs` rungs below it; then
 * judged under in->budget like every other candidate: forecast by an,
 * tried on in's twin.  Left empty when nothing could be made there.
 * Returns 0 or -ENOMEM.
 */
static int lower_rung(const struct tmm_planner_input *in,
		      const struct tmm_analysis *an, unsigned rungs,
		      struct candidate *c)
{
	struct tmm_planner_input lower = *in;
	struct tmm_twin twin = *in->twin;
	int rc;

	lower.budget = in->budget / RUNG_DEN * RUNG_NUM;
	twin.device.budget = lower.budget;
	lower.twin = &twin;
	rc = pick(&lower, rungs, c);
	if (rc == -EINVAL)
		return 0; /* no candidate at all there */
	if (rc == 0)
		rc = tmm_forecast_plan(an, &c->plan, &c->f);
	if (rc == 0)
		try_plan(in, c);
	return rc;
}

/* Makes, forecasts and (on a twin) tries every candidate into c[], the
 * lower rung's pick into c[N_CANDIDATES] (with `rungs` left, on a twin),
 * and into retried[] what repairing or tightening the promising ones
 * that did not train made of them (an empty plan where nothing trained).
 * Returns 0 or -ENOMEM. */
static int gather(const struct tmm_planner_input *in,
		  const struct tmm_analysis *an, unsigned rungs,
		  struct candidate *c, struct candidate *retried)
{
	uint64_t best_trained = UINT64_MAX;
	int rc;

	rc = make_all(in, an, c);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < N_CANDIDATES; i++) {
		if (c[i].plan.policy[0])
			try_plan(in, &c[i]);
		note_trained(&c[i], &best_trained);
	}
	for (size_t i = 0; in->twin && i < N_CANDIDATES; i++) {
		/* Repair first: it keeps the plan's own choices and adds
		 * only what its trial lacked, where a tighter budget makes
		 * the planner swap more everywhere. */
		struct candidate *r = &retried[i];

		rc = repair(in, an, &c[i], best_trained, r);
		if (rc == 0 && !r->plan.policy[0])
			rc = tighten(&candidates[i], in, an, &c[i],
				     best_trained, r);
		if (rc < 0)
			return rc;
		note_trained(r, &best_trained);
	}
	/* The rung's pick comes last, so that it takes nothing from the
	 * candidates above (a plan that trains before the repairs leaves
	 * fewer plans worth repairing): it only adds.  It is repaired like
	 * them where it no longer trains under this budget; it has no
	 * planner of its own to tighten. */
	if (in->twin && rungs > 0) {
		rc = lower_rung(in, an, rungs - 1, &c[N_CANDIDATES]);
		if (rc == 0)
			rc = repair(in, an, &c[N_CANDIDATES], best_trained,
				    &retried[N_CANDIDATES]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Where the run moves tensors at other rates than the host link that the
 * planners plan by (in->moves_*: mode=uvm by prefetch), each candidate's
 * forecast is made again at those rates, which decide its time.  By the
 * link, on the compute-bound MLP of issue #19 at 40% (h100-sxm5-pcie5-80g,
 * host ahead, simulated), three plans tied at the unconstrained step, and
 * the one with fewer actions, tensile's, ran at 2.06x where stream's ran
 * at 1.48x; priced at the prefetch rates, with the forecast's steady
 * state, stream's wins, as the twin finds.  The planners keep the link:
 * given the prefetch rates, their own plans got slower (auto 2.34x
 * there).  Returns 0 or -ENOMEM.
 */
static int price_at_move_rates(const struct tmm_planner_input *in,
			       const struct tmm_analysis *an,
			       struct candidate *c, size_t n)
{
	struct tmm_analysis moved = *an; /* its arrays, only read */
	int rc = 0;

	if (!(in->moves_h2d_gbps > 0) && !(in->moves_d2h_gbps > 0))
		return 0;
	if (in->moves_h2d_gbps > 0)
		moved.dev.h2d_gbps = in->moves_h2d_gbps;
	if (in->moves_d2h_gbps > 0)
		moved.dev.d2h_gbps = in->moves_d2h_gbps;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (c[i].plan.policy[0])
			rc = tmm_forecast_plan(&moved, &c[i].plan, &c[i].f);
	return rc;
}

/* The best candidate for `in` into *out (its plan keeps its maker's
 * name), `rungs` rungs deep.  Returns 0, -EINVAL when no planner made a
 * plan, or -ENOMEM. */
static int pick(const struct tmm_planner_input *in, unsigned rungs,
		struct candidate *out)
{
	struct tmm_analysis an;
	struct candidate c[N_SLOTS];
	size_t best = N_SLOTS;
	int rc;

	memset(c, 0, sizeof(c));
	rc = tmm_analysis_init(&an, in);
	if (rc < 0)
		return rc;
	rc = gather(in, &an, rungs, c, c + N_BASE);
	if (rc == 0)
		rc = price_at_move_rates(in, &an, c, N_SLOTS);
	for (size_t i = 0; rc == 0 && i < N_SLOTS; i++) {
		if (!c[i].plan.policy[0])
			continue;
		if (best == N_SLOTS ||
		    (in->twin ? trial_better(&c[i], &c[best], in->auto_goal)
			      : forecast_better(&c[i], &c[best])))
			best = i;
	}
	if (rc == 0 && best == N_SLOTS)
		rc = -EINVAL;
	if (rc == 0) {
		*out = c[best];
		memset(&c[best], 0, sizeof(c[best]));
	}
	for (size_t i = 0; i < N_SLOTS; i++)
		candidate_free(&c[i]);
	tmm_analysis_free(&an);
	return rc;
}

int tmm_plan_auto(const struct tmm_planner_input *in, struct tmm_plan *out)
{
	struct candidate best = { 0 };
	int rc = pick(in, in->auto_rungs, &best);

	if (rc == 0) {
		/* Candidate names are short: "auto+superneurons" fits. */
		struct tmm_plan *b = &best.plan;
		char name[sizeof(b->policy) + 8];

		snprintf(name, sizeof(name), "auto+%.*s",
			 (int)(sizeof(b->policy) - 6), b->policy);
		memcpy(b->policy, name, sizeof(b->policy));
		b->policy[sizeof(b->policy) - 1] = '\0';
		*out = *b;
		memset(b, 0, sizeof(*b));
	}
	candidate_free(&best);
	return rc;
}
