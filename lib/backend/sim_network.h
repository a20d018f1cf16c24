/* SPDX-License-Identifier: MIT */
/*
 * sim_network.h — the simulated GPU's network engine (issue 26).
 *
 * A collective (an op with cost.net_bytes > 0, a TMM_OP_COLLECTIVE) runs
 * on the network engine as well as the compute stream: its roofline part
 * (the reduction's arithmetic) and then its network part, latency +
 * net_bytes / net_gbps of the profile, during which the link is busy.
 * Where the profile's collectives cross PCIe (net_over_pcie), the swap
 * engine's copies and the collective share the link: while both run,
 * each gets half of it, so both end later than alone.  Copies already
 * queued when a collective starts are pushed back: the copy engines'
 * clocks move, and an event recorded on them before is read through the
 * same revision (tmm_sim_net_revise), so that whoever waits for such a
 * copy waits for its real end.  docs/sim-network.md has the whole model.
 */
#ifndef TMM_SIM_NETWORK_H
#define TMM_SIM_NETWORK_H

#include <stdint.h>

#include "lib/base/sim_profile.h"

/* One interval during which a collective held the link. */
struct tmm_sim_busy {
	uint64_t start, end;
};

/* Copies in flight when a collective began, moved later by it: a time
 * in (start, old_end] on a copy engine is read as stretched by the
 * collective's share of [start, start + shared). */
struct tmm_sim_revision {
	uint64_t start, old_end, new_end, shared;
};

/* The network engine.  Zeroed: idle, nothing booked. */
struct tmm_sim_net {
	struct tmm_sim_busy *b; /* collectives on the link, by start, apart */
	uint32_t n, cap;
	struct tmm_sim_revision *r; /* revisions of copy times, in order */
	uint32_t nr, rcap;
	uint64_t t;		/* when its last collective ends */
	uint64_t busy_ns;	/* time collectives held the link */
	uint64_t collectives;	/* collectives run */
	double bytes;		/* their net_bytes */
};

/*
 * When work that takes `ns` at the link's full rate, begun at `start`,
 * ends if it runs at half rate inside each of the n intervals b (by
 * start, apart) and at full rate outside them.
 */
uint64_t tmm_sim_net_stretch(const struct tmm_sim_busy *b, uint32_t n,
			     uint64_t start, uint64_t ns);

/*
 * The end of a copy that takes `ns` alone and starts at `start`: later
 * where it shares PCIe with a collective booked on net (p->net_over_pcie),
 * else start + ns.
 */
uint64_t tmm_sim_net_copy_end(const struct tmm_sim_net *net,
			      const struct tmm_sim_profile *p, uint64_t start,
			      uint64_t ns);

/*
 * Runs a collective issued at `at` (the compute stream's time): it starts
 * when the network engine is also free, takes op_ns of arithmetic, then
 * its network part for net_bytes.  On a shared link, copies issued
 * before it that still run then (the copy engines' clocks, copy_t[0..1])
 * and the network part split the link while both run: the collective
 * ends later, and copy_t[] move to when those copies now end.  Books its
 * network part on the link and writes its end to *end.  Returns 0 or
 * -ENOMEM.
 */
int tmm_sim_net_collective(struct tmm_sim_net *net,
			   const struct tmm_sim_profile *p, uint64_t at,
			   uint64_t op_ns, double net_bytes,
			   uint64_t copy_t[2], uint64_t *end);

/* How long collectives held the link within [from, to). */
uint64_t tmm_sim_net_held(const struct tmm_sim_net *net, uint64_t from,
			  uint64_t to);

/* A time t_ns on a copy engine, given out before collectives moved that
 * engine's copies, read as those copies now end. */
uint64_t tmm_sim_net_revise(const struct tmm_sim_net *net, uint64_t t_ns);

/* Forgets the bookings and revisions that end by `before`: no copy can
 * start earlier than the compute stream's time, so those can slow
 * nothing, and a time they would revise is past anyway. */
void tmm_sim_net_forget(struct tmm_sim_net *net, uint64_t before);

/* Frees the bookings; net is then zeroed. */
void tmm_sim_net_free(struct tmm_sim_net *net);

#endif /* TMM_SIM_NETWORK_H */
