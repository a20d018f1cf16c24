/* SPDX-License-Identifier: MIT */
/*
 * sim_step.h — one training of a zoo model on the simulator, read as
 * bench_sim_gpu and bench_gpu_train read theirs: SIM_STEPS steps, the
 * figure the step of median time among those after the first
 * SIM_WARMUP (the measured one and the first guided), with that step's
 * bytes, and the run's peak.  For the tests that hold the simulator to a
 * GPU's figures (test_sim_h200.c, test_sim_copy_kernel.c).
 */
#ifndef TEST_SIM_STEP_H
#define TEST_SIM_STEP_H

#include <check.h>
#include <stdint.h>

#include "drive.h"
#include "zoo.h"

#define SIM_STEPS 7
#define SIM_WARMUP 2

struct sim_step {
	uint64_t ns, out, in, peak;
};

/* `model` at `batch` under `config`; fails the test where it fails. */
static inline struct sim_step sim_median_step(const char *model,
					      unsigned batch,
					      const char *config)
{
	const struct zoo_model *m = zoo_find(model);
	struct zoo_args a = { batch, 1 };
	struct drive_opts o = { .config = config, .iterations = SIM_STEPS };
	static struct drive_result r;
	unsigned order[SIM_STEPS - SIM_WARMUP], n = SIM_STEPS - SIM_WARMUP;
	struct sim_step s = { 0 };
	struct zgraph g;

	ck_assert(m != NULL);
	ck_assert_msg(zoo_build(m, &a, &g) == 0, "%s", g.errmsg);
	zoo_drive(&g, &o, &r);
	zg_free(&g);
	ck_assert_msg(r.rc == 0 && r.done == SIM_STEPS, "%s under %s: %s",
		      model, config, r.error);
	for (unsigned i = 0; i < n; i++)
		order[i] = SIM_WARMUP + i;
	/* n is small: an insertion sort by time */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 &&
				     r.it[order[j]].ns < r.it[order[j - 1]].ns;
		     j--) {
			unsigned t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	s.ns = r.it[order[n / 2]].ns;
	s.out = r.it[order[n / 2]].swap_out_bytes;
	s.in = r.it[order[n / 2]].swap_in_bytes;
	for (unsigned i = 0; i < r.done; i++)
		if (r.it[i].peak > s.peak)
			s.peak = r.it[i].peak;
	return s;
}

#endif /* TEST_SIM_STEP_H */
