/* SPDX-License-Identifier: MIT */
/*
 * dp_graph.h — one rank's data-parallel graph for bench/bench_scaling:
 * a finished zoo graph with its gradients' collectives added, and, with
 * ZeRO stage 1, its optimizer state sharded.
 *
 * Plain data parallelism: weight gradients are all-reduced in buckets of
 * about `bucket_bytes` (DDP's way), each bucket an op of kind
 * TMM_OP_COLLECTIVE issued right after the backward op that fills it and
 * before any optimizer step that reads one of its gradients, with
 * cost.net_bytes 2(N-1)/N x the bucket (a ring all-reduce).
 *
 * An optimizer step that the model runs as soon as its gradients are
 * ready (an MLP that updates each layer in its backward) would wait for
 * the reduction at once, leaving nothing to hide it behind.  With `lag`
 * L > 0 such a step runs after L more buckets have closed (or at the end
 * of the backward, or before an op that touches what it writes), so each
 * reduction overlaps the backward of the next L buckets, as DDP's does
 * (DDP steps after the whole backward); it holds those gradients L
 * buckets longer.  L = 0 keeps the model's placement.
 *
 * ZeRO stage 1 (examples/mlp_dp --zero 1 does the same with real bytes):
 * each rank keeps 1/N of every optimizer state tensor and updates 1/N of
 * every weight, so an optimizer step's state and arithmetic shrink to
 * 1/N; its gradients are reduce-scattered instead ((N-1)/N x the bucket
 * on the network), and the weights it updated are all-gathered
 * ((N-1)/N x their bytes) in buckets after the steps.  Weights and
 * gradients stay whole on every rank, as stage 1 has them.
 */
#ifndef BENCH_DP_GRAPH_H
#define BENCH_DP_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

struct dp_graph_info {
	uint64_t last_bucket;	/* bytes of the last gradient bucket */
	uint64_t grad_bytes;	/* every reduced gradient's bytes */
	uint32_t collectives;	/* ops added */
};

/*
 * Makes g, a finished graph, one of `ranks` ranks' (see the header),
 * its optimizer steps held back `lag` buckets.
 * With one rank g stays as it is.  Returns 0, or -ENOMEM: g is then as
 * it was (only its lists' capacity may have grown), fit to be made again
 * or freed with zg_free, and *info is zero.  Its host allocations fail
 * with the fault site host_alloc (lib/base/fault.h), for tests.
 */
int dp_graph_make(struct zgraph *g, unsigned ranks, uint64_t bucket_bytes,
		  bool zero1, unsigned lag, struct dp_graph_info *info);

#endif /* BENCH_DP_GRAPH_H */
