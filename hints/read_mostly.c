/* SPDX-License-Identifier: MIT */
/*
 * read_mostly.c — frozen tensors advised read-mostly, in mode=uvm by
 * prefetch (see read_mostly.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "read_mostly.h"
#include "lib/base/xalloc.h"
#include "tensormm.h"

void tmm_frozen_tensors(const struct tmm_trace *t, bool *frozen)
{
	for (uint32_t i = 0; i < t->n_tensors; i++)
		frozen[i] = false;
	for (uint32_t k = 0; k < t->n_accesses; k++)
		if (t->tensors[t->accesses[k].tensor].kind == TMM_PERSISTENT)
			frozen[t->accesses[k].tensor] = true;
	for (uint32_t k = 0; k < t->n_accesses; k++)
		if (t->accesses[k].flags & TMM_TA_WRITE)
			frozen[t->accesses[k].tensor] = false;
}

/* Whether p advises the tensor `key` read-mostly already. */
static bool advised(const struct tmm_plan *p, uint64_t key)
{
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == TMM_ACT_ADVISE &&
		    p->actions[i].advice == TMM_PLAN_ADVICE_READ_MOSTLY &&
		    p->actions[i].key == key)
			return true;
	return false;
}

int tmm_read_mostly_advise(const struct tmm_planner_input *in,
			   struct tmm_plan *p)
{
	const struct tmm_trace *t = in->trace;
	bool *frozen;
	int rc = 0;

	if (!in->read_mostly_frozen || t->n_tensors == 0)
		return 0;
	frozen = tmm_calloc(t->n_tensors, sizeof(*frozen));
	if (!frozen)
		return -ENOMEM;
	tmm_frozen_tensors(t, frozen);
	/* At its first access: the tensor is the trace's from then on. */
	for (uint32_t k = 0; rc == 0 && k < t->n_accesses; k++) {
		uint32_t i = t->accesses[k].tensor;
		uint64_t key = t->tensors[i].key;

		if (!frozen[i])
			continue;
		frozen[i] = false; /* advised once */
		if (!advised(p, key))
			rc = tmm_plan_add(p, TMM_ACT_ADVISE, k, key,
					  TMM_PLAN_NONE,
					  TMM_PLAN_ADVICE_READ_MOSTLY);
	}
	free(frozen);
	return rc;
}
