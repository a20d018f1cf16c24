/* SPDX-License-Identifier: MIT */
/*
 * trace_builder.c — hand-made traces for the planner tests; see
 * trace_builder.h.
 */
#include <string.h>

#include "tensormm.h"
#include "trace_builder.h"

void b_init(struct builder *b)
{
	memset(b, 0, sizeof(*b));
	b->t.tensors = b->tensors;
	b->t.ops = b->ops;
	b->t.op_tensors = b->op_tensors;
	b->t.accesses = b->accesses;
}

/* A tensor made inside the iteration (inside) or before it. */
uint32_t b_tensor(struct builder *b, uint64_t bytes, bool inside)
{
	uint32_t i = b->t.n_tensors++;

	b->tensors[i] = (struct tmm_trace_tensor){
		.key = inside ? tmm_key_of_ordinal(i) : 0x1000 + i,
		.bytes = bytes,
		.kind = inside ? TMM_ACTIVATION : TMM_PERSISTENT,
		.producer = TMM_TRACE_NONE,
		.flags = inside ? TMM_TT_MADE_INSIDE : 0,
		.name = TMM_TRACE_NONE,
	};
	return i;
}

void b_op(struct builder *b, unsigned flags, uint64_t ns,
		 const uint32_t *in, unsigned n_in, const uint32_t *out,
		 unsigned n_out)
{
	uint32_t o = b->t.n_ops++;
	struct tmm_trace_op *op = &b->ops[o];

	*op = (struct tmm_trace_op){
		.name = TMM_TRACE_NONE, .kind = TMM_OP_OTHER,
		.flags = (uint16_t)flags, .first = b->t.n_op_tensors,
		.n_inputs = (uint16_t)n_in, .n_outputs = (uint16_t)n_out,
		.begin_ns = b->now, .end_ns = b->now + ns,
	};
	for (unsigned i = 0; i < n_in + n_out; i++) {
		uint32_t t = i < n_in ? in[i] : out[i - n_in];

		b->op_tensors[b->t.n_op_tensors++] = t;
		b->accesses[b->t.n_accesses++] = (struct tmm_trace_access){
			.tensor = t, .op = o, .begin_ns = b->now,
			.end_ns = b->now + ns,
			.flags = i < n_in ? TMM_TA_READ : TMM_TA_WRITE,
		};
		if (i >= n_in)
			b->tensors[t].producer = o;
	}
	b->now += ns;
}

/* Marks every inside tensor freed right after its last access. */
void b_free_after_last_use(struct builder *b)
{
	for (uint32_t k = 0; k < b->t.n_accesses; k++) {
		struct tmm_trace_tensor *t = &b->tensors[b->accesses[k].tensor];

		if (t->flags & TMM_TT_MADE_INSIDE) {
			t->flags |= TMM_TT_FREED_INSIDE;
			t->free_ns = b->accesses[k].end_ns;
		}
	}
}

struct tmm_planner_input input(const struct builder *b, uint64_t budget,
			       double gbps)
{
	return (struct tmm_planner_input){
		.trace = &b->t, .budget = budget,
		.device = { .capacity = 1ull << 40, .h2d_gbps = gbps,
			    .d2h_gbps = gbps, .copy_latency_ns = 0 },
	};
}

/* The actions of type `type` on trace tensor t. */
unsigned count(const struct tmm_plan *p, const struct builder *b,
	       enum tmm_action_type type, uint32_t t)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < p->n_actions; i++)
		n += p->actions[i].type == type &&
		     p->actions[i].key == b->tensors[t].key;
	return n;
}

