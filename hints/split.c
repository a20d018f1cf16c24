/*
 * split.c — the memory model of split ops (TSPLIT Eq. 5); see split.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "split.h"

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
	uint64_t in_bytes = 0, out_bytes = 0;
	uint32_t end = an->op_end[first];

	if (tmm_trace_op_slices(tr, first) < 2)
		return false;
	/* The largest of each side makes the largest min() of a pair. */
	for (uint32_t k = first; k < end; k++) {
		const struct tmm_trace_access *a = &tr->accesses[k];
		uint64_t bytes = an->life[a->tensor].bytes;

		if (!a->slices)
			continue;
		if ((a->flags & TMM_TA_READ) &&
		    an->life[a->tensor].from < first && bytes > in_bytes) {
			in_bytes = bytes;
			*input = a->tensor;
		} else if ((a->flags & TMM_TA_WRITE) &&
			   an->life[a->tensor].from == first &&
			   bytes > out_bytes) {
			out_bytes = bytes;
			*output = a->tensor;
		}
	}
	return in_bytes > 0 && out_bytes > 0;
}

bool tmm_split_evicts_input(const struct tmm_analysis *an,
			    const struct tmm_split *s,
			    const struct tmm_eviction *ev, uint32_t n)
{
	uint32_t end = an->op_end[s->first];

	for (uint32_t i = 0; i < n; i++)
		if (ev[i].tensor == s->input && ev[i].evict != TMM_TRACE_NONE &&
		    ev[i].evict >= s->first && ev[i].evict < end)
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
