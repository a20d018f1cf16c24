/* SPDX-License-Identifier: MIT */
/*
 * tensor_state.c — the legal transitions of a tensor's life cycle.
 *
 * One table, so the mover cannot take a transition that DESIGN.md does not
 * draw, and the tests can walk every pair.
 */
#include "tensor_state.h"

static const bool legal[TMM_TS_COUNT][TMM_TS_COUNT] = {
	/* Written by the host, or produced by an op. */
	[TMM_TS_EMPTY][TMM_TS_RESIDENT] = true,
	/* Written by the host while the device has no room for it. */
	[TMM_TS_EMPTY][TMM_TS_HOST] = true,
	[TMM_TS_RESIDENT][TMM_TS_SWAPPING_OUT] = true,
	[TMM_TS_RESIDENT][TMM_TS_DROPPED] = true,
	[TMM_TS_SWAPPING_OUT][TMM_TS_HOST] = true,
	/* Needed again before its copy finished: the device bytes are
	 * still the tensor's, so keep them and abandon the host copy. */
	[TMM_TS_SWAPPING_OUT][TMM_TS_RESIDENT] = true,
	[TMM_TS_HOST][TMM_TS_SWAPPING_IN] = true,
	[TMM_TS_SWAPPING_IN][TMM_TS_RESIDENT] = true,
	[TMM_TS_DROPPED][TMM_TS_RESIDENT] = true,
};

bool tmm_tstate_legal(enum tmm_tstate from, enum tmm_tstate to)
{
	if ((unsigned)from >= TMM_TS_COUNT || (unsigned)to >= TMM_TS_COUNT)
		return false;
	return legal[from][to];
}

const char *tmm_tstate_name(enum tmm_tstate s)
{
	static const char *const names[TMM_TS_COUNT] = {
		[TMM_TS_EMPTY] = "EMPTY",
		[TMM_TS_RESIDENT] = "RESIDENT",
		[TMM_TS_SWAPPING_OUT] = "SWAPPING_OUT",
		[TMM_TS_HOST] = "HOST",
		[TMM_TS_SWAPPING_IN] = "SWAPPING_IN",
		[TMM_TS_DROPPED] = "DROPPED",
	};

	if ((unsigned)s >= TMM_TS_COUNT)
		return "INVALID";
	return names[s];
}
