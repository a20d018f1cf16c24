/* SPDX-License-Identifier: MIT */
/*
 * tensormm-bench.c — the papers' tables, reproduced on the simulated GPU.
 *
 * Runs the model zoo (bench/models/) through the real runtime (tmm_run,
 * the tracker, the planner of each policy, the mover) on the phantom sim
 * backend and prints, per hardware profile:
 *
 *   - the largest batch that trains under each policy (Capuchin Table 2,
 *     TSPLIT Table IV), and the largest that keeps 75% and 50% of the
 *     unconstrained throughput (TSPLIT Fig. 14a);
 *   - the largest width scale at batch 16 (TSPLIT Table V);
 *   - at a fixed budget: TENSILE's MSR, EOR and CBR, the simulated
 *     throughput, the planning time and the runtime's cost per access.
 *
 * search.c runs the searches and the fixed budget, tables.c prints the
 * tables and draws the charts; this file reads the options and runs
 * each model on each profile.
 *
 * Figures marked (sim) are virtual time on the profile; figures marked
 * (host) are real time on this machine.  See --help and
 * docs/benchmarks.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auto_honest.h"
#include "calibrate.h"
#include "clock.h"
#include "machine.h"
#include "search.h"
#include "tables.h"
#include "lib/base/sim_profile.h"
#include "tensormm.h"
#include "zoo.h"

/* Every policy the design names, in the order the tables show them. */
static const char *const known_policies[] = {
	"passive", "none", "vdnn-conv", "vdnn-all", "checkpoint", "superneurons",
	"capuchin", "tensile", "tsplit", "stream", "auto",
};

/* The models of the papers' tables (the default; Capuchin does not say
 * BERT's sequence length, so both); --full runs all. */
static const char *const paper_models[] = {
	"vgg16", "resnet50", "resnet101", "resnet152", "inception_v3",
	"inception_v4", "densenet121", "bert_base", "bert_base_512",
	"transformer",
};
static const char *const quick_models[] = { "resnet50", "bert_base" };
/* Capuchin's P100 and TSPLIT's TITAN RTX. */
static const char *const paper_profiles[] = { "p100-pcie3-16g",
					       "titanrtx-pcie3-24g" };

/* ---- options ------------------------------------------------------------- */

/* --honest-auto (auto_honest.h). */
static bool honest;

static void usage(FILE *f)
{
	fprintf(f,
"usage: tensormm-bench [options]\n"
"\n"
"Runs the model zoo through libtensormm on the simulated GPU (phantom\n"
"memory) and prints, per hardware profile and policy: the largest batch\n"
"that trains, the largest batch at >= 75%% and >= 50%% of the\n"
"unconstrained throughput, the largest width scale at batch 16, and\n"
"TENSILE's MSR/EOR/CBR at a fixed budget, as markdown tables.  Times\n"
"marked (sim) are simulated; (host) are real time on this machine.\n"
"\n"
"  --models LIST     comma-separated models (default: the papers' ones:\n"
"                    vgg16,resnet50,resnet101,resnet152,inception_v3,\n"
"                    inception_v4,densenet121,bert_base,bert_base_512,\n"
"                    transformer);\n"
"                    'list' prints every model and exits\n"
"  --profiles LIST   comma-separated sim profiles (default:\n"
"                    p100-pcie3-16g,titanrtx-pcie3-24g, the papers' GPUs);\n"
"                    'list' prints every profile and exits\n"
"  --policies LIST   comma-separated policies (default: all the design\n"
"                    names: passive,none,vdnn-conv,vdnn-all,checkpoint,\n"
"                    superneurons,capuchin,tensile,tsplit,stream,auto); one\n"
"                    this build does not know is shown as n/a\n"
"  --quick           resnet50 and bert_base on p100-pcie3-16g only\n"
"  --full            every model on every profile (long)\n"
"  --budget FRAC     fixed budget as a fraction of the unconstrained\n"
"                    peak, 0 < FRAC <= 1 (default 0.5); `auto` runs\n"
"                    there with auto_goal=speed, in the searches with\n"
"                    its default, fit\n"
"  --budget-only     only the fixed-budget figures: no searches of the\n"
"                    largest batch or width scale (a second or two per\n"
"                    model; with `auto`, whose probes each try every plan,\n"
"                    the searches take minutes: 2 for ResNet-50 and 4 for\n"
"                    BERT-base on p100-pcie3-16g, measured)\n"
"  --honest-auto     also run the fixed budget with jitter on the device\n"
"                    (sim_jitter=0.15, seeds 1-3) and none on the twin\n"
"                    auto tries plans on, and print auto's median and\n"
"                    spread beside the best other policy's, and auto\n"
"                    with auto_twin=off (the forecast alone, as on a\n"
"                    real GPU); auto's other figures are twin-judged\n"
"  --max-batch N     largest batch the searches try (default 4096)\n"
"  --max-scale N     largest width scale tried (default 64)\n"
"  --search RULE     scan (default): above the first batch that fails,\n"
"                    scan a 1/16 geometric grid up to the single-op bound\n"
"                    (where one op's own tensors exceed the device);\n"
"                    bisect: stop at the first failure, as before #22\n"
"  --start RULE      how each probe's first iteration starts: either\n"
"                    (default: measured in passive mode, rehearsed where\n"
"                    that fails), measured, or rehearsed\n"
"  --calibrate[=FORM]  instead of the tables: ours beside Capuchin\n"
"                    Table 2, TSPLIT Table IV and SuperNeurons Table 5,\n"
"                    gain against gain; FORM full (default: every covered\n"
"                    cell) or short (only the cells marked faithful, and\n"
"                    exit status 1 naming any outside +-35%%)\n"
"  --tolerance FRAC  --calibrate's band: a gain within FRAC of the\n"
"                    paper's is within (default 0.35)\n"
"  --csv FILE        also write every figure to FILE as CSV\n"
"                    (profile,model,policy,metric,value,unit)\n"
"  --plot DIR        write SVG charts to DIR (created if missing): memory\n"
"                    over one iteration per model and policy, and the\n"
"                    largest batch per policy per model\n"
"  -h, --help        this text\n"
"\n"
"Progress goes to stderr; the tables to stdout.\n");
}

/* Splits a comma-separated list in place into at most MAX_LIST items. */
static size_t split(char *s, const char **out)
{
	size_t n = 0;

	for (char *tok = strtok(s, ","); tok && n < MAX_LIST;
	     tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

static int parse_unsigned(const char *flag, const char *v, unsigned *out)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (*v == '\0' || *end != '\0' || x < 1 || x > 1000000) {
		fprintf(stderr, "tensormm-bench: %s '%s' is not a whole number "
			"from 1 to 1000000\n", flag, v);
		return -EINVAL;
	}
	*out = (unsigned)x;
	return 0;
}

static int set_models(struct opts *o, const char *const *names, size_t n)
{
	size_t all;

	o->n_models = 0;
	for (size_t i = 0; i < n; i++) {
		const struct zoo_model *m = zoo_find(names[i]);

		if (!m) {
			const struct zoo_model *z = zoo_models(&all);

			fprintf(stderr, "tensormm-bench: unknown model '%s'; "
				"the zoo has:", names[i]);
			for (size_t k = 0; k < all; k++)
				fprintf(stderr, " %s", z[k].name);
			fprintf(stderr, "\n");
			return -EINVAL;
		}
		o->models[o->n_models++] = m;
	}
	return 0;
}

static int set_profiles(struct opts *o, const char *const *names, size_t n)
{
	size_t all;

	o->n_profiles = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tmm_sim_profile *p, *z;

		p = tmm_sim_profile_find(names[i]);
		if (!p) {
			z = tmm_sim_profiles(&all);

			fprintf(stderr, "tensormm-bench: unknown profile '%s'; "
				"there are:", names[i]);
			for (size_t k = 0; k < all; k++)
				fprintf(stderr, " %s", z[k].name);
			fprintf(stderr, "\n");
			return -EINVAL;
		}
		o->profiles[o->n_profiles++] = p;
	}
	return 0;
}

/*
 * A policy is available when a context accepts it: the `policy` tunable
 * refuses an unknown name with -EINVAL.  Nothing here knows which
 * planners exist.
 */
static int probe_policies(struct opts *o)
{
	for (size_t k = 0; k < o->n_policies; k++) {
		char cfg[160];
		tmm_ctx *ctx;
		int rc;

		snprintf(cfg, sizeof(cfg), "backend=sim,sim_memory=phantom,"
			 "policy=%s", o->policies[k]);
		rc = tmm_ctx_create(&ctx, cfg);
		o->available[k] = rc == 0;
		if (rc == 0) {
			tmm_ctx_destroy(ctx);
		} else if (rc != -EINVAL) {
			fprintf(stderr, "tensormm-bench: cannot create a "
				"simulated context: %s\n",
				tmm_last_error(NULL));
			return rc;
		}
	}
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "models", required_argument, NULL, 'm' },
		{ "profiles", required_argument, NULL, 'p' },
		{ "policies", required_argument, NULL, 'P' },
		{ "quick", no_argument, NULL, 'q' },
		{ "full", no_argument, NULL, 'f' },
		{ "budget", required_argument, NULL, 'b' },
		{ "budget-only", no_argument, NULL, 'O' },
		{ "honest-auto", no_argument, NULL, 'H' },
		{ "max-batch", required_argument, NULL, 'B' },
		{ "max-scale", required_argument, NULL, 'S' },
		{ "csv", required_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'o' },
		{ "search", required_argument, NULL, 's' },
		{ "start", required_argument, NULL, 't' },
		{ "calibrate", optional_argument, NULL, 'C' },
		{ "tolerance", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *models[MAX_LIST], *profiles[MAX_LIST];
	size_t n_models = 0, n_profiles = 0;
	bool full = false;
	char *end;
	int c;

	o->budget_frac = 0.5;
	o->tolerance = CALIBRATE_TOLERANCE;
	o->max_batch = 4096;
	o->max_scale = 64;
	o->width_batch = 16;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "list") == 0) {
				size_t n;
				const struct zoo_model *z = zoo_models(&n);

				for (size_t k = 0; k < n; k++)
					printf("%-16s %s\n", z[k].name,
					       z[k].title);
				exit(0);
			}
			n_models = split(optarg, models);
			break;
		case 'p':
			if (strcmp(optarg, "list") == 0) {
				size_t n;
				const struct tmm_sim_profile *z =
					tmm_sim_profiles(&n);

				for (size_t k = 0; k < n; k++)
					printf("%-20s %s\n", z[k].name,
					       z[k].description);
				exit(0);
			}
			n_profiles = split(optarg, profiles);
			break;
		case 'P':
			o->n_policies = split(optarg, o->policies);
			break;
		case 'q':
			o->quick = true;
			break;
		case 'f':
			full = true;
			break;
		case 'b':
			o->budget_frac = strtod(optarg, &end);
			if (*end || !(o->budget_frac > 0) ||
			    o->budget_frac > 1) {
				fprintf(stderr, "tensormm-bench: --budget '%s' "
					"is not a fraction in (0, 1]\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'O':
			o->budget_only = true;
			break;
		case 'H':
			honest = true;
			break;
		case 'B':
			if (parse_unsigned("--max-batch", optarg,
					   &o->max_batch) < 0)
				return -EINVAL;
			break;
		case 'S':
			if (parse_unsigned("--max-scale", optarg,
					   &o->max_scale) < 0)
				return -EINVAL;
			break;
		case 'c':
			o->csv_path = optarg;
			break;
		case 'o':
			o->plot_dir = optarg;
			break;
		case 's':
			if (strcmp(optarg, "scan") == 0) {
				o->search = SEARCH_SCAN;
			} else if (strcmp(optarg, "bisect") == 0) {
				o->search = SEARCH_BISECT;
			} else {
				fprintf(stderr, "tensormm-bench: --search '%s' "
					"is neither scan nor bisect\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 't':
			if (strcmp(optarg, "either") == 0) {
				o->start = START_EITHER;
			} else if (strcmp(optarg, "measured") == 0) {
				o->start = START_MEASURED;
			} else if (strcmp(optarg, "rehearsed") == 0) {
				o->start = START_REHEARSED;
			} else {
				fprintf(stderr, "tensormm-bench: --start '%s' "
					"is not either, measured or "
					"rehearsed\n", optarg);
				return -EINVAL;
			}
			break;
		case 'T':
			o->tolerance = strtod(optarg, &end);
			if (*end || !(o->tolerance >= 0) ||
			    o->tolerance > 10) {
				fprintf(stderr, "tensormm-bench: --tolerance "
					"'%s' is not a fraction from 0 to "
					"10\n", optarg);
				return -EINVAL;
			}
			break;
		case 'C':
			if (!optarg || strcmp(optarg, "full") == 0) {
				o->calibrate = CALIBRATE_FULL;
			} else if (strcmp(optarg, "short") == 0) {
				o->calibrate = CALIBRATE_SHORT;
			} else {
				fprintf(stderr, "tensormm-bench: --calibrate="
					"'%s' is neither full nor short\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tensormm-bench: unexpected argument '%s' "
			"(try --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (full && o->quick) {
		fprintf(stderr, "tensormm-bench: --quick and --full "
			"contradict each other; pick one\n");
		return -EINVAL;
	}
	if (!n_models) {
		size_t n;
		const struct zoo_model *z = zoo_models(&n);

		if (full) {
			for (size_t k = 0; k < n && k < MAX_LIST; k++)
				models[n_models++] = z[k].name;
		} else if (o->quick) {
			n_models = 2;
			memcpy(models, quick_models, sizeof(quick_models));
		} else {
			n_models = sizeof(paper_models) /
				   sizeof(paper_models[0]);
			memcpy(models, paper_models, sizeof(paper_models));
		}
	}
	if (!n_profiles) {
		size_t n;
		const struct tmm_sim_profile *z = tmm_sim_profiles(&n);

		if (full) {
			for (size_t k = 0; k < n && k < MAX_LIST; k++)
				profiles[n_profiles++] = z[k].name;
		} else {
			n_profiles = o->quick ? 1 : 2;
			memcpy(profiles, paper_profiles,
			       n_profiles * sizeof(*profiles));
		}
	}
	if (!o->n_policies) {
		o->n_policies = sizeof(known_policies) /
				 sizeof(known_policies[0]);
		memcpy(o->policies, known_policies, sizeof(known_policies));
	}
	if (set_models(o, models, n_models) < 0 ||
	    set_profiles(o, profiles, n_profiles) < 0)
		return -EINVAL;
	return probe_policies(o);
}

/*
 * TENSORMM_* variables win over the config strings the bench builds
 * (tensormm(7)), so each one set changes every run: the report says so,
 * and so does stderr, where a forgotten export is noticed.
 */
static void print_environment(void)
{
	bool any = false;

	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "TENSORMM_", 9) != 0)
			continue;
		if (!any)
			printf("\nSet in the environment, over every run's "
			       "own settings:");
		printf(" `%s`", *e);
		fprintf(stderr, "tensormm-bench: %s is set: it overrides "
			"every run's own setting of that tunable\n", *e);
		any = true;
	}
	if (any)
		printf("\n");
}

int main(int argc, char **argv)
{
	static struct opts o;
	struct row *rows;
	char machine[384];
	double t0 = bench_now_s();
	time_t now = time(NULL);
	char date[64];
	int rc = 0;

	if (parse(argc, argv, &o) < 0)
		return 2;
	if (o.csv_path) {
		csv = fopen(o.csv_path, "w");
		if (!csv) {
			fprintf(stderr, "tensormm-bench: cannot write --csv "
				"%s: %s\n", o.csv_path, strerror(errno));
			return 1;
		}
		fprintf(csv, "profile,model,policy,metric,value,unit\n");
	}
	if (o.plot_dir && mkdir(o.plot_dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "tensormm-bench: cannot create --plot %s: %s\n",
			o.plot_dir, strerror(errno));
		return 1;
	}
	rows = calloc(o.n_models, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "tensormm-bench: out of memory\n");
		return 1;
	}
	bench_describe_machine(machine, sizeof(machine));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("# tensormm-bench\n\n");
	printf("Run on %s, %s.  Sim backend, phantom memory, mode=swap "
	       "(the last table: swap and uvm); %d iterations per run, the "
	       "first %s.\n", date, machine, ITERATIONS, start_caption(&o));
	print_environment();
	if (o.calibrate) {
		rc = calibrate(&o);
		printf("\nTotal wall time: %.1f s (host).\n",
		       bench_now_s() - t0);
		free(rows);
		if (csv)
			fclose(csv);
		return rc;
	}
	for (size_t p = 0; p < o.n_profiles; p++) {
		const struct tmm_sim_profile *prof = o.profiles[p];

		memset(rows, 0, o.n_models * sizeof(*rows));
		for (size_t i = 0; i < o.n_models; i++) {
			fprintf(stderr, "[%zu/%zu] %s on %s\n",
				p * o.n_models + i + 1,
				o.n_profiles * o.n_models, o.models[i]->name,
				prof->name);
			if (o.budget_only)
				skip_searches(&o, &rows[i]);
			else
				measure_searches(&o, prof, o.models[i],
						 &rows[i]);
			measure_budget(&o, prof, o.models[i], &rows[i]);
		}
		print_profile(&o, prof, rows);
		if (honest)
			honest_auto(&o, prof, rows);
		if (o.plot_dir && plot(&o, prof, rows) < 0)
			rc = 1;
		for (size_t i = 0; i < o.n_models; i++) {
			free(rows[i].mem);
			for (size_t k = 0; k < o.n_policies; k++)
				free(rows[i].cells[k].mem);
		}
		fflush(stdout);
	}
	printf("\nTotal wall time: %.1f s (host).\n", bench_now_s() - t0);
	free(rows);
	if (csv && fclose(csv) != 0) {
		fprintf(stderr, "tensormm-bench: error writing %s\n",
			o.csv_path);
		rc = 1;
	}
	return rc;
}
