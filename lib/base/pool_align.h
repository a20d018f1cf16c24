/* SPDX-License-Identifier: MIT */
/*
 * pool_align.h — the granularity of device memory.
 *
 * The device pool (lib/mem/pool.h) hands out multiples of TMM_POOL_ALIGN
 * bytes at offsets that are multiples of it, and the planners (hints/)
 * predict a tensor's footprint in the same units.  The constant lives
 * below both so that a planner need not include the pool to agree with it.
 */
#ifndef TMM_POOL_ALIGN_H
#define TMM_POOL_ALIGN_H

#define TMM_POOL_ALIGN 256u

#endif /* TMM_POOL_ALIGN_H */
