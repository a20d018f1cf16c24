/* SPDX-License-Identifier: MIT */
/*
 * sim_network.c — the simulated GPU's network engine; see sim_network.h.
 *
 * Sharing is modelled as an even split: two transfers on one link each
 * move at half the rate while both run (PCIe arbitrates fairly between
 * requesters of equal priority).  Directions are not told apart: a ring
 * all-reduce sends and receives the same bytes, so it loads both
 * directions of PCIe, and any copy, in or out, meets it in one of them.
 * The copies in flight are taken as one stream of work until the later
 * copy engine is free: an estimate that ignores gaps between them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_network.h"
#include "lib/base/xalloc.h"

uint64_t tmm_sim_net_stretch(const struct tmm_sim_busy *b, uint32_t n,
			     uint64_t start, uint64_t ns)
{
	uint64_t t = start, left = ns;
	uint32_t i;

	for (i = 0; i < n && left > 0; i++) {
		uint64_t span;

		if (b[i].end <= t)
			continue;
		if (b[i].start > t) {
			uint64_t gap = b[i].start - t;

			if (gap >= left)
				return t + left;
			left -= gap;
			t = b[i].start;
		}
		/* Inside the interval the work moves at half rate. */
		span = b[i].end - t;
		if (left <= span / 2)
			return t + 2 * left;
		left -= span / 2;
		t = b[i].end;
	}
	return t + left;
}

uint64_t tmm_sim_net_copy_end(const struct tmm_sim_net *net,
			      const struct tmm_sim_profile *p, uint64_t start,
			      uint64_t ns)
{
	if (!p->net_over_pcie)
		return start + ns;
	return tmm_sim_net_stretch(net->b, net->n, start, ns);
}

/* Books [start, end) after the bookings so far, which all end by then:
 * collectives run one after another on the engine. */
static int book(struct tmm_sim_net *net, uint64_t start, uint64_t end)
{
	if (net->n > 0 && net->b[net->n - 1].end >= start) {
		net->b[net->n - 1].end = end;
		return 0;
	}
	if (net->n == net->cap) {
		uint32_t cap = net->cap ? 2 * net->cap : 16;
		void *q = tmm_realloc(net->b, sizeof(*net->b) * cap);

		if (!q)
			return -ENOMEM;
		net->b = q;
		net->cap = cap;
	}
	net->b[net->n++] = (struct tmm_sim_busy){ start, end };
	return 0;
}

/* Records that copy times in (start, old_end] now end later. */
static int add_revision(struct tmm_sim_net *net,
			const struct tmm_sim_revision *rv)
{
	if (net->nr == net->rcap) {
		uint32_t cap = net->rcap ? 2 * net->rcap : 16;
		void *q = tmm_realloc(net->r, sizeof(*net->r) * cap);

		if (!q)
			return -ENOMEM;
		net->r = q;
		net->rcap = cap;
	}
	net->r[net->nr++] = *rv;
	return 0;
}

/* A copy-engine time under one revision. */
static uint64_t revise_one(const struct tmm_sim_revision *rv, uint64_t t)
{
	struct tmm_sim_busy shared = { rv->start, rv->start + rv->shared };

	if (t <= rv->start || t > rv->old_end)
		return t;
	return tmm_sim_net_stretch(&shared, 1, rv->start, t - rv->start);
}

uint64_t tmm_sim_net_revise(const struct tmm_sim_net *net, uint64_t t_ns)
{
	uint32_t i;

	for (i = 0; i < net->nr; i++)
		t_ns = revise_one(&net->r[i], t_ns);
	return t_ns;
}

/*
 * The collective's network part (net_ns alone) and the copies still in
 * flight at `wire` (until the later copy engine's clock) split the link:
 * both move at half rate until the shorter is done, so the shorter ends
 * at wire + 2 x its length and the longer at wire + the sum of both.
 */
static int share_with_copies(struct tmm_sim_net *net, uint64_t wire,
			     uint64_t net_ns, uint64_t copy_t[2],
			     uint64_t *stop)
{
	uint64_t until = copy_t[0] > copy_t[1] ? copy_t[0] : copy_t[1];
	struct tmm_sim_busy copies = { wire, until };
	struct tmm_sim_revision rv;
	int i, rc;

	if (until <= wire)
		return 0;
	copies.end = wire + 2 * (until - wire);
	*stop = tmm_sim_net_stretch(&copies, 1, wire, net_ns);
	rv = (struct tmm_sim_revision){ .start = wire, .old_end = until,
					.shared = 2 * net_ns };
	rv.new_end = revise_one(&rv, until);
	rc = add_revision(net, &rv);
	if (rc < 0)
		return rc;
	for (i = 0; i < 2; i++)
		copy_t[i] = revise_one(&rv, copy_t[i]);
	return 0;
}

int tmm_sim_net_collective(struct tmm_sim_net *net,
			   const struct tmm_sim_profile *p, uint64_t at,
			   uint64_t op_ns, double net_bytes,
			   uint64_t copy_t[2], uint64_t *end)
{
	uint64_t start = at > net->t ? at : net->t;
	uint64_t wire = start + op_ns;
	uint64_t net_ns = tmm_sim_net_ns(p, net_bytes);
	uint64_t stop = wire + net_ns;
	int rc;

	if (net_ns > 0 && p->net_over_pcie) {
		rc = share_with_copies(net, wire, net_ns, copy_t, &stop);
		if (rc < 0)
			return rc;
	}
	if (stop > wire) {
		rc = book(net, wire, stop);
		if (rc < 0)
			return rc;
		net->busy_ns += stop - wire;
	}
	net->t = stop;
	net->collectives++;
	net->bytes += net_bytes > 0 ? net_bytes : 0;
	*end = stop;
	return 0;
}

uint64_t tmm_sim_net_held(const struct tmm_sim_net *net, uint64_t from,
			  uint64_t to)
{
	uint64_t held = 0;

	for (uint32_t k = 0; k < net->n && net->b[k].start < to; k++) {
		uint64_t a = net->b[k].start > from ? net->b[k].start : from;
		uint64_t z = net->b[k].end < to ? net->b[k].end : to;

		if (z > a)
			held += z - a;
	}
	return held;
}

void tmm_sim_net_forget(struct tmm_sim_net *net, uint64_t before)
{
	uint32_t k = 0;

	while (k < net->n && net->b[k].end <= before)
		k++;
	if (k > 0) {
		memmove(net->b, net->b + k, sizeof(*net->b) * (net->n - k));
		net->n -= k;
	}
	/* A revision maps times up to its old end onto ones up to its new
	 * end: once that is past, every time it maps is past. */
	k = 0;
	while (k < net->nr && net->r[k].new_end <= before)
		k++;
	if (k > 0) {
		memmove(net->r, net->r + k, sizeof(*net->r) * (net->nr - k));
		net->nr -= k;
	}
}

void tmm_sim_net_free(struct tmm_sim_net *net)
{
	free(net->b);
	free(net->r);
	memset(net, 0, sizeof(*net));
}
