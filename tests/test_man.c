/* SPDX-License-Identifier: MIT */
/*
 * test_man.c — Check suite holding tensormm(7) to the descriptor table:
 * every tunable of tmm_tunables() has an entry in the page with its
 * environment variable, its key, each accepted word, its default and
 * the version that introduced it, which is no later than this one.  A tunable added to the table and not
 * to the page fails here.
 */
#include "check_main.h"
#include "lib/base/tunables.h"
#include "tensormm.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *page;

/* Reads $srcdir/man/tensormm.7 with every "\-" turned into "-", so that
 * values can be compared as the table writes them. */
static void load_page(void)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	size_t len = 0, cap = 1 << 16, j = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/man/tensormm.7",
		 srcdir ? srcdir : ".");
	f = fopen(path, "r");
	ck_assert_msg(f, "cannot open %s (run from the build directory "
		      "with srcdir set, as make check does)", path);
	page = malloc(cap + 1);
	ck_assert_ptr_nonnull(page);
	for (int c; (c = fgetc(f)) != EOF;) {
		if (len == cap) {
			cap *= 2;
			page = realloc(page, cap + 1);
			ck_assert_ptr_nonnull(page);
		}
		page[len++] = (char)c;
	}
	fclose(f);
	for (size_t i = 0; i < len; i++)
		if (!(page[i] == '\\' && i + 1 < len && page[i + 1] == '-'))
			page[j++] = page[i];
	page[j] = '\0';
}

/* The text of the entry ".BR ENV ", " key" up to the next .TP or .SH,
 * copied into buf; NULL when the page has no such entry. */
static const char *entry(const struct tmm_tunable *t, char *buf,
			 size_t len)
{
	char head[256];
	const char *start, *end, *tp, *sh;

	snprintf(head, sizeof(head), "\n.BR %s \", \" %s\n", t->env,
		 t->name);
	start = strstr(page, head);
	if (!start)
		return NULL;
	start += strlen(head);
	tp = strstr(start, "\n.TP");
	sh = strstr(start, "\n.SH");
	end = tp && (!sh || tp < sh) ? tp : sh ? sh : start + strlen(start);
	snprintf(buf, len, "%.*s", (int)(end - start), start);
	return buf;
}

/* Is "MAJOR.MINOR" at most this library's version (tensormm.h)? */
static bool since_released(const char *since)
{
	unsigned major, minor;

	if (sscanf(since, "%u.%u", &major, &minor) != 2)
		return false;
	return major * 1000ul + minor <=
	       TMM_VERSION_MAJOR * 1000ul + TMM_VERSION_MINOR;
}

START_TEST(every_tunable_documented)
{
	size_t n;
	const struct tmm_tunable *t = tmm_tunables(&n);
	char buf[8192], want[256];

	load_page();
	ck_assert_uint_gt(n, 10);
	for (size_t i = 0; i < n; i++) {
		const char *e = entry(&t[i], buf, sizeof(buf));

		ck_assert_msg(e, "tensormm.7 has no entry \".BR %s \\\", \\\" "
			      "%s\" for tunable %s: document it under "
			      "TUNABLES", t[i].env, t[i].name, t[i].name);
		ck_assert_msg(since_released(t[i].since), "%s: since %s, "
			      "but this is version %d.%d: a tunable cannot "
			      "be older than the release", t[i].env,
			      t[i].since, TMM_VERSION_MAJOR,
			      TMM_VERSION_MINOR);
		snprintf(want, sizeof(want), "Since %s.", t[i].since);
		ck_assert_msg(strstr(e, want), "%s: the entry lacks \"%s\"",
			      t[i].env, want);
		ck_assert_msg(strstr(e, "Default"), "%s: no default",
			      t[i].env);
		if (t[i].def[0])
			ck_assert_msg(strstr(e, t[i].def),
				      "%s: the entry does not give the "
				      "default \"%s\"", t[i].env, t[i].def);
		else
			ck_assert_msg(strstr(e, "Default empty"),
				      "%s: the default is empty; say so",
				      t[i].env);
		for (const char *const *c = t[i].choices; c && *c; c++)
			ck_assert_msg(strstr(e, *c),
				      "%s: the entry does not list \"%s\"",
				      t[i].env, *c);
	}
	free(page);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("man");
	TCase *tc = tcase_create("tensormm.7");

	tcase_add_test(tc, every_tunable_documented);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
