/* SPDX-License-Identifier: MIT */
/*
 * trace_builder.h — small hand-made traces for the planner tests: ops are
 * appended with their tensors, each taking a given ideal time, so a test
 * states its iteration in a few lines and knows the answer.
 */
#ifndef TMM_TRACE_BUILDER_H
#define TMM_TRACE_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/io/plan.h"
#include "hints/planner.h"
#include "lib/io/trace.h"

#define MAX_T 64
#define MAX_O 64
#define MAX_A 256

struct builder {
	struct tmm_trace t;
	struct tmm_trace_tensor tensors[MAX_T];
	struct tmm_trace_op ops[MAX_O];
	uint32_t op_tensors[MAX_A];
	struct tmm_trace_access accesses[MAX_A];
	uint64_t now;
};

void b_init(struct builder *b);

/* A tensor made inside the iteration (inside) or before it. */
uint32_t b_tensor(struct builder *b, uint64_t bytes, bool inside);

/* An op of `ns` reading in[0..n_in) and writing out[0..n_out). */
void b_op(struct builder *b, unsigned flags, uint64_t ns, const uint32_t *in,
	  unsigned n_in, const uint32_t *out, unsigned n_out);

/* Marks every inside tensor freed right after its last access. */
void b_free_after_last_use(struct builder *b);

/* A planner input for the trace: a huge device, a link of gbps both ways
 * with no latency, no launch overhead. */
struct tmm_planner_input input(const struct builder *b, uint64_t budget,
			       double gbps);

/* The actions of type `type` on trace tensor t. */
unsigned count(const struct tmm_plan *p, const struct builder *b,
	       enum tmm_action_type type, uint32_t t);

#endif /* TMM_TRACE_BUILDER_H */
