/* SPDX-License-Identifier: MIT */
/*
 * tensor_state.h — the life cycle of a tensor's bytes.
 *
 *              evict(swap)            copy done
 *  RESIDENT ─────────────► SWAPPING_OUT ─────────► HOST
 *     ▲  │ evict(drop)          │ back-access          │ prefetch / on demand
 *     │  └──────► DROPPED       ▼ before the copy ends ▼
 *     │              │       RESIDENT            SWAPPING_IN ──copy done──►
 *     └──────────────┘ recompute                                  RESIDENT
 *
 * EMPTY is a tensor that holds no bytes yet (created, never written).
 * Invariants: a tensor's bytes always exist somewhere (device, host, or
 * recoverable from a pure producer); the device memory of a SWAPPING_OUT
 * tensor is released only after its copy completes; a pinned tensor is
 * never evicted; only a tensor with a pure producer may be DROPPED.
 */
#ifndef TMM_TENSOR_STATE_H
#define TMM_TENSOR_STATE_H

#include <stdbool.h>

enum tmm_tstate {
	TMM_TS_EMPTY,
	TMM_TS_RESIDENT,
	TMM_TS_SWAPPING_OUT,
	TMM_TS_HOST,
	TMM_TS_SWAPPING_IN,
	TMM_TS_DROPPED,
	TMM_TS_COUNT
};

/* True when the life cycle allows `from` -> `to`. */
bool tmm_tstate_legal(enum tmm_tstate from, enum tmm_tstate to);

/* "RESIDENT", "SWAPPING_OUT", ... */
const char *tmm_tstate_name(enum tmm_tstate s);

/* Does a tensor in this state own device memory? */
static inline bool tmm_tstate_on_device(enum tmm_tstate s)
{
	return s == TMM_TS_RESIDENT || s == TMM_TS_SWAPPING_OUT ||
	       s == TMM_TS_SWAPPING_IN;
}

/* Does a tensor in this state own a host buffer? */
static inline bool tmm_tstate_on_host(enum tmm_tstate s)
{
	return s == TMM_TS_HOST || s == TMM_TS_SWAPPING_OUT ||
	       s == TMM_TS_SWAPPING_IN;
}

#endif /* TMM_TENSOR_STATE_H */
