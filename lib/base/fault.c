/* SPDX-License-Identifier: MIT */
/*
 * fault.c — injected failures (see fault.h): the parsed list and its
 * counts, behind one lock, since any thread may reach a failure point.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

#define MAX_SITES 16
#define SITE_LEN 48

struct site {
	char name[SITE_LEN];
	unsigned long nth;	/* the call that fails, from 1 */
	bool onward;		/* and every later one */
	unsigned long calls;
};

atomic_bool tmm_fault_on;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct site sites[MAX_SITES];
static unsigned n_sites;

static bool site_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.';
}

/* Parses spec into out[0 .. *n); false with why when it is not valid. */
static bool parse(const char *spec, struct site *out, unsigned *n, char *why,
		  size_t whylen)
{
	const char *p = spec ? spec : "";

	*n = 0;
	while (*p) {
		struct site s = { .nth = 1 };
		size_t len = 0;

		while (site_char(p[len]))
			len++;
		if (len == 0 || len >= SITE_LEN) {
			snprintf(why, whylen, "a site is 1 to %d letters, "
				 "digits, '_' or '.', at \"%s\"",
				 SITE_LEN - 1, p);
			return false;
		}
		memcpy(s.name, p, len);
		p += len;
		if (*p == '@') {
			char *end;

			if (p[1] < '1' || p[1] > '9') {
				snprintf(why, whylen, "@ takes a call number "
					 "from 1, at \"%s\"", p);
				return false;
			}
			s.nth = strtoul(p + 1, &end, 10);
			p = end;
			if (*p == '+') {
				s.onward = true;
				p++;
			}
		}
		if (*p && *p != ';') {
			snprintf(why, whylen, "expected ';' after site %s, at "
				 "\"%s\"", s.name, p);
			return false;
		}
		if (*n == MAX_SITES) {
			snprintf(why, whylen, "at most %d sites", MAX_SITES);
			return false;
		}
		out[(*n)++] = s;
		if (*p == ';' && !*++p) {
			snprintf(why, whylen, "a list does not end with ';'");
			return false;
		}
	}
	return true;
}

bool tmm_fault_valid(const char *spec, char *why, size_t whylen)
{
	struct site tmp[MAX_SITES];
	unsigned n;

	return parse(spec, tmp, &n, why, whylen);
}

int tmm_fault_set(const char *spec)
{
	struct site tmp[MAX_SITES];
	unsigned n;
	char why[128];

	if (!parse(spec, tmp, &n, why, sizeof(why)))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	memcpy(sites, tmp, n * sizeof(*tmp));
	n_sites = n;
	atomic_store_explicit(&tmm_fault_on, n > 0, memory_order_relaxed);
	pthread_mutex_unlock(&lock);
	return 0;
}

bool tmm_fault_hit(const char *site)
{
	bool hit = false;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < n_sites; i++) {
		struct site *s = &sites[i];

		if (strcmp(s->name, site) != 0)
			continue;
		s->calls++;
		hit = s->calls == s->nth || (s->onward && s->calls > s->nth);
		break;
	}
	pthread_mutex_unlock(&lock);
	return hit;
}

unsigned long tmm_fault_calls(const char *site)
{
	unsigned long calls = 0;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < n_sites; i++)
		if (strcmp(sites[i].name, site) == 0) {
			calls = sites[i].calls;
			break;
		}
	pthread_mutex_unlock(&lock);
	return calls;
}
