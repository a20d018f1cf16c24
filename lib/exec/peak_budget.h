/* SPDX-License-Identifier: MIT */
/*
 * peak_budget.h — a budget given as a percentage of the program's own
 * peak (budget=40%peak), set when the first iteration has measured that
 * peak (peak_budget.c).
 */
#ifndef TMM_PEAK_BUDGET_H
#define TMM_PEAK_BUDGET_H

#include <stdbool.h>

#include "lib/core/context.h"

/*
 * At the end of an iteration, with budget=N%peak and no budget set from
 * the peak yet: the budget becomes N% of the device bytes this iteration
 * held at most (at least what its largest op needs), and the memory over
 * it is given back.  Returns true when the budget moved.
 */
bool tmm_peak_budget_apply(struct tmm_ctx *ctx);

#endif /* TMM_PEAK_BUDGET_H */
