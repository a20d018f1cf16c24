/* SPDX-License-Identifier: MIT */
/*
 * share_split.c — how the device is split among the processes that share
 * it (the rule is stated in share_split.h).
 *
 * Kept apart from the segment so that it is a pure function: the tests
 * give it claims and check the targets, with no process or lock involved.
 *
 * The deficit is taken by water-filling: each round shares what is still
 * to be found in proportion to the weights of the members that can still
 * give up; a member that reaches its floor stops, and the next round
 * shares its unmet part among the rest.  Each round removes a member or
 * finishes, so there are at most n rounds.  Give-ups are rounded up, so
 * rounding can only leave targets smaller, never push the sum past the
 * capacity.
 */
#include <stdbool.h>
#include <string.h>

#include "share_split.h"

/*
 * Takes up to `deficit` from the members with weight > 0 (weights, or 1
 * each when `even`), at most room[i] from member i; returns what is left
 * to take.
 */
static uint64_t take(const struct tmm_share_claim *c, unsigned n,
		     uint64_t *room, uint64_t *given, bool even,
		     uint64_t deficit)
{
	while (deficit > 0) {
		long double wsum = 0;
		bool saturated = false;

		for (unsigned i = 0; i < n; i++)
			if (room[i] > 0 && (even || c[i].rate > 0))
				wsum += even ? 1.0L : (long double)c[i].rate;
		if (wsum == 0)
			break;
		/* First a member whose share would pass its room: it gives
		 * all it has, and the rest is shared again. */
		for (unsigned i = 0; i < n; i++) {
			long double w = even ? 1.0L : (long double)c[i].rate;

			if (room[i] == 0 || w <= 0)
				continue;
			if ((long double)deficit * w / wsum >=
			    (long double)room[i]) {
				uint64_t g = room[i] < deficit ? room[i]
							       : deficit;

				given[i] += g;
				deficit -= g;
				room[i] = 0;
				saturated = true;
				break; /* the weights changed: share again */
			}
		}
		if (saturated)
			continue;
		{
			uint64_t left = deficit;

			for (unsigned i = 0; i < n && left > 0; i++) {
				long double w = even ? 1.0L
						     : (long double)c[i].rate;
				uint64_t g;

				if (room[i] == 0 || w <= 0)
					continue;
				g = (uint64_t)((long double)deficit * w / wsum);
				if ((long double)g <
				    (long double)deficit * w / wsum)
					g++; /* round up */
				if (g > room[i])
					g = room[i];
				if (g > left)
					g = left;
				given[i] += g;
				room[i] -= g;
				left -= g;
			}
			deficit = left;
		}
	}
	return deficit;
}

void tmm_share_split(const struct tmm_share_claim *c, unsigned n,
		     uint64_t capacity, uint64_t align, uint64_t *target)
{
	uint64_t room[TMM_SHARE_SLOTS], given[TMM_SHARE_SLOTS];
	uint64_t sum = 0, left, mask = align > 1 ? ~(align - 1) : ~0ull;

	if (n == 0)
		return;
	if (n > TMM_SHARE_SLOTS)
		n = TMM_SHARE_SLOTS;
	for (unsigned i = 0; i < n; i++)
		sum += c[i].demand;
	if (sum <= capacity) {
		uint64_t slack = (capacity - sum) / n;

		for (unsigned i = 0; i < n; i++)
			target[i] = (c[i].demand + slack) & mask;
		return;
	}
	memset(given, 0, sizeof(given));
	for (unsigned i = 0; i < n; i++)
		room[i] = c[i].demand > c[i].floor ? c[i].demand - c[i].floor
						   : 0;
	left = take(c, n, room, given, false, sum - capacity);
	/* The members with rate > 0 are at their floors (or all rates are
	 * 0): now everyone gives up evenly. */
	left = take(c, n, room, given, true, left);
	if (left > 0) {
		/* Even the floors do not fit: scale the demands down. */
		for (unsigned i = 0; i < n; i++)
			target[i] = (uint64_t)((long double)c[i].demand *
					       (long double)capacity /
					       (long double)sum) & mask;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		target[i] = (c[i].demand - given[i]) & mask;
}
