/* SPDX-License-Identifier: MIT */
/*
 * op_bound.h — the single-op bound of a model on a device: the smallest
 * batch (or width scale) at which one op's own tensors, its inputs and
 * outputs together, exceed the device.  No policy trains there: the
 * runtime refuses such an op before running it (lib/exec/run.c,
 * mark_and_check_fits), whatever was planned.  The searches scan no
 * further (search.c).
 */
#ifndef BENCH_OP_BOUND_H
#define BENCH_OP_BOUND_H

#include <stdbool.h>
#include <stdint.h>

struct zgraph;
struct zoo_model;

/* What a graph build may be changed by before it runs (search.h's
 * struct bench_run); NULL: the model as built. */
typedef void (*graph_prepare_fn)(struct zgraph *g);

/* The most device bytes one op of g holds at once: its distinct inputs and
 * outputs, each rounded up to the pool's allocation unit as the runtime
 * counts them. */
uint64_t graph_largest_op(const struct zgraph *g);

/*
 * The smallest x in [1, limit] at which one op of model m exceeds
 * `capacity` bytes, x being the batch (width scale `fixed`) or, with
 * `scale`, the width scale (batch `fixed`); limit + 1 when no x up to
 * limit does.  It assumes what every zoo graph does: no tensor shrinks as
 * the batch or the width grows.
 */
unsigned op_bound(const struct zoo_model *m, bool scale, unsigned fixed,
		  uint64_t capacity, unsigned limit, graph_prepare_fn prepare);

#endif /* BENCH_OP_BOUND_H */
