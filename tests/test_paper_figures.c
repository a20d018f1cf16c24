/* SPDX-License-Identifier: MIT */
/*
 * test_paper_figures.c — the calibration's data (bench/paper_figures.c)
 * says something about every cell it covers (issue #22).
 *
 * A covered cell (a figure, a model of our zoo, a policy of ours) is
 * either marked faithful, so that make check holds it within +-35%
 * (tests/test_calibrate.sh), or gives the reason it cannot be, printed in
 * the report's last column.  A covered cell with neither is one nobody
 * has looked at: --calibrate would show it outside with an empty column,
 * or inside with nothing to keep it there.  A cell cannot be both: a
 * faithful cell with a reason would print a reason beside a cell that is
 * within.  No search runs here: this is the data alone, so it is fast.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "paper_figures.h"

/* The paper, table and column of cell c, for messages. */
static const char *where(const struct paper_cell *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s, %s (%s)", c->table->paper, c->table->table,
		 c->row, c->table->columns[c->column].name);
	return buf;
}

START_TEST(every_covered_cell_is_faithful_or_says_why_not)
{
	size_t n, covered = 0, faithful = 0;
	const struct paper_cell *cells = paper_cells(&n);
	char buf[256];

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		const struct paper_cell *c = &cells[i];
		bool reason = c->why_not && c->why_not[0];

		if (paper_not_covered(c))
			continue;
		covered++;
		faithful += c->faithful;
		ck_assert_msg(c->faithful || reason,
			      "%s, our %s: neither faithful nor a why_not "
			      "(bench/paper_figures.c, notes[])",
			      where(c, buf, sizeof(buf)), c->model);
		ck_assert_msg(!(c->faithful && reason),
			      "%s, our %s: faithful, yet with a why_not",
			      where(c, buf, sizeof(buf)), c->model);
	}
	/* Some cell is covered, and make check holds some of them. */
	ck_assert_uint_gt(covered, 0);
	ck_assert_uint_gt(faithful, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("paper_figures");
	TCase *tc = tcase_create("cells");

	tcase_add_test(tc, every_covered_cell_is_faithful_or_says_why_not);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
