/* SPDX-License-Identifier: MIT */
/*
 * stat_columns.c — which columns a text table of tensormm-stat prints
 * (-o LIST), and its header lines.
 *
 * A view owns its table of columns and formats its own cells; this file
 * only turns the user's list into a selection and lays cells out, so
 * every table answers -o the same way: names separated by commas, "all",
 * a leading '+' to add to the view's defaults, and an unknown name
 * refused with the known ones listed, since a misspelt column silently
 * left out would read as a column of zeros elsewhere.
 */
#include <string.h>

#include "stat.h"

/* The index of `name` (len bytes) in cols, or -1. */
static int find(const struct stat_column *cols, size_t n, const char *name,
		size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(cols[i].name) == len &&
		    !strncmp(cols[i].name, name, len))
			return (int)i;
	return -1;
}

/* The first column of `group`, so that a group is named once. */
static int group_first(const struct stat_column *cols, size_t n,
		       const char *group)
{
	for (size_t i = 0; i < n; i++)
		if (cols[i].group && !strcmp(cols[i].group, group))
			return (int)i;
	return -1;
}

static void known_names(const struct stat_column *cols, size_t n)
{
	fputs("known columns:", stderr);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? "," : " ", cols[i].name);
	for (size_t i = 0; i < n; i++)
		if (cols[i].group && (int)i == group_first(cols, n,
							  cols[i].group))
			fprintf(stderr, ", %s", cols[i].group);
	fputs(" or all (-o help describes them)\n", stderr);
}

/* Adds the columns of `list` to sel.  Returns an exit code. */
static int add_list(const struct stat_column *cols, size_t n,
		    const char *list, const char *view,
		    struct stat_selection *sel)
{
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");
		int c = find(cols, n, p, len);

		bool all = len == 3 && !strncmp(p, "all", 3), group = false;

		for (size_t i = 0; c < 0 && i < n; i++) {
			if (!all && !(cols[i].group &&
				      strlen(cols[i].group) == len &&
				      !strncmp(cols[i].group, p, len)))
				continue;
			group = true;
			if (sel->n < STAT_MAX_COLUMNS)
				sel->col[sel->n++] = (unsigned char)i;
		}
		if (group) {
			/* added above */
		} else if (c < 0) {
			stat_error("%s: unknown column '%.*s'%s", view,
				   (int)len, p,
				   len ? "" : " (an empty name: two commas?)");
			known_names(cols, n);
			return STAT_USAGE;
		} else if (sel->n == STAT_MAX_COLUMNS) {
			stat_error("%s: more than %d columns", view,
				   STAT_MAX_COLUMNS);
			return STAT_USAGE;
		} else {
			sel->col[sel->n++] = (unsigned char)c;
		}
		p += len;
		if (*p == ',' && !*++p) {
			stat_error("%s: the list '%s' ends with a comma", view,
				   list);
			return STAT_USAGE;
		}
	}
	return STAT_OK;
}

int stat_columns_select(const struct stat_column *cols, size_t n,
			const char *defaults, const char *list,
			const char *view, struct stat_selection *sel)
{
	int rc;

	sel->n = 0;
	if (!list || !*list)
		return add_list(cols, n, defaults, view, sel);
	if (*list == '+') {
		rc = add_list(cols, n, defaults, view, sel);
		return rc ? rc : add_list(cols, n, list + 1, view, sel);
	}
	return add_list(cols, n, list, view, sel);
}

void stat_columns_help(FILE *f, const struct stat_column *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-12s %-8s %s\n", cols[i].name,
			cols[i].unit[0] ? cols[i].unit : "-", cols[i].help);
	for (size_t i = 0; i < n; i++)
		if (cols[i].group && (int)i == group_first(cols, n,
							  cols[i].group))
			fprintf(f, "  %-12s %-8s every %s column\n",
				cols[i].group, "", cols[i].group);
	fprintf(f, "  %-12s %-8s every column\n", "all", "");
}

/* One header line: the names, or the units.  A row starts with a space
 * where a header starts with '#', so cells of one width line up. */
static void header_line(const struct stat_column *cols,
			const struct stat_selection *sel, enum stat_ts ts,
			bool units)
{
	int tw = stat_timestamp_width(ts);

	putchar('#');
	if (tw)
		printf(" %-*s", tw,
		       units ? (ts == STAT_TS_ISO ? "UTC" : "s") : "time");
	for (size_t i = 0; i < sel->n; i++) {
		const struct stat_column *c = &cols[sel->col[i]];

		printf(" %*s", c->width, units ? c->unit : c->name);
	}
	putchar('\n');
}

void stat_columns_header(const struct stat_column *cols,
			 const struct stat_selection *sel, enum stat_ts ts)
{
	header_line(cols, sel, ts, false);
	header_line(cols, sel, ts, true);
}

void stat_columns_cell(const struct stat_column *c, const char *text)
{
	printf(" %*s", c->width, text);
}
