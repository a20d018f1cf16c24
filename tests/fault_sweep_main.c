/* SPDX-License-Identifier: MIT */
/*
 * fault_sweep_main.c — the long form of the fault sweep, one case a run
 * of this program (scripts/fault-sweep runs it over the cases, optionally
 * under valgrind).
 *
 *   tests/fault_sweep --model mlp|zoo --mode swap|uvm --policy P
 *                     --site S [--from N] [--to N] [--step K] [--onward]
 *                     [--timeout SECONDS] [--verbose]
 *
 * Fails call N of site S for N = from, from + step, ... up to `to` (by
 * default every call of the run), each in a forked child
 * (fault_sweep.h).  Prints every run that did not end acceptably, then
 * one line of figures as the short form's, and the distinct error
 * messages with their counts (numbers masked), so that a reader can see
 * that each names what failed.  Exits 0 when every run ended with the
 * reference's bytes or an error, 1 otherwise, 2 on a usage or setup
 * error.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_sweep.h"

#define MAX_MESSAGES 64

struct message {
	char text[400];
	unsigned long count, first;
};

static int usage(void)
{
	fprintf(stderr, "usage: fault_sweep --model mlp|zoo --mode swap|uvm "
		"--policy P --site S\n"
		"                   [--from N] [--to N] [--step K] [--onward] "
		"[--timeout S] [--verbose]\n");
	return 2;
}

/* The message with its numbers masked, so that runs failing the same
 * way at other sizes or addresses count as one message. */
static void mask(const char *msg, char *out, size_t len)
{
	size_t k = 0;

	for (const char *p = msg; *p && k + 1 < len; p++) {
		if (isdigit((unsigned char)*p) ||
		    (p[0] == 'x' && p > msg && p[-1] == '0')) {
			if (k == 0 || out[k - 1] != '#')
				out[k++] = '#';
			continue;
		}
		if (isxdigit((unsigned char)*p) && k && out[k - 1] == '#')
			continue;
		out[k++] = *p;
	}
	out[k] = '\0';
}

static void tally(struct message *m, size_t *n, const char *msg,
		  unsigned long at)
{
	char text[sizeof(m->text)];

	mask(msg, text, sizeof(text));
	for (size_t i = 0; i < *n; i++)
		if (strcmp(m[i].text, text) == 0) {
			m[i].count++;
			return;
		}
	if (*n == MAX_MESSAGES)
		return;
	snprintf(m[*n].text, sizeof(m[*n].text), "%s", text);
	m[*n].count = 1;
	m[*n].first = at;
	(*n)++;
}

int main(int argc, char **argv)
{
	struct sweep_case c = { SWEEP_MLP, "swap", "auto" };
	const char *site = "host_alloc";
	unsigned long from = 1, to = 0, step = 1, runs = 0, calls;
	unsigned long counts[SWEEP_OUTCOMES] = { 0 };
	unsigned timeout_s = 120;
	bool onward = false, verbose = false;
	static struct message msgs[MAX_MESSAGES];
	size_t n_msgs = 0;
	struct sweep_ref ref;
	char err[600], msg[512];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--onward") == 0) {
			onward = true;
			continue;
		}
		if (strcmp(a, "--verbose") == 0) {
			verbose = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (strcmp(a, "--model") == 0 && strcmp(v, "mlp") == 0)
			c.model = SWEEP_MLP;
		else if (strcmp(a, "--model") == 0 && strcmp(v, "zoo") == 0)
			c.model = SWEEP_ZOO;
		else if (strcmp(a, "--mode") == 0)
			c.mode = v;
		else if (strcmp(a, "--policy") == 0)
			c.policy = v;
		else if (strcmp(a, "--site") == 0 && sweep_site_index(v) >= 0)
			site = v;
		else if (strcmp(a, "--from") == 0)
			from = strtoul(v, NULL, 10);
		else if (strcmp(a, "--to") == 0)
			to = strtoul(v, NULL, 10);
		else if (strcmp(a, "--step") == 0)
			step = strtoul(v, NULL, 10);
		else if (strcmp(a, "--timeout") == 0)
			timeout_s = (unsigned)strtoul(v, NULL, 10);
		else
			return usage();
	}
	if (!from || !step || !timeout_s)
		return usage();
	if (sweep_ref_make(&c, &ref, err, sizeof(err)) < 0) {
		fprintf(stderr, "fault_sweep: %s\n", err);
		return 2;
	}
	calls = ref.calls[sweep_site_index(site)];
	if (!to || to > calls)
		to = calls;
	for (unsigned long n = from; n <= to; n += step) {
		enum sweep_outcome o = sweep_run(&ref, site, n, onward,
						 timeout_s, msg, sizeof(msg));

		counts[o]++;
		runs++;
		if (o == SWEEP_ERROR)
			tally(msgs, &n_msgs, msg, n);
		else if (o != SWEEP_IDENTICAL || verbose)
			printf("  @%lu%s: %s %s\n", n, onward ? "+" : "",
			       sweep_outcome_name(o), msg);
		fflush(stdout);
	}
	printf("fault sweep: %s %s %s %s: %lu calls, %lu runs",
	       sweep_model_name(c.model), c.mode, c.policy, site, calls,
	       runs);
	for (int o = 0; o < SWEEP_OUTCOMES; o++)
		printf(", %lu %s", counts[o],
		       sweep_outcome_name((enum sweep_outcome)o));
	printf("\n");
	for (size_t i = 0; i < n_msgs; i++)
		printf("  %6lu x (first @%lu) %s\n", msgs[i].count,
		       msgs[i].first, msgs[i].text);
	sweep_ref_free(&ref);
	return counts[SWEEP_IDENTICAL] + counts[SWEEP_ERROR] == runs ? 0 : 1;
}
