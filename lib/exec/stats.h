/* SPDX-License-Identifier: MIT */
/*
 * stats.h — a context's counters, for the library's own callers.
 *
 * tmm_stats_get is a public call, let into the context by the guard
 * (lib/core/guard.h); the library reads the counters from inside calls
 * that already hold the context (publishing them at an iteration's end,
 * stats_shm.c), so it fills the struct here instead of entering twice.
 */
#ifndef TMM_STATS_H
#define TMM_STATS_H

#include "tensormm.h"

struct tmm_ctx;

/* tmm_stats_get without the guard: same returns, same messages. */
int tmm_stats_fill(struct tmm_ctx *ctx, struct tmm_stats *s);

#endif /* TMM_STATS_H */
