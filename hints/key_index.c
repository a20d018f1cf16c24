/* SPDX-License-Identifier: MIT */
/*
 * key_index.c — a trace's tensors by key; see key_index.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "key_index.h"
#include "lib/base/xalloc.h"

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = ((const struct tmm_keyed *)a)->key;
	uint64_t y = ((const struct tmm_keyed *)b)->key;

	return x < y ? -1 : x > y;
}

int tmm_key_index_init(struct tmm_key_index *ki, const struct tmm_trace *t)
{
	ki->n = t->n_tensors;
	ki->by_key = tmm_malloc(sizeof(*ki->by_key) * (ki->n ? ki->n : 1));
	if (!ki->by_key) {
		ki->n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ki->n; i++)
		ki->by_key[i] = (struct tmm_keyed){ t->tensors[i].key, i };
	qsort(ki->by_key, ki->n, sizeof(*ki->by_key), cmp_key);
	return 0;
}

uint32_t tmm_key_index_tensor(const struct tmm_key_index *ki, uint64_t key)
{
	uint32_t lo = 0, hi = ki->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t k = ki->by_key[mid].key;

		if (k == key)
			return ki->by_key[mid].tensor;
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return TMM_TRACE_NONE;
}

void tmm_key_index_free(struct tmm_key_index *ki)
{
	free(ki->by_key);
	ki->by_key = NULL;
	ki->n = 0;
}
