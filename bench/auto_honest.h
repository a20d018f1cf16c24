/* SPDX-License-Identifier: MIT */
/*
 * auto_honest.h — tensormm-bench --honest-auto: policy `auto` judged as a
 * real GPU would see it (issue #22).
 *
 * On the simulator auto tries every plan on a twin of the device: the
 * same simulator, without the jitter a real device has, so the tables
 * judge it with an oracle no GPU offers.  This runs the fixed budget
 * again with jitter on the measured device (sim_jitter, several seeds)
 * and none on the twin (lib/twin/trial.c sets sim_jitter=0 there), and
 * prints auto's median throughput and its spread beside the best other
 * policy's under the same jitter, and auto by the forecast alone
 * (auto_twin=off), the path a real GPU takes.
 */
#ifndef BENCH_AUTO_HONEST_H
#define BENCH_AUTO_HONEST_H

#include "search.h"

struct tmm_sim_profile;

/* The jitter of the measured device and the seeds it runs under. */
#define HONEST_JITTER 0.15
#define HONEST_SEEDS 3

/*
 * For each model of rows[] (measure_budget's: its batch and budget),
 * runs every available policy at the fixed budget under HONEST_JITTER
 * with seeds 1..HONEST_SEEDS, and auto once more per seed with
 * auto_twin=off, then prints the table (and --csv rows).
 */
void honest_auto(const struct opts *o, const struct tmm_sim_profile *prof,
		 const struct row *rows);

/* The name a table gives `policy`: auto's figures come from plans tried
 * on the twin, and say so ("auto (twin-judged)"). */
const char *honest_policy_label(const char *policy);

#endif /* BENCH_AUTO_HONEST_H */
