/* SPDX-License-Identifier: MIT */
/*
 * bench_sim_gpu.c — issue #19's table on the simulated GPU, its host in
 * lockstep and ahead, beside what a real GPU measured (a benchmark, not a
 * test).
 *
 * The zoo's copies of bench_gpu_train's two shapes (bench/models/mlp.c:
 * compute-bound 12x4096 at batch 2048, transfer-bound 24x1024 at batch
 * 8192; their peaks are the GPU's to the MiB) run on a simulated profile
 * under every policy, at budgets that are fractions of the unconstrained
 * peak, twice: with the simulated host in lockstep with its device (the
 * simulator as it always was) and ahead of it (sim_host=ahead: as a real
 * GPU's host, which queues work and goes on).  Each row prints both steps
 * over the unconstrained step of the same kind, the lower bound
 * max(unconstrained step, bytes out / D2H, bytes in / H2D) of the run
 * ahead with the profile's pinned-copy bandwidths (bytes that left by
 * prefetch in mode=uvm at its prefetch rate to the host), what the run ahead
 * skipped of its plan and left to passive mode, and the ratio the H200 of
 * docs/gpu-h200-goals.md measured for the same cell at d277e91 (— where
 * it ran none).  The default profile is that card's,
 * h200-sxm-pcie5-141g, whose copies of managed memory hold the host as
 * the card's did (sim_managed_copy=held).
 *
 *   bench/bench_sim_gpu [--profile P] [--shape compute|transfer|all]
 *                       [--model NAME [--batch N]]
 *                       [--modes swap,uvm,uvm-mix,uvm-kernel]
 *                       [--budgets 0.4,0.3]
 *   bench/bench_sim_gpu --kernel-grid [--profile P] [--shape S]
 *
 * uvm-mix is mode=uvm by uvm_swap_path=mix (the swaps that fit by
 * migration beside the copies, hints/uvm_mix.h), a table beside uvm's;
 * uvm-kernel is mode=uvm by copy with uvm_copier=kernel, whose copies
 * hold no host, at the copy engines' rate and taking nothing of compute
 * (the sim_copy_kernel_* tunables' defaults: the best a card could
 * give).  --kernel-grid prints instead, for each shape at its goal
 * budget, uvm+auto by the kernel at rates and shares of compute no GPU
 * has measured yet, beside its peers, auto judging its plans on the
 * twin and by its forecast alone (as on a GPU), so that a card's
 * measured rate and cost (bench_managed_copy) read off as a training's
 * figure.
 *
 * A budget above 1 puts no memory pressure on the run (the H200 ran 2,
 * twice the peak, for mode=uvm's own cost).
 *
 * --model runs one model of the zoo instead of the two shapes (any of
 * `tensormm-bench --models list`), so that mode=uvm can be held to swap
 * mode beyond the MLPs the GPU measured: its goals table then judges
 * uvm+auto against swap+auto and auto against the other policies for
 * that model.  Where the model's convolutions pick an algorithm, each row
 * plays its paper's framework (docs/model-zoo.md): superneurons then
 * runs twice, in its own and in TensorFlow's, and auto once more in
 * SuperNeurons', and the goals judge auto against every policy in
 * auto's framework, TensorFlow's, so that they judge plans, not
 * frameworks.
 *
 * It ends with issue #19's goals judged from these runs, in lockstep and
 * ahead, in the table bench_gpu_train --goals prints for a real GPU
 * (gpu_goals.h; the bytes are phantom, so no bit-identity goal).
 * Every time but the wall time at the end is simulated.  Seven steps a
 * run; the figure is the step of median time among the five after the
 * first two (the measured one and the first guided), with that step's
 * bytes, as bench_gpu_train takes the median of its steady steps.  The
 * last step alone was the figure before; a plan whose steps alternate
 * between two states then read as whichever came last (tensile on
 * ResNet-50 at half its peak with the host ahead: 59-65 ms a step with
 * passive evictions and 32.6 ms without, in turn).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "drive.h"
#include "gpu_goals.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

#define STEPS 7
#define WARMUP 2
_Static_assert((STEPS - WARMUP) % 2 == 1,
	       "an odd count of steady steps: the median is one step's");
#define MAX_BUDGETS 8

static const char *const policies[] = {
	"auto",	    "none",	    "passive",	"capuchin", "tensile",
	"tsplit",   "superneurons", "vdnn-all", "vdnn-conv", "checkpoint",
};
#define NPOLICY (sizeof(policies) / sizeof(policies[0]))

struct shape {
	const char *name, *model;
	unsigned batch;
	const char *goal_name; /* bench_gpu_train's, for its goals */
};

static const struct shape shapes[] = {
	{ "compute", "mlp_compute", 2048, "compute-bound" },
	{ "transfer", "mlp_transfer", 8192, "transfer-bound" },
};

/* Every run, in lockstep [0] and ahead [1], for #19's goals. */
static struct goal_book goals[2] = { { .no_bytes = true },
				     { .no_bytes = true } };

static void goal_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* The H200's ratios at d277e91, today's runtime but for mode=auto's
 * choice and the forecast of held copies (docs/gpu-h200-goals.md; the
 * call's report, bench_gpu_train --goals), by shape, mode, budget and
 * policy; 0: none.  Swap mode's ratios at 45de6ad, every policy, are in
 * docs/gpu-h200.md. */
struct gpu_cell {
	const char *shape, *mode;
	double budget;
	const char *policy;
	double x;
};

static const struct gpu_cell h200[] = {
	{ "compute", "swap", 0.4, "auto", 1.04 },
	{ "compute", "swap", 0.4, "tensile", 1.03 },
	{ "compute", "swap", 0.4, "capuchin", 1.89 },
	{ "compute", "swap", 0.4, "tsplit", 1.62 },
	{ "compute", "uvm", 0.4, "auto", 1.66 },
	{ "compute", "uvm", 0.4, "tensile", 1.66 },
	{ "compute", "uvm", 0.4, "capuchin", 1.51 },
	{ "compute", "uvm", 0.4, "tsplit", 1.52 },
	{ "compute", "uvm", 2.0, "none", 1.02 },
	{ "transfer", "swap", 0.3, "auto", 1.41 },
	{ "transfer", "swap", 0.3, "tensile", 1.41 },
	{ "transfer", "swap", 0.3, "capuchin", 1.41 },
	{ "transfer", "swap", 0.3, "tsplit", 1.43 },
	{ "transfer", "uvm", 0.3, "auto", 1.42 },
	{ "transfer", "uvm", 0.3, "tensile", 1.37 },
	{ "transfer", "uvm", 0.3, "capuchin", 1.37 },
	{ "transfer", "uvm", 0.3, "tsplit", 1.36 },
	{ "transfer", "uvm", 2.0, "none", 1.00 },
};

static double gpu_x(const char *shape, const char *mode, double budget,
		    const char *policy)
{
	for (size_t i = 0; i < sizeof(h200) / sizeof(h200[0]); i++)
		if (strcmp(h200[i].shape, shape) == 0 &&
		    strcmp(h200[i].mode, mode) == 0 &&
		    h200[i].budget > budget - 1e-9 &&
		    h200[i].budget < budget + 1e-9 &&
		    strcmp(h200[i].policy, policy) == 0)
			return h200[i].x;
	return 0;
}

struct run {
	uint64_t ns, peak, in, out, skipped, guided_passive;
	uint64_t out_by_prefetch; /* of out, by prefetch (mode=uvm) */
};

/* The profile's rate of a prefetch to the host, GB/s: the pinned one
 * where it has none of its own (as the simulator moves them). */
static double prefetch_out_gbps(const struct tmm_sim_profile *p)
{
	return p->uvm_prefetch_d2h_gbps > 0 ? p->uvm_prefetch_d2h_gbps
					    : p->d2h_gbps;
}

/* The least time the run's moves to the host take: by copy at the
 * pinned rate, by prefetch at the profile's prefetch rate to the host
 * (on the H100 measured a sixth of a copy's), in ns. */
static double out_ns_at_least(const struct tmm_sim_profile *p,
			      const struct run *r)
{
	/* B / (GB/s) = ns */
	return (double)(r->out - r->out_by_prefetch) / p->d2h_gbps +
	       (double)r->out_by_prefetch / prefetch_out_gbps(p);
}

/* The step, after the first WARMUP, whose time is the median of theirs
 * (the later one of equal times). */
static unsigned median_step(const struct drive_result *r)
{
	for (unsigned i = WARMUP; i < STEPS; i++) {
		unsigned below = 0, above = 0;

		for (unsigned j = WARMUP; j < STEPS; j++) {
			if (r->it[j].ns < r->it[i].ns ||
			    (r->it[j].ns == r->it[i].ns && j < i))
				below++;
			else if (j != i)
				above++;
		}
		if (below == above)
			return i;
	}
	return STEPS - 1; /* not reached: the order above is total */
}

/* One run of STEPS steps, its convolutions' workspaces picked as `ws`
 * says; false (and a message) where it failed. */
static bool drive_one(const struct shape *sh, const char *config,
		      enum drive_ws ws, struct run *out)
{
	const struct zoo_model *m = zoo_find(sh->model);
	struct zoo_args a = { sh->batch, 1 };
	struct drive_opts o = { .config = config, .iterations = STEPS,
				.ws = ws };
	static struct drive_result r;
	struct zgraph g;
	unsigned med;

	if (!m || zoo_build(m, &a, &g) != 0) {
		fprintf(stderr, "bench_sim_gpu: cannot build %s\n", sh->model);
		return false;
	}
	zoo_drive(&g, &o, &r);
	zg_free(&g);
	if (r.rc != 0 || r.done != STEPS) {
		fprintf(stderr, "bench_sim_gpu: %s under %s: %s\n", sh->model,
			config, r.error);
		return false;
	}
	med = median_step(&r);
	*out = (struct run){
		.ns = r.it[med].ns,
		.in = r.it[med].swap_in_bytes,
		.out = r.it[med].swap_out_bytes,
		.out_by_prefetch = r.it[med].uvm_prefetch_out_bytes,
		.skipped = r.st.plan_actions_skipped,
		.guided_passive = r.st.guided_passive_evictions,
	};
	for (unsigned i = 0; i < r.done; i++)
		if (r.it[i].peak > out->peak)
			out->peak = r.it[i].peak;
	return true;
}

/* Whether the shape's framework has a choice to make: an op with more
 * than one convolution algorithm (the zoo's CNNs; not the MLPs). */
static bool picks_algorithms(const struct shape *sh)
{
	const struct zoo_model *m = zoo_find(sh->model);
	struct zoo_args a = { sh->batch, 1 };
	struct zgraph g;
	bool picks = false;

	if (!m || zoo_build(m, &a, &g) != 0)
		return false;
	for (uint32_t i = 0; i < g.nop && !picks; i++)
		picks = g.op[i].n_algo > 1;
	zg_free(&g);
	return picks;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_sim_gpu [--profile P] "
		   "[--shape compute|transfer|all] [--modes swap,uvm]\n"
		   "                     [--model NAME [--batch N]] "
		   "[--budgets 0.4,0.3]\n"
		   "  --profile  a sim profile (default h200-sxm-pcie5-141g, "
		   "the card of docs/gpu-h100.md)\n"
		   "  --shape    compute (12x4096, batch 2048), transfer "
		   "(24x1024, batch 8192) or all (default)\n"
		   "  --model    a model of the zoo instead of the shapes "
		   "(tensormm-bench\n"
		   "             --models list), no H200 figure beside it\n"
		   "  --batch    its batch (default 32)\n"
		   "  --modes    swap, uvm, uvm-mix (mode=uvm by "
		   "uvm_swap_path=mix), uvm-kernel\n"
		   "             (by copy, uvm_copier=kernel), or a list of "
		   "them (default swap)\n"
		   "  --budgets  fractions of the unconstrained peak, 0 < F "
		   "<= 4; above 1, no memory pressure\n"
		   "             (default 0.4,0.3)\n"
		   "  --kernel-grid  instead, uvm+auto by the copy kernel at "
		   "rates and shares of compute\n"
		   "             no GPU has measured, at each shape's goal "
		   "budget (compute 40%%, transfer 30%%)\n");
}

static bool parse_budgets(const char *s, double *b, unsigned *n)
{
	char *end;

	*n = 0;
	while (*s) {
		if (*n == MAX_BUDGETS)
			return false;
		b[*n] = strtod(s, &end);
		if (end == s || !(b[*n] > 0 && b[*n] <= 4))
			return false;
		(*n)++;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return *n > 0;
}

/* What every row of one table shares. */
struct table_ctx {
	const struct tmm_sim_profile *p;
	const struct shape *sh;
	const char *mode, *base;
	struct run free_run[2]; /* unconstrained, lockstep and ahead */
};

/*
 * One row: `policy` at `budget` bytes (the fraction `frac` of the peak),
 * its convolutions' workspaces picked as `ws` says, in lockstep and
 * ahead, printed as `label`; into the goals under the policy's name when
 * `to_goals` (one run per policy there: auto is judged against the
 * others in one framework).
 */
static void row(const struct table_ctx *c, double frac, uint64_t budget,
		const char *policy, const char *label, enum drive_ws ws,
		bool to_goals)
{
	const struct tmm_sim_profile *p = c->p;
	const struct shape *sh = c->sh;
	char config[512];
	struct run r[2];
	double bound, out_ns, in_ns, gx;
	bool ok = true;

	for (int ahead = 0; ahead < 2 && ok; ahead++) {
		snprintf(config, sizeof(config),
			 "%s,mode=%s,policy=%s,budget=%lluB%s", c->base,
			 c->mode, policy, (unsigned long long)budget,
			 ahead ? ",sim_host=ahead" : "");
		ok = drive_one(sh, config, ws, &r[ahead]);
	}
	for (int ahead = 0; ahead < 2 && to_goals; ahead++) {
		struct goal_run g = { sh->goal_name, c->mode, policy, frac,
				      0, 0, ok };

		if (ok) {
			g.ms = r[ahead].ns / 1e6;
			g.x = (double)r[ahead].ns /
			      (double)c->free_run[ahead].ns;
		}
		goal_book_add(&goals[ahead], &g);
	}
	if (!ok) {
		printf("| %s | %.0f%% | failed | | | | | | | |\n", label,
		       100 * frac);
		return;
	}
	/* B / (GB/s) = ns */
	out_ns = out_ns_at_least(p, &r[1]);
	in_ns = (double)r[1].in / p->h2d_gbps;
	bound = (double)c->free_run[1].ns;
	if (out_ns > bound)
		bound = out_ns;
	if (in_ns > bound)
		bound = in_ns;
	gx = ws == DRIVE_WS_BY_POLICY ? gpu_x(sh->name, c->mode, frac, policy)
				      : 0;
	printf("| %s | %.0f%% | %.1f | %.2f | %.1f | %.2f | %llu | %llu | "
	       "%.2f | ",
	       label, 100 * frac, r[0].ns / 1e6,
	       (double)r[0].ns / (double)c->free_run[0].ns, r[1].ns / 1e6,
	       (double)r[1].ns / (double)c->free_run[1].ns,
	       (unsigned long long)r[1].skipped,
	       (unsigned long long)r[1].guided_passive,
	       bound / (double)c->free_run[1].ns);
	if (gx > 0)
		printf("%.2f |\n", gx);
	else
		printf("— |\n");
}

static void table(const struct tmm_sim_profile *p, const struct shape *sh,
		  const char *mode, const double *budgets, unsigned nb)
{
	char base[256], config[512];
	struct table_ctx c = { p, sh, mode, base, { { 0 } } };
	struct run *free_run = c.free_run;
	bool picks = picks_algorithms(sh);

	snprintf(base, sizeof(base), "backend=sim,sim_memory=phantom,"
		 "sim_profile=%s,log=error", p->name);
	for (int ahead = 0; ahead < 2; ahead++) {
		snprintf(config, sizeof(config), "%s,mode=swap,policy=none%s",
			 base, ahead ? ",sim_host=ahead" : "");
		if (!drive_one(sh, config, DRIVE_WS_BY_POLICY,
			       &free_run[ahead]))
			exit(1);
	}
	if (strcmp(sh->name, sh->model) == 0)
		printf("\n### %s, batch %u, mode=%s, %s (simulated)\n\n",
		       sh->model, sh->batch, mode, p->name);
	else
		printf("\n### %s shape (%s, batch %u), mode=%s, %s "
		       "(simulated)\n\n", sh->name, sh->model, sh->batch,
		       mode, p->name);
	printf("Unconstrained: %.1f ms a step in lockstep, %.1f ms ahead; "
	       "peak %llu MiB.\n\n", free_run[0].ns / 1e6,
	       free_run[1].ns / 1e6,
	       (unsigned long long)(free_run[0].peak >> 20));
	printf("| policy | budget | lockstep ms | x | ahead ms | x | "
	       "skipped | passive | bound x | H200 x |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned b = 0; b < nb; b++) {
		uint64_t budget = (uint64_t)((double)free_run[0].peak *
					     budgets[b]);

		for (size_t i = 0; i < NPOLICY; i++) {
			bool own = !picks || strcmp(policies[i],
						    "superneurons") != 0;

			/* SuperNeurons' framework picks the fastest
			 * algorithm that fits what is free; every other
			 * row's, TensorFlow's, the fastest or none.  Auto
			 * is judged against superneurons' plan in auto's
			 * framework; both rows are printed (the figures:
			 * docs/model-zoo.md). */
			row(&c, budgets[b], budget, policies[i],
			    own ? policies[i] : "superneurons, its workspaces",
			    DRIVE_WS_BY_POLICY, own);
			if (!own)
				row(&c, budgets[b], budget, policies[i],
				    "superneurons, TensorFlow's workspaces",
				    DRIVE_WS_FALLBACK, true);
		}
		if (picks)
			row(&c, budgets[b], budget, "auto",
			    "auto, SuperNeurons' workspaces", DRIVE_WS_DYNAMIC,
			    false);
	}
	if (picks)
		printf("\nEach row's framework picks its convolutions' "
		       "algorithms as its paper's did (docs/model-zoo.md): "
		       "TensorFlow's the fastest when its workspace is free, "
		       "else one that needs none; SuperNeurons' the fastest "
		       "whose workspace is free.  The goals judge auto "
		       "against every policy in auto's framework, "
		       "TensorFlow's: superneurons there is its row with "
		       "TensorFlow's workspaces.\n");
}

/* The --modes a table can be asked for, each with the `mode` it runs:
 * uvm-mix is mode=uvm by uvm_swap_path=mix, beside uvm's own way, and
 * uvm-kernel by copy with the copy kernel's copies (uvm_copier=kernel). */
static const struct {
	const char *name, *mode;
} known_modes[] = {
	{ "swap", "swap" },
	{ "uvm", "uvm" },
	{ "uvm-mix", "uvm,uvm_swap_path=mix" },
	{ "uvm-kernel", "uvm,uvm_swap_path=copy,uvm_copier=kernel" },
};

#define N_MODES (sizeof(known_modes) / sizeof(known_modes[0]))

/* Whether the comma-separated list `modes` names `name`. */
static bool names_mode(const char *modes, const char *name)
{
	size_t n = strlen(name);

	for (const char *m = modes; m; m = strchr(m, ',') ? strchr(m, ',') + 1
							  : NULL)
		if (strncmp(m, name, n) == 0 && (m[n] == ',' || !m[n]))
			return true;
	return false;
}

/* Whether every item of `modes` is a known mode, none empty. */
static bool modes_known(const char *modes)
{
	for (const char *m = modes; m; m = strchr(m, ',') ? strchr(m, ',') + 1
							  : NULL) {
		size_t n = strcspn(m, ","), k;

		for (k = 0; k < N_MODES; k++)
			if (strlen(known_modes[k].name) == n &&
			    strncmp(m, known_modes[k].name, n) == 0)
				break;
		if (k == N_MODES)
			return false;
	}
	return true;
}

/*
 * --kernel-grid: what the copy kernel's rate and its share of the
 * multiprocessors, which no GPU has measured yet, would make of
 * uvm+auto at the shape's goal budget (host ahead, as a GPU's), beside
 * its peers in the same run: the unconstrained step (the bound: the
 * copies can hide), swap+auto, and uvm+auto by the runtime's held
 * copies and by mix.  Each cell is x over the unconstrained step, then
 * over swap+auto; the goals: 1.25x (compute 40%) or 1.5x (transfer 30%)
 * and 1.10x over swap+auto.  Two tables: auto judging its plans on the
 * twin, and by its forecast alone, as on a GPU.
 */
static const double grid_gbps[] = { 0, 40, 27.65, 13.8 }; /* 0: pinned */
static const double grid_sm[] = { 0, 0.06, 0.12, 0.24 };
#define GRID_N(a) (sizeof(a) / sizeof((a)[0]))

static double grid_x(const struct shape *sh, const char *base,
		     uint64_t budget, const char *mode, const struct run *by)
{
	char config[512];
	struct run r;

	snprintf(config, sizeof(config),
		 "%s,mode=%s,policy=auto,budget=%lluB", base, mode,
		 (unsigned long long)budget);
	if (!drive_one(sh, config, DRIVE_WS_BY_POLICY, &r))
		exit(1);
	return (double)r.ns / (double)by->ns;
}

/*
 * One table of the grid: auto judging its candidates on the twin of the
 * simulated device, as the simulator's auto does, or (twin false) by its
 * forecast alone, as it does on a GPU (auto_twin=off).
 */
static void grid_table(const struct tmm_sim_profile *p,
		       const struct shape *sh, const char *base,
		       uint64_t budget, const struct run *free_run,
		       double swap_x, double goal, bool twin)
{
	char mode[512];

	printf("%s:\n\n", twin ? "Auto judging its plans on the twin "
				 "(the simulator's own)"
			       : "Auto by its forecast alone, as on a GPU "
				 "(auto_twin=off)");
	printf("| kernel GB/s \\ share of compute |");
	for (size_t j = 0; j < GRID_N(grid_sm); j++)
		printf(" %.2f |", grid_sm[j]);
	printf("\n|---|");
	for (size_t j = 0; j < GRID_N(grid_sm); j++)
		printf("---:|");
	printf("\n");
	for (size_t i = 0; i < GRID_N(grid_gbps); i++) {
		double gbps = grid_gbps[i] > 0 ? grid_gbps[i] : p->d2h_gbps;

		printf("| %.1f%s |", gbps,
		       grid_gbps[i] > 0 ? "" : " (the copy engines')");
		for (size_t j = 0; j < GRID_N(grid_sm); j++) {
			double x;

			snprintf(mode, sizeof(mode),
				 "uvm,uvm_swap_path=copy,uvm_copier=kernel,"
				 "sim_copy_kernel_gbps=%g,"
				 "sim_copy_kernel_sm=%g,auto_twin=%s",
				 grid_gbps[i], grid_sm[j], twin ? "on" : "off");
			x = grid_x(sh, base, budget, mode, free_run);
			printf(" %s%.2f / %.2f%s |",
			       x <= goal && x <= 1.10 * swap_x ? "**" : "", x,
			       x / swap_x,
			       x <= goal && x <= 1.10 * swap_x ? "**" : "");
		}
		printf("\n");
	}
}

static void kernel_grid(const struct tmm_sim_profile *p,
			const struct shape *sh, double frac)
{
	char base[256], mode[512];
	struct run free_run;
	uint64_t budget;
	double swap_x, goal = frac < 0.35 ? 1.5 : 1.25;

	snprintf(base, sizeof(base), "backend=sim,sim_memory=phantom,"
		 "sim_profile=%s,log=error,sim_host=ahead", p->name);
	snprintf(mode, sizeof(mode), "%s,mode=swap,policy=none", base);
	if (!drive_one(sh, mode, DRIVE_WS_BY_POLICY, &free_run))
		exit(1);
	budget = (uint64_t)((double)free_run.peak * frac);
	swap_x = grid_x(sh, base, budget, "swap", &free_run);
	printf("\n### %s shape at %.0f%%, uvm+auto by the copy kernel "
	       "(simulated, host ahead)\n\n", sh->name, 100 * frac);
	printf("Unconstrained %.1f ms (the bound); swap+auto %.2fx; "
	       "uvm+auto by the runtime's held copies %.2fx, by mix %.2fx. "
	       "Goals: %.2fx, and 1.10x over swap+auto.\n\n",
	       free_run.ns / 1e6, swap_x,
	       grid_x(sh, base, budget, "uvm,uvm_swap_path=copy", &free_run),
	       grid_x(sh, base, budget, "uvm,uvm_swap_path=mix", &free_run),
	       goal);
	grid_table(p, sh, base, budget, &free_run, swap_x, goal, true);
	printf("\n");
	grid_table(p, sh, base, budget, &free_run, swap_x, goal, false);
	printf("\nEach cell: x over the unconstrained step / over "
	       "swap+auto's; bold where both goals are met.\n");
}

/* The shape's table in each of `modes`, in the order of known_modes. */
static void tables(const struct tmm_sim_profile *p, const struct shape *sh,
		   const char *modes, const double *budgets, unsigned nb)
{
	for (size_t k = 0; k < N_MODES; k++)
		if (names_mode(modes, known_modes[k].name))
			table(p, sh, known_modes[k].mode, budgets, nb);
}

int main(int argc, char **argv)
{
	const char *profile = "h200-sxm-pcie5-141g", *shape = "all";
	const char *modes = "swap", *model = NULL;
	bool grid = false;
	struct shape custom;
	unsigned long batch = 32;
	char *end;
	double budgets[MAX_BUDGETS] = { 0.4, 0.3 };
	unsigned nb = 2;
	const struct tmm_sim_profile *p;
	double t0 = bench_now_s();

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--kernel-grid") == 0) {
			grid = true;
			continue;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (strcmp(argv[i], "--profile") == 0)
			profile = v;
		else if (strcmp(argv[i], "--shape") == 0)
			shape = v;
		else if (strcmp(argv[i], "--modes") == 0)
			modes = v;
		else if (strcmp(argv[i], "--model") == 0)
			model = v;
		else if (strcmp(argv[i], "--batch") == 0) {
			batch = strtoul(v, &end, 10);
			if (*end || batch == 0 || batch > 65536) {
				fprintf(stderr, "bench_sim_gpu: --batch %s: "
					"give a whole number from 1 to "
					"65536\n", v);
				return 2;
			}
		}
		else if (strcmp(argv[i], "--budgets") == 0) {
			if (!parse_budgets(v, budgets, &nb)) {
				fprintf(stderr, "bench_sim_gpu: --budgets %s: "
					"give up to %d fractions, each above 0 "
					"and at most 4, comma-separated\n", v,
					MAX_BUDGETS);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	p = tmm_sim_profile_find(profile);
	if (!p) {
		fprintf(stderr, "bench_sim_gpu: unknown profile %s (see "
			"tensormm-bench --profiles list)\n", profile);
		return 2;
	}
	if (strcmp(shape, "all") != 0 && strcmp(shape, "compute") != 0 &&
	    strcmp(shape, "transfer") != 0) {
		fprintf(stderr, "bench_sim_gpu: --shape %s: compute, transfer "
			"or all\n", shape);
		return 2;
	}
	if (model && strcmp(shape, "all") != 0) {
		fprintf(stderr, "bench_sim_gpu: --model %s and --shape %s: "
			"give one or the other\n", model, shape);
		return 2;
	}
	if (model && !zoo_find(model)) {
		fprintf(stderr, "bench_sim_gpu: --model %s: no such model "
			"(tensormm-bench --models list names them)\n", model);
		return 2;
	}
	if (!modes_known(modes)) {
		fprintf(stderr, "bench_sim_gpu: --modes %s: a list of swap, "
			"uvm, uvm-mix and uvm-kernel\n", modes);
		return 2;
	}
	if (grid && model) {
		fprintf(stderr, "bench_sim_gpu: --kernel-grid runs the two "
			"shapes; give no --model\n");
		return 2;
	}
	if (grid) {
		printf("## The copy kernel's rate and cost, simulated: what "
		       "uvm_copier=kernel would make of issue #19's goals "
		       "(%s)\n\nSimulated times, each a run's step of median "
		       "time among its steps %d to %d; the kernel's rate each "
		       "way is sim_copy_kernel_gbps, its share of the compute "
		       "rate while it runs sim_copy_kernel_sm "
		       "(docs/uvm-model.md).\n", p->name, WARMUP + 1, STEPS);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]);
		     s++)
			if (strcmp(shape, "all") == 0 ||
			    strcmp(shape, shapes[s].name) == 0)
				kernel_grid(p, &shapes[s], s == 0 ? 0.4 : 0.3);
		printf("\nWall time: %.1f s (host).\n",
		       bench_now_s() - t0);
		return 0;
	}
	if (model)
		printf("## %s on the simulator, host in lockstep and ahead\n\n",
		       model);
	else
		printf("## Issue #19's shapes on the simulator, host in "
		       "lockstep and ahead, beside the H200\n\n");
	printf("Simulated times, each a run's step of median time among its "
	       "steps %d to %d (that step's bytes too); "
	       "*x* over the unconstrained step of the same "
	       "kind; *skipped*: plan actions the run ahead skipped, over "
	       "its %d steps; *passive*: its passive evictions while "
	       "following the plan, over the same; "
	       "*bound x*: max(unconstrained, out by copy / %.1f GB/s + "
	       "out by prefetch / %.1f GB/s, in / %.1f GB/s) of the run "
	       "ahead, over its unconstrained step, counting the runtime's "
	       "moves (in mode=uvm the driver's own faults and evictions "
	       "are not in it); *H200 x*: measured on the H200 at d277e91 "
	       "with mode=uvm's default way, copy (docs/gpu-h200-goals.md), "
	       "— where it ran no such cell.\n",
	       WARMUP + 1, STEPS, STEPS, p->d2h_gbps, prefetch_out_gbps(p),
	       p->h2d_gbps);
	if (model) {
		custom = (struct shape){ model, model, (unsigned)batch, model };
		tables(p, &custom, modes, budgets, nb);
	}
	for (size_t s = 0; !model && s < sizeof(shapes) / sizeof(shapes[0]);
	     s++)
		if (strcmp(shape, "all") == 0 ||
		    strcmp(shape, shapes[s].name) == 0)
			tables(p, &shapes[s], modes, budgets, nb);
	goal_book_print(&goals[0],
			"Issue #19's goals on the simulator, host in lockstep",
			goal_out);
	goal_book_print(&goals[1],
			"Issue #19's goals on the simulator, host ahead (as "
			"a GPU's)",
			goal_out);
	goal_book_free(&goals[0]);
	goal_book_free(&goals[1]);
	printf("\nWall time: %.1f s (host).\n", bench_now_s() - t0);
	return 0;
}
