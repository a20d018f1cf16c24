/* SPDX-License-Identifier: MIT */
/*
 * chargpt_buffers.h — buffers carved into views, the way llm.c lays out
 * its parameters and activations: a table of named slots (one tensor, or
 * one per layer), packed front to back into one parent tensor, each
 * reachable as a view of it (tmm_tensor_view).
 *
 * A slot's views are consecutive (layer 0, 1, ...), and slots follow each
 * other in table order, so the parent's bytes are the concatenation of
 * its views' bytes in that order: reading the parent whole gives every
 * slot's values at once, and two buffers made from one layout line up
 * element for element (a parameter and its gradient at the same offset).
 */
#ifndef CHARGPT_BUFFERS_H
#define CHARGPT_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>

#include "tensormm.h"

/* One named piece of a buffer, in floats (per layer when per_layer). */
struct chargpt_slot {
	const char *name;
	bool per_layer;
	size_t floats;
};

#define CHARGPT_MAX_SLOTS 32u

/* Where each slot's views lie in a buffer. */
struct chargpt_layout {
	const struct chargpt_slot *slot;
	unsigned n_slots, layers;
	unsigned first[CHARGPT_MAX_SLOTS]; /* index of the slot's first view */
	size_t start[CHARGPT_MAX_SLOTS];   /* offset of its first, in floats */
	unsigned n_views;
	size_t floats;			   /* the whole buffer */
};

/* A parent tensor and, unless it is only used whole, its views. */
struct chargpt_buffer {
	tmm_tensor whole;
	tmm_tensor *view;  /* n_views handles, in layout order; or NULL */
	unsigned n_views;  /* created so far */
};

/* Lays out slot[0..n_slots) (n_slots <= CHARGPT_MAX_SLOTS) for `layers`
 * layers.  Returns 0, or -EINVAL for too many slots or an empty one. */
int chargpt_layout_init(struct chargpt_layout *lay,
			const struct chargpt_slot *slot, unsigned n_slots,
			unsigned layers);

/* The offset, in floats, of a slot's view for `layer` (ignored for a slot
 * that is not per layer). */
size_t chargpt_layout_offset(const struct chargpt_layout *lay,
			     unsigned slot, unsigned layer);

/*
 * Creates a buffer of lay->floats floats named `name`, and, when
 * view_prefix is not NULL, one view per slot and layer named
 * "<view_prefix><slot>" or "<view_prefix><slot>.<layer>".  Returns 0, or
 * the error of the failing call (its message in tmm_last_error(ctx));
 * what was made by then stays in *b for chargpt_buffer_free.
 */
int chargpt_buffer_make(tmm_ctx *ctx, const struct chargpt_layout *lay,
			enum tmm_kind kind, const char *name,
			const char *view_prefix, struct chargpt_buffer *b);

/* The view of `slot` for `layer` (ignored for a slot not per layer). */
tmm_tensor chargpt_view(const struct chargpt_buffer *b,
			const struct chargpt_layout *lay, unsigned slot,
			unsigned layer);

/* Destroys the views, then the parent (which refuses to go while views
 * live), as far as the library lets it: what stays goes with the
 * context.  Handles never created are skipped. */
void chargpt_buffer_free(tmm_ctx *ctx, struct chargpt_buffer *b);

#endif /* CHARGPT_BUFFERS_H */
