/* SPDX-License-Identifier: MIT */
/*
 * dp_report.h — what the data-parallel examples (mlp_dp, gpt_dp) print
 * and check the same way: whether a batch splits over the ranks and
 * micro-batches, each rank's figures on rank 0, and the last line,
 * "weights digest: <16 hex digits>", once every rank has checked that
 * all of them end with the same weights.
 */
#ifndef DP_REPORT_H
#define DP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_comm.h"
#include "tensormm.h"

/* FNV-1a, 64 bits, of len bytes: a short name for the weights. */
unsigned long long dp_digest(const uint8_t *p, size_t len);

/* 0 where `batch` splits into c->size ranks x `accumulate`
 * micro-batches; else says on stderr, as `prog`, what to change (the
 * flags --batch and --accumulate, or -np) and returns 2. */
int dp_check_batch(const char *prog, unsigned batch, unsigned accumulate,
		   const struct dp_comm *c);

/* One rank's figures: its context's statistics at the end (swap-outs
 * and passive evictions in mode=swap, the driver's evictions in
 * mode=uvm), the bytes it declared in cost.net_bytes, and its weights'
 * digest. */
struct dp_figures {
	unsigned long long peak, budget, swap_outs, passive, uvm_evictions;
	unsigned long long net;
	unsigned long long digest;
};

/* Fills fig's statistics from ctx's, as its training ended, and its
 * digest from the weights w[0 .. len); fig->net is the caller's. */
void dp_figures_fill(tmm_ctx *ctx, const uint8_t *w, size_t len,
		     struct dp_figures *fig);

/* Gathers every rank's figures and prints them on rank 0, one line a
 * rank ("(simulated)" where the figures are the sim's).  Stops every
 * rank where it cannot gather them. */
void dp_report(const char *prog, const struct dp_comm *c,
	       const struct dp_figures *mine, bool simulated);

/* Checks that every rank has the digest d (stops them all, as `prog`,
 * where not: a bug in the reduction), then prints the last line on rank
 * 0. */
void dp_finish(const char *prog, const struct dp_comm *c,
	       unsigned long long d);

#endif /* DP_REPORT_H */
