/* SPDX-License-Identifier: MIT */
/*
 * layers.h — the layer view of a trace, for layer-typed policies.
 *
 * vDNN, Chen's checkpointing and SuperNeurons reason about layers of a
 * forward and a backward pass.  A trace is a sequence of ops; an op is in
 * the backward pass when the program flagged it TMM_OP_BACKWARD, and its
 * layer type is its tmm_op_kind.  These helpers give those policies the
 * few layer facts they need.
 */
#ifndef TMM_LAYERS_H
#define TMM_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"

/* Op kinds as a bit set: 1u << TMM_OP_CONV, ... */
#define TMM_KINDS_ALL 0xffffffffu

/*
 * A feature map of the forward pass: a tensor made inside the iteration,
 * written by a forward op, whose next access after its last forward access
 * is in the backward pass.  Returns that last forward access (the
 * evicted-access of an offload) and in *back the backward access, or
 * TMM_TRACE_NONE when t is not one.
 */
uint32_t tmm_feature_map(const struct tmm_analysis *an, uint32_t t,
			 uint32_t *back);

/* The op that wrote trace tensor t first, or TMM_TRACE_NONE. */
uint32_t tmm_first_writer_op(const struct tmm_analysis *an, uint32_t t);

/*
 * vDNN's prefetch point: the first access of the nearest backward op of a
 * kind in `kinds` that runs before the op of access `back` ("one layer
 * ahead"), not earlier than just after `evict`.  Returns `evict` when no
 * such layer lies between.
 */
uint32_t tmm_layer_ahead(const struct tmm_analysis *an, uint32_t evict,
			 uint32_t back, uint32_t kinds);

/*
 * vDNN's prefetch trigger: the access after which the layer ahead of
 * tmm_layer_ahead starts (the last access of the op before it), so that a
 * prefetch fired there runs beside that layer; `evict` when no such layer
 * lies between.
 */
uint32_t tmm_layer_ahead_beside(const struct tmm_analysis *an,
				uint32_t evict, uint32_t back, uint32_t kinds);

#endif /* TMM_LAYERS_H */
