/* SPDX-License-Identifier: MIT */
/*
 * clean_copy.h — clean copies: a tensor swapped back in keeps the pinned
 * host buffer it came from, so that, evicted again before anything
 * writes it (a weight read by the forward pass and evicted before the
 * backward, say), it leaves the device with no copy at all.
 *
 * A clean copy holds the bytes of the tensor's `version` at the swap-in
 * (lineage's counter, bumped by every write: an op's outputs, a host
 * write, an acquire for writing).  tmm_run marks its outputs stale before
 * their kernels run (tmm_clean_stale), so an op that fails half-way
 * leaves no clean copy behind either.  Views and their parents and
 * scratch tensors keep none: a view's bytes reach its parent without an
 * op on the parent.  In mode=uvm the copy way (uvm_path.c) keeps them as
 * swap mode does; the prefetch way swaps in from no buffer.
 *
 * The buffer counts in host_in_use while kept.  It is given back when
 * the tensor goes (tmm_clean_drop), and every one is given back when
 * pinned memory runs short (tmm_clean_reclaim); a stale one is reused by
 * the next copy out of its tensor (tmm_clean_reuse).
 *
 * This asks one thing of programs, which tensormm(7) states: an op's
 * callback writes only the tensors it lists as outputs.
 */
#ifndef TMM_CLEAN_COPY_H
#define TMM_CLEAN_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"

/* A swap-in of t is being issued from t->host: its bytes are t's now. */
static inline void tmm_clean_note_swap_in(struct tmm_tensor_rec *t)
{
	t->clean = true;
	t->clean_version = t->version;
}

/* t's bytes are about to change on the device. */
static inline void tmm_clean_stale(struct tmm_tensor_rec *t)
{
	t->clean = false;
}

/*
 * t's swap-in has completed: keeps t->host as t's clean copy, where t
 * may have one, and clears t->host either way.  Returns false, t->host
 * untouched, where t may not keep one: the caller gives it back.
 */
bool tmm_clean_keep(struct tmm_tensor_rec *t);

/* Whether t, resident, may leave the device with no copy: its clean
 * copy holds its bytes. */
bool tmm_clean_holds(const struct tmm_tensor_rec *t);

/*
 * Moves t's clean buffer, if any, to t->host (which must be NULL), for a
 * copy out or a host copy of t.  Returns whether there was one.
 */
bool tmm_clean_reuse(struct tmm_tensor_rec *t);

/* Gives t's clean buffer back, if any. */
void tmm_clean_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Gives every clean buffer back, for pinned memory that ran short.
 * Returns the bytes given back. */
uint64_t tmm_clean_reclaim(struct tmm_ctx *ctx);

#endif /* TMM_CLEAN_COPY_H */
