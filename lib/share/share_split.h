/* SPDX-License-Identifier: MIT */
/*
 * share_split.h — how the device is split among the processes that share
 * it (gpu_share.h): a pure function of their claims.
 *
 * The rule (tmm_share_split), our reading of TENSILE's Equation 3
 * and max swapping rate (MSR, Algorithm 2):
 *   - if the demands fit in the capacity, each member gets its demand,
 *     and what is left over is shared evenly;
 *   - otherwise the deficit (sum of demands - capacity) is taken from the
 *     members in proportion to their max swapping rates: a member whose
 *     rate is 0 gives up nothing while others can, and when every rate is
 *     0 all give up evenly;
 *   - no member is taken below its floor (the largest op it has run, and
 *     at least 1/8 of an even share) while others can still give up; if
 *     the floors alone do not fit, everything is scaled down so that the
 *     capacity still holds.
 * The sum of targets never exceeds the capacity.
 */
#ifndef TMM_SHARE_SPLIT_H
#define TMM_SHARE_SPLIT_H

#include <stdint.h>

/* The most processes that share a device: the segment's slots, and so the
 * most claims a split takes. */
#define TMM_SHARE_SLOTS 64u

/* One member's claim, the split rule's input. */
struct tmm_share_claim {
	uint64_t demand;  /* bytes it would like */
	uint64_t floor;	  /* bytes below which it cannot run */
	double rate;	  /* max swapping rate, 0..1 */
};

/*
 * The split rule above (a pure function): fills target[0..n) so that
 * their sum is at most `capacity`; each a multiple of `align` (a power of
 * two, or 1).
 */
void tmm_share_split(const struct tmm_share_claim *claims, unsigned n,
		     uint64_t capacity, uint64_t align, uint64_t *target);

#endif /* TMM_SHARE_SPLIT_H */
