/* SPDX-License-Identifier: MIT */
/*
 * grow.h — growing an array that keeps its capacity between uses.
 *
 * The tracker and the lineage reuse their arrays every iteration, so they
 * grow only while the first iterations size them; this is the one growth
 * rule they share.
 */
#ifndef TMM_GROW_H
#define TMM_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Makes *arr hold at least `need` elements of `size` bytes, doubling its
 * capacity *cap (from 64).  Returns false, leaving the array as it was,
 * when the host has no memory or `need` is past what a uint32_t count
 * allows.
 */
bool tmm_grow(void **arr, uint32_t *cap, uint64_t need, size_t size);

#endif /* TMM_GROW_H */
