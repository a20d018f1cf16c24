/* SPDX-License-Identifier: MIT */
/*
 * gpu_train_options.c — bench_gpu_train's command line (see
 * gpu_train_options.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_train_options.h"

static const struct shape known_shapes[] = {
	{ "compute-bound", 4096, 12, 2048 },
	{ "transfer-bound", 1024, 24, 8192 },
};

/* uvm-copy, uvm-prefetch: mode=uvm with its way out asked for (on a real
 * GPU uvm_swap_path=auto takes the prefetch, docs/gpu-h200.md);
 * uvm-copy-nokeep: the copy way with uvm_keep=off, the runtime before
 * kept blocks; swap-keep, uvm-keep: liveness=keep, dead tensors copied
 * out as before they were discarded by default; uvm-nocupti: cupti=off,
 * op times by events; uvm-counters: CUPTI's unified-memory counters on
 * (what counting the driver's work costs); auto: mode=auto, the mode the
 * library takes by itself (a uvm run for the free-memory check, as it may
 * be one); uvm-mix: by copy, with the swaps that fit by migration beside
 * the copies (hints/uvm_mix.h); uvm-kernel: by copy, the copies made by
 * the library's copy kernel (uvm_copier=kernel, which holds no host),
 * its blocks chosen at open by their measured rate (uvm_copier_blocks=0,
 * the default), and at 4 and 64 (uvm-kernel-4, -64: what the blocks buy
 * and cost); each for a side by side. */
static const struct run_mode all_modes[MAX_MODES] = {
	{ "swap", "mode=swap", false },
	{ "uvm", "mode=uvm", true },
	{ "uvm-copy", "mode=uvm,uvm_swap_path=copy", true },
	{ "uvm-prefetch", "mode=uvm,uvm_swap_path=prefetch", true },
	{ "uvm-copy-nokeep", "mode=uvm,uvm_swap_path=copy,uvm_keep=off",
	  true },
	{ "swap-keep", "mode=swap,liveness=keep", false },
	{ "uvm-keep", "mode=uvm,liveness=keep", true },
	{ "uvm-nocupti", "mode=uvm,cupti=off", true },
	{ "uvm-counters", "mode=uvm,uvm_counters=on", true },
	{ "auto", "mode=auto", true },
	{ "uvm-mix", "mode=uvm,uvm_swap_path=mix", true },
	{ "uvm-kernel", "mode=uvm,uvm_swap_path=copy,uvm_copier=kernel",
	  true },
	{ "uvm-kernel-4", "mode=uvm,uvm_swap_path=copy,uvm_copier=kernel,"
			  "uvm_copier_blocks=4", true },
	{ "uvm-kernel-64", "mode=uvm,uvm_swap_path=copy,uvm_copier=kernel,"
			   "uvm_copier_blocks=64", true },
};

static const char *const all_policies[N_POLICIES] = {
	"none", "passive", "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile", "tsplit", "stream", "auto",
};

/* The mode of that name: one of all_modes, or the program stops (a name
 * here that the table lacks is this file's mistake). */
static const struct run_mode *mode_named(const char *name)
{
	for (unsigned m = 0; m < MAX_MODES && all_modes[m].name; m++)
		if (strcmp(all_modes[m].name, name) == 0)
			return &all_modes[m];
	fprintf(stderr, "bench_gpu_train: no mode %s\n", name);
	abort();
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_gpu_train [--shape compute|transfer|all|WxLxB] "
		"[--modes swap,uvm]\n"
		"         [--policies all|P,P,...] [--budgets 0.4,0.3] "
		"[--steps N] [--warmup N]\n"
		"         [--append FILE] [--commit TEXT] [--goals] "
		"[--deadline S]\n"
		"  --shape     compute (width 4096, 12 layers, batch 2048), "
		"transfer (1024,\n"
		"              24, 8192), all (both, the default) or "
		"WIDTHxLAYERSxBATCH\n"
		"  --modes     swap, uvm or both (the default); also uvm-copy,\n"
		"              uvm-prefetch (mode=uvm by that way out),\n"
		"              uvm-copy-nokeep (by copy, uvm_keep=off), and\n"
		"              swap-keep, uvm-keep (liveness=keep: dead tensors\n"
		"              copied out), uvm-nocupti (cupti=off),\n"
		"              uvm-counters (uvm_counters=on), auto "
		"(mode=auto),\n"
		"              uvm-mix (uvm_swap_path=mix), uvm-kernel\n"
		"              (by copy, uvm_copier=kernel), uvm-kernel-4 and\n"
		"              uvm-kernel-64 (the same, 4 or 64 blocks a copy)\n"
		"  --policies  all (the default) or a list of: none, passive, "
		"vdnn-conv,\n"
		"              vdnn-all, checkpoint, superneurons, capuchin, "
		"tensile, tsplit, stream, auto\n"
		"  --budgets   fractions of the unconstrained peak, 0 < F <= 4 "
		"(default 0.4,0.3;\n"
		"              above 1: a run with no memory pressure)\n"
		"  --steps     training steps a run (default 8)\n"
		"  --warmup    first steps left out of the figures "
		"(default 2)\n"
		"  --append    also append the tables to FILE\n"
		"  --commit    the commit to print (default "
		"$TMM_BENCH_COMMIT)\n"
		"  --goals     only the runs issue #19's goals are judged by "
		"(each shape at\n"
		"              its goal budget: auto, tensile, capuchin, "
		"tsplit in swap\n"
		"              and uvm, auto by uvm-copy, uvm-counters and "
		"uvm-kernel, none in uvm at\n"
		"              200%%), then a table of the goals, met or "
		"not; not with\n"
		"              --modes, --policies or --budgets\n"
		"  --deadline  seconds from the start after which no run "
		"starts (each one\n"
		"              not made is said so); the tables and the "
		"goals are still\n"
		"              printed, so that a time limit around the "
		"program loses none\n"
		"              of what ran\n");
}

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "bench_gpu_train: bad value '%s' for %s\n", val, opt);
	usage(stderr);
	return 2;
}

static bool parse_uint(const char *s, unsigned lo, unsigned hi,
		       unsigned *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || end == s || *end || x < lo || x > hi || *s == '-')
		return false;
	*v = (unsigned)x;
	return true;
}

/* Splits a comma-separated list in place; false past `max` items. */
static bool split_list(char *s, char **items, unsigned max, unsigned *n)
{
	*n = 0;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		if (*n == max)
			return false;
		items[(*n)++] = tok;
	}
	return *n > 0;
}

static int parse_shape(struct options *o, const char *v)
{
	unsigned w, l, bt;
	char tail;

	o->n_shapes = 0;
	if (!strcmp(v, "compute") || !strcmp(v, "all"))
		o->shapes[o->n_shapes++] = known_shapes[0];
	if (!strcmp(v, "transfer") || !strcmp(v, "all"))
		o->shapes[o->n_shapes++] = known_shapes[1];
	if (o->n_shapes)
		return 0;
	if (sscanf(v, "%ux%ux%u%c", &w, &l, &bt, &tail) != 3 || !w || !l ||
	    l > 63 || !bt || w > (1u << 20) || bt > (1u << 20))
		return -1;
	o->custom = (struct shape){ "custom", w, l, bt };
	o->shapes[o->n_shapes++] = o->custom;
	return 0;
}

int gpu_train_parse_args(struct options *o, int argc, char **argv)
{
	static char lists[3][512];
	char *items[16];
	const char *cells_chosen = NULL; /* --modes, --policies, --budgets */
	unsigned n;

	o->shapes[0] = known_shapes[0];
	o->shapes[1] = known_shapes[1];
	o->n_shapes = 2;
	o->modes[0] = mode_named("swap");
	o->modes[1] = mode_named("uvm");
	o->n_modes = 2;
	for (unsigned p = 0; p < N_POLICIES; p++)
		o->policies[p] = all_policies[p];
	o->n_policies = N_POLICIES;
	o->budgets[0] = 0.4;
	o->budgets[1] = 0.3;
	o->n_budgets = 2;
	o->steps = 8;
	o->warmup = 2;
	o->commit = getenv("TMM_BENCH_COMMIT");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--goals")) {
			o->goals = true;
			continue;
		}
		if (!strcmp(a, "--modes") || !strcmp(a, "--policies") ||
		    !strcmp(a, "--budgets"))
			cells_chosen = a;
		if (i + 1 >= argc) {
			fprintf(stderr, "bench_gpu_train: unknown option or "
				"no value: %s\n", a);
			usage(stderr);
			return 2;
		}
		v = argv[++i];
		if (!strcmp(a, "--shape")) {
			if (parse_shape(o, v))
				return bad(a, v);
		} else if (!strcmp(a, "--modes")) {
			snprintf(lists[0], sizeof(lists[0]), "%s", v);
			if (!split_list(lists[0], items, MAX_MODES, &n))
				return bad(a, v);
			for (unsigned k = 0; k < n; k++) {
				unsigned m = 0;

				while (m < MAX_MODES &&
				       strcmp(items[k], all_modes[m].name))
					m++;
				if (m == MAX_MODES)
					return bad(a, v);
				o->modes[k] = &all_modes[m];
			}
			o->n_modes = n;
		} else if (!strcmp(a, "--policies")) {
			if (!strcmp(v, "all"))
				continue;
			snprintf(lists[1], sizeof(lists[1]), "%s", v);
			if (!split_list(lists[1], items, 16, &n) ||
			    n > N_POLICIES)
				return bad(a, v);
			for (unsigned k = 0; k < n; k++) {
				unsigned p = 0;

				while (p < N_POLICIES &&
				       strcmp(items[k], all_policies[p]))
					p++;
				if (p == N_POLICIES)
					return bad(a, v);
				o->policies[k] = all_policies[p];
			}
			o->n_policies = n;
		} else if (!strcmp(a, "--budgets")) {
			snprintf(lists[2], sizeof(lists[2]), "%s", v);
			if (!split_list(lists[2], items, 8, &n))
				return bad(a, v);
			for (unsigned k = 0; k < n; k++) {
				char *end;
				double f;

				errno = 0;
				f = strtod(items[k], &end);
				if (errno || end == items[k] || *end ||
				    !(f > 0 && f <= 4))
					return bad(a, v);
				o->budgets[k] = f;
			}
			o->n_budgets = n;
		} else if (!strcmp(a, "--steps")) {
			if (!parse_uint(v, 2, MAX_STEPS, &o->steps))
				return bad(a, v);
		} else if (!strcmp(a, "--warmup")) {
			if (!parse_uint(v, 1, MAX_STEPS, &o->warmup))
				return bad(a, v);
		} else if (!strcmp(a, "--append")) {
			o->append = v;
		} else if (!strcmp(a, "--commit")) {
			o->commit = v;
		} else if (!strcmp(a, "--deadline")) {
			if (!parse_uint(v, 0, 7 * 24 * 3600, &o->deadline_s))
				return bad(a, v);
			o->has_deadline = true;
		} else {
			fprintf(stderr, "bench_gpu_train: unknown option: "
				"%s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (o->goals && cells_chosen) {
		fprintf(stderr, "bench_gpu_train: --goals picks its own runs: "
			"leave out %s\n", cells_chosen);
		return 2;
	}
	if (o->warmup >= o->steps) {
		fprintf(stderr, "bench_gpu_train: --warmup (%u) must be "
			"below --steps (%u)\n", o->warmup, o->steps);
		return 2;
	}
	if (!o->commit || !*o->commit)
		o->commit = "unknown";
	return 0;
}

/* The policies of --goals: auto, and the peers nearest to it on the H200
 * (docs/gpu-h200.md: tensile at compute-bound 40% in swap mode, tsplit and
 * capuchin in mode=uvm). */
static const char *const goal_peers[] = { "auto", "tensile", "capuchin",
					  "tsplit" };

unsigned gpu_train_cells(const struct options *o, const struct shape *sh,
			 struct cell *cells)
{
	double budget = strcmp(sh->name, "compute-bound") ? 0.3 : 0.4;
	unsigned n = 0;

	if (!o->goals) {
		for (unsigned m = 0; m < o->n_modes; m++)
			for (unsigned f = 0; f < o->n_budgets; f++)
				for (unsigned p = 0; p < o->n_policies; p++)
					cells[n++] = (struct cell){
						o->modes[m], o->policies[p],
						o->budgets[f]
					};
		return n;
	}
	for (unsigned m = 0; m < 2; m++) /* swap, uvm */
		for (unsigned p = 0; p < sizeof(goal_peers) /
						 sizeof(goal_peers[0]);
		     p++)
			cells[n++] = (struct cell){ mode_named(m ? "uvm"
								 : "swap"),
						    goal_peers[p], budget };
	cells[n++] = (struct cell){ mode_named("uvm-copy"), "auto", budget };
	cells[n++] = (struct cell){ mode_named("uvm-counters"), "auto",
				    budget };
	/* By the copy kernel (uvm_copier=kernel): whether it would meet
	 * uvm's goals, side by side, in the same short call. */
	cells[n++] = (struct cell){ mode_named("uvm-kernel"), "auto", budget };
	cells[n++] = (struct cell){ mode_named("uvm"), "none", 2.0 };
	return n;
}
