/* SPDX-License-Identifier: MIT */
/*
 * test_fault_sweep.c — no crash under failure (issue #21): the short form
 * of the fault sweep (fault_sweep.h; the long form, every N, is
 * scripts/fault-sweep).
 *
 * For the MLP and a zoo model, in mode swap and uvm, under policies auto,
 * capuchin, checkpoint and vdnn-all (for its layer-synchronous copies)
 * (a case), and the MLP by uvm_swap_path=mix under auto, each of the library's fault sites
 * fails at a sample of its calls in a constrained run: the first and the
 * last, a stride over the run, a few at random (a fixed seed) and some
 * from-then-on failures.  Every run must finish with the unconstrained
 * run's bytes or fail with an error that has a message, and leave a
 * context that destroys; none may crash, hang or (in the sanitize build)
 * leak.  Each site of a case prints one line of figures on stderr
 * ("fault sweep: ...").
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "fault_sweep.h"

/* Calls tried per site: the first and last, STRIDED evenly apart,
 * RANDOM at random, ONWARD from-then-on; fewer for the zoo, whose runs
 * take ten times the MLP's. */
#define STRIDED 10
#define RANDOM 4
#define ONWARD 2
#define ZOO_STRIDED 4
#define ZOO_RANDOM 2
#define ZOO_ONWARD 1
#define TIMEOUT_S 60

static const enum sweep_model models[] = { SWEEP_MLP, SWEEP_ZOO };
static const char *const modes[] = { "swap", "uvm" };
static const char *const policies[] = { "auto", "capuchin", "checkpoint",
					 "vdnn-all" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define N_GRID (N_OF(models) * N_OF(modes) * N_OF(policies))
/* And one case past the grid: the MLP under auto by uvm_swap_path=mix,
 * copies held as CUDA's, whose swaps go both by copy and by migration on
 * the migrate engine (hints/uvm_mix.h). */
#define N_CASES (N_GRID + 1)

static struct sweep_case case_of(int i)
{
	struct sweep_case c;

	if (i == (int)N_GRID)
		return (struct sweep_case){
			.model = SWEEP_MLP,
			.mode = "uvm,uvm_swap_path=mix,sim_managed_copy=held",
			.policy = "auto" };

	c.policy = policies[i % N_OF(policies)];
	i /= N_OF(policies);
	c.mode = modes[i % N_OF(modes)];
	i /= N_OF(modes);
	c.model = models[i];
	return c;
}

/* A fixed-seed generator, so every run of the suite tries the same N. */
static unsigned long next_random(unsigned long *state)
{
	*state = *state * 6364136223846793005ul + 1442695040888963407ul;
	return *state >> 33;
}

/* The call numbers tried, 1 .. calls, sorted and without repeats. */
static size_t sample(unsigned long calls, unsigned strided, unsigned random,
		     unsigned long seed, unsigned long *n)
{
	size_t k = 0, out = 0;

	n[k++] = 1;
	n[k++] = calls;
	for (unsigned i = 1; i <= strided; i++)
		n[k++] = 1 + (calls - 1) * i / (strided + 1);
	for (unsigned i = 0; i < random; i++)
		n[k++] = 1 + next_random(&seed) % calls;
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && n[j - 1] > n[j]; j--) {
			unsigned long t = n[j];

			n[j] = n[j - 1];
			n[j - 1] = t;
		}
	for (size_t i = 0; i < k; i++)
		if (out == 0 || n[out - 1] != n[i])
			n[out++] = n[i];
	return out;
}

/* Sweeps one site of a case; false with the bad runs in `bad`. */
static bool sweep_site(const struct sweep_ref *ref, int site, unsigned seed,
		       char *bad, size_t badlen)
{
	bool zoo = ref->c.model == SWEEP_ZOO;
	unsigned long calls = ref->calls[site], n[2 + STRIDED + RANDOM];
	unsigned counts[SWEEP_OUTCOMES] = { 0 };
	unsigned onwards = calls ? zoo ? ZOO_ONWARD : ONWARD : 0, runs = 0;
	size_t len = strlen(bad), k;
	char msg[512];
	bool ok = true;

	k = calls ? sample(calls, zoo ? ZOO_STRIDED : STRIDED,
			   zoo ? ZOO_RANDOM : RANDOM, seed, n)
		  : 0;
	for (size_t i = 0; i < k + onwards; i++) {
		bool onward = i >= k;
		unsigned long at = onward ? 1 + calls * (i - k + 1) /
						    (onwards + 1)
					  : n[i];
		enum sweep_outcome o = sweep_run(ref, sweep_sites[site], at,
						 onward, TIMEOUT_S, msg,
						 sizeof(msg));

		counts[o]++;
		runs++;
		if (o == SWEEP_IDENTICAL || o == SWEEP_ERROR)
			continue;
		ok = false;
		if (len < badlen)
			len += (size_t)snprintf(bad + len, badlen - len,
						"\n  %s@%lu%s: %s %s",
						sweep_sites[site], at,
						onward ? "+" : "",
						sweep_outcome_name(o), msg);
	}
	fprintf(stderr, "fault sweep: %s %s %s %s: %lu calls, %u runs",
		sweep_model_name(ref->c.model), ref->c.mode, ref->c.policy,
		sweep_sites[site], calls, runs);
	for (int o = 0; o < SWEEP_OUTCOMES; o++)
		fprintf(stderr, ", %u %s", counts[o],
			sweep_outcome_name((enum sweep_outcome)o));
	fprintf(stderr, "\n");
	return ok;
}

START_TEST(every_failure_ends_in_the_bytes_or_an_error)
{
	struct sweep_case c = case_of(_i);
	struct sweep_ref ref;
	char err[600], bad[4096] = "";
	bool ok = true;

	ck_assert_msg(sweep_ref_make(&c, &ref, err, sizeof(err)) == 0,
		      "%s %s %s: %s", sweep_model_name(c.model), c.mode,
		      c.policy, err);
	/* Every run allocates host memory and writes its trace and plan; a
	 * site the run never calls (no pinned memory in uvm mode) has
	 * nothing to sweep. */
	ck_assert_uint_gt(ref.calls[sweep_site_index("host_alloc")], 100);
	ck_assert_uint_gt(ref.calls[sweep_site_index("file_write")], 0);
	if (strcmp(c.mode, "swap") == 0)
		ck_assert_uint_gt(ref.calls[sweep_site_index("copy")], 0);
	for (int site = 0; site < SWEEP_SITES; site++)
		ok &= sweep_site(&ref, site, (unsigned)(_i * SWEEP_SITES +
							 site + 1),
				 bad, sizeof(bad));
	sweep_ref_free(&ref);
	ck_assert_msg(ok, "%s %s %s:%s", sweep_model_name(c.model), c.mode,
		      c.policy, bad);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault_sweep");
	TCase *tc = tcase_create("sweep");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, every_failure_ends_in_the_bytes_or_an_error, 0,
			    (int)N_CASES);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
