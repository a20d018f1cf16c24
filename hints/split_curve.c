/*
 * split_curve.c — the memory model of split ops (TSPLIT Eq. 5); see
 * split_curve.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "split_curve.h"

uint64_t tmm_split_saving(const struct tmm_analysis *an,
			  const struct tmm_split *s)
{
	uint64_t in = an->life[s->input].bytes;
	uint64_t out = an->life[s->output].bytes;
	uint64_t least = in < out ? in : out;

	if (s->parts < 2)
		return 0;
	return least / s->parts * (s->parts - 1);
}

bool tmm_split_pair(const struct tmm_analysis *an, uint32_t first,
		    uint32_t *input, uint32_t *output)
{
	const struct tmm_trace *tr = an->trace;
	const struct tmm_trace_access *in = &tr->accesses[first];
	uint32_t end = an->op_end[first];
	bool have_out = false;

	if (tmm_trace_op_slices(tr, first) < 2)
		return false;
	/* The runtime (lib/split.c) shrinks the op's first tensor, a
	 * sliced input made before the op, and grows its first sliced
	 * output into the room; only when every output is new. */
	if (!in->slices || !(in->flags & TMM_TA_READ) ||
	    (in->flags & TMM_TA_WRITE) || an->life[in->tensor].from >= first)
		return false;
	for (uint32_t k = first + 1; k < end; k++) {
		const struct tmm_trace_access *a = &tr->accesses[k];

		if (!(a->flags & TMM_TA_WRITE))
			continue;
		if (an->life[a->tensor].from != first)
			return false;
		if (a->slices && !have_out) {
			have_out = true;
			*output = a->tensor;
		}
	}
	*input = in->tensor;
	return have_out;
}

bool tmm_split_evicts_input(const struct tmm_analysis *an,
			    const struct tmm_split *s,
			    const struct tmm_eviction *ev, uint32_t n)
{
	/* Dropped or swapped, the input leaves row by row at the op
	 * (lib/split.c); evicted anywhere else, it is whole there. */
	(void)an;
	for (uint32_t i = 0; i < n; i++)
		if (ev[i].tensor == s->input && ev[i].evict == s->first)
			return true;
	return false;
}

uint64_t tmm_curve_split(const struct tmm_analysis *an,
			 const struct tmm_eviction *ev, uint32_t n,
			 const struct tmm_split *sp, uint32_t ns,
			 uint64_t *curve, uint32_t *peak_at)
{
	uint64_t peak = tmm_curve(an, ev, n, curve, peak_at);
	uint32_t at = peak_at ? *peak_at : 0;

	if (ns == 0)
		return peak;
	for (uint32_t i = 0; i < ns; i++) {
		uint64_t saving = tmm_split_saving(an, &sp[i]);

		if (!tmm_split_evicts_input(an, &sp[i], ev, n))
			continue;
		for (uint32_t k = sp[i].first; k < an->op_end[sp[i].first];
		     k++)
			curve[k] -= saving < curve[k] ? saving : curve[k];
	}
	peak = 0;
	for (uint32_t k = 0; k < an->trace->n_accesses; k++)
		if (curve[k] > peak) {
			peak = curve[k];
			at = k;
		}
	if (peak_at)
		*peak_at = at;
	return peak;
}

int tmm_emit_split(const struct tmm_analysis *an,
		   const struct tmm_eviction *ev, uint32_t n,
		   const struct tmm_split *sp, uint32_t ns,
		   struct tmm_plan *plan)
{
	const struct tmm_trace *tr = an->trace;
	uint64_t *curve;
	int rc = tmm_emit(an, ev, n, plan);

	for (uint32_t i = 0; i < ns && rc == 0; i++)
		rc = tmm_plan_add_split(
			plan, sp[i].first,
			tr->tensors[tr->accesses[sp[i].first].tensor].key,
			sp[i].parts);
	if (rc < 0)
		return rc;
	curve = malloc(sizeof(uint64_t) * (tr->n_accesses + 1));
	if (!curve)
		return -ENOMEM;
	plan->predicted_peak = tmm_curve_split(an, ev, n, sp, ns, curve, NULL);
	plan->fits = plan->predicted_peak <= an->target;
	free(curve);
	return 0;
}
