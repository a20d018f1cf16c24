/* SPDX-License-Identifier: MIT */
/*
 * uvm_pages.c — what the library knows of where the managed arena's pages
 * are, a big page at a time (uvm_pages.h; the arena's inside is
 * uvm_inside.h).
 */
#include "lib/base/managed_page.h"
#include "uvm_inside.h"
#include "uvm_pages.h"

/*
 * The segment holding [ptr, ptr + bytes) and the range's big pages in
 * it, [*first, *last]; NULL when no segment holds it all or the segment
 * keeps no bitmap.
 */
static struct segment *pages_of(const struct tmm_uvm_arena *a,
				const void *ptr, uint64_t bytes,
				uint64_t *first, uint64_t *last)
{
	const char *p = ptr;

	if (!a || !p || !bytes)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		struct segment *s = &a->seg[i];
		uint64_t off;

		if (p < s->base || (uint64_t)(p - s->base) >= s->bytes)
			continue;
		off = (uint64_t)(p - s->base);
		if (!s->on_dev || bytes > s->bytes - off)
			return NULL;
		*first = off / TMM_MANAGED_PAGE;
		*last = (off + bytes - 1) / TMM_MANAGED_PAGE;
		return s;
	}
	return NULL;
}

void tmm_uvm_arena_note(struct tmm_uvm_arena *a, const void *ptr,
			uint64_t bytes, bool on_device)
{
	uint64_t first, last;
	struct segment *s = pages_of(a, ptr, bytes, &first, &last);

	if (!s)
		return;
	for (uint64_t b = first; b <= last; b++) {
		if (on_device)
			s->on_dev[b / 8] |= (uint8_t)(1u << (b % 8));
		else
			s->on_dev[b / 8] &= (uint8_t)~(1u << (b % 8));
	}
}

bool tmm_uvm_arena_on_device(const struct tmm_uvm_arena *a, const void *ptr,
			     uint64_t bytes)
{
	uint64_t first, last;
	const struct segment *s = pages_of(a, ptr, bytes, &first, &last);

	if (!s)
		return false;
	for (uint64_t b = first; b <= last; b++)
		if (!(s->on_dev[b / 8] & (1u << (b % 8))))
			return false;
	return true;
}
