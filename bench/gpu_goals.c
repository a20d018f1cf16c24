/* SPDX-License-Identifier: MIT */
/*
 * gpu_goals.c — issue #19's goals judged from one invocation's runs (see
 * gpu_goals.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_goals.h"
#include "lib/base/xalloc.h"

/* A named cell of the issue: auto in `mode` at `budget` of `shape`. */
struct cell_goal {
	const char *shape, *mode;
	double budget, limit;
};

static const struct cell_goal cell_goals[] = {
	{ "compute-bound", "swap", 0.4, 1.15 },
	{ "compute-bound", "uvm", 0.4, 1.25 },
	{ "transfer-bound", "swap", 0.3, 1.5 },
	{ "transfer-bound", "uvm", 0.3, 1.5 },
};

#define UVM_OVER_SWAP 1.10   /* uvm+auto against swap+auto */
#define AUTO_OVER_BEST 1.03  /* auto against the best other policy */
#define NO_PRESSURE 1.05     /* mode=uvm, budget above the peak */

int goal_book_add(struct goal_book *b, const struct goal_run *r)
{
	if (b->n == b->cap) {
		unsigned cap = b->cap ? 2 * b->cap : 16;
		struct goal_run *p = tmm_realloc(b->runs, cap * sizeof(*p));

		if (!p) {
			b->lost++;
			return -ENOMEM;
		}
		b->runs = p;
		b->cap = cap;
	}
	b->runs[b->n++] = *r;
	return 0;
}

void goal_book_expect(struct goal_book *b, const char *shape)
{
	if (b->n_meant < sizeof(b->meant) / sizeof(b->meant[0]))
		b->meant[b->n_meant++] = shape;
}

void goal_book_free(struct goal_book *b)
{
	free(b->runs);
	b->runs = NULL;
	b->n = b->cap = b->lost = b->n_meant = 0;
}

static bool same_budget(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

/* The last run of the cell, or NULL. */
static const struct goal_run *find(const struct goal_book *b,
				   const char *shape, const char *mode,
				   const char *policy, double budget)
{
	for (unsigned i = b->n; i-- > 0;) {
		const struct goal_run *r = &b->runs[i];

		if (!strcmp(r->shape, shape) && !strcmp(r->mode, mode) &&
		    !strcmp(r->policy, policy) && same_budget(r->budget, budget))
			return r;
	}
	return NULL;
}

/* Whether a run of `shape` was made or meant. */
static bool shape_ran(const struct goal_book *b, const char *shape)
{
	for (unsigned i = 0; i < b->n; i++)
		if (!strcmp(b->runs[i].shape, shape))
			return true;
	for (unsigned i = 0; i < b->n_meant; i++)
		if (!strcmp(b->meant[i], shape))
			return true;
	return false;
}

/* Whether an earlier run than k has k's shape, mode and budget (and its
 * policy too when `policy` is set): each such group is judged once. */
static bool seen_before(const struct goal_book *b, unsigned k, bool policy)
{
	const struct goal_run *r = &b->runs[k];

	for (unsigned i = 0; i < k; i++) {
		const struct goal_run *q = &b->runs[i];

		if (!strcmp(q->shape, r->shape) && !strcmp(q->mode, r->mode) &&
		    same_budget(q->budget, r->budget) &&
		    (!policy || !strcmp(q->policy, r->policy)))
			return true;
	}
	return false;
}

struct judge {
	void (*out)(const char *fmt, ...);
	unsigned missed;
};

/* One row: `met` is 1 (yes), 0 (no: counted) or -1 (no figure:
 * counted, and `measured` says why). */
static void row(struct judge *j, const char *goal, const char *measured,
		const char *limit, int met)
{
	if (met != 1)
		j->missed++;
	j->out("| %s | %s | %s | %s |\n", goal, measured, limit,
	       met == 1 ? "yes" : met == 0 ? "**no**" : "—");
}

/* A run as a figure, or why there is none. */
static int figure_of(const struct goal_run *r, char *buf, size_t len)
{
	if (!r) {
		snprintf(buf, len, "not run");
		return -1;
	}
	if (!r->ok) {
		snprintf(buf, len, "failed (row above)");
		return -1;
	}
	return 0;
}

static void judge_cells(const struct goal_book *b, struct judge *j)
{
	char goal[128], measured[128], limit[32];

	for (size_t i = 0; i < sizeof(cell_goals) / sizeof(cell_goals[0]);
	     i++) {
		const struct cell_goal *g = &cell_goals[i];
		const struct goal_run *r;

		if (!shape_ran(b, g->shape))
			continue;
		r = find(b, g->shape, g->mode, "auto", g->budget);
		snprintf(goal, sizeof(goal), "%s %.0f%%: %s+auto", g->shape,
			 100 * g->budget, g->mode);
		snprintf(limit, sizeof(limit), "≤ %.2fx", g->limit);
		if (figure_of(r, measured, sizeof(measured))) {
			row(j, goal, measured, limit, -1);
			continue;
		}
		snprintf(measured, sizeof(measured), "%.2fx (%.1f ms)", r->x,
			 r->ms);
		row(j, goal, measured, limit, r->x <= g->limit);
	}
}

static void judge_uvm_against_swap(const struct goal_book *b,
				   struct judge *j)
{
	char goal[128], measured[160], limit[32];

	snprintf(limit, sizeof(limit), "≤ %.2fx", UVM_OVER_SWAP);
	for (unsigned k = 0; k < b->n; k++) {
		const struct goal_run *s = &b->runs[k], *u;

		if (strcmp(s->mode, "swap") || strcmp(s->policy, "auto") ||
		    s->budget > 1 || seen_before(b, k, true))
			continue;
		u = find(b, s->shape, "uvm", "auto", s->budget);
		if (!u)
			continue;
		snprintf(goal, sizeof(goal),
			 "%s %.0f%%: uvm+auto over swap+auto", s->shape,
			 100 * s->budget);
		if (figure_of(s, measured, sizeof(measured)) ||
		    figure_of(u, measured, sizeof(measured))) {
			row(j, goal, measured, limit, -1);
			continue;
		}
		snprintf(measured, sizeof(measured),
			 "%.2fx (%.1f ms against %.1f ms)", u->ms / s->ms,
			 u->ms, s->ms);
		row(j, goal, measured, limit, u->ms <= UVM_OVER_SWAP * s->ms);
	}
}

/* Peers named one by one up to this many; more are counted. */
#define PEERS_NAMED 4

static void judge_auto_against_peers(const struct goal_book *b,
				     struct judge *j)
{
	char goal[512], measured[512], limit[32], peers[256];

	snprintf(limit, sizeof(limit), "≤ +%.0f%%",
		 100 * (AUTO_OVER_BEST - 1));
	for (unsigned k = 0; k < b->n; k++) {
		const struct goal_run *a = &b->runs[k], *best = NULL;
		unsigned n_peers = 0;
		size_t used = 0;

		if (strcmp(a->policy, "auto") || seen_before(b, k, true))
			continue;
		a = find(b, a->shape, a->mode, "auto", a->budget);
		peers[0] = 0;
		for (unsigned i = 0; i < b->n; i++) {
			const struct goal_run *q = &b->runs[i];

			if (strcmp(q->shape, a->shape) ||
			    strcmp(q->mode, a->mode) ||
			    !same_budget(q->budget, a->budget) ||
			    !strcmp(q->policy, "auto") || !q->ok)
				continue;
			if (n_peers++ < PEERS_NAMED && used < sizeof(peers))
				used += (size_t)snprintf(
					peers + used, sizeof(peers) - used,
					"%s%s", used ? ", " : "", q->policy);
			if (!best || q->ms < best->ms)
				best = q;
		}
		if (!best)
			continue; /* no peer ran: nothing to judge by */
		if (n_peers > PEERS_NAMED)
			snprintf(peers, sizeof(peers), "the %u other policies",
				 n_peers);
		snprintf(goal, sizeof(goal),
			 "%s %.0f%%, %s: auto against the best of %s",
			 a->shape, 100 * a->budget, a->mode, peers);
		if (figure_of(a, measured, sizeof(measured))) {
			row(j, goal, measured, limit, -1);
			continue;
		}
		snprintf(measured, sizeof(measured),
			 "%+.1f%% (%.1f ms; %s %.1f ms)",
			 100 * (a->ms / best->ms - 1), a->ms, best->policy,
			 best->ms);
		row(j, goal, measured, limit, a->ms <= AUTO_OVER_BEST * best->ms);
	}
}

static void judge_no_pressure(const struct goal_book *b, struct judge *j)
{
	char goal[128], measured[128], limit[32];

	snprintf(limit, sizeof(limit), "≤ %.2fx", NO_PRESSURE);
	for (unsigned k = 0; k < b->n; k++) {
		const struct goal_run *r = &b->runs[k];

		if (strcmp(r->mode, "uvm") || strcmp(r->policy, "none") ||
		    r->budget <= 1)
			continue;
		snprintf(goal, sizeof(goal),
			 "%s, uvm with no pressure (none, %.0f%%)", r->shape,
			 100 * r->budget);
		if (figure_of(r, measured, sizeof(measured))) {
			row(j, goal, measured, limit, -1);
			continue;
		}
		snprintf(measured, sizeof(measured), "%.2fx (%.1f ms)", r->x,
			 r->ms);
		row(j, goal, measured, limit, r->x <= NO_PRESSURE);
	}
}

/* The limit of the uvm cell of `shape` at `budget`, or 0 where the
 * issue names none there. */
static double uvm_cell_limit(const char *shape, double budget)
{
	for (size_t i = 0; i < sizeof(cell_goals) / sizeof(cell_goals[0]);
	     i++)
		if (!strcmp(cell_goals[i].mode, "uvm") &&
		    !strcmp(cell_goals[i].shape, shape) &&
		    same_budget(cell_goals[i].budget, budget))
			return cell_goals[i].limit;
	return 0;
}

/*
 * auto in the other mode=uvm variants the call ran (uvm-copy, the copy
 * way out asked for, which auto takes by itself at the H200's rates;
 * uvm-counters, CUPTI's unified-memory counters on; uvm-kernel, the copy
 * way by the library's copy kernel), against the limits
 * uvm+auto is held to: not goals, since auto's way is the one judged
 * above, but what taking another way would give, so that one call says
 * whether it would meet them.  Not counted among the missed.
 */
static void print_other_ways(const struct goal_book *b,
				 void (*out)(const char *fmt, ...))
{
	unsigned rows = 0;

	for (unsigned k = 0; k < b->n; k++) {
		const struct goal_run *r = &b->runs[k], *s;
		double limit = uvm_cell_limit(r->shape, r->budget);
		char cell[64], over[96], fig[96];
		bool within;

		if (strncmp(r->mode, "uvm-", 4) || strcmp(r->policy, "auto") ||
		    r->budget > 1 || seen_before(b, k, true))
			continue;
		r = find(b, r->shape, r->mode, "auto", r->budget);
		s = find(b, r->shape, "swap", "auto", r->budget);
		within = r->ok;
		if (!rows++)
			out("\nNot goals: auto in the other mode=uvm ways this "
			    "call ran, against uvm+auto's limits, to say what "
			    "taking that way would give (`uvm-copy`: out by "
			    "copy, asked for; `uvm-counters`: CUPTI's "
			    "unified-memory counters on; `uvm-kernel`: by "
			    "copy, made by the library's copy kernel).\n\n"
			    "| cell | way | "
			    "x | over swap+auto | within uvm's limits |\n"
			    "|---|---|---:|---:|---|\n");
		snprintf(cell, sizeof(cell), "%s %.0f%%", r->shape,
			 100 * r->budget);
		if (figure_of(r, fig, sizeof(fig)) == 0)
			snprintf(fig, sizeof(fig), "%.2fx (%.1f ms)%s", r->x,
				 r->ms, limit > 0 ? "" : ", no cell limit");
		if (r->ok && limit > 0 && r->x > limit)
			within = false;
		if (!r->ok || !s || !s->ok) {
			snprintf(over, sizeof(over), "—");
		} else {
			snprintf(over, sizeof(over), "%.2fx", r->ms / s->ms);
			if (r->ms > UVM_OVER_SWAP * s->ms)
				within = false;
		}
		out("| %s | %s | %s | %s | %s |\n", cell, r->mode, fig, over,
		    within ? "yes" : "**no**");
	}
}

unsigned goal_book_print(const struct goal_book *b, const char *title,
			 void (*out)(const char *fmt, ...))
{
	struct judge j = { .out = out };
	char measured[128];
	unsigned same = 0;

	out("\n### %s\n\n", title);
	out("Each goal beside the figure of this invocation's runs that "
	    "judges it; *x* over the unconstrained step of the same shape. "
	    "A run that failed%s gives no figure.\n\n",
	    b->no_bytes ? "" : " or was not bit-identical");
	out("| goal | measured | limit | met |\n|---|---:|---:|---|\n");
	judge_cells(b, &j);
	judge_uvm_against_swap(b, &j);
	judge_auto_against_peers(b, &j);
	judge_no_pressure(b, &j);
	for (unsigned k = 0; k < b->n; k++)
		same += b->runs[k].ok;
	snprintf(measured, sizeof(measured), "%u of %u%s", same,
		 b->n + b->lost, b->lost ? " (some not noted: no memory)" : "");
	if (!b->no_bytes)
		row(&j, "every run bit-identical to the unconstrained one",
		    measured, "all", same == b->n && !b->lost && b->n);
	else if (b->lost)
		row(&j, "every run noted", measured, "all", 0);
	out("\n%u goal(s) missed or not measured.\n", j.missed);
	print_other_ways(b, out);
	return j.missed;
}
