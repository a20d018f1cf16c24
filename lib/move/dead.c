/* SPDX-License-Identifier: MIT */
/*
 * dead.c — discarding dead tensors (see dead.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "dead.h"
#include "mover.h"
#include "lib/record/tracker.h"

bool tmm_dead_discard(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->state != TMM_TS_RESIDENT || t->pins || t->n_views ||
	    t->view_parent || t->dropped_dependents || t->ghost)
		return false;
	/* A collective still reducing it ends before its memory is reused
	 * (swap mode defers the block on it instead). */
	if (ctx->mode == TMM_MODE_UVM &&
	    tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false) < 0)
		return false;
	ctx->c.dead_discards++;
	ctx->c.dead_discard_bytes += t->bytes;
	tmm_tracker_event_dead(ctx, t);
	tmm_mover_release(ctx, t);
	t->dead = true;
	return true;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct tmm_kept_source *)a)->key;
	uint64_t y = ((const struct tmm_kept_source *)b)->key;

	return x < y ? -1 : x > y;
}

/* The entry of `key` in sorted list[0 .. n), or NULL. */
static struct tmm_kept_source *find(struct tmm_kept_source *list, uint32_t n,
				    uint64_t key)
{
	struct tmm_kept_source k = { .key = key };

	return n ? bsearch(&k, list, n, sizeof(*list), by_key) : NULL;
}

int tmm_dead_list(const struct tmm_plan *p, const struct tmm_trace *t,
		  struct tmm_kept_source **dead, uint32_t *n)
{
	struct tmm_kept_source *list = NULL;
	uint32_t m = 0;

	*dead = NULL;
	*n = 0;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		m += tmm_trace_dead_after_last(&t->tensors[i]);
	if (!m)
		return 0;
	list = malloc(m * sizeof(*list));
	if (!list)
		return -ENOMEM;
	m = 0;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (tmm_trace_dead_after_last(&t->tensors[i]))
			list[m++] = (struct tmm_kept_source){
				.key = t->tensors[i].key
			};
	qsort(list, m, sizeof(*list), by_key);
	/* A drop's recomputation reads its producer's inputs. */
	for (uint32_t k = 0; k < p->n_actions; k++) {
		const struct tmm_plan_action *d = &p->actions[k];
		uint32_t e, op;

		if (d->type != TMM_ACT_EVICT_DROP)
			continue;
		for (e = 0; e < t->n_tensors && t->tensors[e].key != d->key;
		     e++)
			;
		op = e < t->n_tensors ? t->tensors[e].producer : TMM_TRACE_NONE;
		if (op == TMM_TRACE_NONE)
			continue;
		for (uint32_t i = 0; i < t->ops[op].n_inputs; i++) {
			uint32_t src = t->op_tensors[t->ops[op].first + i];
			struct tmm_kept_source *s =
				find(list, m, t->tensors[src].key);

			if (s && s->until < d->trigger + 1)
				s->until = d->trigger + 1;
		}
	}
	*dead = list;
	*n = m;
	return 0;
}

bool tmm_dead_at(const struct tmm_kept_source *dead, uint32_t n,
		 const struct tmm_plan_action *a)
{
	const struct tmm_kept_source *s =
		find((struct tmm_kept_source *)dead, n, a->key);

	return s && (s->until == 0 || s->until - 1 < a->trigger);
}
