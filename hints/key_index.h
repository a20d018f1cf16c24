/* SPDX-License-Identifier: MIT */
/*
 * key_index.h — a trace's tensors by key (key_index.c): a plan names
 * tensors by key, and the passes that replay it against the trace
 * (plan_forecast.c, uvm_mix.c) need each action's trace tensor.
 */
#ifndef TMM_KEY_INDEX_H
#define TMM_KEY_INDEX_H

#include <stdint.h>

#include "lib/io/trace.h"

struct tmm_keyed {
	uint64_t key;
	uint32_t tensor;
};

struct tmm_key_index {
	struct tmm_keyed *by_key; /* sorted by key */
	uint32_t n;
};

/* Indexes t's tensors.  Returns 0 or -ENOMEM (ki then holds nothing). */
int tmm_key_index_init(struct tmm_key_index *ki, const struct tmm_trace *t);

/* The trace tensor of `key`, or TMM_TRACE_NONE. */
uint32_t tmm_key_index_tensor(const struct tmm_key_index *ki, uint64_t key);

void tmm_key_index_free(struct tmm_key_index *ki);

#endif /* TMM_KEY_INDEX_H */
