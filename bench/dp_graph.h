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
 * Makes g, a finished graph, one of `ranks` ranks' (see the header).
 * With one rank g stays as it is.  Returns 0, or -ENOMEM (g is then
 * only fit for zg_free).
 */
int dp_graph_make(struct zgraph *g, unsigned ranks, uint64_t bucket_bytes,
		  bool zero1, struct dp_graph_info *info);

#endif /* BENCH_DP_GRAPH_H */
