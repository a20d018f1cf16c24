/* SPDX-License-Identifier: MIT */
/*
 * split_curve.c — the memory and copy model of split ops (TSPLIT Eq. 5
 * and the swap cost of Eq. 6); see split_curve.h.
 *
 * tmm_split_input_stall_ns replays lib/exec/split.c's order of events on an
 * idle copy engine, with the lead and the pool's rounding as the runtime
 * computes them: a model that waited per part, or not at all, would
 * price a split unlike what it costs.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/base/pool_align.h"
#include "split_curve.h"
#include "lib/base/xalloc.h"

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

/* In the runtime's units: bytes, rounded as its pool rounds them. */
static uint64_t pool_down(uint64_t bytes)
{
	return bytes / TMM_POOL_ALIGN * TMM_POOL_ALIGN;
}

static uint64_t pool_up(uint64_t bytes)
{
	return pool_down(bytes + TMM_POOL_ALIGN - 1);
}

/* Rows [*begin, *end) of part k: lib/exec/split.c's tmm_split_range. */
static void part_rows(uint64_t rows, uint32_t parts, uint32_t k,
		      uint64_t *begin, uint64_t *end)
{
	uint64_t base = rows / parts, extra = rows % parts;

	*begin = k * base + (k < extra ? k : extra);
	*end = *begin + base + (k < extra ? 1 : 0);
}

uint64_t tmm_split_input_stall_ns(const struct tmm_analysis *an,
				  const struct tmm_split *s, uint64_t op_ns,
				  uint64_t *copies_end)
{
	uint64_t rows = tmm_trace_op_slices(an->trace, s->first);
	uint64_t in_row, out_row, lead = TMM_POOL_ALIGN, now = 0, engine = 0;
	uint64_t copied = 0, stall = 0;
	uint32_t waited = 0;
	/* Each part's copy: the input bytes it covers, and its end. */
	struct {
		uint64_t end, done;
	} *copy;

	*copies_end = 0;
	if (s->parts < 2 || rows < 2)
		return 0;
	copy = tmm_malloc(sizeof(*copy) * s->parts);
	if (!copy) /* priced as if every copy were waited for at once */
		return s->parts * an->dev.copy_latency_ns +
		       tmm_swap_ns(an, an->life[s->input].bytes, false);
	in_row = an->life[s->input].bytes / rows;
	out_row = an->life[s->output].bytes / rows;
	for (uint32_t k = 0; k < s->parts; k++) {
		uint64_t begin, end, written, freed;

		part_rows(rows, s->parts, k, &begin, &end);
		written = pool_up(end * out_row);
		freed = pool_down(begin * in_row);
		if (written > freed && written - freed > lead)
			lead = written - freed;
	}
	lead = pool_up(lead);
	for (uint32_t k = 0; k < s->parts; k++) {
		uint64_t begin, end, want;

		part_rows(rows, s->parts, k, &begin, &end);
		want = pool_up(end * out_row);
		/* The output grows into rows still being copied: wait. */
		while (want > lead && copied < want - lead && waited < k) {
			if (copy[waited].done > now) {
				stall += copy[waited].done - now;
				now = copy[waited].done;
			}
			copied = copy[waited++].end;
		}
		now += op_ns * (end - begin) / rows;
		engine = (engine > now ? engine : now) +
			 tmm_swap_ns(an, (end - begin) * in_row, false);
		copy[k].end = end * in_row;
		copy[k].done = engine;
	}
	if (engine > now)
		stall += engine - now;
	*copies_end = engine;
	free(copy);
	return stall;
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
	/* The runtime (lib/exec/split.c) shrinks the op's first tensor, a
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
	 * (lib/exec/split.c); evicted anywhere else, it is whole there. */
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
	curve = tmm_malloc(sizeof(uint64_t) * (tr->n_accesses + 1));
	if (!curve)
		return -ENOMEM;
	plan->predicted_peak = tmm_curve_split(an, ev, n, sp, ns, curve, NULL);
	plan->fits = plan->predicted_peak <= an->target;
	free(curve);
	return 0;
}
