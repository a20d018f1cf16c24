/* SPDX-License-Identifier: MIT */
/*
 * chargpt_buffers.c — the buffers and views of chargpt_buffers.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "chargpt_buffers.h"

int chargpt_layout_init(struct chargpt_layout *lay,
			const struct chargpt_slot *slot, unsigned n_slots,
			unsigned layers)
{
	*lay = (struct chargpt_layout){ .slot = slot, .n_slots = n_slots,
					.layers = layers };
	if (n_slots > CHARGPT_MAX_SLOTS || layers == 0)
		return -EINVAL;
	for (unsigned s = 0; s < n_slots; s++) {
		unsigned copies = slot[s].per_layer ? layers : 1;

		if (slot[s].floats == 0)
			return -EINVAL;
		lay->first[s] = lay->n_views;
		lay->start[s] = lay->floats;
		lay->n_views += copies;
		lay->floats += copies * slot[s].floats;
	}
	return 0;
}

size_t chargpt_layout_offset(const struct chargpt_layout *lay,
			     unsigned slot, unsigned layer)
{
	const struct chargpt_slot *s = &lay->slot[slot];

	return lay->start[slot] + (s->per_layer ? layer * s->floats : 0);
}

int chargpt_buffer_make(tmm_ctx *ctx, const struct chargpt_layout *lay,
			enum tmm_kind kind, const char *name,
			const char *view_prefix, struct chargpt_buffer *b)
{
	int rc;

	*b = (struct chargpt_buffer){ 0 };
	rc = tmm_tensor_create(ctx, lay->floats * sizeof(float), kind, name,
			       &b->whole);
	if (rc || !view_prefix)
		return rc;
	b->view = calloc(lay->n_views, sizeof(*b->view));
	if (!b->view)
		return -ENOMEM;
	for (unsigned s = 0; s < lay->n_slots; s++) {
		const struct chargpt_slot *sl = &lay->slot[s];
		unsigned copies = sl->per_layer ? lay->layers : 1;

		for (unsigned l = 0; l < copies; l++) {
			size_t at = chargpt_layout_offset(lay, s, l);
			char vname[48];

			if (sl->per_layer)
				snprintf(vname, sizeof(vname), "%s%s.%u",
					 view_prefix, sl->name, l);
			else
				snprintf(vname, sizeof(vname), "%s%s",
					 view_prefix, sl->name);
			rc = tmm_tensor_view(ctx, b->whole, at * sizeof(float),
					     sl->floats * sizeof(float), vname,
					     &b->view[b->n_views]);
			if (rc)
				return rc;
			b->n_views++;
		}
	}
	return 0;
}

tmm_tensor chargpt_view(const struct chargpt_buffer *b,
			const struct chargpt_layout *lay, unsigned slot,
			unsigned layer)
{
	return b->view[lay->first[slot] +
		       (lay->slot[slot].per_layer ? layer : 0)];
}

void chargpt_buffer_free(tmm_ctx *ctx, struct chargpt_buffer *b)
{
	/* A failed destroy is not reported: this runs on the way out,
	 * often after the failure that stopped the training, whose message
	 * must stay the one tmm_last_error gives.  What is left goes with
	 * the context (tmm_ctx_destroy). */
	for (unsigned k = b->n_views; k-- > 0;)
		tmm_tensor_destroy(ctx, b->view[k]);
	if (b->whole.id)
		tmm_tensor_destroy(ctx, b->whole);
	free(b->view);
	*b = (struct chargpt_buffer){ 0 };
}
